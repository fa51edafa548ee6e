/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio-net driven by a fuzzed guest program, in userspace (no vhost),
 * over a backend of datagram socketpairs that stands in for a TAP: one
 * datagram is one frame with its 12-byte vnet header. The program may also
 * send frames from the "TAP" side (fuzzed bytes, into the guest's rx
 * buffers), take what the guest sent, and pause or resume the device. The
 * event loop is dispatched by the harness (tests/unit/virtio/poll-loop.c).
 */
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz.h"
#include "virtio/net/net.h"

struct sp_backend {
	struct net_backend be;
	int peers[NET_MAX_QUEUE_PAIRS];
};

static int sp_set_offload(struct net_backend *b, uint64_t features)
{
	return 0;
}

static int sp_set_active(struct net_backend *b, unsigned int nr)
{
	return nr >= 1 && nr <= b->nr_queues ? 0 : -1;
}

static void sp_free(struct net_backend *b)
{
	struct sp_backend *sp = (struct sp_backend *)b;

	for (unsigned int i = 0; i < b->nr_queues; i++) {
		close(b->fds[i]);
		close(sp->peers[i]);
	}
	free(sp);
}

static const struct net_backend_ops sp_ops = {
    .set_offload = sp_set_offload, .set_active = sp_set_active, .free = sp_free};

struct netfz {
	struct event_loop *loop;
	struct sp_backend *sp;
	struct virtio_net *n;
};

static void drain_peers(struct fz_guest *g)
{
	static uint8_t frame[70000];
	struct netfz *t = g->opaque;

	for (unsigned int i = 0; i < t->sp->be.nr_queues; i++)
		while (recv(t->sp->peers[i], frame, sizeof(frame), MSG_DONTWAIT) >= 0)
			;
}

static void net_extra(struct fz_guest *g, struct fz *f, uint8_t op)
{
	static uint8_t frame[70000];
	struct netfz *t = g->opaque;
	unsigned int q = fz_u8(f) % t->sp->be.nr_queues;

	switch (op % 4) {
	case 0:
	case 1: {
		/* A frame from the TAP: a vnet header and up to 64 KiB. */
		size_t len = fz_u16(f);

		if (!(len & 0x8000))
			len %= 300;
		len += 12;
		/* The header and the first bytes from the input; the rest is
		 * whatever an earlier frame left. */
		fz_take(f, frame, len < 76 ? len : 76);
		if (send(t->sp->peers[q], frame, len, MSG_DONTWAIT) < 0)
			break;
		fz_loop_settle(g);
		break;
	}
	case 2:
		virtio_net_pause(t->n, true);
		break;
	default:
		virtio_net_pause(t->n, false);
		fz_loop_settle(g);
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct virtio_net_opts o = {.mac = {0x52, 0x54, 0, 0x12, 0x34, 0x56}, .no_vhost = true};
	struct fz f = {data, size};
	struct netfz t = {0};
	struct fz_guest g;
	uint8_t first = fz_u8(&f);

	o.queue_pairs = 1 + first % 2;
	o.mtu = first & 0x80 ? 9000 : 1500;
	t.sp = calloc(1, sizeof(*t.sp));
	if (!t.sp || event_loop_new(&t.loop) < 0)
		abort();
	t.sp->be.ops = &sp_ops;
	t.sp->be.nr_queues = o.queue_pairs;
	t.sp->be.ufo = first & 0x40;
	for (unsigned int i = 0; i < o.queue_pairs; i++) {
		int sv[2];

		if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
			abort();
		t.sp->be.fds[i] = sv[0];
		t.sp->peers[i] = sv[1];
	}
	fz_guest_init(&g);
	if (virtio_net_new(&g.mem, t.loop, &t.sp->be, &o, &t.n) < 0)
		abort();
	g.opaque = &t;
	g.loop = t.loop;
	g.drain = drain_peers;
	g.settle = fz_loop_settle;
	g.extra = net_extra;
	fz_guest_attach(&g, virtio_net_mmio(t.n));
	fz_guest_run(&g, &f, 256);
	virtio_net_free(t.n);
	event_loop_free(t.loop);
	fz_guest_free(&g);
	return 0;
}
