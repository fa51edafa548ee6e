/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Attributes as the client sees them, and the override that keeps device
 * nodes and set-user/group-ID files harmless on the host.
 *
 * A regular file whose host permission bits are all clear may carry the
 * xattr user.containers.override_stat ("uid:gid:mode[:type]", mode in
 * octal, type "file", "char-MAJOR-MINOR" or "block-MAJOR-MINOR", as
 * containers/storage and fuse-overlayfs write it). The client then sees
 * that owner, mode and type instead. Only such files are looked at, so an
 * ordinary stat costs no xattr read.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "virtio/fs/server-int.h"

void fs_proc_path(int fd, char buf[32])
{
	snprintf(buf, 32, "/proc/self/fd/%d", fd);
}

bool fs_needs_override(uint32_t mode)
{
	return S_ISCHR(mode) || S_ISBLK(mode) || (S_ISREG(mode) && (mode & (S_ISUID | S_ISGID)));
}

static bool parse_num(const char **p, int base, uint32_t *ret)
{
	char *end;
	unsigned long v;

	if (**p < '0' || **p > '9')
		return false;
	errno = 0;
	v = strtoul(*p, &end, base);
	if (errno || v > UINT32_MAX)
		return false;
	*ret = (uint32_t)v;
	*p = end;
	return true;
}

/* "char-M-m" / "block-M-m": the type and device number. Other types
 * ("dir", "symlink"...) cannot describe a regular host file: plain file. */
static void parse_type(const char *p, struct fs_override *ov)
{
	uint32_t type = S_IFREG, maj = 0, min = 0;

	if (!strncmp(p, "char-", 5)) {
		type = S_IFCHR;
		p += 5;
	} else if (!strncmp(p, "block-", 6)) {
		type = S_IFBLK;
		p += 6;
	} else {
		ov->mode |= S_IFREG;
		return;
	}
	if (!parse_num(&p, 10, &maj) || *p++ != '-' || !parse_num(&p, 10, &min) || *p) {
		ov->mode |= S_IFREG;
		return;
	}
	ov->mode |= type;
	ov->rdev = (uint32_t)makedev(maj, min);
}

int fs_override_get(int fd, struct fs_override *ret)
{
	struct fs_override ov = {0};
	char path[32], buf[96];
	const char *p = buf;
	ssize_t n;

	fs_proc_path(fd, path);
	n = getxattr(path, FS_OVERRIDE_XATTR, buf, sizeof(buf) - 1);
	if (n < 0)
		return errno == ENODATA || errno == ENOTSUP || errno == ERANGE ? 0 : -errno;
	buf[n] = '\0';
	if (!parse_num(&p, 10, &ov.uid) || *p++ != ':' || !parse_num(&p, 10, &ov.gid) || *p++ != ':' ||
	    !parse_num(&p, 8, &ov.mode))
		return 0; /* not ours to interpret */
	ov.mode &= 07777;
	if (*p == ':')
		parse_type(p + 1, &ov);
	else if (!*p)
		ov.mode |= S_IFREG;
	else
		return 0;
	*ret = ov;
	return 1;
}

int fs_override_set(int fd, bool opened, const struct fs_override *ov)
{
	char path[32], buf[96], type[40] = "file";
	int r, n;

	if (!opened)
		fs_proc_path(fd, path);
	if (!ov) {
		r = opened ? fremovexattr(fd, FS_OVERRIDE_XATTR) : removexattr(path, FS_OVERRIDE_XATTR);
		return r < 0 && errno != ENODATA ? -errno : 0;
	}
	if (S_ISCHR(ov->mode) || S_ISBLK(ov->mode))
		snprintf(type, sizeof(type), "%s-%u-%u", S_ISCHR(ov->mode) ? "char" : "block", major(ov->rdev),
		         minor(ov->rdev));
	n = snprintf(buf, sizeof(buf), "%u:%u:%04o:%s", ov->uid, ov->gid, ov->mode & 07777, type);
	r = opened ? fsetxattr(fd, FS_OVERRIDE_XATTR, buf, (size_t)n, 0)
	           : setxattr(path, FS_OVERRIDE_XATTR, buf, (size_t)n, 0);
	/* A file system without user xattrs cannot hold what was asked. */
	return r < 0 ? (errno == ENOTSUP ? -EPERM : -errno) : 0;
}

int fs_stat(struct fs_server *s, int fd, struct stat *st, uint32_t *ret_host_type)
{
	struct fs_override ov;

	if (fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (ret_host_type)
		*ret_host_type = st->st_mode & S_IFMT;
	if (!S_ISREG(st->st_mode) || (st->st_mode & 07777))
		return 0;
	if (fs_override_get(fd, &ov) <= 0)
		return 0;
	st->st_uid = ov.uid;
	st->st_gid = ov.gid;
	st->st_mode = ov.mode;
	st->st_rdev = ov.rdev;
	return 0;
}

void fs_fill_attr(struct fs_server *s, const struct stat *st, struct fuse_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = st->st_ino;
	a->size = (uint64_t)st->st_size;
	a->blocks = (uint64_t)st->st_blocks;
	a->atime = (uint64_t)st->st_atim.tv_sec;
	a->mtime = (uint64_t)st->st_mtim.tv_sec;
	a->ctime = (uint64_t)st->st_ctim.tv_sec;
	a->atimensec = (uint32_t)st->st_atim.tv_nsec;
	a->mtimensec = (uint32_t)st->st_mtim.tv_nsec;
	a->ctimensec = (uint32_t)st->st_ctim.tv_nsec;
	a->mode = st->st_mode;
	a->nlink = (uint32_t)st->st_nlink;
	a->uid = st->st_uid;
	a->gid = st->st_gid;
	a->rdev = (uint32_t)st->st_rdev;
	a->blksize = (uint32_t)st->st_blksize;
}

static void split_timeout(double t, uint64_t *sec, uint32_t *nsec)
{
	*sec = (uint64_t)t;
	*nsec = (uint32_t)((t - (double)*sec) * 1e9);
}

void fs_fill_entry(struct fs_server *s, const struct fs_inode *ino, const struct stat *st, struct fuse_entry_out *e)
{
	memset(e, 0, sizeof(*e));
	e->nodeid = ino->nodeid;
	split_timeout(s->opts.entry_timeout, &e->entry_valid, &e->entry_valid_nsec);
	split_timeout(s->opts.attr_timeout, &e->attr_valid, &e->attr_valid_nsec);
	fs_fill_attr(s, st, &e->attr);
}

/* Raw syscalls: the change is this thread's only (glibc's setfsgid is one
 * too, but says nothing about it). The thread's own fsgid is asked each
 * time (setfsgid returns it): it is not the one the server was made with
 * once a jail changed the process's ids. */
void fs_creds_enter(struct fs_ctx *c)
{
	c->saved_fsgid = (gid_t)syscall(SYS_setfsgid, c->h.gid);
}

void fs_creds_leave(struct fs_ctx *c)
{
	if (c->saved_fsgid != c->h.gid)
		syscall(SYS_setfsgid, c->saved_fsgid);
}

int fs_chown_new(struct fs_ctx *c, int fd, struct stat *st)
{
	if (st->st_uid == c->h.uid)
		return 0;
	if (fchownat(fd, "", c->h.uid, (gid_t)-1, AT_EMPTY_PATH) < 0)
		return -errno;
	st->st_uid = c->h.uid;
	return 0;
}
