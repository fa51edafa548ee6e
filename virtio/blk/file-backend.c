/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "virtio/blk/backend.h"

struct blk_file {
	struct blk_backend b; /* first: the device holds a blk_backend * */
	int fd;
};

static struct blk_file *to_file(struct blk_backend *b)
{
	return (struct blk_file *)b;
}

static ssize_t file_preadv(struct blk_backend *b, const struct iovec *iov, int n, uint64_t off)
{
	ssize_t r = preadv(to_file(b)->fd, iov, n, (off_t)off);

	return r < 0 ? -errno : r;
}

static ssize_t file_pwritev(struct blk_backend *b, const struct iovec *iov, int n, uint64_t off)
{
	ssize_t r = pwritev(to_file(b)->fd, iov, n, (off_t)off);

	return r < 0 ? -errno : r;
}

static int file_flush(struct blk_backend *b)
{
	/* Data and the metadata needed to read it back; not timestamps. */
	return fdatasync(to_file(b)->fd) < 0 ? -errno : 0;
}

static int file_export(struct blk_backend *b, int out)
{
	int fd = to_file(b)->fd;
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISREG(st.st_mode))
		return fd_copy_sparse(fd, out);
	if (ftruncate(out, 0) < 0 || ftruncate(out, (off_t)b->size) < 0)
		return -errno;
	return fd_copy_range(fd, out, 0, (off_t)b->size);
}

static void file_close(struct blk_backend *b)
{
	struct blk_file *f = to_file(b);

	close(f->fd);
	free(f);
}

static const struct blk_backend_ops file_ops = {
    .preadv = file_preadv,
    .pwritev = file_pwritev,
    .flush = file_flush,
    .export = file_export,
    .close = file_close,
};

static int file_size(int fd, const char *path, uint64_t *ret)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return err_setsys(-errno, "stat %s", path);
	if (S_ISREG(st.st_mode)) {
		*ret = (uint64_t)st.st_size;
		return 0;
	}
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, ret) < 0)
			return err_setsys(-errno, "size of block device %s", path);
		return 0;
	}
	return err_set(-EINVAL, "disk image %s is neither a file nor a block device", path);
}

int blk_open_locked(const char *path, bool read_only)
{
	_cleanup_close_ int fd = open(path, (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);

	if (fd < 0)
		return err_setsys(-errno, "open disk image %s", path);
	if (flock(fd, (read_only ? LOCK_SH : LOCK_EX) | LOCK_NB) < 0)
		return err_setsys(-errno, "lock disk image %s (in use by another VM?)", path);
	return TAKE_FD(fd);
}

int blk_file_open(const char *path, bool read_only, struct blk_backend **ret)
{
	_cleanup_close_ int fd = -1;
	struct blk_file *f;
	uint64_t size;
	int r;

	fd = blk_open_locked(path, read_only);
	if (fd < 0)
		return fd;
	r = file_size(fd, path, &size);
	if (r < 0)
		return r;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->b = (struct blk_backend){.ops = &file_ops, .size = size, .read_only = read_only, .concurrent = true};
	f->fd = TAKE_FD(fd);
	*ret = &f->b;
	return 0;
}
