/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuse-client.h"

#define CANARY "canary: never read or changed through the share"

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

const char *fc_path(struct fc *c, const char *rel)
{
	static char buf[4][256];
	static int n;
	char *p = buf[n++ % 4];

	snprintf(p, 256, "%s/%s", c->share, rel);
	return p;
}

const char *fc_out_path(struct fc *c, const char *rel)
{
	static char buf[4][256];
	static int n;
	char *p = buf[n++ % 4];

	snprintf(p, 256, "%s/%s", c->outside, rel);
	return p;
}

void fc_put_file(struct fc *c, const char *rel, const char *content)
{
	int fd = open(fc_path(c, rel), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || write(fd, content, strlen(content)) != (ssize_t)strlen(content))
		abort();
	close(fd);
}

int fc_open(struct fc *c, const struct fs_server_opts *opts, bool init)
{
	struct fs_server_opts o;
	int fd, r;

	memset(c, 0, sizeof(*c));
	c->framing_ok = true;
	strcpy(c->base, "/tmp/kvrun-fs-test-XXXXXX");
	if (!mkdtemp(c->base))
		return -errno;
	snprintf(c->share, sizeof(c->share), "%s/share", c->base);
	snprintf(c->outside, sizeof(c->outside), "%s/outside", c->base);
	if (mkdir(c->share, 0755) < 0 || mkdir(c->outside, 0755) < 0 || mkdir(fc_out_path(c, "dir"), 0755) < 0)
		return -errno;
	fd = open(fc_out_path(c, "secret"), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, CANARY, strlen(CANARY)) < 0)
		return -errno;
	close(fd);
	c->reply = malloc(FC_REPLY_MAX);
	if (!c->reply)
		return -ENOMEM;
	if (!opts) {
		fs_server_opts_default(&o);
		opts = &o;
	}
	o = *opts;
	o.root = c->share;
	r = fs_server_new(&o, &c->s);
	if (r < 0)
		return r;
	r = fs_worker_new(c->s, &c->w);
	if (r < 0)
		return r;
	if (init)
		return fc_init(c, FUSE_KERNEL_VERSION, FUSE_KERNEL_MINOR_VERSION, UINT32_MAX, NULL);
	return 0;
}

void fc_close(struct fc *c)
{
	fs_worker_free(c->w);
	fs_server_free(c->s);
	free(c->reply);
	if (c->base[0])
		nftw(c->base, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	memset(c, 0, sizeof(*c));
}

size_t fc_raw(struct fc *c, const void *req, size_t len, size_t out_room)
{
	struct iovec in = {(void *)req, len}, out = {c->reply, out_room < FC_REPLY_MAX ? out_room : FC_REPLY_MAX};

	c->reply_len = fs_server_handle(c->s, c->w, &in, 1, &out, 1);
	return c->reply_len;
}

int fc_call_room(struct fc *c, uint32_t op, uint64_t node, const struct iovec *parts, unsigned int n, size_t out_room,
                 void *out, size_t room, size_t *ret_len)
{
	struct fuse_in_header h = {
	    .opcode = op, .unique = ++c->unique, .nodeid = node, .uid = c->uid, .gid = c->gid, .pid = 4242};
	struct iovec iov[9] = {{&h, sizeof(h)}};
	struct iovec o = {c->reply, out_room < FC_REPLY_MAX ? out_room : FC_REPLY_MAX};
	struct fuse_out_header oh;
	size_t len;

	h.len = sizeof(h);
	for (unsigned int i = 0; i < n && i < 8; i++) {
		iov[1 + i] = parts[i];
		h.len += (uint32_t)parts[i].iov_len;
	}
	len = fs_server_handle(c->s, c->w, iov, 1 + n, &o, 1);
	c->reply_len = len;
	if (!len)
		return FC_NO_REPLY;
	memcpy(&oh, c->reply, sizeof(oh));
	if (oh.len != len || oh.unique != h.unique || len < sizeof(oh) || (oh.error && len != sizeof(oh)))
		c->framing_ok = false;
	if (ret_len)
		*ret_len = len - sizeof(oh);
	if (out && !oh.error)
		memcpy(out, c->reply + sizeof(oh), len - sizeof(oh) < room ? len - sizeof(oh) : room);
	return oh.error;
}

int fc_call(struct fc *c, uint32_t op, uint64_t node, const struct iovec *parts, unsigned int n, void *out, size_t room,
            size_t *ret_len)
{
	return fc_call_room(c, op, node, parts, n, FC_REPLY_MAX, out, room, ret_len);
}

#define IOV(p, n) ((struct iovec){(void *)(p), (n)})
#define STR(s) IOV((s), strlen(s) + 1)

int fc_init(struct fc *c, uint32_t major, uint32_t minor, uint32_t flags, struct fuse_init_out *ret)
{
	struct fuse_init_in in = {.major = major, .minor = minor, .max_readahead = 131072, .flags = flags};
	struct fuse_init_out out;
	struct iovec p = IOV(&in, sizeof(in));
	int r = fc_call(c, FUSE_INIT, 0, &p, 1, &out, sizeof(out), NULL);

	if (r == 0 && ret)
		*ret = out;
	return r;
}

int fc_lookup(struct fc *c, uint64_t dir, const char *name, struct fuse_entry_out *ret)
{
	struct iovec p = STR(name);

	return fc_call(c, FUSE_LOOKUP, dir, &p, 1, ret, sizeof(*ret), NULL);
}

void fc_forget(struct fc *c, uint64_t node, uint64_t n)
{
	struct fuse_forget_in in = {.nlookup = n};
	struct iovec p = IOV(&in, sizeof(in));

	fc_call(c, FUSE_FORGET, node, &p, 1, NULL, 0, NULL);
}

int fc_getattr(struct fc *c, uint64_t node, struct fuse_attr *ret)
{
	struct fuse_getattr_in in = {0};
	struct fuse_attr_out out;
	struct iovec p = IOV(&in, sizeof(in));
	int r = fc_call(c, FUSE_GETATTR, node, &p, 1, &out, sizeof(out), NULL);

	if (r == 0 && ret)
		*ret = out.attr;
	return r;
}

int fc_setattr(struct fc *c, uint64_t node, const struct fuse_setattr_in *in, struct fuse_attr *ret)
{
	struct fuse_attr_out out;
	struct iovec p = IOV(in, sizeof(*in));
	int r = fc_call(c, FUSE_SETATTR, node, &p, 1, &out, sizeof(out), NULL);

	if (r == 0 && ret)
		*ret = out.attr;
	return r;
}

int fc_mkdir(struct fc *c, uint64_t dir, const char *name, uint32_t mode, struct fuse_entry_out *ret)
{
	struct fuse_mkdir_in in = {.mode = mode};
	struct iovec p[2] = {IOV(&in, sizeof(in)), STR(name)};

	return fc_call(c, FUSE_MKDIR, dir, p, 2, ret, ret ? sizeof(*ret) : 0, NULL);
}

int fc_mknod(struct fc *c, uint64_t dir, const char *name, uint32_t mode, uint32_t rdev, struct fuse_entry_out *ret)
{
	struct fuse_mknod_in in = {.mode = mode, .rdev = rdev};
	struct iovec p[2] = {IOV(&in, sizeof(in)), STR(name)};

	return fc_call(c, FUSE_MKNOD, dir, p, 2, ret, ret ? sizeof(*ret) : 0, NULL);
}

int fc_symlink(struct fc *c, uint64_t dir, const char *name, const char *target, struct fuse_entry_out *ret)
{
	struct iovec p[2] = {STR(name), STR(target)};

	return fc_call(c, FUSE_SYMLINK, dir, p, 2, ret, ret ? sizeof(*ret) : 0, NULL);
}

int fc_link(struct fc *c, uint64_t old, uint64_t dir, const char *name, struct fuse_entry_out *ret)
{
	struct fuse_link_in in = {.oldnodeid = old};
	struct iovec p[2] = {IOV(&in, sizeof(in)), STR(name)};

	return fc_call(c, FUSE_LINK, dir, p, 2, ret, ret ? sizeof(*ret) : 0, NULL);
}

int fc_create(struct fc *c, uint64_t dir, const char *name, uint32_t flags, uint32_t mode, struct fuse_entry_out *ret,
              uint64_t *ret_fh)
{
	struct fuse_create_in in = {.flags = flags, .mode = mode};
	struct iovec p[2] = {IOV(&in, sizeof(in)), STR(name)};
	struct {
		struct fuse_entry_out e;
		struct fuse_open_out o;
	} out;
	int r = fc_call(c, FUSE_CREATE, dir, p, 2, &out, sizeof(out), NULL);

	if (r == 0 && ret)
		*ret = out.e;
	if (r == 0 && ret_fh)
		*ret_fh = out.o.fh;
	if (r == 0)
		c->open_flags = out.o.open_flags;
	return r;
}

int fc_unlink(struct fc *c, uint64_t dir, const char *name)
{
	struct iovec p = STR(name);

	return fc_call(c, FUSE_UNLINK, dir, &p, 1, NULL, 0, NULL);
}

int fc_rmdir(struct fc *c, uint64_t dir, const char *name)
{
	struct iovec p = STR(name);

	return fc_call(c, FUSE_RMDIR, dir, &p, 1, NULL, 0, NULL);
}

int fc_rename(struct fc *c, uint64_t dir, const char *old, uint64_t newdir, const char *newname, uint32_t flags)
{
	struct fuse_rename2_in in = {.newdir = newdir, .flags = flags};
	struct iovec p[3] = {IOV(&in, sizeof(in)), STR(old), STR(newname)};

	return fc_call(c, FUSE_RENAME2, dir, p, 3, NULL, 0, NULL);
}

int fc_readlink(struct fc *c, uint64_t node, char *buf, size_t size)
{
	size_t n = 0;
	int r = fc_call(c, FUSE_READLINK, node, NULL, 0, buf, size - 1, &n);

	buf[r == 0 && n < size ? n : 0] = '\0';
	return r;
}

int fc_open_node(struct fc *c, uint64_t node, uint32_t flags, bool dir, uint64_t *ret_fh)
{
	struct fuse_open_in in = {.flags = flags};
	struct fuse_open_out out;
	struct iovec p = IOV(&in, sizeof(in));
	int r = fc_call(c, dir ? FUSE_OPENDIR : FUSE_OPEN, node, &p, 1, &out, sizeof(out), NULL);

	if (r == 0) {
		*ret_fh = out.fh;
		c->open_flags = out.open_flags;
	}
	return r;
}

int fc_release(struct fc *c, uint64_t node, uint64_t fh, bool dir)
{
	struct fuse_release_in in = {.fh = fh};
	struct iovec p = IOV(&in, sizeof(in));

	return fc_call(c, dir ? FUSE_RELEASEDIR : FUSE_RELEASE, node, &p, 1, NULL, 0, NULL);
}

int fc_read(struct fc *c, uint64_t node, uint64_t fh, uint64_t off, uint32_t size, void *buf, size_t *ret_len)
{
	struct fuse_read_in in = {.fh = fh, .offset = off, .size = size};
	struct iovec p = IOV(&in, sizeof(in));

	return fc_call(c, FUSE_READ, node, &p, 1, buf, size, ret_len);
}

int fc_write(struct fc *c, uint64_t node, uint64_t fh, uint64_t off, const void *data, uint32_t len,
             uint32_t *ret_written)
{
	struct fuse_write_in in = {.fh = fh, .offset = off, .size = len};
	struct iovec p[2] = {IOV(&in, sizeof(in)), IOV(data, len)};
	struct fuse_write_out out;
	int r = fc_call(c, FUSE_WRITE, node, p, 2, &out, sizeof(out), NULL);

	if (r == 0 && ret_written)
		*ret_written = out.size;
	return r;
}

int fc_readdir(struct fc *c, uint64_t node, uint64_t fh, uint64_t off, uint32_t size, bool plus, void *buf,
               size_t *ret_len)
{
	struct fuse_read_in in = {.fh = fh, .offset = off, .size = size};
	struct iovec p = IOV(&in, sizeof(in));

	return fc_call(c, plus ? FUSE_READDIRPLUS : FUSE_READDIR, node, &p, 1, buf, size, ret_len);
}

int fc_setxattr(struct fc *c, uint64_t node, const char *name, const void *v, uint32_t len, uint32_t flags)
{
	struct fuse_setxattr_in in = {.size = len, .flags = flags};
	struct iovec p[3] = {IOV(&in, FUSE_COMPAT_SETXATTR_IN_SIZE), STR(name), IOV(v, len)};

	return fc_call(c, FUSE_SETXATTR, node, p, 3, NULL, 0, NULL);
}

int fc_getxattr(struct fc *c, uint64_t node, const char *name, uint32_t size, void *buf, size_t *ret_len)
{
	struct fuse_getxattr_in in = {.size = size};
	struct iovec p[2] = {IOV(&in, sizeof(in)), STR(name)};
	struct fuse_getxattr_out out;
	size_t n = 0;
	int r;

	if (!size) {
		r = fc_call(c, FUSE_GETXATTR, node, p, 2, &out, sizeof(out), NULL);
		if (r == 0)
			*ret_len = out.size;
		return r;
	}
	r = fc_call(c, FUSE_GETXATTR, node, p, 2, buf, size, &n);
	*ret_len = n;
	return r;
}

int fc_listxattr(struct fc *c, uint64_t node, uint32_t size, void *buf, size_t *ret_len)
{
	struct fuse_getxattr_in in = {.size = size};
	struct iovec p = IOV(&in, sizeof(in));
	struct fuse_getxattr_out out;
	size_t n = 0;
	int r;

	if (!size) {
		r = fc_call(c, FUSE_LISTXATTR, node, &p, 1, &out, sizeof(out), NULL);
		if (r == 0)
			*ret_len = out.size;
		return r;
	}
	r = fc_call(c, FUSE_LISTXATTR, node, &p, 1, buf, size, &n);
	*ret_len = n;
	return r;
}

int fc_removexattr(struct fc *c, uint64_t node, const char *name)
{
	struct iovec p = STR(name);

	return fc_call(c, FUSE_REMOVEXATTR, node, &p, 1, NULL, 0, NULL);
}

int fc_lk(struct fc *c, uint32_t op, uint64_t node, uint64_t fh, uint64_t owner, uint32_t type, uint64_t start,
          uint64_t end, uint32_t flags, struct fuse_file_lock *ret)
{
	struct fuse_lk_in in = {.fh = fh, .owner = owner, .lk = {start, end, type, 4242}, .lk_flags = flags};
	struct iovec p = IOV(&in, sizeof(in));
	struct fuse_lk_out out;
	int r = fc_call(c, op, node, &p, 1, &out, sizeof(out), NULL);

	if (r == 0 && ret)
		*ret = out.lk;
	return r;
}

int fc_flush(struct fc *c, uint64_t node, uint64_t fh, uint64_t owner)
{
	struct fuse_flush_in in = {.fh = fh, .lock_owner = owner};

	return fc_simple(c, FUSE_FLUSH, node, &in, sizeof(in));
}

int fc_simple(struct fc *c, uint32_t op, uint64_t node, const void *arg, size_t len)
{
	struct iovec p = IOV(arg, len);

	return fc_call(c, op, node, &p, arg ? 1 : 0, NULL, 0, NULL);
}

bool fc_canary_intact(struct fc *c)
{
	char buf[128] = "";
	struct stat st;
	int fd = open(fc_out_path(c, "secret"), O_RDONLY | O_CLOEXEC), n = 0;
	ssize_t len;
	DIR *d;

	if (fd < 0)
		return false;
	len = read(fd, buf, sizeof(buf) - 1);
	fstat(fd, &st);
	close(fd);
	if (len != (ssize_t)strlen(CANARY) || memcmp(buf, CANARY, (size_t)len) || (st.st_mode & 07777) != 0600 ||
	    st.st_uid != getuid() || st.st_nlink != 1)
		return false;
	d = opendir(c->outside);
	if (!d)
		return false;
	for (struct dirent *de; (de = readdir(d));)
		n++;
	closedir(d);
	if (n != 4 || stat(fc_out_path(c, "dir"), &st) < 0 || st.st_nlink != 2)
		return false;
	return true;
}

int fc_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	for (struct dirent *de; (de = readdir(d));)
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own */
}
