/* SPDX-License-Identifier: Apache-2.0 */
/* virtio-balloon: the fake driver plays the guest's driver, a recording
 * discard function stands in for madvise (one test gives back real
 * anonymous memory), and the test runs the event loop by hand. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fake-driver.h"
#include "poll-loop.h"
#include "tap.h"
#include "virtio/balloon/balloon.h"
#include "virtio/mmio-state.h"

#define QSIZE 64
#define MAX_RANGES 64
#define PAGE 4096u
#define F_RING \
	(VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VIRTIO_F_RING_EVENT_IDX) | VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC))
#define F_ALL                                                                                           \
	(F_RING | VIRTIO_BIT(VIRTIO_BALLOON_F_STATS_VQ) | VIRTIO_BIT(VIRTIO_BALLOON_F_PAGE_REPORTING) | \
	 VIRTIO_BIT(VIRTIO_BALLOON_F_DEFLATE_ON_OOM))
/* Queue indexes with every feature: the statistics queue, then reporting. */
#define Q_INFLATE 0
#define Q_DEFLATE 1
#define Q_STATS 2
#define Q_REPORT 3

struct range {
	uint64_t gpa, len;
};

struct bt {
	struct fake_drv d;
	struct event_loop *loop;
	struct virtio_balloon *b;
	struct range got[MAX_RANGES];
	unsigned int nr_got;
	int fail; /* the discard function's answer */
};

static int record(void *opaque, uint64_t gpa, uint64_t len)
{
	struct bt *t = opaque;

	if (t->nr_got < MAX_RANGES)
		t->got[t->nr_got++] = (struct range){gpa, len};
	return t->fail;
}

static void pump(struct bt *t)
{
	for (int i = 0; i < 10000; i++)
		if (poll_loop_once(t->loop, 0) == 0)
			return;
	printf("# event loop never went idle\n");
}

static void bt_setup(struct bt *t, bool real_discard)
{
	struct virtio_balloon_opts o = {.discard = record, .opaque = t};

	memset(t, 0, sizeof(*t));
	fake_drv_init(&t->d);
	if (event_loop_new(&t->loop) < 0 || virtio_balloon_new(&t->d.mem, t->loop, real_discard ? NULL : &o, &t->b) < 0)
		abort();
	fake_drv_attach(&t->d, virtio_balloon_mmio(t->b));
}

static void bt_teardown(struct bt *t)
{
	virtio_balloon_free(t->b);
	event_loop_free(t->loop);
	fake_drv_free(&t->d);
}

static uint32_t status(struct bt *t)
{
	return fake_read(&t->d, VIRTIO_MMIO_STATUS);
}

static uint32_t cfg32(struct bt *t, uint32_t off)
{
	uint32_t v = 0;

	virtio_mmio_bus_ops.read(t->d.m, VIRTIO_MMIO_CONFIG + off, &v, 4);
	return v;
}

/* A PFN array in fresh guest memory, added to queue q. */
static uint16_t add_pfns(struct bt *t, uint32_t q, const uint32_t *pfns, unsigned int n)
{
	uint64_t gpa = fake_alloc(&t->d, n * 4);

	memcpy(fake_ptr(&t->d, gpa), pfns, n * 4);
	return fake_add(&t->d, q, (struct fbuf[]){{gpa, n * 4, false}}, 1, false);
}

static bool used_one(struct bt *t, uint32_t q, uint16_t head)
{
	uint32_t id = 0, len = 1;

	return fake_get_used(&t->d, q, &id, &len) && id == head && len == 0;
}

TEST(device_and_config)
{
	struct bt t;
	uint32_t lo, v = 7;
	uint8_t byte = 9;

	bt_setup(&t, false);
	is_int(fake_read(&t.d, VIRTIO_MMIO_DEVICE_ID), VIRTIO_ID_BALLOON);
	fake_write(&t.d, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
	lo = fake_read(&t.d, VIRTIO_MMIO_DEVICE_FEATURES);
	ok(lo & (1u << VIRTIO_BALLOON_F_PAGE_REPORTING), "free page reporting offered");
	ok(lo & (1u << VIRTIO_BALLOON_F_STATS_VQ) && lo & (1u << VIRTIO_BALLOON_F_DEFLATE_ON_OOM),
	   "stats, deflate on OOM");
	ok(!(lo & (1u << VIRTIO_BALLOON_F_MUST_TELL_HOST | 1u << VIRTIO_BALLOON_F_PAGE_POISON |
	           1u << VIRTIO_BALLOON_F_FREE_PAGE_HINT)),
	   "neither MUST_TELL_HOST, PAGE_POISON nor FREE_PAGE_HINT");
	fake_write(&t.d, VIRTIO_MMIO_QUEUE_SEL, Q_REPORT);
	ok(fake_read(&t.d, VIRTIO_MMIO_QUEUE_NUM_MAX) >= 32, "room for a report of 32 blocks");

	virtio_balloon_set_target(t.b, 1000);
	is_int(t.d.irqs, 0); /* not running: no config interrupt */
	is_int(cfg32(&t, 0), 1000);
	is_int(fake_bringup(&t.d, F_ALL, 4, QSIZE) & VIRTIO_STATUS_DRIVER_OK, VIRTIO_STATUS_DRIVER_OK);
	virtio_balloon_set_target(t.b, 2048);
	is_int(cfg32(&t, 0), 2048);
	is_int(t.d.irqs, 1);
	ok(fake_read(&t.d, VIRTIO_MMIO_INTERRUPT_STATUS) & VIRTIO_MMIO_INT_CONFIG, "config change interrupt");

	virtio_mmio_bus_ops.write(t.d.m, VIRTIO_MMIO_CONFIG + 4, &v, 4);
	is_int(cfg32(&t, 4), 7);
	virtio_mmio_bus_ops.write(t.d.m, VIRTIO_MMIO_CONFIG + 5, &byte, 1);
	is_int(cfg32(&t, 4), 9 * 256 + 7);
	virtio_mmio_bus_ops.write(t.d.m, VIRTIO_MMIO_CONFIG + 0, &v, 4);
	is_int(cfg32(&t, 0), 2048); /* num_pages is the device's */
	virtio_mmio_bus_ops.write(t.d.m, VIRTIO_MMIO_CONFIG + 12, &v, 4);
	is_int(cfg32(&t, 12), 0);
	{
		struct virtio_balloon_counters c;

		virtio_balloon_counters(t.b, &c);
		ok(c.target == 2048 && c.actual == 9 * 256 + 7, "counters carry target and actual");
	}
	bt_teardown(&t);
}

TEST(free_page_report)
{
	struct bt t;
	struct virtio_balloon_counters c;
	uint16_t head;

	bt_setup(&t, false);
	fake_bringup(&t.d, F_ALL, 4, QSIZE);
	pump(&t);
	head = fake_add(
	    &t.d, Q_REPORT,
	    (struct fbuf[]){{2u << 20, 1u << 20, true}, {0x300000, 0x80000, true}, {0x380000, 0x1000, true}}, 3, false);
	fake_kick(&t.d, Q_REPORT);
	is_int(t.nr_got, 0); /* on the loop thread, not the vCPU's */
	pump(&t);
	ok(used_one(&t, Q_REPORT, head), "report used, nothing written");
	is_int(t.nr_got, 3);
	ok(t.got[0].gpa == 2u << 20 && t.got[0].len == 1u << 20, "first range given back");
	ok(t.got[1].gpa == 0x300000 && t.got[1].len == 0x80000, "second range");
	ok(t.got[2].gpa == 0x380000 && t.got[2].len == 0x1000, "third range");
	virtio_balloon_counters(t.b, &c);
	ok(c.reported_bytes == (1u << 20) + 0x80000 + 0x1000, "reported bytes counted");
	ok(t.d.irqs >= 1, "used buffer interrupt");

	/* Indirect, as Linux sends a report of many blocks. */
	head = fake_add(&t.d, Q_REPORT, (struct fbuf[]){{0x200000, 0x1000, true}, {0x280000, 0x2000, true}}, 2, true);
	fake_kick(&t.d, Q_REPORT);
	pump(&t);
	ok(used_one(&t, Q_REPORT, head), "indirect report used");
	ok(t.nr_got == 5 && t.got[4].gpa == 0x280000 && t.got[4].len == 0x2000, "its ranges given back");

	/* A refused discard is counted, and the report still used. */
	t.fail = -EINVAL;
	head = fake_add(&t.d, Q_REPORT, (struct fbuf[]){{0x200000, 0x1000, true}}, 1, false);
	fake_kick(&t.d, Q_REPORT);
	pump(&t);
	ok(used_one(&t, Q_REPORT, head), "used despite the refusal");
	virtio_balloon_counters(t.b, &c);
	is_int(c.discard_errors, 1);
	ok(!(status(&t) & VIRTIO_STATUS_DEVICE_NEEDS_RESET), "device still running");
	bt_teardown(&t);
}

/* Without the statistics queue the reporting queue is the third. */
TEST(reporting_queue_follows_features)
{
	struct bt t;
	uint16_t head;

	bt_setup(&t, false);
	fake_bringup(&t.d, F_RING | VIRTIO_BIT(VIRTIO_BALLOON_F_PAGE_REPORTING), 3, QSIZE);
	head = fake_add(&t.d, 2, (struct fbuf[]){{0x200000, 0x200000, true}}, 1, false);
	fake_kick(&t.d, 2);
	pump(&t);
	ok(used_one(&t, 2, head), "report on queue 2 used");
	ok(t.nr_got == 1 && t.got[0].gpa == 0x200000 && t.got[0].len == 0x200000, "and given back");
	bt_teardown(&t);

	/* Neither: queue 2 is no queue of the device, a kick there does nothing. */
	bt_setup(&t, false);
	fake_bringup(&t.d, F_RING, 3, QSIZE);
	head = fake_add(&t.d, 2, (struct fbuf[]){{0x200000, 0x200000, true}}, 1, false);
	fake_kick(&t.d, 2);
	pump(&t);
	ok(!used_one(&t, 2, head) && t.nr_got == 0, "no reporting queue without the feature");
	bt_teardown(&t);
}

TEST(inflate_and_deflate)
{
	/* RAM is 4 MiB: PFNs 0..1023. */
	uint32_t pfns[] = {600, 601, 602, 700, 5000, 603, 701, 1023, 1024, 0xffffffffu};
	struct virtio_balloon_counters c;
	struct bt t;
	uint16_t head;

	bt_setup(&t, false);
	fake_bringup(&t.d, F_ALL, 4, QSIZE);
	head = add_pfns(&t, Q_INFLATE, pfns, 10);
	fake_kick(&t.d, Q_INFLATE);
	pump(&t);
	ok(used_one(&t, Q_INFLATE, head), "inflate used");
	is_int(t.nr_got, 5);
	ok(t.got[0].gpa == 600ULL * PAGE && t.got[0].len == 3 * PAGE, "consecutive pages in one range");
	ok(t.got[1].gpa == 700ULL * PAGE && t.got[1].len == PAGE, "then page 700");
	ok(t.got[2].gpa == 603ULL * PAGE && t.got[3].gpa == 701ULL * PAGE, "out of order: ranges of their own");
	ok(t.got[4].gpa == 1023ULL * PAGE && t.got[4].len == PAGE, "last page of RAM");
	virtio_balloon_counters(t.b, &c);
	is_int(c.inflated_pages, 7);
	is_int(c.skipped_pfns, 3);

	head = add_pfns(&t, Q_DEFLATE, pfns, 4);
	fake_kick(&t.d, Q_DEFLATE);
	pump(&t);
	ok(used_one(&t, Q_DEFLATE, head), "deflate used");
	is_int(t.nr_got, 5); /* nothing to give back */
	virtio_balloon_counters(t.b, &c);
	is_int(c.deflated_pages, 4);
	bt_teardown(&t);
}

/* A buffer of more than 4096 entries: the rest is skipped. */
TEST(inflate_buffer_is_bounded)
{
	enum { N = 5000 };
	uint32_t *pfns = calloc(N, 4);
	struct virtio_balloon_counters c;
	struct bt t;

	for (unsigned int i = 0; i < N; i++)
		pfns[i] = 512 + i % 256;
	bt_setup(&t, false);
	fake_bringup(&t.d, F_ALL, 4, QSIZE);
	add_pfns(&t, Q_INFLATE, pfns, N);
	fake_kick(&t.d, Q_INFLATE);
	pump(&t);
	virtio_balloon_counters(t.b, &c);
	is_int(c.inflated_pages, 4096);
	is_int(c.skipped_pfns, N - 4096);
	free(pfns);
	bt_teardown(&t);
}

/* Each turn of the loop serves at most 64 chains of a queue, then kicks
 * itself for the rest. */
TEST(budget)
{
	struct virtio_balloon_counters c;
	uint32_t pfn = 700, id, len;
	struct bt t;
	int n = 0;

	bt_setup(&t, false);
	fake_bringup(&t.d, F_ALL, 4, 128);
	pump(&t);
	for (int i = 0; i < 100; i++)
		add_pfns(&t, Q_INFLATE, &pfn, 1);
	fake_kick(&t.d, Q_INFLATE);
	poll_loop_once(t.loop, 0);
	virtio_balloon_counters(t.b, &c);
	is_int(c.inflated_pages, 64);
	while (fake_get_used(&t.d, Q_INFLATE, &id, &len))
		n++;
	is_int(n, 64);
	pump(&t);
	virtio_balloon_counters(t.b, &c);
	is_int(c.inflated_pages, 100);
	while (fake_get_used(&t.d, Q_INFLATE, &id, &len))
		n++;
	is_int(n, 100);
	bt_teardown(&t);
}

static void expect_broken(const char *what, uint32_t q, const struct fbuf *bufs, unsigned int n)
{
	struct bt t;

	bt_setup(&t, false);
	fake_bringup(&t.d, F_ALL, 4, QSIZE);
	fake_add(&t.d, q, bufs, n, false);
	fake_kick(&t.d, q);
	pump(&t);
	ok(status(&t) & VIRTIO_STATUS_DEVICE_NEEDS_RESET, "%s: needs reset", what);
	ok(t.nr_got == 0, "%s: nothing given back", what);
	ok(fake_read(&t.d, VIRTIO_MMIO_INTERRUPT_STATUS) & VIRTIO_MMIO_INT_CONFIG, "%s: config interrupt", what);
	bt_teardown(&t);
}

TEST(malformed)
{
	expect_broken("readable reporting buffer", Q_REPORT, (struct fbuf[]){{0x200000, 0x1000, false}}, 1);
	expect_broken("report mixing directions", Q_REPORT,
	              (struct fbuf[]){{0x200000, 0x1000, false}, {0x300000, 0x1000, true}}, 2);
	expect_broken("report past the end of RAM", Q_REPORT, (struct fbuf[]){{FAKE_RAM_SIZE - 0x1000, 0x2000, true}},
	              1);
	expect_broken("report far outside RAM", Q_REPORT, (struct fbuf[]){{1ULL << 40, 0x200000, true}}, 1);
	expect_broken("writable inflate buffer", Q_INFLATE, (struct fbuf[]){{0x200000, 8, true}}, 1);
	expect_broken("writable deflate buffer", Q_DEFLATE, (struct fbuf[]){{0x200000, 8, true}}, 1);
	expect_broken("writable statistics buffer", Q_STATS, (struct fbuf[]){{0x200000, 20, true}}, 1);
}

struct stat10 {
	uint16_t tag;
	uint64_t val;
} __attribute__((packed));

static uint16_t add_stats(struct bt *t, uint64_t memfree)
{
	struct stat10 st[3] = {{VIRTIO_BALLOON_S_MEMFREE, memfree}, {99, 1}, {VIRTIO_BALLOON_S_MEMTOT, 4u << 20}};
	uint64_t gpa = fake_alloc(&t->d, sizeof(st));

	memcpy(fake_ptr(&t->d, gpa), st, sizeof(st));
	return fake_add(&t->d, Q_STATS, (struct fbuf[]){{gpa, sizeof(st), false}}, 1, false);
}

TEST(statistics)
{
	struct virtio_balloon_stats s;
	struct bt t;
	uint16_t h1, h2;

	bt_setup(&t, false);
	fake_bringup(&t.d, F_ALL, 4, QSIZE);
	is_int(virtio_balloon_request_stats(t.b), -EAGAIN);
	h1 = add_stats(&t, 1000);
	fake_kick(&t.d, Q_STATS);
	pump(&t);
	virtio_balloon_stats(t.b, &s);
	ok(s.updated_ns != 0, "statistics arrived");
	ok(s.have == (1u << VIRTIO_BALLOON_S_MEMFREE | 1u << VIRTIO_BALLOON_S_MEMTOT), "known tags only");
	ok(s.val[VIRTIO_BALLOON_S_MEMFREE] == 1000 && s.val[VIRTIO_BALLOON_S_MEMTOT] == 4u << 20, "their values");
	ok(!used_one(&t, Q_STATS, h1), "the buffer is kept");

	is_int(virtio_balloon_request_stats(t.b), 0);
	ok(used_one(&t, Q_STATS, h1), "a request gives it back");
	is_int(virtio_balloon_request_stats(t.b), -EAGAIN);
	h2 = add_stats(&t, 2000);
	fake_kick(&t.d, Q_STATS);
	pump(&t);
	virtio_balloon_stats(t.b, &s);
	is_int(s.val[VIRTIO_BALLOON_S_MEMFREE], 2000);

	/* A driver that gives a second buffer gets the first back. */
	h1 = add_stats(&t, 3000);
	fake_kick(&t.d, Q_STATS);
	pump(&t);
	ok(used_one(&t, Q_STATS, h2), "the older buffer given back");
	virtio_balloon_stats(t.b, &s);
	is_int(s.val[VIRTIO_BALLOON_S_MEMFREE], 3000);

	/* A reset drops the kept buffer. */
	fake_write(&t.d, VIRTIO_MMIO_STATUS, 0);
	is_int(virtio_balloon_request_stats(t.b), -EAGAIN);
	bt_teardown(&t);
}

TEST(pause_and_reset)
{
	struct bt t;
	uint16_t head;

	bt_setup(&t, false);
	fake_bringup(&t.d, F_ALL, 4, QSIZE);
	virtio_balloon_pause(t.b, true);
	head = fake_add(&t.d, Q_REPORT, (struct fbuf[]){{0x200000, 0x1000, true}}, 1, false);
	fake_kick(&t.d, Q_REPORT);
	pump(&t);
	ok(!used_one(&t, Q_REPORT, head) && t.nr_got == 0, "paused: nothing served");
	virtio_balloon_pause(t.b, false);
	pump(&t);
	ok(used_one(&t, Q_REPORT, head) && t.nr_got == 1, "resumed: served without another kick");

	fake_write(&t.d, VIRTIO_MMIO_STATUS, 0);
	head = fake_add(&t.d, Q_REPORT, (struct fbuf[]){{0x200000, 0x1000, true}}, 1, false);
	fake_kick(&t.d, Q_REPORT);
	pump(&t);
	ok(t.nr_got == 1, "reset: the queues are not served");
	fake_bringup(&t.d, F_ALL, 4, QSIZE);
	head = fake_add(&t.d, Q_REPORT, (struct fbuf[]){{0x200000, 0x1000, true}}, 1, false);
	fake_kick(&t.d, Q_REPORT);
	pump(&t);
	ok(used_one(&t, Q_REPORT, head) && t.nr_got == 2, "running again after the driver's bring-up");
	bt_teardown(&t);
}

/* Real anonymous RAM: what the guest reports reads zero afterwards and is
 * no longer resident. */
TEST(gives_back_real_memory)
{
	struct guest_mem real;
	uint64_t base = 2u << 20;
	unsigned char vec[512];
	uint8_t *p;
	struct bt t;
	int res = 0;

	if (guest_mem_init(&real, 8u << 20) < 0) {
		ok(0, "guest_mem_init");
		return;
	}
	memset(&t, 0, sizeof(t));
	fake_drv_init(&t.d);
	free(t.d.ram);
	t.d.ram = real.mapping;
	t.d.mem = real;
	if (event_loop_new(&t.loop) < 0 || virtio_balloon_new(&t.d.mem, t.loop, NULL, &t.b) < 0)
		abort();
	fake_drv_attach(&t.d, virtio_balloon_mmio(t.b));
	fake_bringup(&t.d, F_ALL, 4, QSIZE);
	p = fake_ptr(&t.d, base);
	memset(p, 0xee, 2u << 20);
	if (mincore(p, 2u << 20, vec) == 0)
		for (int i = 0; i < 512; i++)
			res += vec[i] & 1;
	is_int(res, 512);
	res = 0;
	fake_add(&t.d, Q_REPORT, (struct fbuf[]){{base, 2u << 20, true}}, 1, false);
	fake_kick(&t.d, Q_REPORT);
	pump(&t);
	/* Before reading it: a read maps the zero page, which counts. */
	if (mincore(p, 2u << 20, vec) == 0)
		for (int i = 0; i < 512; i++)
			res += vec[i] & 1;
	is_int(res, 0);
	ok(p[0] == 0 && p[(2u << 20) - 1] == 0, "reported memory reads zero");
	virtio_balloon_free(t.b);
	event_loop_free(t.loop);
	guest_mem_destroy(&real);
}

/* Saved mid-use (a target, the driver's size, a kept statistics buffer)
 * and loaded into a fresh device over a copy of guest RAM. */
TEST(snapshot_state)
{
	struct virtio_balloon_counters c;
	struct snap_buf sb = {0};
	struct bt a, b;
	uint32_t v = 77;
	uint16_t h;

	bt_setup(&a, false);
	fake_bringup(&a.d, F_ALL, 4, QSIZE);
	virtio_balloon_set_target(a.b, 300);
	virtio_mmio_bus_ops.write(a.d.m, VIRTIO_MMIO_CONFIG + 4, &v, 4);
	h = add_stats(&a, 1234);
	fake_kick(&a.d, Q_STATS);
	pump(&a);
	virtio_balloon_pause(a.b, true);
	is_int(virtio_balloon_state_save(a.b, &sb), 0);

	bt_setup(&b, false);
	memcpy(b.d.ram, a.d.ram, FAKE_RAM_SIZE);
	memcpy(b.d.vqs, a.d.vqs, sizeof(a.d.vqs));
	is_int(virtio_balloon_state_load(b.b, sb.data, sb.len), 0);
	virtio_balloon_counters(b.b, &c);
	ok(c.target == 300 && c.actual == 77, "target and actual restored");
	is_int(cfg32(&b, 0), 300);
	is_int(virtio_balloon_request_stats(b.b), 0);
	ok(used_one(&b, Q_STATS, h), "the kept statistics buffer is given back by the restored device");
	h = fake_add(&b.d, Q_REPORT, (struct fbuf[]){{0x200000, 0x1000, true}}, 1, false);
	fake_kick(&b.d, Q_REPORT);
	pump(&b);
	ok(used_one(&b, Q_REPORT, h) && b.nr_got == 1, "the restored device serves reports");

	/* Refused: short, another device's, trailing bytes. */
	is_int(virtio_balloon_state_load(b.b, sb.data, 8), -EBADMSG);
	{
		uint8_t *bad = malloc(sb.len + 1);

		memcpy(bad, sb.data, sb.len);
		bad[0] ^= 1;
		is_int(virtio_balloon_state_load(b.b, bad, sb.len), -EINVAL);
		bad[0] ^= 1;
		bad[sb.len] = 0;
		is_int(virtio_balloon_state_load(b.b, bad, sb.len + 1), -EBADMSG);
		free(bad);
	}
	snap_buf_free(&sb);
	bt_teardown(&a);
	bt_teardown(&b);
}

TAP_MAIN()
