/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Looking names up and the attributes of inodes: LOOKUP, FORGET,
 * BATCH_FORGET, GETATTR, SETATTR, READLINK, STATFS, ACCESS.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "virtio/fs/server-int.h"

/* A name whose inode the server holds already (the client revalidating
 * its cache): one fstatat, no new descriptor. -ENOENT when not known. */
static int lookup_known(struct fs_ctx *c, struct fs_inode *parent, const char *name, struct fuse_entry_out *e)
{
	struct fs_inode *ino;
	struct stat st;
	int r;

	if (fstatat(parent->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? -ENOENT : -errno;
	r = fs_inode_find(&c->s->it, &st, &ino);
	if (r < 0)
		return -EAGAIN;
	/* The override, if any, is read from the inode the server holds. */
	if (S_ISREG(st.st_mode) && !(st.st_mode & 07777))
		r = fs_stat(c->s, ino->fd, &st, NULL);
	if (r >= 0)
		fs_fill_entry(c->s, ino, &st, e);
	else
		fs_inode_forget(&c->s->it, ino->nodeid, 1);
	fs_inode_put(&c->s->it, ino);
	return r;
}

int fs_do_lookup(struct fs_ctx *c, struct fs_inode *parent, const char *name, struct fuse_entry_out *e)
{
	struct fs_inode *ino;
	struct stat st;
	uint32_t type;
	int fd, r;

	if (!fs_name_visible(c->s, parent, name))
		return -ENOENT;
	r = lookup_known(c, parent, name, e);
	if (r != -EAGAIN)
		return r;
	r = fs_fd_reserve(&c->s->it);
	if (r < 0)
		return r;
	/* One component, no symlink followed: nothing outside the parent. */
	fd = openat(parent->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		fs_fd_unreserve(&c->s->it);
		return r;
	}
	r = fs_stat(c->s, fd, &st, &type);
	if (r < 0) {
		close(fd);
		fs_fd_unreserve(&c->s->it);
		return r;
	}
	r = fs_inode_add(&c->s->it, fd, &st, type, &ino);
	if (r < 0)
		return r;
	fs_fill_entry(c->s, ino, &st, e);
	fs_inode_put(&c->s->it, ino);
	return 0;
}

int fs_dir_get(struct fs_ctx *c, uint64_t nodeid, struct fs_inode **ret)
{
	int r = fs_inode_get(&c->s->it, nodeid, ret);

	if (r < 0)
		return r;
	if ((*ret)->type != S_IFDIR) {
		fs_inode_put(&c->s->it, *ret);
		return -ENOTDIR;
	}
	return 0;
}

int fs_op_lookup(struct fs_ctx *c)
{
	struct fuse_entry_out e;
	struct fs_inode *dir;
	const char *name;
	int r;

	r = fs_arg_name(c, 0, &name, NULL);
	if (r < 0)
		return r;
	r = fs_dir_get(c, c->h.nodeid, &dir);
	if (r < 0)
		return r;
	r = fs_do_lookup(c, dir, name, &e);
	fs_inode_put(&c->s->it, dir);
	if (r == -ENOENT && c->s->opts.negative_timeout > 0) {
		/* A negative entry the client may cache: node ID 0. */
		memset(&e, 0, sizeof(e));
		e.entry_valid = (uint64_t)c->s->opts.negative_timeout;
		e.entry_valid_nsec = (uint32_t)((c->s->opts.negative_timeout - (double)e.entry_valid) * 1e9);
		return fs_reply(c, &e, sizeof(e));
	}
	if (r < 0)
		return r;
	return fs_reply(c, &e, sizeof(e));
}

int fs_op_forget(struct fs_ctx *c)
{
	const struct fuse_forget_in *in = fs_arg(c, 0);

	fs_inode_forget(&c->s->it, c->h.nodeid, in->nlookup);
	return FS_NO_REPLY;
}

int fs_op_batch_forget(struct fs_ctx *c)
{
	const struct fuse_batch_forget_in *in = fs_arg(c, 0);
	size_t room = (c->arg_len - sizeof(*in)) / sizeof(struct fuse_forget_one);
	size_t n = in->count < room ? in->count : room;

	for (size_t i = 0; i < n; i++) {
		struct fuse_forget_one one;

		memcpy(&one, c->arg + sizeof(*in) + i * sizeof(one), sizeof(one));
		fs_inode_forget(&c->s->it, one.nodeid, one.nlookup);
	}
	return FS_NO_REPLY;
}

static int reply_attr(struct fs_ctx *c, const struct stat *st)
{
	struct fuse_attr_out out = {0};

	out.attr_valid = (uint64_t)c->s->opts.attr_timeout;
	out.attr_valid_nsec = (uint32_t)((c->s->opts.attr_timeout - (double)out.attr_valid) * 1e9);
	fs_fill_attr(c->s, st, &out.attr);
	return fs_reply(c, &out, sizeof(out));
}

int fs_op_getattr(struct fs_ctx *c)
{
	struct fs_inode *ino;
	struct stat st;
	int r;

	r = fs_inode_get(&c->s->it, c->h.nodeid, &ino);
	if (r < 0)
		return r;
	r = fs_stat(c->s, ino->fd, &st, NULL);
	fs_inode_put(&c->s->it, ino);
	return r < 0 ? r : reply_attr(c, &st);
}

/* chmod through /proc: fchmod() refuses O_PATH descriptors. */
static int chmod_fd(int fd, mode_t mode)
{
	char path[32];

	fs_proc_path(fd, path);
	return chmod(path, mode) < 0 ? -errno : 0;
}

/* Mode change of a regular file (ino->fd), keeping set-ID bits and device
 * types out of the host's mode. cur: the file as the client sees it. */
static int set_mode_reg(struct fs_inode *ino, const struct stat *cur, bool has_ov, uint32_t mode)
{
	struct fs_override ov = {.uid = cur->st_uid, .gid = cur->st_gid};
	int r;

	ov.mode = (cur->st_mode & S_IFMT) | (mode & 07777);
	ov.rdev = (uint32_t)cur->st_rdev;
	if (fs_needs_override(ov.mode)) {
		/* Permissions off first: the host never sees the bits. */
		if (!has_ov && (r = chmod_fd(ino->fd, 0)) < 0)
			return r;
		r = fs_override_set(ino->fd, false, &ov);
		if (r < 0 && !has_ov)
			chmod_fd(ino->fd, cur->st_mode & 07777);
		return r;
	}
	r = chmod_fd(ino->fd, mode & 07777);
	if (r < 0 || !has_ov)
		return r;
	return fs_override_set(ino->fd, false, NULL);
}

static int set_mode(struct fs_inode *ino, const struct stat *cur, bool has_ov, uint32_t mode)
{
	if (ino->type == S_IFLNK)
		return -EOPNOTSUPP;
	if (ino->type == S_IFREG)
		return set_mode_reg(ino, cur, has_ov, mode);
	return chmod_fd(ino->fd, mode & 07777);
}

static int set_owner(struct fs_inode *ino, const struct stat *cur, bool has_ov, uint32_t valid, uid_t uid, gid_t gid)
{
	uid_t u = valid & FATTR_UID ? uid : (uid_t)-1;
	gid_t g = valid & FATTR_GID ? gid : (gid_t)-1;
	struct fs_override ov;

	if (fchownat(ino->fd, "", u, g, AT_EMPTY_PATH) < 0)
		return -errno;
	if (!has_ov)
		return 0;
	ov.uid = valid & FATTR_UID ? uid : cur->st_uid;
	ov.gid = valid & FATTR_GID ? gid : cur->st_gid;
	ov.mode = cur->st_mode;
	ov.rdev = (uint32_t)cur->st_rdev;
	return fs_override_set(ino->fd, false, &ov);
}

static int set_size(struct fs_ctx *c, struct fs_inode *ino, struct fs_handle *h, uint64_t size)
{
	int fd, r = 0;

	if (size > INT64_MAX)
		return -EFBIG;
	if (h && ftruncate(h->fd, (off_t)size) == 0)
		return 0;
	if (ino->type == S_IFDIR)
		return -EISDIR;
	if (ino->type != S_IFREG)
		return -EINVAL;
	fd = fs_reopen(c->s, ino, O_WRONLY);
	if (fd < 0)
		return fd;
	if (ftruncate(fd, (off_t)size) < 0)
		r = -errno;
	close(fd);
	return r;
}

static int set_times(struct fs_inode *ino, const struct fuse_setattr_in *in)
{
	struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_nsec = UTIME_OMIT}};
	char path[32];

	if (in->valid & FATTR_ATIME_NOW)
		ts[0].tv_nsec = UTIME_NOW;
	else if (in->valid & FATTR_ATIME)
		ts[0] = (struct timespec){.tv_sec = (time_t)in->atime, .tv_nsec = in->atimensec};
	if (in->valid & FATTR_MTIME_NOW)
		ts[1].tv_nsec = UTIME_NOW;
	else if (in->valid & FATTR_MTIME)
		ts[1] = (struct timespec){.tv_sec = (time_t)in->mtime, .tv_nsec = in->mtimensec};
	if (utimensat(ino->fd, "", ts, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	/* Kernels before 5.8 take no empty path here: the file through
	 * /proc (which would follow a symlink: not for those). */
	if (errno != EINVAL && errno != ENOENT)
		return -errno;
	if (ino->type == S_IFLNK)
		return -EOPNOTSUPP;
	fs_proc_path(ino->fd, path);
	return utimensat(AT_FDCWD, path, ts, 0) < 0 ? -errno : 0;
}

static int do_setattr(struct fs_ctx *c, struct fs_inode *ino, struct fs_handle *h, const struct fuse_setattr_in *in)
{
	struct fs_override ov;
	struct stat cur;
	bool has_ov;
	int r;

	r = fs_stat(c->s, ino->fd, &cur, NULL);
	if (r < 0)
		return r;
	has_ov = ino->type == S_IFREG && fs_override_get(ino->fd, &ov) > 0;
	if (in->valid & FATTR_MODE) {
		r = set_mode(ino, &cur, has_ov, in->mode);
		if (r < 0)
			return r;
		r = fs_stat(c->s, ino->fd, &cur, NULL);
		has_ov = ino->type == S_IFREG && fs_override_get(ino->fd, &ov) > 0;
	}
	if (r >= 0 && (in->valid & (FATTR_UID | FATTR_GID)))
		r = set_owner(ino, &cur, has_ov, in->valid, in->uid, in->gid);
	if (r >= 0 && (in->valid & FATTR_SIZE))
		r = set_size(c, ino, h, in->size);
	if (r >= 0 && (in->valid & (FATTR_ATIME | FATTR_MTIME | FATTR_ATIME_NOW | FATTR_MTIME_NOW)))
		r = set_times(ino, in);
	/* FATTR_CTIME: the host sets ctime itself, to now, on every change. */
	return r;
}

int fs_op_setattr(struct fs_ctx *c)
{
	const struct fuse_setattr_in *in = fs_arg(c, 0);
	struct fs_handle *h = NULL;
	struct fs_inode *ino;
	struct stat st;
	int r;

	r = fs_inode_get(&c->s->it, c->h.nodeid, &ino);
	if (r < 0)
		return r;
	r = fs_dir_check_change(c->s, ino);
	if (r >= 0 && (in->valid & FATTR_FH))
		r = fs_handle_get(c->s, in->fh, false, &h);
	if (r >= 0 && h && h->ino != ino)
		r = -EBADF;
	if (r >= 0)
		r = do_setattr(c, ino, h, in);
	if (r >= 0)
		r = fs_stat(c->s, ino->fd, &st, NULL);
	fs_handle_put(c->s, h);
	fs_inode_put(&c->s->it, ino);
	return r < 0 ? r : reply_attr(c, &st);
}

int fs_op_readlink(struct fs_ctx *c)
{
	struct fs_inode *ino;
	ssize_t n;
	int r;

	r = fs_inode_get(&c->s->it, c->h.nodeid, &ino);
	if (r < 0)
		return r;
	if (ino->type != S_IFLNK)
		n = -EINVAL;
	else if ((n = readlinkat(ino->fd, "", (char *)c->w->reply, PATH_MAX)) < 0)
		n = -errno;
	fs_inode_put(&c->s->it, ino);
	return n < 0 ? (int)n : fs_reply(c, c->w->reply, (size_t)n);
}

int fs_op_statfs(struct fs_ctx *c)
{
	struct fuse_statfs_out out = {0};
	struct fs_inode *ino;
	struct statfs sf;
	int r;

	r = fs_inode_get(&c->s->it, c->h.nodeid, &ino);
	if (r < 0)
		return r;
	r = fstatfs(ino->fd, &sf) < 0 ? -errno : 0;
	fs_inode_put(&c->s->it, ino);
	if (r < 0)
		return r;
	out.st.blocks = sf.f_blocks;
	out.st.bfree = sf.f_bfree;
	out.st.bavail = sf.f_bavail;
	out.st.files = sf.f_files;
	out.st.ffree = sf.f_ffree;
	out.st.bsize = (uint32_t)sf.f_bsize;
	out.st.namelen = (uint32_t)sf.f_namelen;
	out.st.frsize = (uint32_t)sf.f_frsize;
	return fs_reply(c, &out, sizeof(out));
}

/* Whether the caller (uid, gid; supplementary groups are not sent) may
 * access a file of st for mask, by its permission bits. */
static int check_access(const struct fs_ctx *c, const struct stat *st, uint32_t mask)
{
	uint32_t bits;

	if ((mask & W_OK) && c->s->opts.read_only)
		return -EROFS;
	if (c->h.uid == 0)
		return !(mask & X_OK) || S_ISDIR(st->st_mode) || (st->st_mode & 0111) ? 0 : -EACCES;
	if (st->st_uid == c->h.uid)
		bits = (st->st_mode >> 6) & 7;
	else if (st->st_gid == c->h.gid)
		bits = (st->st_mode >> 3) & 7;
	else
		bits = st->st_mode & 7;
	return (mask & 7 & ~bits) ? -EACCES : 0;
}

int fs_op_access(struct fs_ctx *c)
{
	const struct fuse_access_in *in = fs_arg(c, 0);
	struct fs_inode *ino;
	struct stat st;
	int r;

	r = fs_inode_get(&c->s->it, c->h.nodeid, &ino);
	if (r < 0)
		return r;
	r = fs_stat(c->s, ino->fd, &st, NULL);
	fs_inode_put(&c->s->it, ino);
	if (r >= 0)
		r = check_access(c, &st, in->mask);
	return r < 0 ? r : fs_reply(c, NULL, 0);
}
