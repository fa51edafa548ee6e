/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scenarios for kvrun's virtio-blk:
 *   virtio-blk      reads against the pattern the host wrote (blk_seed=N,
 *                   blk_sectors=N), write + read back, FLUSH, GET_ID
 *                   (blk_id=), chained and indirect requests, out-of-range
 *                   and (blk_ro=1) read-only errors
 *   virtio-blk-bad  malformed queues the device must refuse with
 *                   DEVICE_NEEDS_RESET, and work again after a reset
 */
#include "virtio.h"

#define BLK_IN 0
#define BLK_OUT 1
#define BLK_FLUSH 4
#define BLK_GET_ID 8
#define BLK_F_RO 5
#define BLK_F_FLUSH 9

struct blk_hdr {
	uint32_t type, reserved;
	uint64_t sector;
};

#define HDR ((volatile struct blk_hdr *)(uintptr_t)BUF_BASE)
#define STATUS_ADDR (BUF_BASE + 0x100)
#define STATUS (*(volatile uint8_t *)(uintptr_t)STATUS_ADDR)
#define DATA_ADDR (BUF_BASE + 0x1000)
#define DATA ((uint8_t *)(uintptr_t)DATA_ADDR)

struct seg {
	uint64_t addr;
	uint32_t len;
	bool write;
};

static void fill_chain(volatile struct vdesc *t, const struct seg *s, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		t[i].addr = s[i].addr;
		t[i].len = s[i].len;
		t[i].flags = (uint16_t)((s[i].write ? D_WRITE : 0) | (i + 1 < n ? D_NEXT : 0));
		t[i].next = (uint16_t)(i + 1 < n ? i + 1 : 0);
	}
}

/* One request through descriptors 0.. (or an indirect table), polled.
 * Returns the status byte, or -1 when no completion came. */
static int blk_submit(struct vdev *d, const struct seg *s, unsigned int n, bool indirect)
{
	struct vq *q = &d->q[0];

	STATUS = 0xee;
	if (indirect) {
		fill_chain((volatile struct vdesc *)(uintptr_t)INDIRECT_TABLE, s, n);
		q->desc[0] = (struct vdesc){INDIRECT_TABLE, n * 16, D_INDIRECT, 0};
	} else {
		fill_chain(q->desc, s, n);
	}
	vq_kick(d, 0, 0);
	uint32_t id;
	if (!vq_wait(d, 0, 4000000000ULL, &id, NULL) || id != 0)
		return -1;
	return STATUS;
}

static int blk_rw(struct vdev *d, uint32_t type, uint64_t sector, uint64_t addr, uint32_t len)
{
	HDR->type = type;
	HDR->reserved = 0;
	HDR->sector = sector;
	struct seg s[3] = {{BUF_BASE, 16, false}, {addr, len, type != BLK_OUT}, {STATUS_ADDR, 1, true}};
	if (!len) {
		s[1] = s[2];
		return blk_submit(d, s, 2, false);
	}
	return blk_submit(d, s, 3, false);
}

static uint8_t pattern(uint32_t seed, uint64_t sector, uint32_t i)
{
	return (uint8_t)(seed + sector * 131 + i * 7 + (i >> 8) * 13);
}

static bool sector_matches(const uint8_t *buf, uint32_t seed, uint64_t sector)
{
	for (uint32_t i = 0; i < 512; i++)
		if (buf[i] != pattern(seed, sector, i))
			return false;
	return true;
}

static bool blk_up(struct vdev *d)
{
	return vdev_init(d, 1, 1ULL << BLK_F_FLUSH | 1ULL << BLK_F_RO);
}

static void blk_checks(struct vdev *d)
{
	uint32_t seed = (uint32_t)cmd_num("blk_seed", 0);
	uint64_t sectors = cmd_num("blk_sectors", 0), last = sectors - 1;
	bool ro = cmd_num("blk_ro", 0);
	uint64_t cap = mmio_read64(d->base + R_CONFIG);
	char want_id[24] = "";

	tap_ok(cap == sectors, "blk: capacity %llu sectors (expected %llu)", (unsigned long long)cap,
	       (unsigned long long)sectors);
	tap_ok(has(d, F_EVENT_IDX) && has(d, F_INDIRECT), "blk: EVENT_IDX and INDIRECT_DESC offered and taken");
	tap_ok(has(d, BLK_F_RO) == ro, "blk: RO feature %s", ro ? "offered" : "not offered");

	wr(d, R_INT_ACK, rd(d, R_INT_STATUS));
	int st = blk_rw(d, BLK_IN, 0, DATA_ADDR, 512);
	tap_ok(st == 0 && sector_matches(DATA, seed, 0), "blk: read sector 0 matches the pattern (status %d)", st);
	struct deadline dl;
	deadline_start(&dl, 2000000000ULL);
	while (!(rd(d, R_INT_STATUS) & 1) && !deadline_passed(&dl))
		;
	uint32_t isr = rd(d, R_INT_STATUS);
	tap_ok(isr & 1, "blk: InterruptStatus shows a used buffer (0x%x)", isr);
	wr(d, R_INT_ACK, isr);

	st = blk_rw(d, BLK_IN, last, DATA_ADDR, 512);
	tap_ok(st == 0 && sector_matches(DATA, seed, last), "blk: read sector %llu matches the pattern (status %d)",
	       (unsigned long long)last, st);

	/* Two sectors, header, data and status in 3 descriptors, then the same
	 * through an indirect table. */
	HDR->type = BLK_IN;
	HDR->sector = 2;
	memset(DATA, 0, 1024);
	struct seg s3[3] = {{BUF_BASE, 16, false}, {DATA_ADDR, 1024, true}, {STATUS_ADDR, 1, true}};
	st = blk_submit(d, s3, 3, false);
	tap_ok(st == 0 && sector_matches(DATA, seed, 2) && sector_matches(DATA + 512, seed, 3),
	       "blk: chained 3-descriptor read of sectors 2-3 (status %d)", st);
	memset(DATA, 0, 1024);
	HDR->sector = 4;
	st = blk_submit(d, s3, 3, true);
	tap_ok(st == 0 && sector_matches(DATA, seed, 4) && sector_matches(DATA + 512, seed, 5),
	       "blk: indirect 3-descriptor read of sectors 4-5 (status %d)", st);

	HDR->sector = last;
	st = blk_submit(d, s3, 3, false);
	tap_ok(st == 1, "blk: 2-sector read from the last sector -> IOERR (status %d)", st);
	st = blk_rw(d, BLK_IN, sectors, DATA_ADDR, 512);
	tap_ok(st == 1, "blk: read at sector %llu (the capacity) -> IOERR (status %d)", (unsigned long long)sectors,
	       st);

	for (uint32_t i = 0; i < 512; i++)
		DATA[i] = (uint8_t)(0xa5 ^ i ^ seed);
	st = blk_rw(d, BLK_OUT, 1, DATA_ADDR, 512);
	if (ro) {
		tap_ok(st == 1, "blk: write to a read-only disk -> IOERR (status %d)", st);
		memset(DATA, 0, 512);
		st = blk_rw(d, BLK_IN, 1, DATA_ADDR, 512);
		tap_ok(st == 0 && sector_matches(DATA, seed, 1), "blk: read-only sector 1 unchanged (status %d)", st);
	} else {
		tap_ok(st == 0, "blk: write sector 1 (status %d)", st);
		memset(DATA, 0, 512);
		st = blk_rw(d, BLK_IN, 1, DATA_ADDR, 512);
		bool same = true;
		for (uint32_t i = 0; i < 512; i++)
			same &= DATA[i] == (uint8_t)(0xa5 ^ i ^ seed);
		tap_ok(st == 0 && same, "blk: sector 1 reads back what was written (status %d)", st);
	}

	if (has(d, BLK_F_FLUSH)) {
		st = blk_rw(d, BLK_FLUSH, 0, 0, 0);
		tap_ok(st == 0, "blk: FLUSH (status %d)", st);
	} else {
		tap_ok(ro, "blk: FLUSH offered on a writable disk");
	}

	memset(DATA, 0xff, 20);
	st = blk_rw(d, BLK_GET_ID, 0, DATA_ADDR, 20);
	cmdline_get("blk_id", want_id, sizeof(want_id));
	size_t idlen = strlen(want_id);
	bool id_ok = idlen <= 20 && !memcmp(DATA, want_id, idlen);
	for (size_t i = idlen; i < 20; i++)
		id_ok &= DATA[i] == 0;
	tap_ok(st == 0 && id_ok, "blk: GET_ID is '%s', zero-padded (status %d)", want_id, st);
	tap_ok(!(rd(d, R_STATUS) & S_NEEDS_RESET), "blk: device still healthy");
}

void check_virtio_blk(void)
{
	struct vdev d;

	if (!tap_ok(find_device(2, &d), "blk: virtio-blk found on the command line"))
		return;
	tap_ok(rd(&d, R_VERSION) == 2, "blk: virtio-mmio version 2 at 0x%llx gsi %u", (unsigned long long)d.base,
	       d.gsi);
	if (!tap_ok(blk_up(&d), "blk: device reaches DRIVER_OK"))
		return;
	blk_checks(&d);
}

/* ---- malformed requests ---- */

static bool wait_needs_reset(struct vdev *d)
{
	struct deadline dl;

	deadline_start(&dl, 4000000000ULL);
	while (!(rd(d, R_STATUS) & S_NEEDS_RESET))
		if (deadline_passed(&dl))
			return false;
	return true;
}

/* After a malformed request: NEEDS_RESET, nothing used, then a reset and
 * a good read. */
static void bad_case(struct vdev *d, const char *what, uint32_t seed)
{
	struct vq *q = &d->q[0];

	tap_ok(wait_needs_reset(d), "blk-bad: %s -> DEVICE_NEEDS_RESET", what);
	tap_ok(vq_used_idx(q) == q->last_used, "blk-bad: %s -> nothing used", what);
	tap_ok(blk_up(d), "blk-bad: %s: reset and re-init reach DRIVER_OK", what);
	int st = blk_rw(d, BLK_IN, 0, DATA_ADDR, 512);
	tap_ok(st == 0 && sector_matches(DATA, seed, 0), "blk-bad: %s: a good read after the reset (status %d)", what,
	       st);
}

static void blk_header(void)
{
	HDR->type = BLK_IN;
	HDR->reserved = 0;
	HDR->sector = 0;
}

void check_virtio_blk_bad(void)
{
	uint32_t seed = (uint32_t)cmd_num("blk_seed", 0);
	struct vdev d;

	if (!tap_ok(find_device(2, &d), "blk-bad: virtio-blk found on the command line"))
		return;
	if (!tap_ok(blk_up(&d), "blk-bad: device reaches DRIVER_OK"))
		return;
	blk_header();

	/* A head index beyond the queue size. */
	vq_kick(&d, 0, QSIZE + 3);
	bad_case(&d, "head index beyond the queue size", seed);

	/* A chain that loops: 0 -> 1 -> 0. */
	blk_header();
	d.q[0].desc[0] = (struct vdesc){BUF_BASE, 16, D_NEXT, 1};
	d.q[0].desc[1] = (struct vdesc){DATA_ADDR, 512, D_NEXT | D_WRITE, 0};
	vq_kick(&d, 0, 0);
	bad_case(&d, "a chain loop", seed);

	/* An indirect descriptor inside an indirect table. */
	blk_header();
	volatile struct vdesc *t = (volatile struct vdesc *)(uintptr_t)INDIRECT_TABLE;
	t[0] = (struct vdesc){BUF_BASE, 16, D_NEXT, 1};
	t[1] = (struct vdesc){INDIRECT_TABLE + 0x100, 32, D_INDIRECT | D_NEXT, 2};
	t[2] = (struct vdesc){STATUS_ADDR, 1, D_WRITE, 0};
	d.q[0].desc[0] = (struct vdesc){INDIRECT_TABLE, 48, D_INDIRECT, 0};
	vq_kick(&d, 0, 0);
	bad_case(&d, "a nested indirect descriptor", seed);

	/* An indirect descriptor whose table is the descriptor ring itself:
	 * entry 0 of that "table" is the indirect descriptor again. The walk
	 * must end (it once spun forever, and the reset below hung with it). */
	blk_header();
	d.q[0].desc[0] = (struct vdesc){(uint64_t)(uintptr_t)d.q[0].desc, QSIZE * 16, D_INDIRECT, 0};
	vq_kick(&d, 0, 0);
	bad_case(&d, "an indirect table that is the ring itself", seed);

	/* A data buffer far outside guest RAM. */
	blk_header();
	struct seg s[3] = {{BUF_BASE, 16, false}, {0x4000000000ULL, 512, true}, {STATUS_ADDR, 1, true}};
	fill_chain(d.q[0].desc, s, 3);
	vq_kick(&d, 0, 0);
	bad_case(&d, "a buffer outside RAM", seed);
}
