/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test=virtio-balloon: kvrun's virtio-balloon (kvrun boot --balloon).
 *
 *   - balloon_fill=SIZE (default 64M) of RAM from 64 MiB is written (one
 *     qword per page, so every page costs the host memory), then reported
 *     free in 2 MiB blocks on the reporting queue, 16 blocks per report;
 *     every page must read zero afterwards (the host gave it back). With
 *     balloon_keep=1 the pages are written and kept, for the host's
 *     comparison of its RSS.
 *   - Inflate: PFNs of written pages (consecutive and not) plus one outside
 *     RAM; the written pages read zero afterwards; deflate them again.
 *   - Config: num_pages 0 (kvrun boot sets no target), actual written and
 *     read back.
 *   - A report naming memory outside RAM puts the device in
 *     DEVICE_NEEDS_RESET; after a reset it serves reports again.
 *   - balloon_snapshot=1 (kvrun boot --snapshot-on-port): the first half
 *     of the written pages is reported, then the guest asks for a
 *     snapshot, then writes the second half again and reports it. In the
 *     saved VM every page reads zero at the end. In a VM restored from
 *     the file (whose balloon must serve the queues it had) the first half
 *     reads zero (holes of the file) and the second half the snapshot's
 *     content: RAM is mapped from the file, and giving a page back drops
 *     only the VM's own copy of it.
 */
#include "virtio.h"

#define BALLOON_ID 5
#define F_STATS_VQ 1
#define F_REPORTING 5
#define Q_INFLATE 0
#define Q_DEFLATE 1
#define Q_REPORT 2 /* without the statistics queue */
#define AREA_BASE (64 * MiB)
#define BLOCK (2 * MiB)
#define PFNS ((volatile uint32_t *)(uintptr_t)BUF_BASE)
#define WAIT_TICKS 4000000000ULL

static uint64_t page_mark(uint64_t gpa)
{
	return gpa ^ 0xba11005eedULL;
}

/* What the second half is written with after a snapshot. */
static uint64_t page_mark2(uint64_t gpa)
{
	return page_mark(gpa) ^ 0xffff000000000000ULL;
}

static bool balloon_up(struct vdev *d)
{
	return vdev_init(d, 3, 1ULL << F_REPORTING) && has(d, F_REPORTING) && !has(d, F_STATS_VQ);
}

/* One chain on queue q of the given buffers (all device-writable or all
 * readable), waited for. */
static bool submit(struct vdev *d, unsigned int q, const uint64_t *addr, const uint32_t *len, unsigned int n,
                   bool writable)
{
	struct vq *vq = &d->q[q];
	uint32_t id;

	for (unsigned int i = 0; i < n; i++)
		vq->desc[i] =
		    (struct vdesc){addr[i], len[i], (uint16_t)((writable ? D_WRITE : 0) | (i + 1 < n ? D_NEXT : 0)),
		                   (uint16_t)(i + 1 < n ? i + 1 : 0)};
	vq_kick(d, q, 0);
	return vq_wait(d, q, WAIT_TICKS, &id, NULL) && id == 0;
}

static uint64_t fill_size(void)
{
	uint64_t fill = cmd_num("balloon_fill", 64 * MiB);

	return fill & ~(BLOCK - 1);
}

static void write_pages_with(uint64_t base, uint64_t size, uint64_t (*mark)(uint64_t))
{
	for (uint64_t a = base; a < base + size; a += 4096)
		*(volatile uint64_t *)a = mark(a);
}

static void write_pages(uint64_t base, uint64_t size)
{
	write_pages_with(base, size, page_mark);
}

/* Pages of [base, base + size) holding mark. */
static uint64_t pages_with(uint64_t base, uint64_t size, uint64_t (*mark)(uint64_t))
{
	uint64_t n = 0;

	for (uint64_t a = base; a < base + size; a += 4096)
		n += *(volatile uint64_t *)a == mark(a);
	return n;
}

static uint64_t marked_pages(uint64_t base, uint64_t size)
{
	return pages_with(base, size, page_mark);
}

static uint64_t zero_mark(uint64_t gpa)
{
	(void)gpa;
	return 0;
}

/* Report [base, base + size) in reports of QSIZE blocks; true when every
 * report was used. */
static bool report(struct vdev *d, uint64_t base, uint64_t size)
{
	uint64_t addr[QSIZE];
	uint32_t len[QSIZE];
	bool all = true;

	for (uint64_t a = base; a < base + size;) {
		unsigned int n = 0;

		for (; n < QSIZE && a < base + size; n++, a += BLOCK) {
			addr[n] = a;
			len[n] = BLOCK;
		}
		all &= submit(d, Q_REPORT, addr, len, n, true);
	}
	return all;
}

/* balloon_snapshot=1: half reported, a snapshot, the other half written
 * again and reported. */
static void check_report_snapshot(struct vdev *d, uint64_t size)
{
	uint64_t half = (size / 2) & ~(BLOCK - 1), rest = size - half;
	bool all = report(d, AREA_BASE, half);
	uint32_t st = snapshot_take();
	bool restored = st == KVRUN_SNAPSHOT_RESTORED;

	tap_ok(st == KVRUN_SNAPSHOT_DONE || restored,
	       "balloon: snapshot taken after the first half was reported, "
	       "running in the %s",
	       restored ? "restored VM" : "saved VM");
	write_pages_with(AREA_BASE + half, rest, page_mark2);
	all &= report(d, AREA_BASE + half, rest);
	tap_ok(all, "balloon: every report used");
	tap_ok(pages_with(AREA_BASE, half, zero_mark) == half / 4096,
	       "balloon: pages reported before the snapshot read zero");
	tap_ok(pages_with(AREA_BASE + half, rest, page_mark2) == 0,
	       "balloon: the pages written after it were given back");
	uint64_t want = pages_with(AREA_BASE + half, rest, restored ? page_mark : zero_mark);
	tap_ok(want == rest / 4096, "balloon: and read %s (%llu of %llu pages)",
	       restored ? "the snapshot's content again" : "zero", (unsigned long long)want,
	       (unsigned long long)(rest / 4096));
}

static void check_report(struct vdev *d)
{
	uint64_t size = fill_size();

	write_pages(AREA_BASE, size);
	tap_ok(marked_pages(AREA_BASE, size) == size / 4096, "balloon: %llu MiB written from 64 MiB",
	       (unsigned long long)(size / MiB));
	if (cmd_num("balloon_keep", 0)) {
		tap_diag("balloon: balloon_keep=1: the pages stay");
		return;
	}
	if (cmd_num("balloon_snapshot", 0)) {
		check_report_snapshot(d, size);
		return;
	}
	tap_ok(report(d, AREA_BASE, size), "balloon: every report used");
	uint64_t left = marked_pages(AREA_BASE, size);
	tap_ok(left == 0 && pages_with(AREA_BASE, size, zero_mark) == size / 4096,
	       "balloon: every reported page reads zero (%llu still marked)", (unsigned long long)left);
}

static void check_inflate(struct vdev *d)
{
	uint64_t base = AREA_BASE - 4 * MiB, addr = BUF_BASE;
	uint32_t len = 6 * 4;

	write_pages(base, 64 * 1024);
	/* Pages 0-2 and 5 of the 16 written, and one far outside RAM. */
	PFNS[0] = (uint32_t)(base >> 12);
	PFNS[1] = (uint32_t)(base >> 12) + 1;
	PFNS[2] = (uint32_t)(base >> 12) + 2;
	PFNS[3] = (uint32_t)(base >> 12) + 5;
	PFNS[4] = 0xfffff000u;
	PFNS[5] = (uint32_t)(base >> 12) + 5;
	tap_ok(submit(d, Q_INFLATE, &addr, &len, 1, false), "balloon: inflate used");
	tap_ok(marked_pages(base, 3 * 4096) == 0 && marked_pages(base + 5 * 4096, 4096) == 0,
	       "balloon: inflated pages read zero");
	tap_ok(marked_pages(base + 3 * 4096, 2 * 4096) == 2 && marked_pages(base + 6 * 4096, 10 * 4096) == 10,
	       "balloon: the pages around them kept their data");
	tap_ok(submit(d, Q_DEFLATE, &addr, &len, 1, false), "balloon: deflate used");
	wr(d, R_CONFIG + 4, 4);
	tap_ok(rd(d, R_CONFIG + 4) == 4, "balloon: actual written and read back");
	tap_ok(rd(d, R_CONFIG) == 0, "balloon: num_pages is 0 (no target set, got %u)", rd(d, R_CONFIG));
	tap_ok(!(rd(d, R_STATUS) & S_NEEDS_RESET), "balloon: device healthy after an entry outside RAM");
}

static bool wait_needs_reset(struct vdev *d)
{
	struct deadline dl;

	deadline_start(&dl, WAIT_TICKS);
	while (!(rd(d, R_STATUS) & S_NEEDS_RESET))
		if (deadline_passed(&dl))
			return false;
	return true;
}

static void check_bad_report(struct vdev *d)
{
	uint64_t addr = 0x4000000000ULL, good = AREA_BASE;
	uint32_t len = BLOCK;
	struct vq *q = &d->q[Q_REPORT];

	q->desc[0] = (struct vdesc){addr, len, D_WRITE, 0};
	vq_kick(d, Q_REPORT, 0);
	tap_ok(wait_needs_reset(d), "balloon: a report outside RAM -> DEVICE_NEEDS_RESET");
	tap_ok(vq_used_idx(q) == q->last_used, "balloon: nothing used");
	tap_ok(balloon_up(d), "balloon: reset and re-init reach DRIVER_OK");
	write_pages(good, BLOCK);
	tap_ok(submit(d, Q_REPORT, &good, &len, 1, true) && marked_pages(good, BLOCK) == 0,
	       "balloon: a report after the reset is served");
}

void check_virtio_balloon(void)
{
	struct vdev d;

	if (!tap_ok(find_device(BALLOON_ID, &d), "balloon: virtio-balloon found on the command line"))
		return;
	if (!tap_ok(balloon_up(&d), "balloon: DRIVER_OK with free page reporting, reporting queue 2"))
		return;
	check_inflate(&d);
	check_bad_report(&d);
	check_report(&d);
}
