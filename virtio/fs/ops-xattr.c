/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Extended attributes: SETXATTR, GETXATTR, LISTXATTR, REMOVEXATTR, with
 * the FUSE size probe (size 0 asks how much room the answer needs). They
 * reach regular files and directories through /proc/self/fd (the *xattr
 * calls take no O_PATH descriptor); other file types have none here. The
 * server's own override xattr is neither shown nor changeable.
 */
#include <errno.h>
#include <linux/limits.h>
#include <string.h>
#include <sys/xattr.h>

#include "virtio/fs/server-int.h"

static bool reserved(const char *name)
{
	return !strcmp(name, FS_OVERRIDE_XATTR);
}

/* The node of the request, if xattrs reach it, and its /proc path. */
static int xattr_node(struct fs_ctx *c, struct fs_inode **ret, char path[32])
{
	int r = fs_inode_get(&c->s->it, c->h.nodeid, ret);

	if (r < 0)
		return r;
	if ((*ret)->type != S_IFREG && (*ret)->type != S_IFDIR) {
		fs_inode_put(&c->s->it, *ret);
		return -ENOTSUP;
	}
	fs_proc_path((*ret)->fd, path);
	return 0;
}

int fs_op_setxattr(struct fs_ctx *c)
{
	const struct fuse_setxattr_in *in = fs_arg(c, 0);
	size_t off = FUSE_COMPAT_SETXATTR_IN_SIZE, next;
	struct fs_inode *ino;
	const char *name;
	char path[32];
	int r;

	r = fs_arg_str(c, off, XATTR_NAME_MAX + 1, &name, &next);
	if (r < 0)
		return r == -ENAMETOOLONG ? -ERANGE : r;
	if (in->size > XATTR_SIZE_MAX)
		return -E2BIG;
	if (in->size > c->arg_len - next)
		return -EINVAL;
	if (reserved(name))
		return -EPERM;
	r = xattr_node(c, &ino, path);
	if (r < 0)
		return r == -ENOTSUP ? -EPERM : r;
	r = fs_dir_check_change(c->s, ino);
	if (r >= 0)
		r = setxattr(path, name, c->arg + next, in->size, (int)in->flags) < 0 ? -errno : 0;
	fs_inode_put(&c->s->it, ino);
	return r < 0 ? r : fs_reply(c, NULL, 0);
}

/* Answer a GETXATTR or LISTXATTR of n bytes in the worker's buffer. */
static int reply_sized(struct fs_ctx *c, uint32_t want, size_t n)
{
	struct fuse_getxattr_out out = {.size = (uint32_t)n};

	if (!want)
		return fs_reply(c, &out, sizeof(out));
	if (n > want)
		return -ERANGE;
	return fs_reply(c, c->w->reply, n);
}

int fs_op_getxattr(struct fs_ctx *c)
{
	const struct fuse_getxattr_in *in = fs_arg(c, 0);
	struct fs_inode *ino;
	const char *name;
	char path[32];
	ssize_t n;
	int r;

	r = fs_arg_str(c, sizeof(*in), XATTR_NAME_MAX + 1, &name, NULL);
	if (r < 0)
		return r == -ENAMETOOLONG ? -ERANGE : r;
	if (reserved(name))
		return -ENODATA;
	r = xattr_node(c, &ino, path);
	if (r < 0)
		return r == -ENOTSUP ? -ENODATA : r;
	n = getxattr(path, name, c->w->reply, XATTR_SIZE_MAX);
	n = n < 0 ? -errno : n;
	fs_inode_put(&c->s->it, ino);
	return n < 0 ? (int)n : reply_sized(c, in->size, (size_t)n);
}

/* Drop the server's own name from a listxattr() list of n bytes. */
static size_t hide_reserved(char *list, size_t n)
{
	size_t out = 0;

	for (size_t i = 0; i < n;) {
		size_t len = strnlen(list + i, n - i) + 1;

		if (i + len > n)
			break;
		if (!reserved(list + i)) {
			memmove(list + out, list + i, len);
			out += len;
		}
		i += len;
	}
	return out;
}

int fs_op_listxattr(struct fs_ctx *c)
{
	const struct fuse_getxattr_in *in = fs_arg(c, 0);
	struct fs_inode *ino;
	char path[32];
	ssize_t n;
	int r;

	r = xattr_node(c, &ino, path);
	if (r == -ENOTSUP)
		return reply_sized(c, in->size, 0);
	if (r < 0)
		return r;
	n = listxattr(path, (char *)c->w->reply, XATTR_LIST_MAX);
	n = n < 0 ? -errno : n;
	fs_inode_put(&c->s->it, ino);
	if (n < 0)
		return (int)n;
	return reply_sized(c, in->size, hide_reserved((char *)c->w->reply, (size_t)n));
}

int fs_op_removexattr(struct fs_ctx *c)
{
	struct fs_inode *ino;
	const char *name;
	char path[32];
	int r;

	r = fs_arg_str(c, 0, XATTR_NAME_MAX + 1, &name, NULL);
	if (r < 0)
		return r == -ENAMETOOLONG ? -ERANGE : r;
	if (reserved(name))
		return -EPERM;
	r = xattr_node(c, &ino, path);
	if (r < 0)
		return r == -ENOTSUP ? -ENODATA : r;
	r = fs_dir_check_change(c->s, ino);
	if (r >= 0)
		r = removexattr(path, name) < 0 ? -errno : 0;
	fs_inode_put(&c->s->it, ino);
	return r < 0 ? r : fs_reply(c, NULL, 0);
}
