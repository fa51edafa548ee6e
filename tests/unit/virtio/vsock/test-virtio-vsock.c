/* SPDX-License-Identifier: Apache-2.0 */
/* virtio-vsock with its unix-socket backend: the fake driver plays the
 * guest, plain unix sockets play the host processes, and the test runs the
 * event loop by hand, so every step happens in a fixed order. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "fake-driver.h"
#include "poll-loop.h"
#include "tap.h"
#include "virtio/vsock/packet.h"
#include "virtio/vsock/uds.h"
#include "virtio/vsock/vsock.h"
#include "vmm/snap-buf.h"

#define CID 3
#define QSIZE 64
#define NR_RX 32
#define RX_LEN (44 + 8192)
#define TX_MAX (64 * 1024)
#define FEATURES \
	(VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VIRTIO_F_RING_EVENT_IDX) | VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC))

struct vt {
	struct fake_drv d;
	struct event_loop *loop;
	struct virtio_vsock *v;
	char dir[64], path[320];
	uint64_t rxgpa[QSIZE];
	uint64_t rxpool[NR_RX];
	uint64_t tx_hdr, tx_data;
};

struct pkt {
	struct vsock_hdr h;
	uint8_t data[8192];
};

/* Dispatch until nothing is ready; bounded so that a device that keeps
 * itself busy fails the test instead of hanging it. */
static void pump(struct vt *t)
{
	for (int i = 0; i < 10000; i++) {
		if (poll_loop_once(t->loop, 0) == 0)
			return;
	}
	printf("# event loop never went idle\n");
}

static void post_rx(struct vt *t, uint64_t gpa)
{
	uint16_t head = fake_add(&t->d, 0, (struct fbuf[]){{gpa, RX_LEN, true}}, 1, false);

	t->rxgpa[head] = gpa;
}

static void vt_bringup(struct vt *t)
{
	fake_bringup(&t->d, FEATURES, 3, QSIZE);
	for (int i = 0; i < NR_RX; i++)
		post_rx(t, t->rxpool[i]);
	fake_kick(&t->d, 0);
	pump(t);
}

/* The device's socket is <dir>/v.sock, or <dir>/<sub>/v.sock. */
static void vt_setup_sub(struct vt *t, const char *sub)
{
	memset(t, 0, sizeof(*t));
	strcpy(t->dir, "/tmp/kvrun-vsock-XXXXXX");
	if (!mkdtemp(t->dir))
		abort();
	if (sub) {
		snprintf(t->path, sizeof(t->path), "%s/%s", t->dir, sub);
		if (mkdir(t->path, 0700) < 0)
			abort();
		snprintf(t->path, sizeof(t->path), "%s/%s/v.sock", t->dir, sub);
	} else {
		snprintf(t->path, sizeof(t->path), "%s/v.sock", t->dir);
	}
	fake_drv_init(&t->d);
	if (event_loop_new(&t->loop) < 0 || virtio_vsock_new(&t->d.mem, t->loop, CID, t->path, true, &t->v) < 0)
		abort();
	fake_drv_attach(&t->d, virtio_vsock_mmio(t->v));
	t->tx_hdr = fake_alloc(&t->d, 44);
	t->tx_data = fake_alloc(&t->d, TX_MAX);
	for (int i = 0; i < NR_RX; i++)
		t->rxpool[i] = fake_alloc(&t->d, RX_LEN);
	vt_bringup(t);
}

static void vt_setup(struct vt *t)
{
	vt_setup_sub(t, NULL);
}

static void vt_teardown(struct vt *t)
{
	char cmd[128];

	virtio_vsock_free(t->v);
	event_loop_free(t->loop);
	fake_drv_free(&t->d);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", t->dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", t->dir);
}

static void guest_send_full(struct vt *t, const struct vsock_hdr *h, const void *data)
{
	memcpy(fake_ptr(&t->d, t->tx_hdr), h, 44);
	if (h->len) {
		memcpy(fake_ptr(&t->d, t->tx_data), data, h->len);
		fake_add(&t->d, 1, (struct fbuf[]){{t->tx_hdr, 44, false}, {t->tx_data, h->len, false}}, 2, false);
	} else {
		fake_add(&t->d, 1, (struct fbuf[]){{t->tx_hdr, 44, false}}, 1, false);
	}
	fake_kick(&t->d, 1);
	pump(t);
}

/* Send op from guest port sport to host port dport, advertising buf_alloc
 * and fwd_cnt. */
static void guest_send(struct vt *t, uint16_t op, uint32_t sport, uint32_t dport, uint32_t flags, uint32_t buf_alloc,
                       uint32_t fwd_cnt, const void *data, uint32_t len)
{
	struct vsock_hdr h = {
	    .src_cid = CID,
	    .dst_cid = VSOCK_HOST_CID,
	    .src_port = sport,
	    .dst_port = dport,
	    .len = len,
	    .type = VSOCK_TYPE_STREAM,
	    .op = op,
	    .flags = flags,
	    .buf_alloc = buf_alloc,
	    .fwd_cnt = fwd_cnt,
	};

	guest_send_full(t, &h, data);
}

/* Next packet for the guest, its buffer given back at once. */
static bool guest_recv(struct vt *t, struct pkt *p)
{
	uint32_t id, len;
	uint64_t gpa;

	pump(t);
	if (!fake_get_used(&t->d, 0, &id, &len))
		return false;
	gpa = t->rxgpa[id];
	memcpy(&p->h, fake_ptr(&t->d, gpa), 44);
	if (len < 44 || p->h.len != len - 44 || p->h.len > sizeof(p->data))
		return false;
	memcpy(p->data, fake_ptr(&t->d, gpa + 44), p->h.len);
	post_rx(t, gpa);
	fake_kick(&t->d, 0);
	pump(t);
	return true;
}

static int host_listen(struct vt *t, uint32_t port)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s_%u", t->path, port) >= (int)sizeof(sa.sun_path))
		abort();
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 8) < 0)
		abort();
	return fd;
}

static int host_connect(struct vt *t)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", t->path) >= (int)sizeof(sa.sun_path))
		abort();
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		abort();
	return fd;
}

static ssize_t host_read(int fd, void *buf, size_t len)
{
	return recv(fd, buf, len, MSG_DONTWAIT);
}

/* Guest port 5000 connects to host port 1234; returns the host's socket. */
static int connect_from_guest(struct vt *t, int listener, uint32_t buf_alloc)
{
	struct pkt p;
	int fd;

	guest_send(t, VSOCK_OP_REQUEST, 5000, 1234, 0, buf_alloc, 0, NULL, 0);
	fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
	ok(fd >= 0, "host accepted the guest's connection");
	ok(guest_recv(t, &p) && p.h.op == VSOCK_OP_RESPONSE, "guest got RESPONSE");
	ok(p.h.src_cid == VSOCK_HOST_CID && p.h.dst_cid == CID && p.h.src_port == 1234 && p.h.dst_port == 5000,
	   "RESPONSE addressed to the guest");
	is_int(p.h.buf_alloc, VSOCK_BUF_ALLOC);
	return fd;
}

/* A socket path longer than sun_path holds (a deep --root): the device
 * listens on it and connects to "<path>_P" through its directory. The host
 * side reaches both by relative names from inside that directory. */
TEST(long_socket_path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char sub[151], cwd[PATH_MAX];
	int listener, fd;
	struct vt t;
	struct pkt p;

	memset(sub, 'd', sizeof(sub) - 1);
	sub[sizeof(sub) - 1] = '\0';
	vt_setup_sub(&t, sub);
	ok(strlen(t.path) >= sizeof(sa.sun_path), "socket path of %zu bytes", strlen(t.path));
	ok(getcwd(cwd, sizeof(cwd)) != NULL, "getcwd");
	*strrchr(t.path, '/') = '\0';
	is_int(chdir(t.path), 0);
	strcat(t.path, "/v.sock");

	/* Guest to host port 1234: the device connects to "<path>_1234". */
	listener = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	strcpy(sa.sun_path, "v.sock_1234");
	ok(bind(listener, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(listener, 8) == 0, "host listens");
	fd = connect_from_guest(&t, listener, 65536);
	close(fd);
	close(listener);
	while (guest_recv(&t, &p))
		; /* the SHUTDOWN of that stream */

	/* Host to guest: the device listens on path. */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	strcpy(sa.sun_path, "v.sock");
	is_int(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	is_int(write(fd, "CONNECT 52\n", 11), 11);
	ok(guest_recv(&t, &p) && p.h.op == VSOCK_OP_REQUEST && p.h.dst_port == 52, "guest got REQUEST for port 52");
	close(fd);
	is_int(chdir(cwd), 0);
	vt_teardown(&t);
}

TEST(config_and_identity)
{
	struct vt t;
	uint64_t cid = 0;

	vt_setup(&t);
	is_int(fake_read(&t.d, VIRTIO_MMIO_DEVICE_ID), VIRTIO_ID_VSOCK);
	virtio_mmio_bus_ops.read(virtio_vsock_mmio(t.v), VIRTIO_MMIO_CONFIG, &cid, 8);
	is_int(cid, CID);
	ok(fake_read(&t.d, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DRIVER_OK, "driver ok");
	vt_teardown(&t);
}

TEST(guest_to_host)
{
	struct vt t;
	struct pkt p;
	char buf[16];
	int l, fd;

	vt_setup(&t);
	l = host_listen(&t, 1234);
	fd = connect_from_guest(&t, l, 65536);
	is_int(virtio_vsock_nr_conns(t.v), 1);
	guest_send(&t, VSOCK_OP_RW, 5000, 1234, 0, 65536, 0, "ping", 4);
	is_int(host_read(fd, buf, sizeof(buf)), 4);
	ok(memcmp(buf, "ping", 4) == 0, "host got the guest's data");
	is_int(write(fd, "pong!", 5), 5);
	ok(guest_recv(&t, &p) && p.h.op == VSOCK_OP_RW, "guest got RW");
	is_int(p.h.len, 5);
	ok(memcmp(p.data, "pong!", 5) == 0, "guest got the host's data");
	is_int(p.h.fwd_cnt, 4);
	/* Host half-close: the guest hears SHUTDOWN(SEND) and may still send. */
	shutdown(fd, SHUT_WR);
	ok(guest_recv(&t, &p) && p.h.op == VSOCK_OP_SHUTDOWN, "guest got SHUTDOWN");
	is_int(p.h.flags, VSOCK_SHUTDOWN_SEND);
	guest_send(&t, VSOCK_OP_RW, 5000, 1234, 0, 65536, 5, "bye", 3);
	is_int(host_read(fd, buf, sizeof(buf)), 3);
	/* Guest closes: RST back, host sees EOF, the stream is gone. */
	guest_send(&t, VSOCK_OP_SHUTDOWN, 5000, 1234, VSOCK_SHUTDOWN_RCV | VSOCK_SHUTDOWN_SEND, 65536, 5, NULL, 0);
	ok(guest_recv(&t, &p) && p.h.op == VSOCK_OP_RST, "guest got RST");
	is_int(host_read(fd, buf, sizeof(buf)), 0);
	is_int(virtio_vsock_nr_conns(t.v), 0);
	ok(!(fake_read(&t.d, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET), "device healthy");
	close(fd);
	close(l);
	vt_teardown(&t);
}

/* The guest half-closes; the host answers, then closes: the answer must
 * reach the guest before the stream ends. */
TEST(guest_half_close)
{
	struct vt t;
	struct pkt p;
	char buf[16];
	bool got_data = false, got_shutdown = false, got_rst = false;
	int l, fd;

	vt_setup(&t);
	l = host_listen(&t, 1234);
	fd = connect_from_guest(&t, l, 65536);
	guest_send(&t, VSOCK_OP_RW, 5000, 1234, 0, 65536, 0, "question", 8);
	guest_send(&t, VSOCK_OP_SHUTDOWN, 5000, 1234, VSOCK_SHUTDOWN_SEND, 65536, 0, NULL, 0);
	is_int(host_read(fd, buf, sizeof(buf)), 8);
	is_int(host_read(fd, buf, sizeof(buf)), 0);
	is_int(write(fd, "answer", 6), 6);
	close(fd);
	for (int i = 0; i < 10 && guest_recv(&t, &p); i++) {
		if (p.h.op == VSOCK_OP_RW && !got_shutdown && !got_rst)
			got_data = p.h.len == 6 && memcmp(p.data, "answer", 6) == 0;
		got_shutdown |= p.h.op == VSOCK_OP_SHUTDOWN;
		got_rst |= p.h.op == VSOCK_OP_RST;
	}
	ok(got_data, "answer delivered before the end of the stream");
	ok(got_shutdown || got_rst, "then the stream ended");
	if (!got_rst)
		guest_send(&t, VSOCK_OP_RST, 5000, 1234, 0, 65536, 0, NULL, 0);
	is_int(virtio_vsock_nr_conns(t.v), 0);
	close(l);
	vt_teardown(&t);
}

TEST(host_to_guest)
{
	struct vt t;
	struct pkt p;
	char buf[64], want[64];
	uint32_t hport;
	int fd;

	vt_setup(&t);
	fd = host_connect(&t);
	is_int(write(fd, "CONNECT 52\n", 11), 11);
	ok(guest_recv(&t, &p) && p.h.op == VSOCK_OP_REQUEST, "guest got REQUEST");
	is_int(p.h.dst_port, 52);
	is_int(p.h.dst_cid, CID);
	hport = p.h.src_port;
	ok(hport >= (1u << 30), "host port %u from the dynamic range", hport);
	guest_send(&t, VSOCK_OP_RESPONSE, 52, hport, 0, 65536, 0, NULL, 0);
	snprintf(want, sizeof(want), "OK %u\n", hport);
	memset(buf, 0, sizeof(buf));
	is_int(host_read(fd, buf, sizeof(buf)), (long long)strlen(want));
	is_str(buf, want);
	is_int(write(fd, "hello guest", 11), 11);
	ok(guest_recv(&t, &p) && p.h.op == VSOCK_OP_RW && p.h.len == 11, "guest got data");
	ok(memcmp(p.data, "hello guest", 11) == 0, "data intact");
	guest_send(&t, VSOCK_OP_RW, 52, hport, 0, 65536, 11, "hello host", 10);
	is_int(host_read(fd, buf, sizeof(buf)), 10);
	ok(memcmp(buf, "hello host", 10) == 0, "host got data");
	/* Host closes: SHUTDOWN both ways, the guest answers RST. */
	close(fd);
	ok(guest_recv(&t, &p) && p.h.op == VSOCK_OP_SHUTDOWN, "guest got SHUTDOWN");
	is_int(p.h.flags, VSOCK_SHUTDOWN_RCV | VSOCK_SHUTDOWN_SEND);
	guest_send(&t, VSOCK_OP_RST, 52, hport, 0, 65536, 11, NULL, 0);
	is_int(virtio_vsock_nr_conns(t.v), 0);
	ok(!guest_recv(&t, &p), "nothing answers an RST");
	vt_teardown(&t);
}

TEST(host_connect_refused)
{
	struct vt t;
	struct pkt p;
	char buf[16];
	int fd;

	vt_setup(&t);
	/* The guest refuses. */
	fd = host_connect(&t);
	is_int(write(fd, "CONNECT 77\n", 11), 11);
	ok(guest_recv(&t, &p) && p.h.op == VSOCK_OP_REQUEST, "guest got REQUEST");
	guest_send(&t, VSOCK_OP_RST, 77, p.h.src_port, 0, 0, 0, NULL, 0);
	is_int(host_read(fd, buf, sizeof(buf)), 0);
	close(fd);
	/* Bad handshake lines. */
	fd = host_connect(&t);
	is_int(write(fd, "HELLO 1\n", 8), 8);
	pump(&t);
	is_int(host_read(fd, buf, sizeof(buf)), 0);
	close(fd);
	fd = host_connect(&t);
	is_int(write(fd, "CONNECT 99999999999\n", 20), 20);
	pump(&t);
	is_int(host_read(fd, buf, sizeof(buf)), 0);
	close(fd);
	is_int(virtio_vsock_nr_conns(t.v), 0);
	vt_teardown(&t);
}

TEST(resets_and_strays)
{
	struct vt t;
	struct pkt p;
	struct vsock_hdr h = {.src_cid = 7, .dst_cid = VSOCK_HOST_CID, .type = VSOCK_TYPE_STREAM};

	vt_setup(&t);
	/* Nobody listens on the port. */
	guest_send(&t, VSOCK_OP_REQUEST, 6000, 4321, 0, 65536, 0, NULL, 0);
	ok(guest_recv(&t, &p) && p.h.op == VSOCK_OP_RST, "connect to a closed port: RST");
	is_int(p.h.dst_port, 6000);
	/* Data for no connection. */
	guest_send(&t, VSOCK_OP_RW, 6001, 4321, 0, 65536, 0, "x", 1);
	ok(guest_recv(&t, &p) && p.h.op == VSOCK_OP_RST, "stray RW: RST");
	/* A spoofed source CID is dropped silently. */
	h.op = VSOCK_OP_REQUEST;
	h.src_port = 1;
	h.dst_port = 2;
	guest_send_full(&t, &h, NULL);
	ok(!guest_recv(&t, &p), "spoofed packet dropped");
	/* An RST for nothing is not answered. */
	guest_send(&t, VSOCK_OP_RST, 6002, 4321, 0, 0, 0, NULL, 0);
	ok(!guest_recv(&t, &p), "stray RST dropped");
	is_int(virtio_vsock_nr_conns(t.v), 0);
	vt_teardown(&t);
}

/* b: a device restored from a's state, over a copy of a's guest memory
 * (its queues where a's driver left them), with a directory of its own. */
static void vt_restore(struct vt *b, struct vt *a, const struct snap_buf *sb)
{
	memset(b, 0, sizeof(*b));
	strcpy(b->dir, "/tmp/kvrun-vsock-XXXXXX");
	if (!mkdtemp(b->dir))
		abort();
	snprintf(b->path, sizeof(b->path), "%s/v.sock", b->dir);
	fake_drv_init(&b->d);
	memcpy(b->d.ram, a->d.ram, FAKE_RAM_SIZE);
	b->d.brk = a->d.brk;
	memcpy(b->d.vqs, a->d.vqs, sizeof(b->d.vqs));
	memcpy(b->rxgpa, a->rxgpa, sizeof(b->rxgpa));
	memcpy(b->rxpool, a->rxpool, sizeof(b->rxpool));
	b->tx_hdr = a->tx_hdr;
	b->tx_data = a->tx_data;
	if (event_loop_new(&b->loop) < 0 || virtio_vsock_new(&b->d.mem, b->loop, CID, b->path, true, &b->v) < 0)
		abort();
	fake_drv_attach(&b->d, virtio_vsock_mmio(b->v));
	is_int(virtio_vsock_state_load(b->v, sb->data, sb->len), 0);
	pump(b);
}

/* A restored guest may send on a stream of the saved VM before it has
 * handled the transport reset event (Linux takes the event and rx packets
 * in separate work items): an RST for it could reach the guest after the
 * event, when guest-init has already connected again, and end that new
 * stream if the guest reused the ports. The restored device drops such
 * packets; other strays still get their RST, and a new REQUEST on the
 * saved stream's ports is a new stream. */
TEST(restore_drops_saved_streams_packets)
{
	struct vt a, b;
	struct snap_buf sb = {0};
	struct pkt p;
	char buf[8];
	int la = 0, fa, lb, fb;

	vt_setup(&a);
	la = host_listen(&a, 1234);
	fa = connect_from_guest(&a, la, 65536);
	virtio_vsock_pause(a.v, true);
	is_int(virtio_vsock_state_save(a.v, &sb), 0);
	vt_restore(&b, &a, &sb);
	lb = host_listen(&b, 1234);
	guest_send(&b, VSOCK_OP_RW, 5000, 1234, 0, 65536, 0, "old", 3);
	ok(!guest_recv(&b, &p), "data of the saved stream: no RST");
	guest_send(&b, VSOCK_OP_SHUTDOWN, 5000, 1234, 3, 65536, 0, NULL, 0);
	ok(!guest_recv(&b, &p), "its SHUTDOWN: no RST");
	is_int(virtio_vsock_nr_conns(b.v), 0);
	guest_send(&b, VSOCK_OP_RW, 5001, 1234, 0, 65536, 0, "x", 1);
	ok(guest_recv(&b, &p) && p.h.op == VSOCK_OP_RST && p.h.dst_port == 5001, "a stray of no saved stream: RST");
	guest_send(&b, VSOCK_OP_REQUEST, 5000, 1234, 0, 65536, 0, NULL, 0);
	fb = accept4(lb, NULL, NULL, SOCK_CLOEXEC);
	ok(fb >= 0, "a REQUEST on the saved stream's ports connects");
	ok(guest_recv(&b, &p) && p.h.op == VSOCK_OP_RESPONSE && p.h.dst_port == 5000, "and is answered");
	guest_send(&b, VSOCK_OP_RW, 5000, 1234, 0, 65536, 0, "new", 3);
	is_int(host_read(fb, buf, sizeof(buf)), 3);
	ok(memcmp(buf, "new", 3) == 0, "the new stream carries data");
	/* A state of the previous format (no streams) still loads. */
	memcpy(sb.data, "VSK1", 4);
	memset(sb.data + 4, 0, 4);
	memmove(sb.data + 16, sb.data + 24, sb.len - 24);
	is_int(virtio_vsock_state_load(b.v, sb.data, sb.len - 8), 0);
	close(fb);
	close(lb);
	close(fa);
	close(la);
	vt_teardown(&b);
	vt_teardown(&a);
	snap_buf_free(&sb);
}

/* The host sends more than the guest's buffer: the device stops at the
 * guest's credit and resumes on CREDIT_UPDATE. */
TEST(credit_host_to_guest)
{
	struct vt t;
	struct pkt p;
	static char big[10000];
	uint32_t got = 0, fwd = 0;
	int l, fd, credit_requests = 0;

	vt_setup(&t);
	l = host_listen(&t, 1234);
	fd = connect_from_guest(&t, l, 4096);
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7);
	is_int(write(fd, big, sizeof(big)), sizeof(big));
	for (int round = 0; round < 3; round++) {
		uint32_t round_bytes = 0;

		for (int i = 0; i < 100 && guest_recv(&t, &p); i++) {
			if (p.h.op == VSOCK_OP_RW) {
				ok(memcmp(p.data, big + got, p.h.len) == 0, "bytes %u..%u in order", got,
				   got + p.h.len);
				got += p.h.len;
				round_bytes += p.h.len;
			} else if (p.h.op == VSOCK_OP_CREDIT_REQUEST) {
				credit_requests++;
			}
		}
		ok(got - fwd <= 4096, "round %d: within credit (%u in flight)", round, got - fwd);
		if (round < 2)
			is_int(round_bytes, 4096);
		fwd = got; /* the guest application read everything */
		guest_send(&t, VSOCK_OP_CREDIT_UPDATE, 5000, 1234, 0, 4096, fwd, NULL, 0);
	}
	is_int(got, sizeof(big));
	ok(credit_requests >= 1, "device asked for credit");
	close(fd);
	close(l);
	vt_teardown(&t);
}

/* The host does not read: the device buffers no more than the credit it
 * advertised, tells the guest as the host catches up, and resets a guest
 * that sends beyond its credit. */
TEST(credit_guest_to_host)
{
	struct vt t;
	struct pkt p;
	static uint8_t chunk[32768], rd[65536];
	uint32_t sent = 0, peer_fwd = 0, peer_alloc = VSOCK_BUF_ALLOC, hread = 0;
	bool in_order = true, got_rst = false;
	int l, fd;

	vt_setup(&t);
	l = host_listen(&t, 1234);
	fd = connect_from_guest(&t, l, 65536);
	/* Send while the credit seen by the guest allows it. */
	for (int i = 0; i < 100 && peer_alloc - (sent - peer_fwd) >= sizeof(chunk); i++) {
		for (size_t k = 0; k < sizeof(chunk); k++)
			chunk[k] = (uint8_t)((sent + k) % 251);
		guest_send(&t, VSOCK_OP_RW, 5000, 1234, 0, 65536, 0, chunk, sizeof(chunk));
		sent += sizeof(chunk);
		for (int k = 0; k < 100 && guest_recv(&t, &p); k++) {
			peer_fwd = p.h.fwd_cnt;
			peer_alloc = p.h.buf_alloc;
		}
	}
	ok(sent >= VSOCK_BUF_ALLOC, "guest could send its credit (%u bytes)", sent);
	is_int(virtio_vsock_nr_conns(t.v), 1);
	/* The host drains; the guest learns all was forwarded. */
	for (int i = 0; i < 10000; i++) {
		ssize_t n = host_read(fd, rd, sizeof(rd));

		if (n <= 0) {
			pump(&t);
			n = host_read(fd, rd, sizeof(rd));
			if (n <= 0)
				break;
		}
		for (ssize_t k = 0; k < n; k++)
			in_order &= rd[k] == (uint8_t)((hread + k) % 251);
		hread += (uint32_t)n;
	}
	is_int(hread, sent);
	ok(in_order, "host got the bytes in order");
	for (int k = 0; k < 100 && guest_recv(&t, &p); k++)
		peer_fwd = p.h.fwd_cnt;
	ok(sent - peer_fwd < VSOCK_BUF_ALLOC / 2, "credit update received (fwd_cnt %u of %u)", peer_fwd, sent);
	/* Now ignore the credit while the host does not read. */
	for (int i = 0; i < 32 && !got_rst; i++) {
		guest_send(&t, VSOCK_OP_RW, 5000, 1234, 0, 65536, 0, chunk, sizeof(chunk));
		for (int k = 0; k < 100 && guest_recv(&t, &p); k++)
			got_rst |= p.h.op == VSOCK_OP_RST;
	}
	ok(got_rst, "sending beyond credit resets the stream");
	is_int(virtio_vsock_nr_conns(t.v), 0);
	close(fd);
	close(l);
	vt_teardown(&t);
}

TEST(device_reset_drops_streams)
{
	struct vt t;
	struct pkt p;
	char buf[8];
	int l, fd;

	vt_setup(&t);
	l = host_listen(&t, 1234);
	fd = connect_from_guest(&t, l, 65536);
	fake_write(&t.d, VIRTIO_MMIO_STATUS, 0);
	pump(&t);
	is_int(virtio_vsock_nr_conns(t.v), 0);
	is_int(host_read(fd, buf, sizeof(buf)), 0);
	close(fd);
	/* The device works again after the driver brings it back. */
	vt_bringup(&t);
	fd = connect_from_guest(&t, l, 65536);
	guest_send(&t, VSOCK_OP_RW, 5000, 1234, 0, 65536, 0, "again", 5);
	is_int(host_read(fd, buf, sizeof(buf)), 5);
	ok(!guest_recv(&t, &p) || p.h.op != VSOCK_OP_RST, "no RST");
	close(fd);
	close(l);
	vt_teardown(&t);
}

TEST(malformed_tx)
{
	struct vt t;
	struct vsock_hdr h = {.src_cid = CID, .dst_cid = VSOCK_HOST_CID, .type = VSOCK_TYPE_STREAM, .op = VSOCK_OP_RW};

	vt_setup(&t);
	/* A header shorter than 44 bytes. */
	fake_add(&t.d, 1, (struct fbuf[]){{t.tx_hdr, 20, false}}, 1, false);
	fake_kick(&t.d, 1);
	pump(&t);
	ok(fake_read(&t.d, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET, "short header breaks the device");
	vt_bringup(&t);
	ok(!(fake_read(&t.d, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET), "healthy after reset");
	/* A payload length beyond the buffer. */
	h.len = 100;
	memcpy(fake_ptr(&t.d, t.tx_hdr), &h, 44);
	fake_add(&t.d, 1, (struct fbuf[]){{t.tx_hdr, 44, false}, {t.tx_data, 10, false}}, 2, false);
	fake_kick(&t.d, 1);
	pump(&t);
	ok(fake_read(&t.d, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET, "overlong len breaks the device");
	vt_teardown(&t);
}

/* An indirect descriptor whose table is the tx ring itself: the walk on
 * the event loop thread once never ended. In a child under an alarm, so
 * that a walk that does not end is a failed line. */
TEST(indirect_table_is_the_ring)
{
	int status = -1;
	pid_t pid = fork();

	if (pid == 0) {
		struct vt t;

		alarm(10);
		vt_setup(&t);
		fake_set_desc(&t.d, 1, 0, 0, t.d.vqs[1].desc, 16 * QSIZE, VIRTQ_DESC_F_INDIRECT, 0);
		fake_publish(&t.d, 1, 0);
		fake_kick(&t.d, 1);
		pump(&t);
		status = fake_read(&t.d, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET ? 0 : 1;
		vt_teardown(&t);
		_exit(status);
	}
	ok(pid > 0 && waitpid(pid, &status, 0) == pid, "child ran");
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "refused, device needs reset (%s %d)",
	   WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "exit", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

TAP_MAIN()
