/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A disk made of a shared read-only base image and a private overlay file
 * of the same size. A bitmap (one bit per 64 KiB block, in memory) says
 * which blocks the overlay holds: reads take each run of blocks from the
 * one that holds it, writes go to the overlay. A write that covers a block
 * only in part takes the rest of that block from the base and writes the
 * whole block in the same call, so a block marked in the bitmap is always
 * whole in the overlay. The bitmap lives as long as the disk is open: the
 * overlay is new (empty) when the disk is opened, and a checkpoint exports
 * the merged disk as one file. Several VMs share the base's page cache;
 * only what each writes is its own.
 *
 * 64 KiB, as qcow2's default cluster and dm-thin's default block: with
 * 4 KiB blocks, scattered small writes left the overlay a sparse file of
 * as many extents and a large read as many runs (one system call each);
 * the price is that the first write to a block copies up to 64 KiB. The
 * last block is short when the base's size is not a multiple of it.
 *
 * Writes come one at a time (the device's single worker, under its lock;
 * an export while the device is paused), so the copy-up buffers are the
 * disk's own. Reads only read the bitmap, so the two halves of a large
 * read may run at once (the device's helper thread): concurrent_reads.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/fileio.h"
#include "virtio/blk/backend.h"
#include "virtio/virtqueue.h"

#define COW_BLOCK (64ULL * 1024)
#define COW_MIN_ALIGN 4096ULL /* the base's size: a multiple of this */
#define WORD_BITS 64
#define SUB_IOV_MAX 1024

struct blk_cow {
	struct blk_backend b; /* first: the device holds a blk_backend * */
	int base, overlay;
	uint64_t nblocks;
	uint64_t *map; /* bit set: the block is in the overlay */
	uint8_t *head, *tail; /* COW_BLOCK each, made at the first partial write */
};

static struct blk_cow *to_cow(struct blk_backend *b)
{
	return (struct blk_cow *)b;
}

static bool in_overlay(const struct blk_cow *c, uint64_t blk)
{
	return c->map[blk / WORD_BITS] & (1ULL << (blk % WORD_BITS));
}

static void mark(struct blk_cow *c, uint64_t first, uint64_t last)
{
	for (uint64_t blk = first; blk <= last; blk++)
		c->map[blk / WORD_BITS] |= 1ULL << (blk % WORD_BITS);
}

/* The end of the run of blocks from blk on that are (or are not) in the
 * overlay, at most up to end (exclusive). Whole words at a time. */
static uint64_t run_end(const struct blk_cow *c, uint64_t blk, uint64_t end)
{
	bool set = in_overlay(c, blk);
	uint64_t want = set ? ~0ULL : 0;

	while (blk < end) {
		if (blk % WORD_BITS == 0 && end - blk >= WORD_BITS && c->map[blk / WORD_BITS] == want) {
			blk += WORD_BITS;
			continue;
		}
		if (in_overlay(c, blk) != set)
			break;
		blk++;
	}
	return blk < end ? blk : end;
}

static size_t iov_total(const struct iovec *iov, int n)
{
	size_t t = 0;

	for (int i = 0; i < n; i++)
		t += iov[i].iov_len;
	return t;
}

/* preadv/pwritev of bytes [skip, skip + len) of iov at off, short counts
 * retried; -EIO for an end of file. */
static int full_io(int fd, const struct iovec *iov, int n, size_t skip, size_t len, uint64_t off, bool write)
{
	struct iovec local[SUB_IOV_MAX];
	size_t done = 0;

	while (done < len) {
		unsigned int k = iov_slice(iov, (unsigned int)n, skip + done, len - done, local, SUB_IOV_MAX, NULL);
		ssize_t r;

		if (k == 0)
			return -EINVAL;
		r = write ? pwritev(fd, local, (int)k, (off_t)(off + done))
		          : preadv(fd, local, (int)k, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EIO;
		done += (size_t)r;
	}
	return 0;
}

static ssize_t cow_preadv(struct blk_backend *b, const struct iovec *iov, int n, uint64_t off)
{
	struct blk_cow *c = to_cow(b);
	size_t total = iov_total(iov, n), done = 0;
	uint64_t end_blk;

	if (off >= b->size || total > b->size - off)
		return -EINVAL;
	end_blk = (off + total + COW_BLOCK - 1) / COW_BLOCK;
	while (done < total) {
		uint64_t pos = off + done, blk = pos / COW_BLOCK;
		uint64_t stop = run_end(c, blk, end_blk) * COW_BLOCK;
		size_t len = (size_t)((stop < off + total ? stop : off + total) - pos);
		int r = full_io(in_overlay(c, blk) ? c->overlay : c->base, iov, n, done, len, pos, false);

		if (r < 0)
			return done ? (ssize_t)done : r;
		done += len;
	}
	return (ssize_t)done;
}

/* Bytes of block blk (the last one may be short). */
static uint64_t block_len(const struct blk_cow *c, uint64_t blk)
{
	uint64_t start = blk * COW_BLOCK;

	return c->b.size - start < COW_BLOCK ? c->b.size - start : COW_BLOCK;
}

static int need_buffers(struct blk_cow *c)
{
	if (!c->head)
		c->head = malloc(COW_BLOCK);
	if (!c->tail)
		c->tail = malloc(COW_BLOCK);
	return c->head && c->tail ? 0 : -ENOMEM;
}

/* Writes [off, off + total) whole blocks at a time: the part of its first
 * and last block that it does not cover comes from the base when the
 * overlay does not hold that block yet, in the same pwritev. */
static ssize_t cow_pwritev(struct blk_backend *b, const struct iovec *iov, int n, uint64_t off)
{
	struct blk_cow *c = to_cow(b);
	size_t total = iov_total(iov, n);
	struct iovec all[SUB_IOV_MAX + 2];
	uint64_t first, last, end, head = 0, tail = 0;
	unsigned int k = 0;
	int r;

	if (b->read_only)
		return -EROFS;
	if (off >= b->size || total > b->size - off)
		return -EINVAL;
	if (!total)
		return 0;
	end = off + total;
	first = off / COW_BLOCK;
	last = (end - 1) / COW_BLOCK;
	if (off % COW_BLOCK && !in_overlay(c, first))
		head = off % COW_BLOCK;
	if (end < last * COW_BLOCK + block_len(c, last) && !in_overlay(c, last))
		tail = last * COW_BLOCK + block_len(c, last) - end;
	if (head || tail) {
		if (n < 0 || n > SUB_IOV_MAX)
			return -EINVAL;
		r = need_buffers(c);
		if (r >= 0 && head)
			r = full_io(c->base, &(struct iovec){c->head, head}, 1, 0, head, off - head, false);
		if (r >= 0 && tail)
			r = full_io(c->base, &(struct iovec){c->tail, tail}, 1, 0, tail, end, false);
		if (r < 0)
			return r;
		if (head)
			all[k++] = (struct iovec){c->head, head};
		memcpy(all + k, iov, (size_t)n * sizeof(*iov));
		k += (unsigned int)n;
		if (tail)
			all[k++] = (struct iovec){c->tail, tail};
		iov = all;
		n = (int)k;
	}
	r = full_io(c->overlay, iov, n, 0, head + total + tail, off - head, true);
	if (r < 0)
		return r;
	/* Only now: a failed write leaves the blocks it did not finish
	 * reading from where they read before. */
	mark(c, first, last);
	return (ssize_t)total;
}

static int cow_flush(struct blk_backend *b)
{
	return fdatasync(to_cow(b)->overlay) < 0 ? -errno : 0;
}

static int cow_export(struct blk_backend *b, int out)
{
	struct blk_cow *c = to_cow(b);
	uint64_t blk = 0;
	int r;

	/* The base with its holes, then the overlay's blocks over it. */
	r = fd_copy_sparse(c->base, out);
	if (r >= 0 && ftruncate(out, (off_t)b->size) < 0)
		r = -errno;
	while (r >= 0 && blk < c->nblocks) {
		uint64_t end = run_end(c, blk, c->nblocks);

		if (in_overlay(c, blk))
			r = fd_copy_range(c->overlay, out, (off_t)(blk * COW_BLOCK),
			                  (off_t)((end - 1 - blk) * COW_BLOCK + block_len(c, end - 1)));
		blk = end;
	}
	return r;
}

static void cow_close(struct blk_backend *b)
{
	struct blk_cow *c = to_cow(b);

	close(c->base);
	close(c->overlay);
	free(c->map);
	free(c->head);
	free(c->tail);
	free(c);
}

static const struct blk_backend_ops cow_ops = {
    .preadv = cow_preadv,
    .pwritev = cow_pwritev,
    .flush = cow_flush,
    .export = cow_export,
    .close = cow_close,
};

/* A regular file opened and locked (blk_open_locked()), with its stat. */
static int open_file(const char *path, bool read_only, struct stat *st)
{
	_cleanup_close_ int fd = blk_open_locked(path, read_only);

	if (fd < 0)
		return fd;
	if (fstat(fd, st) < 0)
		return err_setsys(-errno, "stat %s", path);
	if (!S_ISREG(st->st_mode))
		return err_set(-EINVAL, "disk image %s is not a regular file", path);
	return TAKE_FD(fd);
}

int blk_cow_open(const char *base, const char *overlay, struct blk_backend **ret)
{
	_cleanup_close_ int bfd = -1, ofd = -1;
	struct stat bst, ost;
	struct blk_cow *c;

	bfd = open_file(base, true, &bst);
	if (bfd < 0)
		return bfd;
	ofd = open_file(overlay, false, &ost);
	if (ofd < 0)
		return ofd;
	if (bst.st_size == 0 || bst.st_size % COW_MIN_ALIGN)
		return err_set(-EINVAL, "base image %s: size %lld is not a positive multiple of %llu", base,
		               (long long)bst.st_size, COW_MIN_ALIGN);
	/* What the overlay held before is not known: it starts empty. */
	if (ftruncate(ofd, 0) < 0 || ftruncate(ofd, bst.st_size) < 0)
		return err_setsys(-errno, "size overlay %s", overlay);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->nblocks = ((uint64_t)bst.st_size + COW_BLOCK - 1) / COW_BLOCK;
	c->map = calloc((c->nblocks + WORD_BITS - 1) / WORD_BITS, sizeof(*c->map));
	if (!c->map) {
		free(c);
		return -ENOMEM;
	}
	c->b = (struct blk_backend){.ops = &cow_ops, .size = (uint64_t)bst.st_size, .concurrent_reads = true};
	c->base = TAKE_FD(bfd);
	c->overlay = TAKE_FD(ofd);
	*ret = &c->b;
	return 0;
}
