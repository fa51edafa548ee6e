/* SPDX-License-Identifier: Apache-2.0 */
/* virtio-blk on temporary image files, driven through the fake driver. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "fake-driver.h"
#include "tap.h"
#include "virtio/blk/blk.h"
#include "vmm/counters.h"

#define IMG_SECTORS 2048
#define FEATURES                                                                                                     \
	(VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VIRTIO_F_RING_EVENT_IDX) | VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC) | \
	 VIRTIO_BIT(2) /* SEG_MAX */ | VIRTIO_BIT(6) /* BLK_SIZE */ | VIRTIO_BIT(9) /* FLUSH */)
#define F_RO VIRTIO_BIT(5)

struct disk {
	char path[64];
	int fd;
	struct virtio_blk *b;
	struct fake_drv d;
};

/* Each sector is filled with its number (low byte) xor a per-disk seed. */
static void make_image(struct disk *k, uint8_t seed)
{
	static uint8_t sec[512];

	strcpy(k->path, "/tmp/kvrun-blk-XXXXXX");
	k->fd = mkstemp(k->path);
	for (int s = 0; s < IMG_SECTORS; s++) {
		memset(sec, (s & 0xff) ^ seed, sizeof(sec));
		if (write(k->fd, sec, sizeof(sec)) != sizeof(sec))
			abort();
	}
}

static int disk_open(struct disk *k, uint8_t seed, bool ro, const char *id, uint64_t features)
{
	int r;

	make_image(k, seed);
	fake_drv_init(&k->d);
	r = virtio_blk_new(&k->d.mem, &(struct virtio_blk_opts){.path = k->path, .read_only = ro, .id = id}, &k->b);
	if (r < 0)
		return r;
	fake_drv_attach(&k->d, virtio_blk_mmio(k->b));
	fake_bringup(&k->d, features, 1, 128);
	return 0;
}

static void disk_close(struct disk *k)
{
	virtio_blk_free(k->b);
	fake_drv_free(&k->d);
	close(k->fd);
	unlink(k->path);
}

struct blk_result {
	uint8_t status;
	uint32_t used_len;
	bool done;
};

/* Submit type/sector with data split in two buffers at gpa data (len
 * bytes; device-writable for IN and GET_ID); wait for completion. */
static struct blk_result blk_req(struct disk *k, uint32_t type, uint64_t sector, uint64_t data, uint32_t len,
                                 bool indirect)
{
	struct {
		uint32_t type, reserved;
		uint64_t sector;
	} hdr = {type, 0, sector};
	uint64_t h = fake_alloc(&k->d, 16), st = fake_alloc(&k->d, 1);
	bool w = type == 0 || type == 8;
	struct blk_result res = {0};
	uint32_t id, half = len / 2;

	memcpy(fake_ptr(&k->d, h), &hdr, 16);
	*(uint8_t *)fake_ptr(&k->d, st) = 0xee;
	if (len)
		fake_add(&k->d, 0,
		         (struct fbuf[]){{h, 16, false}, {data, half, w}, {data + half, len - half, w}, {st, 1, true}},
		         4, indirect);
	else
		fake_add(&k->d, 0, (struct fbuf[]){{h, 16, false}, {st, 1, true}}, 2, indirect);
	fake_kick(&k->d, 0);
	res.done = fake_wait_used(&k->d, 0, &id, &res.used_len);
	res.status = *(uint8_t *)fake_ptr(&k->d, st);
	return res;
}

static bool sector_is(const uint8_t *p, int sector, uint8_t seed)
{
	for (int i = 0; i < 512; i++)
		if (p[i] != ((sector & 0xff) ^ seed))
			return false;
	return true;
}

TEST(counters)
{
	uint64_t reqs = vmm_counter_get(VMM_BLK_REQUESTS), passes = vmm_counter_get(VMM_QUEUE_PASSES);
	struct blk_result r;
	struct disk k;
	uint64_t buf;

	is_int(disk_open(&k, 1, false, "disk-0", FEATURES), 0);
	buf = fake_alloc(&k.d, 4096);
	r = blk_req(&k, 0, 3, buf, 1024, false);
	r = blk_req(&k, 1, 5, buf, 512, true);
	is_int(r.status, 0);
	/* The counters are bumped before the completion is published. */
	ok(vmm_counter_get(VMM_BLK_REQUESTS) == reqs + 2, "two block requests counted");
	ok(vmm_counter_get(VMM_QUEUE_PASSES) >= passes + 2, "a pass over the queue for each kick");
	disk_close(&k);
}

/* Publish a request of one sector without kicking; its status byte's gpa. */
static uint64_t queue_sector(struct disk *k, uint32_t type, uint64_t sector, uint64_t data)
{
	struct {
		uint32_t type, reserved;
		uint64_t sector;
	} hdr = {type, 0, sector};
	uint64_t h = fake_alloc(&k->d, 16), st = fake_alloc(&k->d, 1);

	memcpy(fake_ptr(&k->d, h), &hdr, 16);
	*(uint8_t *)fake_ptr(&k->d, st) = 0xee;
	fake_add(&k->d, 0, (struct fbuf[]){{h, 16, false}, {data, 512, type == 0}, {st, 1, true}}, 3, false);
	return st;
}

/* Requests that continue each other in one pass are one transfer; the
 * data and statuses are each request's own. */
TEST(adjacent_requests_merged)
{
	uint64_t merged = vmm_counter_get(VMM_BLK_MERGED), buf[6], st[6];
	uint32_t id, len;
	struct disk k;
	int used = 0;
	bool ok_data = true;

	is_int(disk_open(&k, 0x33, false, "disk-0", FEATURES), 0);
	for (int i = 0; i < 6; i++)
		buf[i] = fake_alloc(&k.d, 512);
	/* Sectors 10, 11, 12, 13 (one run), then 20 and 40 (none). */
	for (int i = 0; i < 6; i++)
		st[i] = queue_sector(&k, 0, i < 4 ? 10 + (uint64_t)i : i == 4 ? 20 : 40, buf[i]);
	fake_kick(&k.d, 0);
	while (used < 6 && fake_wait_used(&k.d, 0, &id, &len))
		used++;
	is_int(used, 6);
	for (int i = 0; i < 6; i++)
		ok_data &= *(uint8_t *)fake_ptr(&k.d, st[i]) == 0 && sector_is(fake_ptr(&k.d, buf[i]),
		                                                               i < 4    ? 10 + i
		                                                               : i == 4 ? 20
		                                                                        : 40,
		                                                               0x33);
	ok(ok_data, "every request read its own sector, status OK");
	ok(vmm_counter_get(VMM_BLK_MERGED) - merged == 3, "three requests joined the first one's transfer (%llu)",
	   (unsigned long long)(vmm_counter_get(VMM_BLK_MERGED) - merged));
	/* A write run, then the same sectors read back. */
	for (int i = 0; i < 3; i++) {
		memset(fake_ptr(&k.d, buf[i]), 0x70 + i, 512);
		st[i] = queue_sector(&k, 1, 100 + (uint64_t)i, buf[i]);
	}
	fake_kick(&k.d, 0);
	for (used = 0; used < 3 && fake_wait_used(&k.d, 0, &id, &len); used++)
		;
	is_int(used, 3);
	ok(vmm_counter_get(VMM_BLK_MERGED) - merged == 5, "and two more in the write run");
	for (int i = 0; i < 3; i++) {
		struct blk_result r = blk_req(&k, 0, 100 + (uint64_t)i, buf[3], 512, false);
		const uint8_t *p = fake_ptr(&k.d, buf[3]);

		ok(r.status == 0 && p[0] == 0x70 + i && p[511] == 0x70 + i, "sector %d holds what its request wrote",
		   100 + i);
	}
	disk_close(&k);
}

/* Sectors [first, first + n) of buf read as the image's (seed) but those
 * in [w, w + wn), which hold wseed's pattern. */
static bool read_back(struct disk *k, uint64_t buf, int first, int n, uint8_t seed, int w, int wn, uint8_t wseed)
{
	bool good = true;

	for (int i = 0; i < n; i++) {
		const uint8_t *p = (uint8_t *)fake_ptr(&k->d, buf) + i * 512;
		int s = first + i;

		good &= s >= w && s < w + wn ? p[0] == wseed && p[511] == wseed : sector_is(p, s, seed);
	}
	return good;
}

/* Transfers from 4 KiB up cut in two halves, the second moved by the
 * helper thread: reads and writes of odd sizes and buffer splits land
 * exactly where they belong. */
TEST(large_transfers_split)
{
	uint64_t buf;
	bool ok_read = true, ok_back = true;
	struct disk k;

	setenv("KVRUN_BLK_SPLIT_KIB", "4", 1);
	is_int(disk_open(&k, 0x5c, false, "disk-split", FEATURES), 0);
	unsetenv("KVRUN_BLK_SPLIT_KIB");
	buf = fake_alloc(&k.d, 256 * 512);
	for (uint32_t n = 8; n <= 256; n += 31) {
		struct blk_result r = blk_req(&k, 0, 7 * n, buf, n * 512, n % 2);

		ok_read &= r.done && r.status == 0 && r.used_len == n * 512 + 1;
		ok_read &= read_back(&k, buf, (int)(7 * n), (int)n, 0x5c, 0, 0, 0);
	}
	ok(ok_read, "reads of 4 to 128 KiB, split in two, each sector its own");
	for (uint32_t i = 0; i < 200; i++)
		memset((uint8_t *)fake_ptr(&k.d, buf) + i * 512, (int)(i * 3 + 1), 512);
	is_int(blk_req(&k, 1, 1000, buf, 200 * 512, true).status, 0);
	memset(fake_ptr(&k.d, buf), 0, 200 * 512);
	is_int(blk_req(&k, 0, 1000, buf, 200 * 512, false).status, 0);
	for (uint32_t i = 0; i < 200; i++) {
		const uint8_t *p = (uint8_t *)fake_ptr(&k.d, buf) + i * 512;

		ok_back &= p[0] == (uint8_t)(i * 3 + 1) && p[511] == (uint8_t)(i * 3 + 1);
	}
	ok(ok_back, "a 100 KiB write, split in two, reads back whole");
	is_int(blk_req(&k, 0, 999, buf, 512, false).status, 0);
	is_int(blk_req(&k, 0, 1200, buf + 512, 512, false).status, 0);
	ok(sector_is(fake_ptr(&k.d, buf), 999, 0x5c) && sector_is((uint8_t *)fake_ptr(&k.d, buf) + 512, 1200, 0x5c),
	   "the sectors on either side of it untouched");
	disk_close(&k);
}

/* A copy-on-write disk splits its large reads (they only read its block
 * map) but never its writes; an empty disk that gets media later (a VM
 * restored from a template) splits as one made with it. */
TEST(split_cow_reads_and_attached_media)
{
	uint64_t buf, split;
	char overlay[64] = "/tmp/kvrun-blk-ovl-XXXXXX";
	struct disk k;
	int ofd;

	make_image(&k, 0x3a);
	ofd = mkstemp(overlay);
	fake_drv_init(&k.d);
	setenv("KVRUN_BLK_SPLIT_KIB", "4", 1);
	is_int(virtio_blk_new(&k.d.mem, &(struct virtio_blk_opts){.path = overlay, .base = k.path, .id = "cow"}, &k.b),
	       0);
	fake_drv_attach(&k.d, virtio_blk_mmio(k.b));
	fake_bringup(&k.d, FEATURES, 1, 128);
	buf = fake_alloc(&k.d, 256 * 512);
	memset(fake_ptr(&k.d, buf), 0x77, 64 * 512);
	split = vmm_counter_get(VMM_BLK_SPLIT);
	is_int(blk_req(&k, 1, 300, buf, 64 * 512, false).status, 0);
	ok(vmm_counter_get(VMM_BLK_SPLIT) == split, "a 32 KiB write to the copy-on-write disk is not split");
	memset(fake_ptr(&k.d, buf), 0, 256 * 512);
	is_int(blk_req(&k, 0, 200, buf, 256 * 512, false).status, 0);
	ok(vmm_counter_get(VMM_BLK_SPLIT) == split + 1, "a 128 KiB read of it is");
	ok(read_back(&k, buf, 200, 256, 0x3a, 300, 64, 0x77), "each sector from the base or the overlay as written");
	disk_close(&k);
	close(ofd);
	unlink(overlay);

	make_image(&k, 0x4b);
	fake_drv_init(&k.d);
	is_int(virtio_blk_new_empty(&k.d.mem, "late", &k.b), 0);
	unsetenv("KVRUN_BLK_SPLIT_KIB");
	fake_drv_attach(&k.d, virtio_blk_mmio(k.b));
	fake_bringup(&k.d, FEATURES, 1, 128);
	is_int(virtio_blk_attach_media(k.b, k.path, NULL, false), 0);
	buf = fake_alloc(&k.d, 256 * 512);
	split = vmm_counter_get(VMM_BLK_SPLIT);
	is_int(blk_req(&k, 0, 1000, buf, 256 * 512, true).status, 0);
	ok(vmm_counter_get(VMM_BLK_SPLIT) == split + 1, "a raw disk attached to an empty one splits a 128 KiB read");
	ok(read_back(&k, buf, 1000, 256, 0x4b, 0, 0, 0), "each sector its own");
	disk_close(&k);
}

TEST(config_space)
{
	struct disk k;
	uint64_t cap = 0;
	uint32_t v = 0;

	is_int(disk_open(&k, 0, false, "disk-0", FEATURES), 0);
	is_int(fake_read(&k.d, VIRTIO_MMIO_DEVICE_ID), VIRTIO_ID_BLOCK);
	virtio_mmio_bus_ops.read(virtio_blk_mmio(k.b), VIRTIO_MMIO_CONFIG, &cap, 8);
	is_int(cap, IMG_SECTORS);
	virtio_mmio_bus_ops.read(virtio_blk_mmio(k.b), VIRTIO_MMIO_CONFIG + 12, &v, 4);
	ok(v >= 2 && v <= VIRTQ_MAX_SEGS, "seg_max %u", v);
	virtio_mmio_bus_ops.read(virtio_blk_mmio(k.b), VIRTIO_MMIO_CONFIG + 20, &v, 4);
	is_int(v, 512);
	fake_write(&k.d, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
	ok(!(fake_read(&k.d, VIRTIO_MMIO_DEVICE_FEATURES) & F_RO), "writable disk: no RO feature");
	ok(fake_read(&k.d, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DRIVER_OK, "driver ok");
	disk_close(&k);
}

TEST(read_write_flush_id)
{
	struct disk k;
	struct blk_result r;
	uint64_t buf;
	uint8_t check[1024];

	is_int(disk_open(&k, 0x5a, false, "disk-0", FEATURES), 0);
	buf = fake_alloc(&k.d, 4096);
	r = blk_req(&k, 0, 3, buf, 1024, false);
	ok(r.done, "read completed");
	is_int(r.status, 0);
	is_int(r.used_len, 1025);
	ok(sector_is(fake_ptr(&k.d, buf), 3, 0x5a) && sector_is(fake_ptr(&k.d, buf + 512), 4, 0x5a), "read data");
	r = blk_req(&k, 0, 100, buf, 2048, true);
	is_int(r.status, 0);
	ok(sector_is(fake_ptr(&k.d, buf + 1536), 103, 0x5a), "indirect read data");
	memset(fake_ptr(&k.d, buf), 0xa5, 1024);
	r = blk_req(&k, 1, 7, buf, 1024, false);
	is_int(r.status, 0);
	is_int(r.used_len, 1);
	is_int(pread(k.fd, check, 1024, 7 * 512), 1024);
	ok(check[0] == 0xa5 && check[1023] == 0xa5, "write reached the file");
	r = blk_req(&k, 4, 0, 0, 0, false);
	is_int(r.status, 0);
	r = blk_req(&k, 8, 0, buf, 20, false);
	is_int(r.status, 0);
	is_int(r.used_len, 21);
	ok(memcmp(fake_ptr(&k.d, buf), "disk-0\0\0", 8) == 0, "GET_ID returns the id");
	r = blk_req(&k, 99, 0, 0, 0, false);
	is_int(r.status, 2);
	disk_close(&k);
}

TEST(out_of_range)
{
	struct disk k;
	uint64_t buf;

	is_int(disk_open(&k, 0, false, NULL, FEATURES), 0);
	buf = fake_alloc(&k.d, 4096);
	is_int(blk_req(&k, 0, IMG_SECTORS - 1, buf, 512, false).status, 0);
	is_int(blk_req(&k, 0, IMG_SECTORS, buf, 512, false).status, 1);
	is_int(blk_req(&k, 0, IMG_SECTORS - 1, buf, 1024, false).status, 1);
	is_int(blk_req(&k, 1, IMG_SECTORS, buf, 512, false).status, 1);
	is_int(blk_req(&k, 0, UINT64_MAX, buf, 512, false).status, 1);
	is_int(blk_req(&k, 0, UINT64_MAX / 512 + 1, buf, 512, false).status, 1);
	is_int(blk_req(&k, 0, 0, buf, 100, false).status, 1);
	ok(!(fake_read(&k.d, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET), "errors are per request");
	disk_close(&k);
}

TEST(read_only)
{
	struct disk k;
	uint64_t buf;
	uint8_t check[512];

	is_int(disk_open(&k, 0, true, "ro", FEATURES | F_RO), 0);
	fake_write(&k.d, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
	ok(fake_read(&k.d, VIRTIO_MMIO_DEVICE_FEATURES) & F_RO, "RO feature offered");
	buf = fake_alloc(&k.d, 512);
	memset(fake_ptr(&k.d, buf), 0x77, 512);
	is_int(blk_req(&k, 1, 1, buf, 512, false).status, 1);
	is_int(pread(k.fd, check, 512, 512), 512);
	ok(sector_is(check, 1, 0), "image unchanged");
	is_int(blk_req(&k, 0, 2, buf, 512, false).status, 0);
	ok(sector_is(fake_ptr(&k.d, buf), 2, 0), "reads still work");
	disk_close(&k);
}

TEST(several_disks)
{
	struct disk a, b;
	uint64_t ba, bb;

	is_int(disk_open(&a, 0x11, false, "a", FEATURES), 0);
	is_int(disk_open(&b, 0x22, true, "b", FEATURES | F_RO), 0);
	ba = fake_alloc(&a.d, 512);
	bb = fake_alloc(&b.d, 512);
	is_int(blk_req(&a, 0, 9, ba, 512, false).status, 0);
	is_int(blk_req(&b, 0, 9, bb, 512, false).status, 0);
	ok(sector_is(fake_ptr(&a.d, ba), 9, 0x11), "disk a data");
	ok(sector_is(fake_ptr(&b.d, bb), 9, 0x22), "disk b data");
	is_int(blk_req(&a, 1, 9, ba, 512, false).status, 0);
	is_int(blk_req(&b, 1, 9, bb, 512, false).status, 1);
	disk_close(&a);
	disk_close(&b);
}

TEST(batch)
{
	struct disk k;
	uint64_t buf[16], st[16], h;
	uint32_t id, len;
	int done = 0;

	is_int(disk_open(&k, 0, false, NULL, FEATURES), 0);
	for (int i = 0; i < 16; i++) {
		struct {
			uint32_t type, reserved;
			uint64_t sector;
		} hdr = {0, 0, (uint64_t)i};

		h = fake_alloc(&k.d, 16);
		buf[i] = fake_alloc(&k.d, 512);
		st[i] = fake_alloc(&k.d, 1);
		memcpy(fake_ptr(&k.d, h), &hdr, 16);
		fake_add(&k.d, 0, (struct fbuf[]){{h, 16, false}, {buf[i], 512, true}, {st[i], 1, true}}, 3, true);
	}
	fake_kick(&k.d, 0);
	while (done < 16 && fake_wait_used(&k.d, 0, &id, &len))
		done++;
	is_int(done, 16);
	for (int i = 0; i < 16; i++)
		ok(sector_is(fake_ptr(&k.d, buf[i]), i, 0) && *(uint8_t *)fake_ptr(&k.d, st[i]) == 0, "request %d", i);
	ok(k.d.irqs >= 1 && k.d.irqs <= 16, "interrupts: %d", k.d.irqs);
	disk_close(&k);
}

TEST(malformed_request)
{
	struct disk k;
	uint64_t h;

	is_int(disk_open(&k, 0, false, NULL, FEATURES), 0);
	h = fake_alloc(&k.d, 16);
	/* No status byte: the request cannot be answered. */
	fake_add(&k.d, 0, (struct fbuf[]){{h, 16, false}}, 1, false);
	fake_kick(&k.d, 0);
	for (int i = 0; i < 20000 && !(fake_read(&k.d, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET); i++)
		usleep(1000);
	ok(fake_read(&k.d, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET, "device needs reset");
	/* A reset brings it back. */
	fake_bringup(&k.d, FEATURES, 1, 128);
	is_int(blk_req(&k, 4, 0, 0, 0, false).status, 0);
	disk_close(&k);
}

/* An indirect descriptor whose table is the descriptor ring itself, run in
 * a child under an alarm: the worker once walked it forever holding the
 * device lock, so the reset below (a vCPU's STATUS write) hung too. Exit
 * status: 0 all well, 1 no DEVICE_NEEDS_RESET, 2 the request after the
 * reset failed; SIGALRM: something never returned. */
static int ring_as_table_child(void)
{
	struct disk k;
	bool broken = false;

	alarm(10);
	if (disk_open(&k, 0, false, "x", FEATURES) < 0)
		return 3;
	fake_set_desc(&k.d, 0, 0, 0, k.d.vqs[0].desc, 16 * 128, VIRTQ_DESC_F_INDIRECT, 0);
	fake_publish(&k.d, 0, 0);
	k.d.vqs[0].next_desc = 1;
	fake_kick(&k.d, 0);
	for (int i = 0; i < 4000 && !broken; i++) {
		broken = fake_read(&k.d, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET;
		if (!broken)
			usleep(1000);
	}
	/* Reset either way: with the worker stuck this blocks. */
	fake_bringup(&k.d, FEATURES, 1, 128);
	if (!broken)
		return 1;
	if (blk_req(&k, 8, 0, fake_alloc(&k.d, 20), 20, false).status != 0)
		return 2;
	disk_close(&k);
	return 0;
}

TEST(indirect_table_is_the_ring)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(ring_as_table_child());
	ok(pid > 0 && waitpid(pid, &status, 0) == pid, "child ran");
	ok(!WIFSIGNALED(status), "the walk ended and the reset did not block (%s)",
	   WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "returned");
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "needs reset, then works after the reset (exit %d)",
	   WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* A driver that refills the ring as fast as the worker drains it, made
 * exact: a backend whose every read makes the same request available again
 * (as a vCPU refilling the ring meanwhile would), so the worker never sees
 * the ring empty. Another thread then resets the device: the reset gets the
 * device lock between two requests instead of waiting for an empty ring. */
struct refill {
	struct blk_backend be;
	struct fake_drv *d;
	unsigned int reads; /* atomic */
};

static ssize_t refill_read(struct blk_backend *be, const struct iovec *iov, int n, uint64_t off)
{
	struct refill *f = (struct refill *)be;
	size_t len = 0;

	for (int i = 0; i < n; i++) {
		memset(iov[i].iov_base, 0, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	fake_publish(f->d, 0, 0);
	__atomic_add_fetch(&f->reads, 1, __ATOMIC_SEQ_CST);
	return (ssize_t)len;
}

static int refill_flush(struct blk_backend *be)
{
	return 0;
}

static void refill_close(struct blk_backend *be)
{
}

static const struct blk_backend_ops refill_ops = {
    .preadv = refill_read, .pwritev = refill_read, .flush = refill_flush, .close = refill_close};

static int refill_child(void)
{
	struct {
		uint32_t type, reserved;
		uint64_t sector;
	} hdr = {0, 0, 0};
	struct refill f = {.be = {.ops = &refill_ops, .size = 1 << 20}};
	struct virtio_blk *b;
	struct fake_drv d;
	uint64_t h, data, st;

	alarm(10);
	fake_drv_init(&d);
	f.d = &d;
	if (virtio_blk_new_backend(&d.mem, &f.be, "refill", &b) < 0)
		return 3;
	fake_drv_attach(&d, virtio_blk_mmio(b));
	fake_bringup(&d, FEATURES, 1, 128);
	h = fake_alloc(&d, 16);
	data = fake_alloc(&d, 512);
	st = fake_alloc(&d, 1);
	memcpy(fake_ptr(&d, h), &hdr, sizeof(hdr));
	fake_add(&d, 0, (struct fbuf[]){{h, 16, false}, {data, 512, true}, {st, 1, true}}, 3, false);
	fake_kick(&d, 0);
	while (__atomic_load_n(&f.reads, __ATOMIC_SEQ_CST) < 10000)
		usleep(100);
	/* A vCPU's reset: waits for the worker's lock. */
	fake_write(&d, VIRTIO_MMIO_STATUS, 0);
	if (fake_read(&d, VIRTIO_MMIO_STATUS) != 0)
		return 1;
	virtio_blk_free(b);
	fake_drv_free(&d);
	return 0;
}

TEST(reset_during_flood)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(refill_child());
	ok(pid > 0 && waitpid(pid, &status, 0) == pid, "child ran");
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the reset got in while the ring never ran empty (%s %d)",
	   WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "exit", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

TEST(open_errors)
{
	struct fake_drv d;
	struct virtio_blk *b = NULL;
	struct disk k;

	fake_drv_init(&d);
	is_int(virtio_blk_new(&d.mem, &(struct virtio_blk_opts){.path = "/nonexistent/img"}, &b), -ENOENT);
	ok(strstr(err_msg(), "/nonexistent/img") != NULL, "error names the image");
	fake_drv_free(&d);
	/* A writable image is locked against a second writer. */
	is_int(disk_open(&k, 0, false, NULL, FEATURES), 0);
	fake_drv_init(&d);
	is_int(virtio_blk_new(&d.mem, &(struct virtio_blk_opts){.path = k.path}, &b), -EWOULDBLOCK);
	fake_drv_free(&d);
	disk_close(&k);
}

TAP_MAIN()
