/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A FUSE client for the server's unit tests: builds requests byte by byte
 * (as the kernel's FUSE client would, or crafted), hands them to
 * fs_server_handle() as a transport would, and checks the framing of each
 * reply (length, unique). Each test gets a fresh temporary directory:
 *
 *   <base>/share     the shared directory
 *   <base>/outside   beside it, with a canary file the server must never
 *                    reach ("secret")
 */
#ifndef KVRUN_TESTS_FUSE_CLIENT_H
#define KVRUN_TESTS_FUSE_CLIENT_H

#include <linux/fuse.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "virtio/fs/fuse-server.h"

#define FC_REPLY_MAX (1024 * 1024 + 4096)

struct fc {
	char base[64], share[96], outside[96];
	struct fs_server *s;
	struct fs_worker *w;
	uint64_t unique;
	uint32_t uid, gid; /* the caller in request headers */
	uint8_t *reply; /* the last reply, header included */
	size_t reply_len;
	bool framing_ok; /* every reply so far had the right length and unique */
	uint32_t open_flags; /* FOPEN_* of the last OPEN or CREATE answered */
};

/* Temporary directories and a server on <base>/share with opts (NULL:
 * defaults), INIT done (unless init is false). */
int fc_open(struct fc *c, const struct fs_server_opts *opts, bool init);
/* Free the server and remove the directories. */
void fc_close(struct fc *c);
/* <share>/rel or <outside>/rel. */
const char *fc_path(struct fc *c, const char *rel);
const char *fc_out_path(struct fc *c, const char *rel);

/* One request: header (opcode, node) then parts; up to room bytes of reply
 * payload land in out (may be NULL). Returns the reply's error (0 or
 * -errno), FC_NO_REPLY when there was none; *ret_len the payload length. */
#define FC_NO_REPLY 1000
int fc_call(struct fc *c, uint32_t op, uint64_t node, const struct iovec *parts, unsigned int n, void *out, size_t room,
            size_t *ret_len);
/* The same with a reply area of out_room bytes (header included). */
int fc_call_room(struct fc *c, uint32_t op, uint64_t node, const struct iovec *parts, unsigned int n, size_t out_room,
                 void *out, size_t room, size_t *ret_len);
/* A request of raw bytes; the server's return value. */
size_t fc_raw(struct fc *c, const void *req, size_t len, size_t out_room);

int fc_init(struct fc *c, uint32_t major, uint32_t minor, uint32_t flags, struct fuse_init_out *ret);
int fc_lookup(struct fc *c, uint64_t dir, const char *name, struct fuse_entry_out *ret);
void fc_forget(struct fc *c, uint64_t node, uint64_t n);
int fc_getattr(struct fc *c, uint64_t node, struct fuse_attr *ret);
int fc_setattr(struct fc *c, uint64_t node, const struct fuse_setattr_in *in, struct fuse_attr *ret);
int fc_mkdir(struct fc *c, uint64_t dir, const char *name, uint32_t mode, struct fuse_entry_out *ret);
int fc_mknod(struct fc *c, uint64_t dir, const char *name, uint32_t mode, uint32_t rdev, struct fuse_entry_out *ret);
int fc_symlink(struct fc *c, uint64_t dir, const char *name, const char *target, struct fuse_entry_out *ret);
int fc_link(struct fc *c, uint64_t old, uint64_t dir, const char *name, struct fuse_entry_out *ret);
int fc_create(struct fc *c, uint64_t dir, const char *name, uint32_t flags, uint32_t mode, struct fuse_entry_out *ret,
              uint64_t *ret_fh);
int fc_unlink(struct fc *c, uint64_t dir, const char *name);
int fc_rmdir(struct fc *c, uint64_t dir, const char *name);
int fc_rename(struct fc *c, uint64_t dir, const char *old, uint64_t newdir, const char *newname, uint32_t flags);
int fc_readlink(struct fc *c, uint64_t node, char *buf, size_t size);
int fc_open_node(struct fc *c, uint64_t node, uint32_t flags, bool dir, uint64_t *ret_fh);
int fc_release(struct fc *c, uint64_t node, uint64_t fh, bool dir);
int fc_read(struct fc *c, uint64_t node, uint64_t fh, uint64_t off, uint32_t size, void *buf, size_t *ret_len);
int fc_write(struct fc *c, uint64_t node, uint64_t fh, uint64_t off, const void *data, uint32_t len,
             uint32_t *ret_written);
/* READDIR or READDIRPLUS of size bytes from off into buf. */
int fc_readdir(struct fc *c, uint64_t node, uint64_t fh, uint64_t off, uint32_t size, bool plus, void *buf,
               size_t *ret_len);
int fc_setxattr(struct fc *c, uint64_t node, const char *name, const void *v, uint32_t len, uint32_t flags);
/* size 0: the needed size in *ret_len; otherwise the value. */
int fc_getxattr(struct fc *c, uint64_t node, const char *name, uint32_t size, void *buf, size_t *ret_len);
int fc_listxattr(struct fc *c, uint64_t node, uint32_t size, void *buf, size_t *ret_len);
int fc_removexattr(struct fc *c, uint64_t node, const char *name);
int fc_lk(struct fc *c, uint32_t op, uint64_t node, uint64_t fh, uint64_t owner, uint32_t type, uint64_t start,
          uint64_t end, uint32_t flags, struct fuse_file_lock *ret);
int fc_flush(struct fc *c, uint64_t node, uint64_t fh, uint64_t owner);
int fc_simple(struct fc *c, uint32_t op, uint64_t node, const void *arg, size_t len);

/* A file of the share with content, made on the host. */
void fc_put_file(struct fc *c, const char *rel, const char *content);
/* Whether the canary outside the share is as fc_open() left it. */
bool fc_canary_intact(struct fc *c);
/* Descriptors this process has open. */
int fc_count_fds(void);

#endif
