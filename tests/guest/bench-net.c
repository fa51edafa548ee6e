/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test=bench with bench_net=SPEC[,SPEC...]: virtio-net frames from CPL3.
 * SPEC is DIR:SIZE[:FRAMES]: DIR tx (guest to TAP) or rx (TAP to guest);
 * SIZE the Ethernet frame in bytes (64 to 1514), or 64K: TCP/IPv4 frames
 * of 64 KiB handed over whole with TSO (tx), or taken whole with the
 * guest's TSO (rx); FRAMES to send or receive (default 100000).
 *
 * tx keeps the ring full of frames (one descriptor each, header and
 * frame) and counts completions. rx posts 4 KiB buffers (MRG_RXBUF),
 * times from the first frame to the last and gives up after 3 s without
 * one: a host peer sends through the TAP's interface meanwhile.
 */
#include "bench.h"
#include "usermode.h"

#define RING 256
#define HDR_LEN 12
#define TX_SLOT 0x11000ULL /* 68 KiB: header and a 64 KiB frame */
#define TX_BASE BENCH_DATA_BASE
#define RX_BUF 4096ULL
#define RX_BASE (BENCH_DATA_BASE + RING * TX_SLOT)
#define TSO_FRAME 65514 /* IPv4 total length 65500 */
#define RX_STALL_TICKS 8000000000ULL

struct net_hdr {
	uint8_t flags, gso_type;
	uint16_t hdr_len, gso_size, csum_start, csum_offset, num_buffers;
} __attribute__((packed));

struct net_run {
	struct bq q[2]; /* rx, tx */
	bool tx;
	uint64_t size, frames;
	struct kvrun_bench_mark mark;
};

static uint16_t be16(uint16_t v)
{
	return (uint16_t)(v << 8 | v >> 8);
}

static uint16_t ip_csum(const uint8_t *p, unsigned int n)
{
	uint32_t s = 0;

	for (unsigned int i = 0; i < n; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* The frame of every tx slot: broadcast with a local EtherType, or a
 * TCP/IPv4 segment of 64 KiB for TSO (10.213.250.2 -> .1). */
static void build_frame(uint8_t *f, uint64_t size, struct net_hdr *h)
{
	static const uint8_t src[6] = {0x02, 0x6b, 0x76, 0x74, 0x01, 0x00};

	memset(f, 0xff, 6);
	memcpy(f + 6, src, 6);
	memset(h, 0, sizeof(*h));
	if (size <= 1514) {
		f[12] = 0x88;
		f[13] = 0xb5;
		for (uint64_t i = 14; i < size; i++)
			f[i] = (uint8_t)i;
		return;
	}
	f[12] = 0x08;
	f[13] = 0x00;
	uint8_t *ip = f + 14, *tcp = ip + 20;
	memset(ip, 0, 40);
	ip[0] = 0x45;
	*(uint16_t *)(ip + 2) = be16((uint16_t)(size - 14));
	ip[8] = 64;
	ip[9] = 6;
	const uint8_t addrs[8] = {10, 213, 250, 2, 10, 213, 250, 1};
	memcpy(ip + 12, addrs, 8);
	*(uint16_t *)(ip + 10) = be16(ip_csum(ip, 20));
	*(uint16_t *)tcp = be16(40000);
	*(uint16_t *)(tcp + 2) = be16(5201);
	tcp[12] = 5 << 4;
	tcp[13] = 0x18; /* PSH, ACK */
	*(uint16_t *)(tcp + 14) = be16(65535);
	for (uint64_t i = 54; i < size; i++)
		f[i] = (uint8_t)i;
	h->flags = 1; /* NEEDS_CSUM */
	h->gso_type = 1; /* TCPV4 */
	h->hdr_len = 54;
	h->gso_size = 1448;
	h->csum_start = 34;
	h->csum_offset = 16;
}

/* At CPL3: building 256 frames of 64 KiB is 16 million stores, which
 * an emulated CPL0 would take minutes over. */
static uint64_t tx_setup(void *arg)
{
	struct net_run *n = arg;

	for (uint64_t s = 0; s < RING; s++) {
		uint8_t *slot = (uint8_t *)(uintptr_t)(TX_BASE + s * TX_SLOT);

		build_frame(slot + HDR_LEN, n->size, (struct net_hdr *)slot);
		n->q[1].desc[s] = (struct vdesc){TX_BASE + s * TX_SLOT, (uint32_t)(HDR_LEN + n->size), 0, 0};
	}
	return 0;
}

static uint64_t tx_loop(void *arg)
{
	struct net_run *n = arg;
	struct bq *q = &n->q[1];
	uint64_t issued = 0, t0, last;
	uint32_t id, len;

	bench_mark(&n->mark, KVRUN_BENCH_BEGIN);
	t0 = last = rdtsc();
	bq_no_interrupts(q);
	for (uint16_t s = 0; s < RING && issued < n->frames; s++, issued++)
		bq_add(q, s);
	bq_publish(q);
	while (n->mark.ops < n->frames) {
		bool got = false;

		while (bq_get_used(q, &id, &len)) {
			got = true;
			n->mark.ops++;
			n->mark.bytes += n->size;
			if (issued < n->frames && id < RING) {
				bq_add(q, (uint16_t)id);
				issued++;
			}
		}
		if (got) {
			bq_no_interrupts(q);
			bq_publish(q);
			last = rdtsc();
		} else if (rdtsc() - last > BENCH_STALL_TICKS) {
			n->mark.errors = issued - n->mark.ops;
			break;
		} else {
			cpu_relax();
		}
	}
	n->mark.cycles = rdtsc() - t0;
	n->mark.kicks = q->kicks;
	bench_mark(&n->mark, KVRUN_BENCH_END);
	return user_mode_now();
}

static void rx_setup(struct net_run *n)
{
	struct bq *q = &n->q[0];

	for (uint64_t s = 0; s < RING; s++) {
		q->desc[s] = (struct vdesc){RX_BASE + s * RX_BUF, RX_BUF, D_WRITE, 0};
		bq_add(q, (uint16_t)s);
	}
	bq_no_interrupts(q);
	bq_publish(q);
}

/* Frames counted by their first buffer: its header says how many
 * buffers the frame spans (MRG_RXBUF). */
static uint64_t rx_loop(void *arg)
{
	struct net_run *n = arg;
	struct bq *q = &n->q[0];
	uint64_t t0 = 0, last = rdtsc(), rest = 0;
	uint32_t id, len;

	while (n->mark.ops < n->frames) {
		bool got = false;

		/* Frames past the count are left for the next workload's
		 * reset to drop. */
		while ((rest || n->mark.ops < n->frames) && bq_get_used(q, &id, &len) && id < RING) {
			const struct net_hdr *h = (const struct net_hdr *)(uintptr_t)(RX_BASE + id * RX_BUF);

			if (!t0) {
				bench_mark(&n->mark, KVRUN_BENCH_BEGIN);
				t0 = rdtsc();
			}
			got = true;
			if (!rest) {
				rest = h->num_buffers ? h->num_buffers : 1;
				n->mark.ops++;
				n->mark.bytes += len > HDR_LEN ? len - HDR_LEN : 0;
			} else {
				n->mark.bytes += len;
			}
			rest--;
			bq_add(q, (uint16_t)id);
		}
		if (got) {
			bq_no_interrupts(q);
			bq_publish(q);
			last = rdtsc();
		} else if (rdtsc() - last > RX_STALL_TICKS) {
			break;
		} else {
			cpu_relax();
		}
	}
	if (!t0) {
		bench_mark(&n->mark, KVRUN_BENCH_BEGIN);
		t0 = last;
	}
	n->mark.cycles = last - t0;
	n->mark.errors = n->frames - n->mark.ops;
	n->mark.kicks = q->kicks;
	bench_mark(&n->mark, KVRUN_BENCH_END);
	return user_mode_now();
}

static bool parse_net(const char *spec, struct net_run *n)
{
	char part[3][16];
	unsigned int k = 0, i = 0;

	for (const char *p = spec;; p++) {
		if (*p == ':' || !*p) {
			part[i][k] = 0;
			i++;
			k = 0;
			if (!*p || i == 3)
				break;
		} else if (k + 1 < sizeof(part[0])) {
			part[i][k++] = *p;
		}
	}
	if (i < 2)
		return false;
	n->tx = !memcmp(part[0], "tx", 3);
	if (!n->tx && memcmp(part[0], "rx", 3))
		return false;
	n->frames = 100000;
	if (!parse_size(part[1], &n->size) || (i == 3 && !parse_size(part[2], &n->frames)))
		return false;
	if (n->size == 65536)
		n->size = TSO_FRAME;
	return n->frames && ((n->size >= 60 && n->size <= 1514) || n->size == TSO_FRAME);
}

static void net_workload(struct vdev *d, const char *spec)
{
	static const uint16_t sizes[2] = {RING, RING};
	static struct net_run n;
	uint64_t want = 1ULL << NET_F_MAC | 1ULL << NET_F_MRG_RXBUF | 1ULL << NET_F_CSUM | 1ULL << NET_F_GUEST_CSUM |
	                1ULL << NET_F_HOST_TSO4 | 1ULL << NET_F_GUEST_TSO4;

	memset(&n, 0, sizeof(n));
	if (!tap_ok(parse_net(spec, &n), "bench: net workload '%s' is tx|rx:SIZE[:FRAMES]", spec))
		return;
	if (!tap_ok(bench_dev_init(d, n.q, 2, sizes, want) && has(d, NET_F_MRG_RXBUF) &&
	                (n.size <= 1514 || (has(d, NET_F_HOST_TSO4) && has(d, NET_F_GUEST_TSO4))),
	            "bench: virtio-net up (features 0x%llx)", (unsigned long long)d->features))
		return;
	bench_name(&n.mark, "net", n.tx ? "tx" : "rx", n.size == TSO_FRAME ? 65536 : n.size, RING);
	n.mark.queue_depth = RING;
	n.mark.block_size = n.size;
	bool at_cpl3;
	if (n.tx) {
		user_run(tx_setup, &n);
		at_cpl3 = user_run(tx_loop, &n);
	} else {
		rx_setup(&n);
		at_cpl3 = user_run(rx_loop, &n);
	}
	bench_print(&n.mark);
	tap_ok(at_cpl3, "bench: %s ran at CPL3", n.mark.name);
	tap_ok(n.mark.ops == n.frames && !n.mark.errors, "bench: %s: %llu of %llu frames", n.mark.name,
	       (unsigned long long)n.mark.ops, (unsigned long long)n.frames);
	tap_ok(!(rd(d, R_STATUS) & S_NEEDS_RESET), "bench: %s: device healthy", n.mark.name);
	wr(d, R_STATUS, 0);
}

void bench_net(void)
{
	char list[256], spec[64];
	struct vdev d;

	if (!cmdline_get("bench_net", list, sizeof(list)))
		return;
	if (!tap_ok(find_device(1, &d), "bench: virtio-net found"))
		return;
	user_map(BENCH_RING_BASE, RX_BASE + RING * RX_BUF - BENCH_RING_BASE);
	user_map(d.base, 0x1000);
	bench_port_present();
	user_mode_init();
	for (const char *p = list; *p;) {
		size_t k = 0;

		while (*p && *p != ',' && k + 1 < sizeof(spec))
			spec[k++] = *p++;
		spec[k] = 0;
		if (*p == ',')
			p++;
		net_workload(&d, spec);
	}
}
