/* SPDX-License-Identifier: Apache-2.0 */
/* virtio-net on fake guest memory: the fake driver plays the guest, a
 * datagram socketpair stands in for the TAP (one datagram = one frame with
 * its 12-byte vnet header), and the test dispatches the event loop itself. */
#include <errno.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake-driver.h"
#include "poll-loop.h"
#include "virtio/net/net-dev.h"
#include "tap.h"
#include "virtio/net/net.h"
#include "virtio/net/tap.h"

#define QSIZE 64
#define HDR 12
#define F(b) (1ULL << (b))
#define BASE (VIRTIO_BIT(VIRTIO_F_VERSION_1) | F(VIRTIO_NET_F_MAC) | F(VIRTIO_NET_F_MTU) | F(VIRTIO_NET_F_STATUS))
#define OFFLOADS (F(VIRTIO_NET_F_CSUM) | F(VIRTIO_NET_F_GUEST_CSUM) | F(VIRTIO_NET_F_GUEST_TSO4))

struct sp_backend {
	struct net_backend be;
	int peers[NET_MAX_QUEUE_PAIRS];
	uint64_t offload;
	unsigned int active;
};

static int sp_set_offload(struct net_backend *b, uint64_t features)
{
	((struct sp_backend *)b)->offload = features;
	return 0;
}

static int sp_set_active(struct net_backend *b, unsigned int nr)
{
	((struct sp_backend *)b)->active = nr;
	return 0;
}

static void sp_free(struct net_backend *b)
{
	for (unsigned int i = 0; i < b->nr_queues; i++)
		close(b->fds[i]);
	/* The peers stay open: the test closes them. */
}

static const struct net_backend_ops sp_ops = {
    .set_offload = sp_set_offload, .set_active = sp_set_active, .free = sp_free};

struct nt {
	struct fake_drv d;
	struct event_loop *loop;
	struct virtio_net *n;
	struct sp_backend sp;
	unsigned int pairs;
	bool detached; /* made by virtio_net_new_detached() */
};

static const uint8_t MAC[6] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56};

static void pump(struct nt *t)
{
	for (int i = 0; i < 1000; i++)
		if (poll_loop_once(t->loop, 0) == 0)
			return;
	printf("# event loop never went idle\n");
}

static void nt_setup_with(struct nt *t, const struct virtio_net_opts *o, bool detached, bool ufo)
{
	unsigned int pairs = o->queue_pairs;

	memset(t, 0, sizeof(*t));
	t->detached = detached;
	t->pairs = pairs;
	t->sp.be.ops = &sp_ops;
	t->sp.be.nr_queues = pairs;
	for (unsigned int i = 0; i < pairs; i++) {
		int sv[2];

		if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
			abort();
		t->sp.be.fds[i] = sv[0];
		t->sp.peers[i] = sv[1];
	}
	fake_drv_init(&t->d);
	if (event_loop_new(&t->loop) < 0)
		abort();
	t->sp.be.ufo = ufo;
	if ((t->detached ? virtio_net_new_detached(&t->d.mem, t->loop, o, &t->n)
	                 : virtio_net_new(&t->d.mem, t->loop, &t->sp.be, o, &t->n)) < 0)
		abort();
	fake_drv_attach(&t->d, virtio_net_mmio(t->n));
}

static void nt_setup_as(struct nt *t, unsigned int pairs, uint16_t mtu, bool detached)
{
	struct virtio_net_opts o = {.mtu = mtu, .queue_pairs = pairs};

	memcpy(o.mac, MAC, 6);
	nt_setup_with(t, &o, detached, false);
}

static void nt_setup(struct nt *t, unsigned int pairs, uint16_t mtu)
{
	nt_setup_as(t, pairs, mtu, false);
}

/* A device without a backend; the socketpair backend stays the test's
 * until attached (the test attaches t->sp.be). */
static void nt_setup_detached(struct nt *t, unsigned int pairs, uint16_t mtu)
{
	nt_setup_as(t, pairs, mtu, true);
}

static void nt_free(struct nt *t)
{
	bool own_be = t->detached && virtio_net_detached(t->n);

	virtio_net_free(t->n);
	event_loop_free(t->loop);
	for (unsigned int i = 0; i < t->pairs; i++) {
		close(t->sp.peers[i]);
		if (own_be)
			close(t->sp.be.fds[i]);
	}
	fake_drv_free(&t->d);
}

static uint32_t nqueues(struct nt *t)
{
	return 2 * t->pairs + (t->pairs > 1);
}

static uint32_t bringup(struct nt *t, uint64_t features)
{
	uint32_t s = fake_bringup(&t->d, features, nqueues(t), QSIZE);

	pump(t);
	return s;
}

static bool needs_reset(struct nt *t)
{
	return fake_read(&t->d, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET;
}

static uint64_t device_features(struct nt *t)
{
	uint64_t f;

	fake_write(&t->d, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
	f = fake_read(&t->d, VIRTIO_MMIO_DEVICE_FEATURES);
	fake_write(&t->d, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 1);
	return f | (uint64_t)fake_read(&t->d, VIRTIO_MMIO_DEVICE_FEATURES) << 32;
}

TEST(features_and_config)
{
	struct nt t;
	uint64_t f;
	uint8_t cfg[12];

	nt_setup(&t, 1, 9000);
	f = device_features(&t);
	ok(f & F(VIRTIO_NET_F_MRG_RXBUF), "MRG_RXBUF offered");
	ok((f & BASE) == BASE, "MAC, MTU, STATUS, VERSION_1 offered");
	ok((f & OFFLOADS) == OFFLOADS && (f & F(VIRTIO_NET_F_HOST_TSO6)), "checksum and TSO offered");
	ok(f & VIRTIO_BIT(VIRTIO_F_RING_EVENT_IDX), "EVENT_IDX offered");
	ok(!(f & F(VIRTIO_NET_F_MQ)) && !(f & F(VIRTIO_NET_F_CTRL_VQ)), "no MQ with one pair");
	for (int i = 0; i < 12; i += 4) {
		uint32_t w = fake_read(&t.d, VIRTIO_MMIO_CONFIG + i);

		memcpy(cfg + i, &w, 4);
	}
	ok(!memcmp(cfg, MAC, 6), "config: mac");
	is_int(cfg[6] | cfg[7] << 8, VIRTIO_NET_S_LINK_UP);
	is_int(cfg[10] | cfg[11] << 8, 9000);
	ok(!virtio_net_uses_vhost(t.n), "a socketpair backend stays in userspace");
	ok(bringup(&t, BASE | OFFLOADS) & VIRTIO_STATUS_DRIVER_OK, "driver ok");
	ok(t.sp.offload == (BASE | OFFLOADS), "backend told the negotiated offloads");
	nt_free(&t);
}

static uint64_t put(struct nt *t, const void *data, uint32_t len)
{
	uint64_t gpa = fake_alloc(&t->d, len);

	memcpy(fake_ptr(&t->d, gpa), data, len);
	return gpa;
}

TEST(tx_frames_to_backend)
{
	struct nt t;
	uint8_t hdr[HDR] = {VIRTIO_NET_HDR_F_NEEDS_CSUM, 0, 0, 0, 0, 0, 34, 0, 16, 0, 0, 0};
	uint8_t frame[300], got[2048];
	uint32_t id, len;
	int before;

	nt_setup(&t, 1, 1500);
	bringup(&t, BASE | OFFLOADS | VIRTIO_BIT(VIRTIO_F_RING_EVENT_IDX));
	for (unsigned int i = 0; i < sizeof(frame); i++)
		frame[i] = (uint8_t)i;
	before = t.d.irqs;
	/* Three frames, header and payload in separate descriptors, one kick. */
	for (int k = 0; k < 3; k++) {
		frame[0] = (uint8_t)k;
		fake_add(&t.d, 1,
		         (struct fbuf[]){{put(&t, hdr, HDR), HDR, false},
		                         {put(&t, frame, sizeof(frame)), sizeof(frame), false}},
		         2, false);
	}
	fake_kick(&t.d, 1);
	pump(&t);
	for (int k = 0; k < 3; k++) {
		ssize_t n = recv(t.sp.peers[0], got, sizeof(got), MSG_DONTWAIT);

		is_int(n, HDR + (int)sizeof(frame));
		ok(n > 0 && !memcmp(got, hdr, HDR), "frame %d: vnet header passed as is", k);
		ok(n > 0 && got[HDR] == k && !memcmp(got + HDR + 1, frame + 1, sizeof(frame) - 1), "frame %d: payload",
		   k);
	}
	for (int k = 0; k < 3; k++) {
		ok(fake_get_used(&t.d, 1, &id, &len), "chain %d returned", k);
		is_int(len, 0);
	}
	is_int(t.d.irqs - before, 1);
	struct virtio_net_stats st;
	virtio_net_get_stats(t.n, &st);
	is_int(st.tx_frames, 3);
	nt_free(&t);
}

TEST(tx_event_idx_suppresses_interrupt)
{
	struct nt t;
	uint8_t buf[HDR + 60] = {0};
	uint32_t id, len;
	int before;

	nt_setup(&t, 1, 1500);
	bringup(&t, BASE | VIRTIO_BIT(VIRTIO_F_RING_EVENT_IDX));
	/* The driver wants an interrupt only after the 10th used buffer. */
	fake_set_used_event(&t.d, 1, 9);
	before = t.d.irqs;
	fake_add(&t.d, 1, (struct fbuf[]){{put(&t, buf, sizeof(buf)), sizeof(buf), false}}, 1, false);
	fake_kick(&t.d, 1);
	pump(&t);
	ok(fake_get_used(&t.d, 1, &id, &len), "sent");
	is_int(t.d.irqs - before, 0);
	ok(recv(t.sp.peers[0], buf, sizeof(buf), MSG_DONTWAIT) == sizeof(buf), "frame arrived");
	nt_free(&t);
}

/* The frame the peer sends: header of zeroes, then a pattern. */
static void send_frame(struct nt *t, unsigned int p, size_t len)
{
	uint8_t *f = calloc(1, HDR + len);

	for (size_t i = 0; i < len; i++)
		f[HDR + i] = (uint8_t)(i * 7);
	if (send(t->sp.peers[p], f, HDR + len, 0) != (ssize_t)(HDR + len))
		abort();
	free(f);
}

static bool frame_ok(const uint8_t *data, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (data[i] != (uint8_t)(i * 7))
			return false;
	return true;
}

TEST(rx_mergeable_buffers)
{
	struct nt t;
	uint64_t gpa[3];
	uint32_t id[2], len[2];
	uint8_t joined[4096];

	nt_setup(&t, 1, 1500);
	bringup(&t, BASE | F(VIRTIO_NET_F_MRG_RXBUF) | VIRTIO_BIT(VIRTIO_F_RING_EVENT_IDX));
	for (int i = 0; i < 3; i++) {
		gpa[i] = fake_alloc(&t.d, 1024);
		fake_add(&t.d, 0, (struct fbuf[]){{gpa[i], 1024, true}}, 1, false);
	}
	fake_kick(&t.d, 0);
	pump(&t);
	send_frame(&t, 0, 1500);
	pump(&t);
	ok(fake_get_used(&t.d, 0, &id[0], &len[0]) && fake_get_used(&t.d, 0, &id[1], &len[1]), "two chains used");
	is_int(len[0], 1024);
	is_int(len[1], HDR + 1500 - 1024);
	ok(!fake_get_used(&t.d, 0, &id[0], &len[0]), "third chain left for the next frame");
	uint8_t *h = fake_ptr(&t.d, gpa[0]);
	is_int(h[10] | h[11] << 8, 2);
	memcpy(joined, h, 1024);
	memcpy(joined + 1024, fake_ptr(&t.d, gpa[1]), HDR + 1500 - 1024);
	ok(frame_ok(joined + HDR, 1500), "frame spread over both chains in order");
	nt_free(&t);
}

TEST(rx_without_mergeable)
{
	struct nt t;
	uint64_t gpa;
	uint32_t id, len;

	nt_setup(&t, 1, 1500);
	bringup(&t, BASE);
	gpa = fake_alloc(&t.d, 2048);
	/* Header and data in two descriptors of one chain. */
	fake_add(&t.d, 0, (struct fbuf[]){{gpa, HDR, true}, {gpa + HDR, 2048 - HDR, true}}, 2, false);
	fake_kick(&t.d, 0);
	send_frame(&t, 0, 100);
	pump(&t);
	ok(fake_get_used(&t.d, 0, &id, &len), "chain used");
	is_int(len, HDR + 100);
	uint8_t *h = fake_ptr(&t.d, gpa);
	is_int(h[10] | h[11] << 8, 1);
	ok(frame_ok(h + HDR, 100), "frame intact");
	nt_free(&t);
}

TEST(rx_no_buffers_pauses_backend)
{
	struct nt t;
	uint8_t peek[16];
	uint32_t id, len;
	struct virtio_net_stats st;
	uint64_t gpa;

	nt_setup(&t, 1, 1500);
	bringup(&t, BASE | F(VIRTIO_NET_F_MRG_RXBUF) | VIRTIO_BIT(VIRTIO_F_RING_EVENT_IDX));
	send_frame(&t, 0, 200);
	pump(&t);
	virtio_net_get_stats(t.n, &st);
	ok(st.rx_paused >= 1, "device paused reading");
	ok(recv(t.sp.be.fds[0], peek, sizeof(peek), MSG_PEEK | MSG_DONTWAIT) > 0, "frame still queued in the backend");
	is_int(poll_loop_once(t.loop, 0), 0); /* nothing watched: no busy loop */
	send_frame(&t, 0, 300);
	is_int(poll_loop_once(t.loop, 0), 0);
	/* Not enough room for a full-size frame yet: still paused. */
	gpa = fake_alloc(&t.d, 4096);
	fake_add(&t.d, 0, (struct fbuf[]){{gpa, 1000, true}}, 1, false);
	fake_kick(&t.d, 0);
	pump(&t);
	ok(!fake_get_used(&t.d, 0, &id, &len), "one small buffer is not used");
	is_int(fake_avail_event(&t.d, 0), 1);
	fake_add(&t.d, 0, (struct fbuf[]){{gpa + 1024, 1000, true}}, 1, false);
	fake_add(&t.d, 0, (struct fbuf[]){{gpa + 2048, 2000, true}}, 1, false);
	fake_kick(&t.d, 0);
	pump(&t);
	ok(fake_get_used(&t.d, 0, &id, &len), "first frame delivered after the kick");
	is_int(len, HDR + 200);
	ok(fake_get_used(&t.d, 0, &id, &len), "second frame delivered");
	is_int(len, HDR + 300);
	nt_free(&t);
}

TEST(malformed_chains_refused)
{
	struct nt t;
	uint8_t small[4] = {0};
	uint64_t gpa;

	nt_setup(&t, 1, 1500);
	bringup(&t, BASE);
	fake_add(&t.d, 1, (struct fbuf[]){{put(&t, small, 4), 4, false}}, 1, false);
	fake_kick(&t.d, 1);
	pump(&t);
	ok(needs_reset(&t), "tx chain shorter than the header");
	nt_free(&t);

	nt_setup(&t, 1, 1500);
	bringup(&t, BASE);
	gpa = fake_alloc(&t.d, 128);
	fake_add(&t.d, 1, (struct fbuf[]){{gpa, 64, false}, {gpa + 64, 64, true}}, 2, false);
	fake_kick(&t.d, 1);
	pump(&t);
	ok(needs_reset(&t), "tx chain with a writable buffer");
	nt_free(&t);

	nt_setup(&t, 1, 1500);
	bringup(&t, BASE);
	gpa = fake_alloc(&t.d, 4096);
	fake_add(&t.d, 0, (struct fbuf[]){{gpa, 64, false}, {gpa + 64, 2000, true}}, 2, false);
	fake_kick(&t.d, 0);
	send_frame(&t, 0, 60);
	pump(&t);
	ok(needs_reset(&t), "rx chain with a readable buffer");
	nt_free(&t);

	nt_setup(&t, 1, 1500);
	bringup(&t, BASE);
	fake_add(&t.d, 0, (struct fbuf[]){{FAKE_RAM_SIZE - 8, 64, true}}, 1, false);
	fake_kick(&t.d, 0);
	send_frame(&t, 0, 60);
	pump(&t);
	ok(needs_reset(&t), "rx buffer outside guest RAM");
	nt_free(&t);
}

static uint8_t ctrl(struct nt *t, uint8_t cls, uint8_t cmd, uint16_t arg)
{
	uint8_t out[4] = {cls, cmd, (uint8_t)arg, (uint8_t)(arg >> 8)};
	uint64_t ack = fake_alloc(&t->d, 1);
	uint32_t q = 2 * t->pairs, id, len;

	*(uint8_t *)fake_ptr(&t->d, ack) = 0xaa;
	fake_add(&t->d, q, (struct fbuf[]){{put(t, out, 4), 4, false}, {ack, 1, true}}, 2, false);
	fake_kick(&t->d, q);
	pump(t);
	if (!fake_get_used(&t->d, q, &id, &len) || len != 1)
		return 0xff;
	return *(uint8_t *)fake_ptr(&t->d, ack);
}

TEST(multiqueue_control)
{
	struct nt t;
	uint64_t f;
	uint8_t buf[HDR + 64] = {0};

	nt_setup(&t, 2, 1500);
	f = device_features(&t);
	ok((f & F(VIRTIO_NET_F_MQ)) && (f & F(VIRTIO_NET_F_CTRL_VQ)), "MQ and CTRL_VQ with two pairs");
	is_int(fake_read(&t.d, VIRTIO_MMIO_CONFIG + 8) & 0xffff, 2);
	bringup(&t, BASE | F(VIRTIO_NET_F_MQ) | F(VIRTIO_NET_F_CTRL_VQ));
	is_int(t.sp.active, 1);
	is_int(ctrl(&t, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, 2), VIRTIO_NET_OK);
	is_int(t.sp.active, 2);
	is_int(ctrl(&t, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, 3), VIRTIO_NET_ERR);
	is_int(ctrl(&t, VIRTIO_NET_CTRL_RX, 0, 0), VIRTIO_NET_ERR);
	/* The second pair's tx queue reaches the second backend fd. */
	fake_add(&t.d, 3, (struct fbuf[]){{put(&t, buf, sizeof(buf)), sizeof(buf), false}}, 1, false);
	fake_kick(&t.d, 3);
	pump(&t);
	ok(recv(t.sp.peers[1], buf, sizeof(buf), MSG_DONTWAIT) == sizeof(buf), "tx1 -> backend queue 1");
	ok(!needs_reset(&t), "device healthy");
	nt_free(&t);
}

TEST(tap_offload_flags)
{
	is_int(net_tap_offload_flags(F(VIRTIO_NET_F_GUEST_TSO4)), 0);
	is_int(net_tap_offload_flags(F(VIRTIO_NET_F_GUEST_CSUM)), TUN_F_CSUM);
	is_int(net_tap_offload_flags(F(VIRTIO_NET_F_GUEST_CSUM) | F(VIRTIO_NET_F_GUEST_TSO4) |
	                             F(VIRTIO_NET_F_GUEST_TSO6) | F(VIRTIO_NET_F_GUEST_ECN)),
	       TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN);
	is_int(net_tap_offload_flags(F(VIRTIO_NET_F_GUEST_CSUM) | F(VIRTIO_NET_F_GUEST_UFO)), TUN_F_CSUM | TUN_F_UFO);
}

/* Snapshot state: a running device saved and loaded into a fresh one over
 * a copy of guest RAM; another MAC, pair count or a short state refused. */
TEST(snapshot_state)
{
	struct nt a, b, c;
	struct snap_buf sb = {0};

	nt_setup(&a, 1, 1500);
	is_int(bringup(&a, BASE | OFFLOADS) & VIRTIO_STATUS_DRIVER_OK, VIRTIO_STATUS_DRIVER_OK);
	virtio_net_pause(a.n, true);
	is_int(virtio_net_state_save(a.n, &sb), 0);
	virtio_net_pause(a.n, false);

	nt_setup(&b, 1, 1500);
	memcpy(b.d.ram, a.d.ram, FAKE_RAM_SIZE);
	b.d.brk = a.d.brk;
	memcpy(b.d.vqs, a.d.vqs, sizeof(b.d.vqs));
	is_int(virtio_net_state_load(b.n, sb.data, sb.len), 0);
	ok(virtio_mmio_active(virtio_net_mmio(b.n)), "restored device runs");
	ok(b.sp.offload & F(VIRTIO_NET_F_GUEST_CSUM), "offloads given to the new backend");
	is_int(virtio_net_state_load(b.n, sb.data, sb.len - 1), -EBADMSG);
	is_int(virtio_net_state_load(b.n, sb.data, 6), -EBADMSG);
	nt_free(&b);

	nt_setup(&c, 2, 1500);
	is_int(virtio_net_state_load(c.n, sb.data, sb.len), -EINVAL);
	nt_free(&c);
	nt_setup(&c, 1, 1500);
	c.n->config.mac[5] ^= 1;
	is_int(virtio_net_state_load(c.n, sb.data, sb.len), -EINVAL);
	nt_free(&c);
	nt_free(&a);
	snap_buf_free(&sb);
}

static uint16_t link_status(struct nt *t)
{
	return (uint16_t)(fake_read(&t->d, VIRTIO_MMIO_CONFIG + 4) >> 16); /* bytes 6-7 */
}

/* A template's device: probed with no backend, link down, frames the
 * guest sends dropped and its rx buffers left alone; then a backend is
 * attached: offloads applied, link up with a config change interrupt,
 * the buffers posted meanwhile take frames, tx reaches the backend. */
TEST(detached_then_attach)
{
	struct nt t;
	struct virtio_net_stats st;
	struct sp_backend two = {.be = {.ops = &sp_ops, .nr_queues = 2, .fds = {-1, -1}}};
	uint8_t buf[HDR + 60] = {0};
	uint32_t id, len, gen;
	uint64_t rx;
	int before;

	nt_setup_detached(&t, 1, 1500);
	ok(virtio_net_detached(t.n), "made without a backend");
	ok(!virtio_net_uses_vhost(t.n), "never vhost-net");
	ok(!(device_features(&t) & F(VIRTIO_NET_F_GUEST_UFO)), "no UFO offered");
	is_int(link_status(&t), 0);
	is_int(bringup(&t, BASE | OFFLOADS) & VIRTIO_STATUS_DRIVER_OK, VIRTIO_STATUS_DRIVER_OK);
	rx = fake_alloc(&t.d, 70000);
	fake_add(&t.d, 0, (struct fbuf[]){{rx, 70000, true}}, 1, false);
	fake_kick(&t.d, 0);
	fake_add(&t.d, 1, (struct fbuf[]){{put(&t, buf, sizeof(buf)), sizeof(buf), false}}, 1, false);
	fake_kick(&t.d, 1);
	pump(&t);
	ok(fake_get_used(&t.d, 1, &id, &len), "tx chain returned without a backend");
	virtio_net_get_stats(t.n, &st);
	is_int(st.tx_dropped, 1);
	ok(!fake_get_used(&t.d, 0, &id, &len), "rx buffer not used");
	ok(!needs_reset(&t), "device healthy");

	is_int(virtio_net_attach_backend(t.n, &two.be), -EINVAL);
	ok(virtio_net_detached(t.n), "another pair count refused, still without a backend");
	gen = fake_read(&t.d, VIRTIO_MMIO_CONFIG_GENERATION);
	fake_write(&t.d, VIRTIO_MMIO_INTERRUPT_ACK, fake_read(&t.d, VIRTIO_MMIO_INTERRUPT_STATUS));
	before = t.d.irqs;
	is_int(virtio_net_attach_backend(t.n, &t.sp.be), 0);
	ok(!virtio_net_detached(t.n), "attached");
	ok(t.sp.offload == (BASE | OFFLOADS), "the backend got the offloads negotiated before");
	is_int(link_status(&t), VIRTIO_NET_S_LINK_UP);
	ok(fake_read(&t.d, VIRTIO_MMIO_CONFIG_GENERATION) != gen, "config generation changed");
	ok(fake_read(&t.d, VIRTIO_MMIO_INTERRUPT_STATUS) & VIRTIO_MMIO_INT_CONFIG, "config change interrupt");
	ok(t.d.irqs > before, "interrupt raised");
	pump(&t);
	send_frame(&t, 0, 60);
	pump(&t);
	ok(fake_get_used(&t.d, 0, &id, &len), "the buffer posted before the attach takes a frame");
	is_int(len, HDR + 60);
	ok(frame_ok((uint8_t *)fake_ptr(&t.d, rx) + HDR, 60), "frame intact");
	fake_add(&t.d, 1, (struct fbuf[]){{put(&t, buf, sizeof(buf)), sizeof(buf), false}}, 1, false);
	fake_kick(&t.d, 1);
	pump(&t);
	ok(recv(t.sp.peers[0], buf, sizeof(buf), MSG_DONTWAIT) == sizeof(buf), "tx reaches the backend");
	is_int(virtio_net_attach_backend(t.n, &t.sp.be), -EBUSY);
	ok(!needs_reset(&t), "device healthy");
	nt_free(&t);
}

/* Two pairs: the pairs the driver made active without a backend are the
 * backend's after the attach. */
TEST(detached_multiqueue_attach)
{
	struct nt t;

	nt_setup_detached(&t, 2, 1500);
	bringup(&t, BASE | F(VIRTIO_NET_F_MQ) | F(VIRTIO_NET_F_CTRL_VQ));
	is_int(ctrl(&t, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, 2), VIRTIO_NET_OK);
	is_int(virtio_net_attach_backend(t.n, &t.sp.be), 0);
	is_int(t.sp.active, 2);
	nt_free(&t);
}

/* A template: a device without a backend, running, saved; loaded into a
 * fresh one (still link down), which then gets its backend. */
TEST(detached_snapshot_then_attach)
{
	struct nt a, b;
	struct snap_buf sb = {0};
	uint8_t buf[HDR + 60] = {0};

	nt_setup_detached(&a, 1, 65535);
	is_int(bringup(&a, BASE | OFFLOADS) & VIRTIO_STATUS_DRIVER_OK, VIRTIO_STATUS_DRIVER_OK);
	virtio_net_pause(a.n, true);
	is_int(virtio_net_state_save(a.n, &sb), 0);

	nt_setup_detached(&b, 1, 65535);
	memcpy(b.d.ram, a.d.ram, FAKE_RAM_SIZE);
	b.d.brk = a.d.brk;
	memcpy(b.d.vqs, a.d.vqs, sizeof(b.d.vqs));
	is_int(virtio_net_state_load(b.n, sb.data, sb.len), 0);
	ok(virtio_mmio_active(virtio_net_mmio(b.n)), "restored device runs");
	is_int(link_status(&b), 0);
	is_int(virtio_net_attach_backend(b.n, &b.sp.be), 0);
	ok(b.sp.offload == (BASE | OFFLOADS), "offloads of the saved driver given to the backend");
	is_int(link_status(&b), VIRTIO_NET_S_LINK_UP);
	fake_add(&b.d, 1, (struct fbuf[]){{put(&b, buf, sizeof(buf)), sizeof(buf), false}}, 1, false);
	fake_kick(&b.d, 1);
	pump(&b);
	ok(recv(b.sp.peers[0], buf, sizeof(buf), MSG_DONTWAIT) == sizeof(buf), "restored device sends");
	nt_free(&b);
	nt_free(&a);
	snap_buf_free(&sb);
}

/* A device the guest never brought up (no driver for it: the test
 * guest's, a guest kernel without virtio-net) is saved with no active pair
 * and must load: it was refused as a bad state, so such a VM's checkpoint
 * could not be restored. A running device with no active pair is one. */
TEST(never_driven_snapshot_loads)
{
	struct nt a, b;
	struct snap_buf sb = {0};

	nt_setup_detached(&a, 1, 1500);
	virtio_net_pause(a.n, true);
	is_int(virtio_net_state_save(a.n, &sb), 0);
	nt_setup_detached(&b, 1, 1500);
	is_int(virtio_net_state_load(b.n, sb.data, sb.len), 0);
	ok(!virtio_mmio_active(virtio_net_mmio(b.n)), "it stays where the driver left it: not running");
	is_int(virtio_net_attach_backend(b.n, &b.sp.be), 0);
	nt_free(&b);
	nt_free(&a);
	snap_buf_free(&sb);
}

/* A checkpoint: a device over a TAP that takes UFO, two pairs active,
 * saved; the restoring side reads its options from the state, makes one
 * without a backend as it was (UFO offered too), loads the state into it,
 * and attaches the new TAP: the pairs and offloads the driver negotiated
 * are the new backend's. */
TEST(checkpoint_state_opts_then_attach)
{
	struct virtio_net_opts o = {.mtu = 1400, .queue_pairs = 2}, got, no_ufo;
	uint64_t feat = BASE | OFFLOADS | F(VIRTIO_NET_F_MQ) | F(VIRTIO_NET_F_CTRL_VQ) | F(VIRTIO_NET_F_GUEST_UFO);
	struct nt a, b, c;
	struct snap_buf sb = {0};
	uint8_t buf[HDR + 60] = {0}, bad[8] = {0};

	memcpy(o.mac, MAC, 6);
	nt_setup_with(&a, &o, false, true);
	is_int(bringup(&a, feat) & VIRTIO_STATUS_DRIVER_OK, VIRTIO_STATUS_DRIVER_OK);
	is_int(ctrl(&a, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, 2), VIRTIO_NET_OK);
	virtio_net_pause(a.n, true);
	is_int(virtio_net_state_save(a.n, &sb), 0);

	is_int(virtio_net_state_opts(sb.data, sb.len, &got), 0);
	ok(!memcmp(got.mac, MAC, 6), "saved MAC read back");
	is_int(got.mtu, 1400);
	is_int(got.queue_pairs, 2);
	ok(got.ufo, "the device offered UFO");
	is_int(virtio_net_state_opts(sb.data, 20, &got), -EBADMSG);
	is_int(virtio_net_state_opts(bad, sizeof(bad), &got), -EBADMSG);
	sb.data[0] ^= 1; /* the magic */
	is_int(virtio_net_state_opts(sb.data, sb.len, &got), -EINVAL);
	sb.data[0] ^= 1;

	/* Without UFO the device is another one: refused. */
	no_ufo = got;
	no_ufo.ufo = false;
	nt_setup_with(&c, &no_ufo, true, false);
	memcpy(c.d.ram, a.d.ram, FAKE_RAM_SIZE);
	is_int(virtio_net_state_load(c.n, sb.data, sb.len), -EINVAL);
	nt_free(&c);

	is_int(virtio_net_state_opts(sb.data, sb.len, &got), 0);
	nt_setup_with(&b, &got, true, false);
	memcpy(b.d.ram, a.d.ram, FAKE_RAM_SIZE);
	b.d.brk = a.d.brk;
	memcpy(b.d.vqs, a.d.vqs, sizeof(b.d.vqs));
	is_int(virtio_net_state_load(b.n, sb.data, sb.len), 0);
	ok(virtio_mmio_active(virtio_net_mmio(b.n)), "restored device runs");
	is_int(virtio_net_attach_backend(b.n, &b.sp.be), 0);
	is_int(b.sp.active, 2);
	ok((b.sp.offload & feat) == feat, "the new backend has the negotiated offloads, UFO included");
	is_int(link_status(&b), VIRTIO_NET_S_LINK_UP);
	fake_add(&b.d, 1, (struct fbuf[]){{put(&b, buf, sizeof(buf)), sizeof(buf), false}}, 1, false);
	fake_kick(&b.d, 1);
	pump(&b);
	ok(recv(b.sp.peers[0], buf, sizeof(buf), MSG_DONTWAIT) == sizeof(buf), "restored device sends");
	uint8_t mac[6];
	virtio_net_get_mac(b.n, mac);
	ok(!memcmp(mac, MAC, 6), "virtio_net_get_mac: the MAC the driver read");
	ok(!needs_reset(&b), "device healthy");
	nt_free(&b);
	nt_free(&a);
	snap_buf_free(&sb);
}

/* An indirect descriptor whose table is the tx ring itself: the walk on
 * the event loop thread once never ended. In a child under an alarm, so
 * that a walk that does not end is a failed line. */
TEST(indirect_table_is_the_ring)
{
	int status = -1;
	pid_t pid = fork();

	if (pid == 0) {
		struct nt t;

		alarm(10);
		nt_setup(&t, 1, 1500);
		bringup(&t, BASE | VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC));
		fake_set_desc(&t.d, 1, 0, 0, t.d.vqs[1].desc, 16 * QSIZE, VIRTQ_DESC_F_INDIRECT, 0);
		fake_publish(&t.d, 1, 0);
		fake_kick(&t.d, 1);
		pump(&t);
		status = needs_reset(&t) ? 0 : 1;
		nt_free(&t);
		_exit(status);
	}
	ok(pid > 0 && waitpid(pid, &status, 0) == pid, "child ran");
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "refused, device needs reset (%s %d)",
	   WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "exit", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

TAP_MAIN()
