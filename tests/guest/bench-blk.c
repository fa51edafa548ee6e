/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test=bench with bench_blk=SPEC[,SPEC...]: virtio-blk requests from CPL3.
 * SPEC is MODE:BS:QD[:OPS]: MODE read, write (sequential) randread or
 * randwrite; BS the request size (4K, 1M: a multiple of 512 up to 1 MiB);
 * QD the requests kept in flight (1-256); OPS the requests to complete
 * (default 10000). Each request is one descriptor of its slot's indirect
 * table (header, data, status), so the queue holds QD requests.
 *
 * bench_check=1 checks the data: reads must find bench_word(bench_seed,
 * offset) in every word, writes write bench_word(bench_wseed, offset).
 */
#include "bench.h"
#include "usermode.h"

#define BLK_IN 0
#define BLK_OUT 1
#define BLK_F_FLUSH 9
#define MAX_QD 256
#define MAX_BS MiB

struct blk_hdr {
	uint32_t type, reserved;
	uint64_t sector;
};

struct blk_run {
	struct bq q;
	bool write, random, check;
	uint64_t bs, qd, ops, blocks;
	uint64_t seed, wseed, rng, next_block;
	uint64_t offset[MAX_QD]; /* byte offset of each slot's request */
	struct kvrun_bench_mark mark;
};

#define HDRS ((volatile struct blk_hdr *)(uintptr_t)BENCH_META_BASE)
#define STATUS ((volatile uint8_t *)(uintptr_t)(BENCH_META_BASE + 0x1000))
#define TABLES ((volatile struct vdesc *)(uintptr_t)(BENCH_META_BASE + 0x2000))

static uint8_t *slot_data(const struct blk_run *b, uint64_t slot)
{
	return (uint8_t *)(uintptr_t)(BENCH_DATA_BASE + slot * b->bs);
}

static void fill(const struct blk_run *b, uint64_t slot, uint64_t off)
{
	uint64_t *w = (uint64_t *)slot_data(b, slot);

	for (uint64_t i = 0; i < b->bs / 8; i++)
		w[i] = bench_word(b->wseed, off + i * 8);
}

static bool matches(const struct blk_run *b, uint64_t slot, uint64_t off)
{
	const uint64_t *w = (const uint64_t *)slot_data(b, slot);

	for (uint64_t i = 0; i < b->bs / 8; i++)
		if (w[i] != bench_word(b->seed, off + i * 8))
			return false;
	return true;
}

/* Issue the next request in slot (its table is already set up). */
static void submit(struct blk_run *b, uint16_t slot)
{
	uint64_t block = b->random ? bench_rng(&b->rng) % b->blocks : b->next_block++ % b->blocks;
	uint64_t off = block * b->bs;

	b->offset[slot] = off;
	HDRS[slot].type = b->write ? BLK_OUT : BLK_IN;
	HDRS[slot].reserved = 0;
	HDRS[slot].sector = off / 512;
	STATUS[slot] = 0xee;
	if (b->write && b->check)
		fill(b, slot, off);
	bq_add(&b->q, slot);
}

static void complete(struct blk_run *b, uint32_t id, uint32_t len)
{
	bool ok = id < b->qd && STATUS[id] == 0 && len == (b->write ? 1 : b->bs + 1);

	if (ok && b->check && !b->write)
		ok = matches(b, id, b->offset[id]);
	b->mark.ops++;
	if (ok)
		b->mark.bytes += b->bs;
	else
		b->mark.errors++;
}

/* The timed loop, at CPL3: keep qd requests in flight until ops are done. */
static uint64_t blk_loop(void *arg)
{
	struct blk_run *b = arg;
	uint64_t issued = 0, t0, last_progress;
	uint32_t id, len;

	bench_mark(&b->mark, KVRUN_BENCH_BEGIN);
	t0 = last_progress = rdtsc();
	bq_no_interrupts(&b->q);
	for (uint16_t s = 0; s < b->qd && issued < b->ops; s++, issued++)
		submit(b, s);
	bq_publish(&b->q);
	while (b->mark.ops < b->ops) {
		bool got = false;

		while (bq_get_used(&b->q, &id, &len)) {
			got = true;
			complete(b, id, len);
			if (issued < b->ops && id < b->qd) {
				submit(b, (uint16_t)id);
				issued++;
			}
		}
		if (got) {
			bq_no_interrupts(&b->q);
			bq_publish(&b->q);
			last_progress = rdtsc();
		} else if (rdtsc() - last_progress > BENCH_STALL_TICKS) {
			b->mark.errors += issued - b->mark.ops;
			break;
		} else {
			cpu_relax();
		}
	}
	b->mark.cycles = rdtsc() - t0;
	b->mark.kicks = b->q.kicks;
	bench_mark(&b->mark, KVRUN_BENCH_END);
	return user_mode_now();
}

static bool parse_spec(const char *spec, struct blk_run *b, const char **ret_mode)
{
	char part[4][16];
	unsigned int n = 0, k = 0;

	for (const char *p = spec;; p++) {
		if (*p == ':' || !*p) {
			part[n][k] = 0;
			n++;
			k = 0;
			if (!*p || n == 4)
				break;
		} else if (k + 1 < sizeof(part[0])) {
			part[n][k++] = *p;
		}
	}
	if (n < 3)
		return false;
	b->write = !memcmp(part[0], "write", 6) || !memcmp(part[0], "randwrite", 10);
	b->random = !memcmp(part[0], "randread", 9) || !memcmp(part[0], "randwrite", 10);
	if (!b->write && !b->random && memcmp(part[0], "read", 5))
		return false;
	*ret_mode = b->write ? (b->random ? "randwrite" : "write") : (b->random ? "randread" : "read");
	b->ops = 10000;
	if (!parse_size(part[1], &b->bs) || !parse_size(part[2], &b->qd) || (n == 4 && !parse_size(part[3], &b->ops)))
		return false;
	return b->bs && b->bs % 512 == 0 && b->bs <= MAX_BS && b->qd >= 1 && b->qd <= MAX_QD && b->ops;
}

static uint16_t queue_size(uint64_t qd)
{
	uint16_t s = 1;

	while (s < qd)
		s = (uint16_t)(s * 2);
	return s;
}

/* Tables for every slot: header (readable), data, status (writable). */
static void blk_tables(struct blk_run *b)
{
	for (uint64_t s = 0; s < b->qd; s++) {
		volatile struct vdesc *t = TABLES + 3 * s;

		t[0] = (struct vdesc){BENCH_META_BASE + s * sizeof(struct blk_hdr), 16, D_NEXT, 1};
		t[1] = (struct vdesc){(uint64_t)(uintptr_t)slot_data(b, s), (uint32_t)b->bs,
		                      (uint16_t)(D_NEXT | (b->write ? 0 : D_WRITE)), 2};
		t[2] = (struct vdesc){BENCH_META_BASE + 0x1000 + s, 1, D_WRITE, 0};
		b->q.desc[s] = (struct vdesc){(uint64_t)(uintptr_t)t, 48, D_INDIRECT, 0};
	}
}

static void blk_workload(struct vdev *d, const char *spec, uint64_t capacity)
{
	static struct blk_run b;
	const char *mode = "";
	uint16_t size;

	memset(&b, 0, sizeof(b));
	if (!tap_ok(parse_spec(spec, &b, &mode), "bench: blk workload '%s' is MODE:BS:QD[:OPS]", spec))
		return;
	b.blocks = capacity * 512 / b.bs;
	b.check = cmd_num("bench_check", 0);
	b.seed = cmd_num("bench_seed", 0);
	b.wseed = cmd_num("bench_wseed", 1);
	b.rng = 0x2545f4914f6cdd1dULL ^ b.seed ^ b.bs ^ b.qd;
	size = queue_size(b.qd);
	if (!tap_ok(b.blocks > 0, "bench: disk holds at least one %llu-byte block", (unsigned long long)b.bs))
		return;
	/* FLUSH, as Linux takes it: without it every write is write-through. */
	if (!tap_ok(bench_dev_init(d, &b.q, 1, &size, 1ULL << BLK_F_FLUSH), "bench: virtio-blk up with a queue of %u",
	            size))
		return;
	blk_tables(&b);
	bench_name(&b.mark, "blk", mode, b.bs, b.qd);
	b.mark.queue_depth = b.qd;
	b.mark.block_size = b.bs;
	bool at_cpl3 = user_run(blk_loop, &b);
	bench_print(&b.mark);
	tap_ok(at_cpl3, "bench: %s ran at CPL3", b.mark.name);
	tap_ok(b.mark.ops == b.ops && !b.mark.errors, "bench: %s: %llu of %llu requests, %llu errors", b.mark.name,
	       (unsigned long long)b.mark.ops, (unsigned long long)b.ops, (unsigned long long)b.mark.errors);
	tap_ok(!(rd(d, R_STATUS) & S_NEEDS_RESET), "bench: %s: device healthy", b.mark.name);
}

void bench_blk(void)
{
	char list[256], spec[64];
	struct vdev d;
	uint64_t capacity;

	if (!cmdline_get("bench_blk", list, sizeof(list)))
		return;
	if (!tap_ok(find_device(2, &d), "bench: virtio-blk found"))
		return;
	capacity = mmio_read64(d.base + R_CONFIG);
	user_map(BENCH_RING_BASE, BENCH_DATA_BASE - BENCH_RING_BASE + MAX_QD * MAX_BS);
	user_map(d.base, 0x1000);
	bench_port_present();
	user_mode_init();
	for (const char *p = list; *p;) {
		size_t n = 0;

		while (*p && *p != ',' && n + 1 < sizeof(spec))
			spec[n++] = *p++;
		spec[n] = 0;
		if (*p == ',')
			p++;
		blk_workload(&d, spec, capacity);
	}
	wr(&d, R_STATUS, 0);
}
