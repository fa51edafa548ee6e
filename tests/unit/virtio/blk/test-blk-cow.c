/* SPDX-License-Identifier: Apache-2.0 */
/* The copy-on-write disk backend against an in-memory model: random reads
 * and writes of any sector alignment, length and iovec split (within one of
 * its 64 KiB blocks and across them, on a disk whose last block is short),
 * the base never written, exports, two disks on one base, and the open
 * errors. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

#include "common/error.h"
#include "tap.h"
#include "virtio/blk/backend.h"

/* Four 64 KiB blocks and a short fifth one of 24 KiB. */
#define DISK_BYTES (70 * 4096)
#define COW_BLOCK (64 * 1024)
#define SECTOR 512

static char dir[] = "/tmp/kvrun-cow-XXXXXX";
static char base[128], over[128], over2[128], out[128];
static uint8_t base_data[DISK_BYTES];

/* The base: a pattern, with a hole at blocks 8-15 (zeros). */
static void make_base(void)
{
	int fd;

	for (size_t i = 0; i < sizeof(base_data); i++)
		base_data[i] = (uint8_t)(i * 7 + i / 4096);
	memset(base_data + 8 * 4096, 0, 8 * 4096);
	fd = open(base, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (pwrite(fd, base_data, 8 * 4096, 0) != 8 * 4096 ||
	    pwrite(fd, base_data + 16 * 4096, DISK_BYTES - 16 * 4096, 16 * 4096) != DISK_BYTES - 16 * 4096)
		abort();
	close(fd);
}

static uint32_t file_crc(const char *path)
{
	static uint8_t buf[DISK_BYTES];
	int fd = open(path, O_RDONLY);
	ssize_t n = read(fd, buf, sizeof(buf));

	close(fd);
	return n < 0 ? 0 : (uint32_t)crc32(0, buf, (uInt)n);
}

static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	close(fd);
}

/* Split len bytes at p into up to 3 iovecs at pseudo-random points. */
static int split(uint8_t *p, size_t len, struct iovec *iov, unsigned int *seed)
{
	size_t a = len ? (size_t)rand_r(seed) % (len + 1) : 0,
	       b = a + (len - a ? (size_t)rand_r(seed) % (len - a + 1) : 0);

	iov[0] = (struct iovec){p, a};
	iov[1] = (struct iovec){p + a, b - a};
	iov[2] = (struct iovec){p + b, len - b};
	return 3;
}

TEST(setup)
{
	if (!mkdtemp(dir))
		tap_skip_all("mkdtemp failed");
	snprintf(base, sizeof(base), "%s/base.img", dir);
	snprintf(over, sizeof(over), "%s/over.img", dir);
	snprintf(over2, sizeof(over2), "%s/over2.img", dir);
	snprintf(out, sizeof(out), "%s/out.img", dir);
	make_base();
	ok(1, "base image with a hole at blocks 8-15");
}

TEST(random_io_matches_the_model)
{
	static uint8_t model[DISK_BYTES], buf[40 * 4096];
	struct blk_backend *b = NULL;
	unsigned int seed = 42;
	uint32_t crc = file_crc(base);
	int bad = 0;

	for (int i = 0; i < 3000 && !bad; i++) {
		uint64_t sec = (uint64_t)rand_r(&seed) % (DISK_BYTES / SECTOR);
		size_t max = DISK_BYTES - sec * SECTOR, len = ((size_t)rand_r(&seed) % (i % 2 ? 24 : 320) + 1) * SECTOR;

		/* A new overlay every 300 operations: its blocks are copied up
		 * again, not only overwritten. */
		if (i % 300 == 0) {
			if (b)
				blk_backend_close(b);
			b = NULL;
			touch(over);
			if (blk_cow_open(base, over, &b) < 0 || b->size != DISK_BYTES) {
				bad = 3;
				break;
			}
			memcpy(model, base_data, sizeof(model));
		}
		struct iovec iov[3];
		int n;

		if (len > max)
			len = max;
		if (len > sizeof(buf))
			len = sizeof(buf);
		if (rand_r(&seed) % 2) {
			for (size_t j = 0; j < len; j++)
				buf[j] = (uint8_t)rand_r(&seed);
			n = split(buf, len, iov, &seed);
			if (b->ops->pwritev(b, iov, n, sec * SECTOR) != (ssize_t)len)
				bad = 1;
			memcpy(model + sec * SECTOR, buf, len);
		} else {
			memset(buf, 0xee, len);
			n = split(buf, len, iov, &seed);
			if (b->ops->preadv(b, iov, n, sec * SECTOR) != (ssize_t)len ||
			    memcmp(buf, model + sec * SECTOR, len) != 0)
				bad = 2;
		}
		if (bad)
			printf("# operation %d at sector %llu, %zu bytes: %s\n", i, (unsigned long long)sec, len,
			       bad == 1 ? "write failed" : "read differs from the model");
	}
	ok(!bad, "3000 random reads and writes agree with the model (10 overlays)");
	if (!b)
		return;
	/* Everything, in one read. */
	{
		static uint8_t all[DISK_BYTES];
		struct iovec v = {all, sizeof(all)};

		is_int((int)b->ops->preadv(b, &v, 1, 0), DISK_BYTES);
		ok(memcmp(all, model, sizeof(all)) == 0, "the whole disk reads as the model");
	}
	is_int(b->ops->flush(b), 0);
	/* The export is the disk as the guest reads it. */
	{
		static uint8_t got[DISK_BYTES];
		int fd = open(out, O_RDWR | O_CREAT | O_TRUNC, 0600);
		struct stat st;

		is_int(b->ops->export(b, fd), 0);
		fstat(fd, &st);
		is_int((int)st.st_size, DISK_BYTES);
		is_int((int)pread(fd, got, sizeof(got), 0), DISK_BYTES);
		ok(memcmp(got, model, sizeof(got)) == 0, "the export holds the merged disk");
		close(fd);
	}
	ok(file_crc(base) == crc, "the base was never written");
	blk_backend_close(b);
}

TEST(partial_block_writes_keep_the_rest_of_the_block)
{
	struct blk_backend *b = NULL;
	uint8_t sec[SECTOR], blk[4096];
	struct iovec v = {sec, sizeof(sec)}, w = {blk, sizeof(blk)};

	touch(over);
	is_int(blk_cow_open(base, over, &b), 0);
	if (!b)
		return;
	memset(sec, 0xab, sizeof(sec));
	/* The third sector of block 20: the rest of block 20 comes from the base. */
	is_int((int)b->ops->pwritev(b, &v, 1, 20 * 4096 + 2 * SECTOR), SECTOR);
	is_int((int)b->ops->preadv(b, &w, 1, 20 * 4096), 4096);
	ok(memcmp(blk, base_data + 20 * 4096, 2 * SECTOR) == 0, "sectors before the write: the base's");
	ok(memcmp(blk + 2 * SECTOR, sec, SECTOR) == 0, "the sector written");
	ok(memcmp(blk + 3 * SECTOR, base_data + 20 * 4096 + 3 * SECTOR, 4096 - 3 * SECTOR) == 0,
	   "sectors after the write: the base's");
	/* A write across a block boundary, in the base's hole. */
	is_int((int)b->ops->pwritev(b, &v, 1, 9 * 4096 - 256), SECTOR);
	is_int((int)b->ops->preadv(b, &w, 1, 9 * 4096), 4096);
	ok(memcmp(blk, sec, 256) == 0, "a write across blocks: its tail in the next block");
	ok(blk[256] == 0 && blk[4095] == 0, "the rest of that block: the base's hole (zeros)");
	blk_backend_close(b);
}

/* What the overlay file itself holds: a block it took a write for is
 * whole there (the rest of it from the base), others are untouched. */
TEST(a_block_written_in_part_is_whole_in_the_overlay)
{
	static uint8_t ov[DISK_BYTES], want[COW_BLOCK];
	struct blk_backend *b = NULL;
	uint8_t sec[SECTOR];
	struct iovec v = {sec, sizeof(sec)};
	int fd;

	touch(over);
	is_int(blk_cow_open(base, over, &b), 0);
	if (!b)
		return;
	memset(sec, 0x5a, sizeof(sec));
	/* One sector in the middle of the second block, one in the short last. */
	is_int((int)b->ops->pwritev(b, &v, 1, COW_BLOCK + 7 * 4096 + SECTOR), SECTOR);
	is_int((int)b->ops->pwritev(b, &v, 1, DISK_BYTES - 2 * SECTOR), SECTOR);
	is_int(b->ops->flush(b), 0);
	fd = open(over, O_RDONLY);
	is_int((int)pread(fd, ov, sizeof(ov), 0), DISK_BYTES);
	close(fd);
	memcpy(want, base_data + COW_BLOCK, COW_BLOCK);
	memcpy(want + 7 * 4096 + SECTOR, sec, SECTOR);
	ok(memcmp(ov + COW_BLOCK, want, COW_BLOCK) == 0, "the second block is whole in the overlay");
	memcpy(want, base_data + 4 * COW_BLOCK, DISK_BYTES - 4 * COW_BLOCK);
	memcpy(want + DISK_BYTES - 4 * COW_BLOCK - 2 * SECTOR, sec, SECTOR);
	ok(memcmp(ov + 4 * COW_BLOCK, want, DISK_BYTES - 4 * COW_BLOCK) == 0,
	   "the short last block is whole in the overlay");
	memset(want, 0, sizeof(want));
	ok(memcmp(ov, want, COW_BLOCK) == 0 && memcmp(ov + 2 * COW_BLOCK, want, COW_BLOCK) == 0,
	   "blocks not written are not in the overlay (still holes)");
	blk_backend_close(b);
}

TEST(two_disks_on_one_base_are_independent)
{
	struct blk_backend *a = NULL, *b = NULL;
	uint8_t x[4096], y[4096];
	struct iovec vx = {x, sizeof(x)}, vy = {y, sizeof(y)};

	touch(over);
	touch(over2);
	is_int(blk_cow_open(base, over, &a), 0);
	is_int(blk_cow_open(base, over2, &b), 0);
	if (!a || !b)
		return;
	memset(x, 1, sizeof(x));
	is_int((int)a->ops->pwritev(a, &vx, 1, 4096), 4096);
	is_int((int)b->ops->preadv(b, &vy, 1, 4096), 4096);
	ok(memcmp(y, base_data + 4096, sizeof(y)) == 0, "the other disk still reads the base");
	blk_backend_close(a);
	blk_backend_close(b);
	/* A new open starts from the base again: the overlay's old blocks are dropped. */
	is_int(blk_cow_open(base, over, &a), 0);
	if (!a)
		return;
	is_int((int)a->ops->preadv(a, &vy, 1, 4096), 4096);
	ok(memcmp(y, base_data + 4096, sizeof(y)) == 0, "reopened: the overlay starts empty");
	blk_backend_close(a);
}

TEST(read_only_root_reads_the_base)
{
	struct blk_backend *b = NULL;
	uint8_t x[4096];
	struct iovec v = {x, sizeof(x)};

	is_int(blk_open(over, base, true, &b), 0);
	if (!b)
		return;
	ok(b->read_only, "read-only");
	is_int((int)b->ops->preadv(b, &v, 1, 3 * 4096), 4096);
	ok(memcmp(x, base_data + 3 * 4096, sizeof(x)) == 0, "reads the base");
	blk_backend_close(b);
}

TEST(out_of_range_and_open_errors)
{
	struct blk_backend *b = NULL, *c = NULL;
	uint8_t x[SECTOR];
	struct iovec v = {x, sizeof(x)};
	char odd[160];
	int fd;

	touch(over);
	is_int(blk_cow_open(base, over, &b), 0);
	if (!b)
		return;
	is_int((int)b->ops->preadv(b, &v, 1, DISK_BYTES), -EINVAL);
	is_int((int)b->ops->pwritev(b, &v, 1, DISK_BYTES - 256), -EINVAL);
	/* The overlay is the disk's alone. */
	is_int(blk_cow_open(base, over, &c), -EWOULDBLOCK);
	ok(strstr(err_msg(), over) != NULL, "the message names the overlay: %s", err_msg());
	err_clear();
	blk_backend_close(b);
	is_int(blk_cow_open("/nonexistent/base", over, &c), -ENOENT);
	err_clear();
	snprintf(odd, sizeof(odd), "%s/odd", dir);
	fd = open(odd, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (ftruncate(fd, 4096 + 512) < 0)
		abort();
	close(fd);
	is_int(blk_cow_open(odd, over, &c), -EINVAL);
	ok(strstr(err_msg(), "multiple of 4096") != NULL, "a base of odd size: %s", err_msg());
	err_clear();
	unlink(odd);
}

TEST(cleanup)
{
	unlink(base);
	unlink(over);
	unlink(over2);
	unlink(out);
	ok(rmdir(dir) == 0, "nothing else left in %s", dir);
}

TAP_MAIN()
