/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Directories: OPENDIR, READDIR, READDIRPLUS, RELEASEDIR. Entries come
 * from getdents64 on the directory's own descriptor; an entry's offset is
 * the host's d_off cookie, so the client can come back to any point. The
 * shared directory's ".." names the shared directory itself: nothing of
 * what lies above it shows. A share that shows only some names of its
 * root lists only those there.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "virtio/fs/server-int.h"

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

int fs_op_opendir(struct fs_ctx *c)
{
	struct fuse_open_out out = {0};
	struct fs_inode *ino;
	int fd, r;

	r = fs_dir_get(c, c->h.nodeid, &ino);
	if (r < 0)
		return r;
	fd = fs_reopen(c->s, ino, O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		fs_inode_put(&c->s->it, ino);
		return fd;
	}
	r = fs_handle_add(c->s, fd, ino, true, &out.fh);
	if (r < 0) {
		fs_inode_put(&c->s->it, ino);
		return r;
	}
	return fs_reply(c, &out, sizeof(out));
}

int fs_op_releasedir(struct fs_ctx *c)
{
	const struct fuse_release_in *in = fs_arg(c, 0);
	struct fs_handle *h;
	int r;

	r = fs_handle_release(c->s, in->fh, true, &h);
	if (r < 0)
		return r;
	fs_handle_put(c->s, h);
	return fs_reply(c, NULL, 0);
}

/* The next host entry at d->pos, reading more when the buffer is spent;
 * NULL at the end of the directory (or on an error, in *err). */
static const struct linux_dirent64 *next_entry(struct fs_handle *h, int *err)
{
	struct fs_dirbuf *d = h->dirbuf;
	const struct linux_dirent64 *de;
	ssize_t n;

	if (d->pos >= d->len) {
		n = getdents64(h->fd, d->buf, FS_DIRBUF_SIZE);
		if (n <= 0) {
			*err = n < 0 ? -errno : 0;
			return NULL;
		}
		d->len = (size_t)n;
		d->pos = 0;
	}
	de = (const struct linux_dirent64 *)(d->buf + d->pos);
	if (de->d_reclen < offsetof(struct linux_dirent64, d_name) + 1 || de->d_reclen > d->len - d->pos) {
		*err = -EIO;
		return NULL;
	}
	return de;
}

static bool is_dot(const char *name)
{
	return name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2]));
}

/* One entry into the reply at out (room bytes left); its size, or 0
 * when it does not fit. READDIRPLUS looks each entry up (a client
 * reference) except "." and "..", which carry node ID 0. */
static size_t put_entry(struct fs_ctx *c, struct fs_handle *h, const struct linux_dirent64 *de, bool plus, uint8_t *out,
                        size_t room)
{
	size_t namelen = strnlen(de->d_name, de->d_reclen - offsetof(struct linux_dirent64, d_name));
	size_t size = plus ? FUSE_DIRENT_ALIGN(FUSE_NAME_OFFSET_DIRENTPLUS + namelen)
	                   : FUSE_DIRENT_ALIGN(FUSE_NAME_OFFSET + namelen);
	struct fuse_dirent *fd = (struct fuse_dirent *)(plus ? out + offsetof(struct fuse_direntplus, dirent) : out);
	bool root_parent = h->ino == c->s->it.root && !strcmp(de->d_name, "..");

	if (size > room)
		return 0;
	memset(out, 0, size);
	fd->ino = root_parent ? c->s->it.root->ino : de->d_ino;
	fd->off = (uint64_t)de->d_off;
	fd->namelen = (uint32_t)namelen;
	fd->type = de->d_type;
	memcpy(fd->name, de->d_name, namelen);
	if (plus && !is_dot(de->d_name)) {
		struct fuse_entry_out *e = (struct fuse_entry_out *)out;

		/* Gone meanwhile: the entry without attributes (node 0). */
		if (fs_do_lookup(c, h->ino, de->d_name, e) < 0)
			memset(e, 0, sizeof(*e));
		else
			fd->type = (e->attr.mode & S_IFMT) >> 12;
	}
	return size;
}

static int do_readdir(struct fs_ctx *c, bool plus)
{
	const struct fuse_read_in *in = fs_arg(c, 0);
	size_t size = in->size < FS_REPLY_MAX ? in->size : FS_REPLY_MAX, used = 0, n;
	size_t room = c->out_len - sizeof(struct fuse_out_header);
	const struct linux_dirent64 *de;
	struct fs_handle *h;
	struct fs_dirbuf *d;
	int r, err = 0;

	if (c->out_len < sizeof(struct fuse_out_header))
		return -EINVAL;
	if (size > room)
		size = room; /* entries READDIRPLUS looked up must reach the client */
	r = fs_handle_get(c->s, in->fh, true, &h);
	if (r < 0)
		return r;
	d = h->dirbuf;
	pthread_mutex_lock(&d->lock);
	if (!d->valid || in->offset != d->off) {
		if (in->offset > INT64_MAX || lseek(h->fd, (off_t)in->offset, SEEK_SET) < 0) {
			err = in->offset > INT64_MAX ? -EINVAL : -errno;
			goto out;
		}
		d->len = d->pos = 0;
		d->off = in->offset;
		d->valid = true;
	}
	while ((de = next_entry(h, &err))) {
		/* A name the share does not show is passed over. */
		if (is_dot(de->d_name) || fs_name_visible(c->s, h->ino, de->d_name)) {
			n = put_entry(c, h, de, plus, c->w->reply + used, size - used);
			if (!n)
				break;
			used += n;
		}
		d->pos += de->d_reclen;
		d->off = (uint64_t)de->d_off;
	}
	if (err < 0)
		d->valid = false;
out:
	pthread_mutex_unlock(&d->lock);
	fs_handle_put(c->s, h);
	/* An error after some entries: give those (the next call sees it). */
	if (err < 0 && !used)
		return err;
	return fs_reply(c, c->w->reply, used);
}

int fs_op_readdir(struct fs_ctx *c)
{
	return do_readdir(c, false);
}

int fs_op_readdirplus(struct fs_ctx *c)
{
	return do_readdir(c, true);
}
