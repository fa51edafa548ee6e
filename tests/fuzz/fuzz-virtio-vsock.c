/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio-vsock and its unix-socket backend driven by a fuzzed guest
 * program (packets are whatever the program writes into guest RAM), and by
 * the host side of the backend, also from the input: connections to the
 * device's socket with a "CONNECT <port>" line (or a broken one), data and
 * shutdowns on them, and a listener on host port 1024 that accepts the
 * guest's connections and writes to them. The event loop is dispatched by
 * the harness (tests/unit/virtio/poll-loop.c).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "fuzz.h"
#include "virtio/vsock/vsock.h"

#define MAX_HOST 8
#define GUEST_CID 3

static char dir[64], uds[96], port_path[112];

struct vsfz {
	struct event_loop *loop;
	struct virtio_vsock *v;
	int listen_fd; /* <uds>_1024 */
	int host[MAX_HOST];
};

static void remove_dir(void)
{
	unlink(port_path);
	unlink(uds);
	rmdir(dir);
}

static void make_dir(void)
{
	if (dir[0])
		return;
	snprintf(dir, sizeof(dir), "/tmp/kvrun-fuzz-vsock-%d", (int)getpid());
	if (mkdir(dir, 0700) < 0)
		abort();
	snprintf(uds, sizeof(uds), "%s/v.sock", dir);
	snprintf(port_path, sizeof(port_path), "%s_1024", uds);
	atexit(remove_dir);
}

static int unix_socket(const char *path, bool listen_on)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0)
		abort();
	if (listen_on) {
		unlink(path);
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0)
			abort();
	} else if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int *free_slot(struct vsfz *t)
{
	for (int i = 0; i < MAX_HOST; i++)
		if (t->host[i] < 0)
			return &t->host[i];
	return NULL;
}

/* The host side reads what arrives, as a live peer would. */
static void drain_host(struct fz_guest *g)
{
	struct vsfz *t = g->opaque;
	char buf[4096];

	for (int h = 0; h < MAX_HOST; h++)
		if (t->host[h] >= 0)
			while (recv(t->host[h], buf, sizeof(buf), MSG_DONTWAIT) > 0)
				;
}

static void host_connect(struct vsfz *t, struct fz *f)
{
	static const char *const lines[] = {"CONNECT 1024\n", "CONNECT 5000\n", "CONNECT 4294967295\n",
	                                    "CONNECT x\n",    "HELLO\n",        "CONNECT 1024"};
	int *slot = free_slot(t), fd;
	uint8_t which = fz_u8(f);

	if (!slot)
		return;
	fd = unix_socket(uds, false);
	if (fd < 0)
		return;
	if (which < 200)
		(void)!write(fd, lines[which % 6], strlen(lines[which % 6]));
	*slot = fd;
}

static void host_data(struct vsfz *t, struct fz *f)
{
	uint8_t buf[512];
	int *h = &t->host[fz_u8(f) % MAX_HOST];
	size_t len = fz_u8(f) + 1u;

	fz_take(f, buf, len);
	if (*h >= 0)
		(void)!send(*h, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
}

static void host_close(struct vsfz *t, struct fz *f)
{
	int *h = &t->host[fz_u8(f) % MAX_HOST];

	if (*h < 0)
		return;
	if (fz_u8(f) & 1) {
		shutdown(*h, SHUT_WR);
	} else {
		close(*h);
		*h = -1;
	}
}

static void vs_extra(struct fz_guest *g, struct fz *f, uint8_t op)
{
	struct vsfz *t = g->opaque;
	int fd, *slot;

	switch (op % 5) {
	case 0:
		host_connect(t, f);
		break;
	case 1:
		host_data(t, f);
		break;
	case 2:
		host_close(t, f);
		break;
	case 3:
		/* The guest's connections to host port 1024. */
		while ((slot = free_slot(t)) && (fd = accept4(t->listen_fd, NULL, NULL, SOCK_NONBLOCK)) >= 0)
			*slot = fd;
		break;
	default:
		virtio_vsock_pause(t->v, fz_u8(f) & 1);
		break;
	}
	fz_loop_settle(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = {data, size};
	struct vsfz t = {0};
	struct fz_guest g;

	make_dir();
	for (int i = 0; i < MAX_HOST; i++)
		t.host[i] = -1;
	if (event_loop_new(&t.loop) < 0)
		abort();
	t.listen_fd = unix_socket(port_path, true);
	fz_guest_init(&g);
	if (virtio_vsock_new(&g.mem, t.loop, GUEST_CID, uds, true, &t.v) < 0)
		abort();
	g.opaque = &t;
	g.loop = t.loop;
	g.drain = drain_host;
	g.settle = fz_loop_settle;
	g.extra = vs_extra;
	fz_guest_attach(&g, virtio_vsock_mmio(t.v));
	fz_guest_run(&g, &f, 256);
	virtio_vsock_free(t.v);
	for (int i = 0; i < MAX_HOST; i++)
		if (t.host[i] >= 0)
			close(t.host[i]);
	close(t.listen_fd);
	event_loop_free(t.loop);
	fz_guest_free(&g);
	return 0;
}
