/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Making and removing names: MKNOD, MKDIR, SYMLINK, LINK, CREATE, UNLINK,
 * RMDIR, RENAME, RENAME2. Every name is one component under a directory
 * the server holds; new nodes get the caller's uid and gid (the fsgid of
 * the thread while creating, so that set-group-ID directories pass their
 * group on, then the uid with fchownat).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "virtio/fs/server-int.h"

/* Open flags a client may ask for; others are dropped. O_DIRECT is not
 * passed on: the client's buffers need not be aligned for the host. */
#define FS_OPEN_FLAGS (O_ACCMODE | O_APPEND | O_TRUNC | O_NONBLOCK | O_SYNC | O_DSYNC | O_NOATIME | O_LARGEFILE)

int fs_open_flags(uint32_t flags, int *ret)
{
	if ((flags & O_ACCMODE) == O_ACCMODE)
		return -EINVAL;
	*ret = (int)(flags & FS_OPEN_FLAGS) | O_CLOEXEC;
	return 0;
}

uint32_t fs_open_out_flags(const struct fs_server *s)
{
	/* Nothing to do at a close (FS_LOCKS_GUEST): no FLUSH. The flag
	 * came with 7.35; the client ignores it with a writeback cache,
	 * which the server does not offer. */
	return s->opts.locks == FS_LOCKS_GUEST && s->minor >= 35 ? FOPEN_NOFLUSH : 0;
}

/* Permissions and owner of a node this request made, as asked. The
 * server's own umask must not shave the client's mode (the client
 * applied its umask already); override files keep their host mode 0. */
static int fix_new(struct fs_ctx *c, int pfd, uint32_t mode, struct stat *st)
{
	char path[32];
	int r;

	r = fs_chown_new(c, pfd, st);
	if (r < 0 || S_ISLNK(st->st_mode) || fs_needs_override(mode) || (st->st_mode & 0777) == (mode & 0777))
		return r;
	fs_proc_path(pfd, path);
	if (chmod(path, (st->st_mode & 07000) | (mode & 0777)) < 0)
		return -errno;
	st->st_mode = (st->st_mode & ~0777u) | (mode & 0777);
	return 0;
}

/* The node name under dir, for the client: an O_PATH descriptor (from
 * fd when it is an open descriptor of the node), an entry and a client
 * reference. made: this request made it with mode. */
static int new_entry(struct fs_ctx *c, struct fs_inode *dir, const char *name, int fd, bool made, uint32_t mode,
                     struct fs_inode **ret_ino, struct fuse_entry_out *e)
{
	struct fs_inode *ino;
	struct stat st;
	uint32_t type;
	int pfd, r;

	r = fs_fd_reserve(&c->s->it);
	if (r < 0)
		return r;
	if (fd >= 0) {
		char n[16];

		snprintf(n, sizeof(n), "%d", fd);
		pfd = openat(c->s->proc_fd, n, O_PATH | O_CLOEXEC);
	} else {
		pfd = openat(dir->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	}
	if (pfd < 0) {
		r = -errno;
		fs_fd_unreserve(&c->s->it);
		return r;
	}
	r = fs_stat(c->s, pfd, &st, &type);
	if (r >= 0 && made)
		r = fix_new(c, pfd, mode, &st);
	if (r < 0) {
		close(pfd);
		fs_fd_unreserve(&c->s->it);
		return r;
	}
	r = fs_inode_add(&c->s->it, pfd, &st, type, &ino);
	if (r < 0)
		return r;
	fs_fill_entry(c->s, ino, &st, e);
	if (ret_ino)
		*ret_ino = ino;
	else
		fs_inode_put(&c->s->it, ino);
	return 0;
}

/* A plain host file standing for a device node or a set-ID file: no
 * permissions, the client's view in the override xattr. */
static int make_override(struct fs_ctx *c, struct fs_inode *dir, const char *name, uint32_t mode, uint32_t rdev,
                         int oflags, int *ret_fd)
{
	struct fs_override ov = {.uid = c->h.uid, .mode = mode, .rdev = rdev};
	struct stat st;
	int fd, r;

	fs_creds_enter(c);
	fd = openat(dir->fd, name, oflags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0);
	fs_creds_leave(c);
	if (fd < 0)
		return -errno;
	r = fstat(fd, &st) < 0 ? -errno : 0;
	ov.gid = st.st_gid;
	if (r >= 0 && st.st_uid != c->h.uid && fchown(fd, c->h.uid, (gid_t)-1) < 0)
		r = -errno;
	if (r >= 0)
		r = fs_override_set(fd, true, &ov);
	if (r < 0) {
		close(fd);
		unlinkat(dir->fd, name, 0);
		return r;
	}
	if (ret_fd)
		*ret_fd = fd;
	else
		close(fd);
	return 0;
}

/* Run make(dir, name) for a request whose name is at byte off of the
 * arguments, and answer with the new node's entry. */
static int make_node(struct fs_ctx *c, size_t off, uint32_t mode, uint32_t rdev, const char *target)
{
	struct fuse_entry_out e;
	struct fs_inode *dir;
	const char *name;
	int r;

	r = fs_arg_name(c, off, &name, NULL);
	if (r < 0)
		return r;
	r = fs_dir_get(c, c->h.nodeid, &dir);
	if (r < 0)
		return r;
	r = fs_dir_check_change(c->s, dir);
	if (r < 0)
		; /* refused: nothing made */
	else if (fs_needs_override(mode)) {
		r = make_override(c, dir, name, mode, rdev, O_WRONLY, NULL);
	} else {
		fs_creds_enter(c);
		if (target)
			r = symlinkat(target, dir->fd, name);
		else if (S_ISDIR(mode))
			r = mkdirat(dir->fd, name, mode & 07777);
		else
			r = mknodat(dir->fd, name, mode, 0);
		r = r < 0 ? -errno : 0;
		fs_creds_leave(c);
	}
	if (r >= 0) {
		r = new_entry(c, dir, name, -1, true, target ? S_IFLNK | 0777 : mode, NULL, &e);
		/* Made, but the client cannot be told of it: undone. */
		if (r < 0)
			unlinkat(dir->fd, name, S_ISDIR(mode) ? AT_REMOVEDIR : 0);
	}
	fs_inode_put(&c->s->it, dir);
	return r < 0 ? r : fs_reply(c, &e, sizeof(e));
}

int fs_op_mknod(struct fs_ctx *c)
{
	const struct fuse_mknod_in *in = fs_arg(c, 0);
	uint32_t mode = in->mode;

	if (!(mode & S_IFMT))
		mode |= S_IFREG;
	switch (mode & S_IFMT) {
	case S_IFREG:
	case S_IFIFO:
	case S_IFSOCK:
	case S_IFCHR:
	case S_IFBLK:
		break;
	default:
		return -EINVAL;
	}
	return make_node(c, sizeof(*in), mode, in->rdev, NULL);
}

int fs_op_mkdir(struct fs_ctx *c)
{
	const struct fuse_mkdir_in *in = fs_arg(c, 0);

	return make_node(c, sizeof(*in), S_IFDIR | (in->mode & 07777), 0, NULL);
}

int fs_op_symlink(struct fs_ctx *c)
{
	const char *name, *target;
	size_t next;
	int r;

	/* The new name, then what it points to (never followed here). */
	r = fs_arg_name(c, 0, &name, &next);
	if (r >= 0)
		r = fs_arg_str(c, next, PATH_MAX, &target, NULL);
	if (r < 0)
		return r;
	return make_node(c, 0, S_IFLNK | 0777, 0, target);
}

int fs_op_link(struct fs_ctx *c)
{
	const struct fuse_link_in *in = fs_arg(c, 0);
	struct fs_inode *dir, *old;
	struct fuse_entry_out e;
	const char *name;
	char path[32];
	int r;

	r = fs_arg_name(c, sizeof(*in), &name, NULL);
	if (r < 0)
		return r;
	r = fs_inode_get(&c->s->it, in->oldnodeid, &old);
	if (r < 0)
		return r;
	r = old->type == S_IFDIR ? -EPERM : fs_dir_get(c, c->h.nodeid, &dir);
	if (r < 0) {
		fs_inode_put(&c->s->it, old);
		return r;
	}
	/* The inode the server holds, never a path: no link to outside. */
	r = fs_dir_check_change(c->s, dir);
	if (r >= 0)
		r = linkat(old->fd, "", dir->fd, name, AT_EMPTY_PATH) < 0 ? -errno : 0;
	if (r == -ENOENT && old->type != S_IFLNK) {
		/* AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH: through /proc. */
		fs_proc_path(old->fd, path);
		r = linkat(AT_FDCWD, path, dir->fd, name, AT_SYMLINK_FOLLOW) < 0 ? -errno : 0;
	}
	if (r >= 0)
		r = fs_do_lookup(c, dir, name, &e);
	fs_inode_put(&c->s->it, dir);
	fs_inode_put(&c->s->it, old);
	return r < 0 ? r : fs_reply(c, &e, sizeof(e));
}

/* Open the existing file name for CREATE without O_EXCL: only a regular
 * file (a FIFO would block the server: opened non-blocking, refused). */
static int open_existing(struct fs_inode *dir, const char *name, int oflags, int *ret_fd)
{
	struct stat st;
	int fd, r = 0;

	fd = openat(dir->fd, name, (oflags & ~O_TRUNC) | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (!S_ISREG(st.st_mode))
		r = S_ISDIR(st.st_mode) ? -EISDIR : -EEXIST;
	else if (!(oflags & O_NONBLOCK) && fcntl(fd, F_SETFL, oflags & ~O_CLOEXEC & ~O_ACCMODE) < 0)
		r = -errno;
	else if ((oflags & O_TRUNC) && ftruncate(fd, 0) < 0)
		r = -errno;
	if (r < 0) {
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

/* Open or create name under dir for CREATE; *ret_made: whether this call
 * made it (an existing file keeps its owner and mode). */
static int create_open(struct fs_ctx *c, struct fs_inode *dir, const char *name, int oflags, uint32_t mode, bool excl,
                       int *ret_fd, bool *ret_made)
{
	int r, fd;

	*ret_made = false;
	if (fs_needs_override(S_IFREG | mode)) {
		r = make_override(c, dir, name, S_IFREG | (mode & 07777), 0, oflags, ret_fd);
	} else {
		fs_creds_enter(c);
		fd = openat(dir->fd, name, oflags | O_CREAT | O_EXCL | O_NOFOLLOW, mode & 0777);
		r = fd < 0 ? -errno : 0;
		fs_creds_leave(c);
		if (fd >= 0)
			*ret_fd = fd;
	}
	*ret_made = r >= 0;
	if (r != -EEXIST || excl)
		return r;
	return open_existing(dir, name, oflags, ret_fd);
}

int fs_op_create(struct fs_ctx *c)
{
	const struct fuse_create_in *in = fs_arg(c, 0);
	struct {
		struct fuse_entry_out e;
		struct fuse_open_out o;
	} out = {0};
	struct fs_inode *dir, *ino = NULL;
	const char *name;
	int oflags, fd = -1, r;
	bool made = false;

	r = fs_arg_name(c, sizeof(*in), &name, NULL);
	if (r >= 0)
		r = fs_open_flags(in->flags, &oflags);
	if (r < 0)
		return r;
	r = fs_dir_get(c, c->h.nodeid, &dir);
	if (r < 0)
		return r;
	/* No handle to give: refused before anything is made. */
	r = fs_dir_check_change(c->s, dir);
	if (r >= 0)
		r = fs_handle_room(c->s) ? create_open(c, dir, name, oflags, in->mode, in->flags & O_EXCL, &fd, &made)
		                         : -EMFILE;
	if (r >= 0) {
		r = new_entry(c, dir, name, fd, made, S_IFREG | (in->mode & 07777), &ino, &out.e);
		if (r >= 0) {
			uint64_t id = ino->nodeid;

			r = fs_handle_add(c->s, fd, ino, false, &out.o.fh);
			out.o.open_flags = fs_open_out_flags(c->s);
			fd = -1;
			if (r < 0) {
				fs_inode_put(&c->s->it, ino);
				fs_inode_forget(&c->s->it, id, 1);
			}
		}
		/* Made, but the client cannot be told of it: undone. */
		if (r < 0 && made)
			unlinkat(dir->fd, name, 0);
	}
	fs_inode_put(&c->s->it, dir);
	if (fd >= 0)
		close(fd);
	return r < 0 ? r : fs_reply(c, &out, sizeof(out));
}

static int remove_name(struct fs_ctx *c, int flags)
{
	struct fs_inode *dir;
	const char *name;
	int r;

	r = fs_arg_name(c, 0, &name, NULL);
	if (r < 0)
		return r;
	r = fs_dir_get(c, c->h.nodeid, &dir);
	if (r < 0)
		return r;
	r = fs_dir_check_change(c->s, dir);
	if (r >= 0)
		r = unlinkat(dir->fd, name, flags) < 0 ? -errno : 0;
	fs_inode_put(&c->s->it, dir);
	return r < 0 ? r : fs_reply(c, NULL, 0);
}

int fs_op_unlink(struct fs_ctx *c)
{
	return remove_name(c, 0);
}

int fs_op_rmdir(struct fs_ctx *c)
{
	return remove_name(c, AT_REMOVEDIR);
}

static int do_rename(struct fs_ctx *c, uint64_t newdir, size_t off, uint32_t flags)
{
	struct fs_inode *od, *nd;
	const char *oldname, *newname;
	size_t next;
	int r;

	if (flags & ~(uint32_t)(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT))
		return -EINVAL;
	r = fs_arg_name(c, off, &oldname, &next);
	if (r >= 0)
		r = fs_arg_name(c, next, &newname, NULL);
	if (r >= 0)
		r = fs_dir_get(c, c->h.nodeid, &od);
	if (r < 0)
		return r;
	r = fs_dir_get(c, newdir, &nd);
	if (r < 0) {
		fs_inode_put(&c->s->it, od);
		return r;
	}
	r = fs_dir_check_change(c->s, od);
	if (r >= 0)
		r = fs_dir_check_change(c->s, nd);
	if (r >= 0)
		r = renameat2(od->fd, oldname, nd->fd, newname, flags) < 0 ? -errno : 0;
	fs_inode_put(&c->s->it, nd);
	fs_inode_put(&c->s->it, od);
	return r < 0 ? r : fs_reply(c, NULL, 0);
}

int fs_op_rename(struct fs_ctx *c)
{
	const struct fuse_rename_in *in = fs_arg(c, 0);

	return do_rename(c, in->newdir, sizeof(*in), 0);
}

int fs_op_rename2(struct fs_ctx *c)
{
	const struct fuse_rename2_in *in = fs_arg(c, 0);

	return do_rename(c, in->newdir, sizeof(*in), in->flags);
}
