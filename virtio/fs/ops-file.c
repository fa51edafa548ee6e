/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Open files: OPEN, READ, WRITE, RELEASE, FLUSH, FSYNC, FSYNCDIR,
 * FALLOCATE, LSEEK, COPY_FILE_RANGE, SYNCFS. READ and WRITE move data
 * straight between the file and the request's own buffers (preadv and
 * pwritev on slices of them), without a copy in between.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/file.h>
#include <unistd.h>

#include "virtio/fs/server-int.h"
#include "virtio/virtqueue.h"

/* Most segments of a request or reply slice (the virtqueue's bound). */
#define FS_MAX_SEGS VIRTQ_MAX_SEGS

int fs_op_open(struct fs_ctx *c)
{
	const struct fuse_open_in *in = fs_arg(c, 0);
	struct fuse_open_out out = {0};
	struct fs_inode *ino;
	int oflags, fd, r;

	r = fs_open_flags(in->flags, &oflags);
	if (r < 0)
		return r;
	if (c->s->opts.read_only && ((oflags & O_ACCMODE) != O_RDONLY || (oflags & O_TRUNC)))
		return -EROFS;
	r = fs_inode_get(&c->s->it, c->h.nodeid, &ino);
	if (r < 0)
		return r;
	/* Only regular files: the client opens devices and FIFOs itself,
	 * and reopening a symlink through /proc would follow it. */
	if (ino->type != S_IFREG) {
		r = ino->type == S_IFDIR ? -EISDIR : ino->type == S_IFLNK ? -ELOOP : -EINVAL;
		fs_inode_put(&c->s->it, ino);
		return r;
	}
	fd = fs_reopen(c->s, ino, oflags);
	if (fd < 0) {
		fs_inode_put(&c->s->it, ino);
		return fd;
	}
	r = fs_handle_add(c->s, fd, ino, false, &out.fh);
	if (r < 0) {
		fs_inode_put(&c->s->it, ino);
		return r;
	}
	out.open_flags = fs_open_out_flags(c->s);
	return fs_reply(c, &out, sizeof(out));
}

/* Read or write len bytes at off between h's file and iov; short only at
 * the end of the file (read) or on an error after some progress. */
static ssize_t transfer(int fd, bool write, const struct iovec *iov, unsigned int n, size_t len, uint64_t off)
{
	struct iovec rest[FS_MAX_SEGS];
	size_t done = 0;

	while (done < len) {
		unsigned int nr = iov_slice(iov, n, done, len - done, rest, FS_MAX_SEGS, NULL);
		ssize_t r = write ? pwritev(fd, rest, (int)nr, (off_t)(off + done))
		                  : preadv(fd, rest, (int)nr, (off_t)(off + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return done ? (ssize_t)done : -errno;
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

int fs_op_read(struct fs_ctx *c)
{
	const struct fuse_read_in *in = fs_arg(c, 0);
	size_t room = c->out_len - sizeof(struct fuse_out_header), len = in->size;
	struct iovec iov[FS_MAX_SEGS];
	struct fs_handle *h;
	unsigned int n;
	ssize_t r;

	if (c->out_len < sizeof(struct fuse_out_header))
		return -EINVAL;
	if (in->offset > INT64_MAX)
		return -EINVAL;
	if (len > room)
		len = room; /* a short read: all the client has room for */
	r = fs_handle_get(c->s, in->fh, false, &h);
	if (r < 0)
		return (int)r;
	n = iov_slice(c->out, c->nout, sizeof(struct fuse_out_header), len, iov, FS_MAX_SEGS, &len);
	r = transfer(h->fd, false, iov, n, len, in->offset);
	fs_handle_put(c->s, h);
	return r < 0 ? (int)r : fs_reply_written(c, (size_t)r);
}

int fs_op_write(struct fs_ctx *c)
{
	const struct fuse_write_in *in = fs_arg(c, 0);
	size_t skip = sizeof(struct fuse_in_header) + sizeof(*in);
	struct fuse_write_out out = {0};
	struct iovec iov[FS_MAX_SEGS];
	struct fs_handle *h;
	unsigned int n;
	size_t len;
	ssize_t r;

	if (in->size > c->in_len - skip || in->offset > INT64_MAX)
		return -EINVAL;
	r = fs_handle_get(c->s, in->fh, false, &h);
	if (r < 0)
		return (int)r;
	n = iov_slice(c->in, c->nin, skip, in->size, iov, FS_MAX_SEGS, &len);
	r = len == in->size ? transfer(h->fd, true, iov, n, len, in->offset) : -EINVAL;
	fs_handle_put(c->s, h);
	if (r < 0)
		return (int)r;
	out.size = (uint32_t)r;
	return fs_reply(c, &out, sizeof(out));
}

int fs_op_release(struct fs_ctx *c)
{
	const struct fuse_release_in *in = fs_arg(c, 0);
	struct fs_handle *h;
	int r;

	r = fs_handle_release(c->s, in->fh, false, &h);
	if (r < 0)
		return r;
	/* Only a client that forwards flock locks sets it; the server's own
	 * descriptor holds none otherwise. */
	if ((in->release_flags & FUSE_RELEASE_FLOCK_UNLOCK) && c->s->opts.locks == FS_LOCKS_HOST)
		flock(h->fd, LOCK_UN);
	fs_handle_put(c->s, h);
	return fs_reply(c, NULL, 0);
}

int fs_op_flush(struct fs_ctx *c)
{
	const struct fuse_flush_in *in = fs_arg(c, 0);
	struct fs_handle *h;
	int r, fd;

	r = fs_handle_get(c->s, in->fh, false, &h);
	if (r < 0)
		return r;
	/* What close() of this descriptor would do (NFS writes back on
	 * close), without closing it. */
	fd = dup(h->fd);
	r = fd < 0 ? -errno : (close(fd) < 0 && errno != EINTR ? -errno : 0);
	/* A close() in the client drops the closing process's POSIX locks. */
	fs_plocks_release_owner(c->s, h->ino, in->lock_owner);
	fs_handle_put(c->s, h);
	return r < 0 ? r : fs_reply(c, NULL, 0);
}

static int do_fsync(struct fs_ctx *c, bool dir)
{
	const struct fuse_fsync_in *in = fs_arg(c, 0);
	struct fs_handle *h;
	int r;

	r = fs_handle_get(c->s, in->fh, dir, &h);
	if (r < 0)
		return r;
	r = (in->fsync_flags & FUSE_FSYNC_FDATASYNC ? fdatasync(h->fd) : fsync(h->fd)) < 0 ? -errno : 0;
	fs_handle_put(c->s, h);
	return r < 0 ? r : fs_reply(c, NULL, 0);
}

int fs_op_fsync(struct fs_ctx *c)
{
	return do_fsync(c, false);
}

int fs_op_fsyncdir(struct fs_ctx *c)
{
	return do_fsync(c, true);
}

int fs_op_fallocate(struct fs_ctx *c)
{
	const struct fuse_fallocate_in *in = fs_arg(c, 0);
	struct fs_handle *h;
	int r;

	if (in->offset > INT64_MAX || in->length > INT64_MAX)
		return -EINVAL;
	r = fs_handle_get(c->s, in->fh, false, &h);
	if (r < 0)
		return r;
	r = fallocate(h->fd, (int)in->mode, (off_t)in->offset, (off_t)in->length) < 0 ? -errno : 0;
	fs_handle_put(c->s, h);
	return r < 0 ? r : fs_reply(c, NULL, 0);
}

int fs_op_lseek(struct fs_ctx *c)
{
	const struct fuse_lseek_in *in = fs_arg(c, 0);
	struct fuse_lseek_out out = {0};
	struct fs_handle *h;
	off_t off;
	int r;

	if (in->offset > INT64_MAX)
		return -EINVAL;
	if (in->whence != SEEK_SET && in->whence != SEEK_END && in->whence != SEEK_DATA && in->whence != SEEK_HOLE)
		return -EINVAL;
	r = fs_handle_get(c->s, in->fh, false, &h);
	if (r < 0)
		return r;
	/* The descriptor's position is used by nothing else here. */
	off = lseek(h->fd, (off_t)in->offset, (int)in->whence);
	r = off < 0 ? -errno : 0;
	fs_handle_put(c->s, h);
	if (r < 0)
		return r;
	out.offset = (uint64_t)off;
	return fs_reply(c, &out, sizeof(out));
}

int fs_op_copy_file_range(struct fs_ctx *c)
{
	const struct fuse_copy_file_range_in *in = fs_arg(c, 0);
	struct fs_handle *hi, *ho = NULL;
	struct fuse_write_out out = {0};
	loff_t oi = (loff_t)in->off_in, oo = (loff_t)in->off_out;
	size_t len = in->len < UINT32_MAX ? in->len : UINT32_MAX; /* the reply's size is 32-bit */
	ssize_t n;
	int r;

	if (in->flags || in->off_in > INT64_MAX || in->off_out > INT64_MAX)
		return -EINVAL;
	r = fs_handle_get(c->s, in->fh_in, false, &hi);
	if (r < 0)
		return r;
	r = fs_handle_get(c->s, in->fh_out, false, &ho);
	if (r >= 0 && (hi->ino->nodeid != c->h.nodeid || ho->ino->nodeid != in->nodeid_out))
		r = -EBADF;
	if (r >= 0) {
		n = copy_file_range(hi->fd, &oi, ho->fd, &oo, len, 0);
		r = n < 0 ? -errno : 0;
		out.size = n < 0 ? 0 : (uint32_t)n;
	}
	fs_handle_put(c->s, ho);
	fs_handle_put(c->s, hi);
	return r < 0 ? r : fs_reply(c, &out, sizeof(out));
}

int fs_op_syncfs(struct fs_ctx *c)
{
	return syncfs(c->s->root_dir_fd) < 0 ? -errno : fs_reply(c, NULL, 0);
}
