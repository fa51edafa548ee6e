/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test=bench with bench_vsock=SPEC[,SPEC...] and vsock_port=P: a virtio-
 * vsock stream to host port P, driven from CPL3. SPEC is MODE:SIZE:COUNT:
 *   send  COUNT bytes to the host in packets of SIZE (up to 64 KiB),
 *         within the host's credit; timed until the host acknowledged
 *         them all (its fwd_cnt)
 *   recv  COUNT bytes from the host (which sends as fast as it can), in
 *         the device's packets; credit given back every half buffer
 *   rr    COUNT round trips of SIZE bytes: send, wait for the host's echo
 * A new stream per workload (REQUEST ... SHUTDOWN, RST); the host peer
 * listens at the device's <uds>_P and sinks, sources or echoes.
 */
#include "bench.h"
#include "usermode.h"

#define VS_REQUEST 1
#define VS_RESPONSE 2
#define VS_RST 3
#define VS_SHUTDOWN 4
#define VS_RW 5
#define VS_CREDIT_UPDATE 6
#define VS_CREDIT_REQUEST 7
#define VS_HOST_CID 2
#define VS_GUEST_CID 3
#define VS_HDR 44
#define VS_RING 64
#define VS_BUF 0x11000ULL /* header and 64 KiB */
#define VS_MAX_PAYLOAD 65536U
#define VS_BUF_ALLOC (1U << 20)
#define VS_TX_BASE BENCH_DATA_BASE
#define VS_RX_BASE (BENCH_DATA_BASE + VS_RING * VS_BUF)

struct vs_hdr {
	uint64_t src_cid, dst_cid;
	uint32_t src_port, dst_port, len;
	uint16_t type, op;
	uint32_t flags, buf_alloc, fwd_cnt;
} __attribute__((packed));

enum vs_mode { VS_SEND, VS_RECV, VS_RR };

struct vs_run {
	struct bq q[3]; /* rx, tx, event */
	enum vs_mode mode;
	uint64_t size, count;
	uint32_t local, peer;
	uint32_t tx_cnt, fwd_cnt, acked_fwd; /* ours: sent, received, last told */
	uint32_t peer_alloc, peer_fwd;
	bool connected, reset;
	uint16_t free_tx[VS_RING];
	unsigned int nr_free;
	uint64_t rx_bytes; /* payload received in this workload */
	struct kvrun_bench_mark mark;
};

static struct vs_hdr *tx_slot(uint16_t s)
{
	return (struct vs_hdr *)(uintptr_t)(VS_TX_BASE + s * VS_BUF);
}

/* Queue one packet (payload left as it is in the slot: the data is not
 * what is measured); false without a free tx slot. */
static bool vs_queue(struct vs_run *v, uint16_t op, uint32_t flags, uint32_t len)
{
	uint16_t s;
	struct vs_hdr *h;

	if (!v->nr_free)
		return false;
	s = v->free_tx[--v->nr_free];
	h = tx_slot(s);
	*h = (struct vs_hdr){VS_GUEST_CID, VS_HOST_CID, v->local, v->peer, len, 1, op, flags, VS_BUF_ALLOC, v->fwd_cnt};
	v->q[1].desc[s] = (struct vdesc){(uint64_t)(uintptr_t)h, VS_HDR + len, 0, 0};
	bq_add(&v->q[1], s);
	v->tx_cnt += op == VS_RW ? len : 0;
	if (op == VS_CREDIT_UPDATE || op == VS_RW)
		v->acked_fwd = v->fwd_cnt;
	return true;
}

static uint32_t vs_credit(const struct vs_run *v)
{
	return v->peer_alloc - (v->tx_cnt - v->peer_fwd);
}

/* Take in what the device returned: tx slots, and rx packets (credit,
 * data, the connection's state); rx buffers go straight back. True when
 * anything came. */
static bool vs_poll(struct vs_run *v)
{
	uint32_t id, len;
	bool any = false;

	while (bq_get_used(&v->q[1], &id, &len) && id < VS_RING) {
		v->free_tx[v->nr_free++] = (uint16_t)id;
		any = true;
	}
	while (bq_get_used(&v->q[0], &id, &len) && id < VS_RING) {
		const struct vs_hdr *h = (const struct vs_hdr *)(uintptr_t)(VS_RX_BASE + id * VS_BUF);

		any = true;
		if (len >= VS_HDR && h->src_cid == VS_HOST_CID && h->dst_port == v->local) {
			v->peer_alloc = h->buf_alloc;
			v->peer_fwd = h->fwd_cnt;
			if (h->op == VS_RESPONSE)
				v->connected = true;
			else if (h->op == VS_RST)
				v->reset = true;
			else if (h->op == VS_RW && h->len <= len - VS_HDR) {
				v->rx_bytes += h->len;
				v->fwd_cnt += h->len;
				v->mark.ops += v->mode == VS_RECV;
			}
		}
		bq_add(&v->q[0], (uint16_t)id);
	}
	if (any) {
		bq_no_interrupts(&v->q[0]);
		bq_no_interrupts(&v->q[1]);
		bq_publish(&v->q[0]);
	}
	return any;
}

/* Poll until cond(v) or a stall; false on a stall or a reset. */
static bool vs_until(struct vs_run *v, bool (*cond)(struct vs_run *))
{
	uint64_t last = rdtsc();

	while (!cond(v)) {
		if (v->reset)
			return false;
		if (vs_poll(v))
			last = rdtsc();
		else if (rdtsc() - last > BENCH_STALL_TICKS)
			return false;
		else
			cpu_relax();
	}
	return true;
}

static bool is_connected(struct vs_run *v)
{
	return v->connected;
}

static bool all_acked(struct vs_run *v)
{
	if (v->peer_fwd == v->tx_cnt)
		return true;
	/* Ask for the host's count once in a while; each answer lands in
	 * vs_poll(). */
	static uint64_t asked;
	if (rdtsc() - asked > 20000000ULL && vs_queue(v, VS_CREDIT_REQUEST, 0, 0)) {
		bq_publish(&v->q[1]);
		asked = rdtsc();
	}
	return false;
}

static bool rr_answered(struct vs_run *v)
{
	return v->rx_bytes >= v->size;
}

static bool recv_done(struct vs_run *v)
{
	if (v->fwd_cnt - v->acked_fwd >= VS_BUF_ALLOC / 2 && vs_queue(v, VS_CREDIT_UPDATE, 0, 0))
		bq_publish(&v->q[1]);
	return v->rx_bytes >= v->count;
}

static bool vs_send_all(struct vs_run *v)
{
	uint64_t left = v->count, last = rdtsc();

	while (left) {
		uint32_t n = (uint32_t)(left < v->size ? left : v->size), c = vs_credit(v);
		bool queued = false;

		if (c < n && c >= (v->size < 4096 ? v->size : 4096))
			n = c;
		while (n && n <= vs_credit(v) && vs_queue(v, VS_RW, 0, n)) {
			left -= n;
			v->mark.ops++;
			queued = true;
			n = (uint32_t)(left < v->size ? left : v->size);
		}
		if (queued)
			bq_publish(&v->q[1]);
		if (vs_poll(v) || queued)
			last = rdtsc();
		else if (v->reset || rdtsc() - last > BENCH_STALL_TICKS)
			return false;
	}
	return vs_until(v, all_acked);
}

static bool vs_rr(struct vs_run *v)
{
	for (uint64_t i = 0; i < v->count; i++) {
		v->rx_bytes = 0;
		if (!vs_queue(v, VS_RW, 0, (uint32_t)v->size))
			return false;
		bq_publish(&v->q[1]);
		if (!vs_until(v, rr_answered))
			return false;
		v->mark.ops++;
		/* The echo's bytes are ours to acknowledge. */
		if (v->fwd_cnt - v->acked_fwd >= VS_BUF_ALLOC / 2 && vs_queue(v, VS_CREDIT_UPDATE, 0, 0))
			bq_publish(&v->q[1]);
	}
	return true;
}

static uint64_t vs_loop(void *arg)
{
	struct vs_run *v = arg;
	bool ok;
	uint64_t t0;

	vs_queue(v, VS_REQUEST, 0, 0);
	bq_publish(&v->q[1]);
	ok = vs_until(v, is_connected);
	bench_mark(&v->mark, KVRUN_BENCH_BEGIN);
	t0 = rdtsc();
	if (ok && v->mode == VS_SEND)
		ok = vs_send_all(v);
	else if (ok && v->mode == VS_RECV)
		ok = vs_until(v, recv_done);
	else if (ok)
		ok = vs_rr(v);
	v->mark.cycles = rdtsc() - t0;
	v->mark.bytes = v->mode == VS_SEND ? v->tx_cnt : v->mode == VS_RECV ? v->rx_bytes : v->mark.ops * v->size * 2;
	v->mark.errors = !ok;
	v->mark.kicks = v->q[0].kicks + v->q[1].kicks;
	bench_mark(&v->mark, KVRUN_BENCH_END);
	if (vs_queue(v, VS_SHUTDOWN, 3, 0))
		bq_publish(&v->q[1]);
	return user_mode_now();
}

static bool parse_vs(const char *spec, struct vs_run *v, const char **ret_mode)
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
	if (i < 3 || !parse_size(part[1], &v->size) || !parse_size(part[2], &v->count))
		return false;
	if (!memcmp(part[0], "send", 5))
		v->mode = VS_SEND;
	else if (!memcmp(part[0], "recv", 5))
		v->mode = VS_RECV;
	else if (!memcmp(part[0], "rr", 3))
		v->mode = VS_RR;
	else
		return false;
	*ret_mode = v->mode == VS_SEND ? "send" : v->mode == VS_RECV ? "recv" : "rr";
	return v->size >= 1 && v->size <= VS_MAX_PAYLOAD && v->count;
}

static void vs_workload(struct vdev *d, const char *spec, uint32_t port, uint32_t n)
{
	static const uint16_t sizes[3] = {VS_RING, VS_RING, 4};
	static struct vs_run v;
	const char *mode = "";

	memset(&v, 0, sizeof(v));
	if (!tap_ok(parse_vs(spec, &v, &mode), "bench: vsock workload '%s' is send|recv|rr:SIZE:COUNT", spec))
		return;
	if (!tap_ok(bench_dev_init(d, v.q, 3, sizes, 0), "bench: virtio-vsock up"))
		return;
	v.local = 40000 + n;
	v.peer = port;
	for (uint16_t s = 0; s < VS_RING; s++) {
		v.free_tx[v.nr_free++] = s;
		v.q[0].desc[s] = (struct vdesc){VS_RX_BASE + s * VS_BUF, (uint32_t)VS_BUF, D_WRITE, 0};
		bq_add(&v.q[0], s);
	}
	bq_no_interrupts(&v.q[0]);
	bq_publish(&v.q[0]);
	bench_name(&v.mark, "vsock", mode, v.size, VS_RING);
	v.mark.queue_depth = VS_RING;
	v.mark.block_size = v.size;
	bool at_cpl3 = user_run(vs_loop, &v);
	bench_print(&v.mark);
	tap_ok(at_cpl3, "bench: %s ran at CPL3", v.mark.name);
	tap_ok(v.connected && !v.mark.errors, "bench: %s: %llu packets, %llu bytes%s", v.mark.name,
	       (unsigned long long)v.mark.ops, (unsigned long long)v.mark.bytes, v.reset ? " (reset)" : "");
	tap_ok(!(rd(d, R_STATUS) & S_NEEDS_RESET), "bench: %s: device healthy", v.mark.name);
	wr(d, R_STATUS, 0);
}

void bench_vsock(void)
{
	char list[256], spec[64];
	uint32_t port = (uint32_t)cmd_num("vsock_port", 0), n = 0;
	struct vdev d;

	if (!cmdline_get("bench_vsock", list, sizeof(list)))
		return;
	if (!tap_ok(find_device(19, &d), "bench: virtio-vsock found"))
		return;
	user_map(BENCH_RING_BASE, VS_RX_BASE + VS_RING * VS_BUF - BENCH_RING_BASE);
	user_map(d.base, 0x1000);
	bench_port_present();
	user_mode_init();
	for (const char *p = list; *p; n++) {
		size_t k = 0;

		while (*p && *p != ',' && k + 1 < sizeof(spec))
			spec[k++] = *p++;
		spec[k] = 0;
		if (*p == ',')
			p++;
		vs_workload(&d, spec, port, n);
	}
}
