/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Between the files of the FUSE server (server.c, inode.c, handle.c,
 * attr.c, ops-*.c); not for the device or anything outside virtio/fs.
 */
#ifndef KVRUN_VIRTIO_FS_SERVER_INT_H
#define KVRUN_VIRTIO_FS_SERVER_INT_H

#include <linux/fuse.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "virtio/fs/fuse-server.h"

/* Oldest protocol accepted: 7.31, the first with virtio-fs (Linux 5.4). */
#define FS_MIN_MINOR 31
/* Largest arguments a request other than WRITE carries: SETXATTR with a
 * 64 KiB value and its name. */
#define FS_ARGS_MAX (65536 + 4096)
/* Descriptors left to the rest of the process when the bounds are fitted
 * to RLIMIT_NOFILE. */
#define FS_FD_RESERVE 64
/* Largest reply built in the worker's buffer (READDIR, GETXATTR...). */
#define FS_REPLY_MAX (128 * 1024)
/* The xattr that holds what the client asked for a device node or a
 * set-user/group-ID file (containers/storage's convention). */
#define FS_OVERRIDE_XATTR "user.containers.override_stat"

/* ---- inodes (inode.c) ---------------------------------------------- */

struct fs_plock;

struct fs_inode {
	uint64_t nodeid;
	uint64_t dev, ino; /* the host inode */
	uint32_t type; /* S_IFMT bits, fixed for the inode's life */
	int fd; /* O_PATH, -1 while evicted */
	uint64_t nlookup; /* the client's references (LOOKUP minus FORGET) */
	uint32_t refs; /* the server's: requests running, open handles */
	bool pinned; /* no usable file handle: never evicted */
	bool detached; /* its host inode number was reused: out of the key table */
	struct file_handle *fh; /* to reopen after eviction */
	struct fs_inode *id_next, *key_next; /* hash chains */
	struct fs_inode *lru_prev, *lru_next; /* idle inodes with a descriptor */
	struct fs_plock *plocks; /* under the server's plock_lock */
};

struct fs_itable {
	pthread_mutex_t lock;
	struct fs_inode **by_id, **by_key;
	size_t nbuckets, count, max;
	size_t nfds, max_fds;
	struct fs_inode *lru_head, *lru_tail; /* head: most recently used */
	uint64_t next_id;
	struct fs_inode *root;
	int mount_fd; /* the root opened for reading (borrowed), for open_by_handle_at */
	int mount_id; /* the root's mount: handles of other mounts are not kept */
	bool handles_ok; /* name_to_handle_at and open_by_handle_at work here */
	uint64_t evictions, reopens;
	void (*on_free)(struct fs_inode *ino, void *opaque); /* before an inode is freed */
	void *opaque;
};

/* root_fd (O_PATH, taken also on failure) becomes node 1; mount_fd (not
 * O_PATH: open_by_handle_at refuses those) stays the caller's. */
int fs_itable_init(struct fs_itable *t, int root_fd, int mount_fd, const struct stat *st, size_t max, size_t max_fds);
void fs_itable_destroy(struct fs_itable *t);
/* Drop every inode but the root (no request running). */
void fs_itable_clear(struct fs_itable *t);

/* Take a reference on node nodeid with its descriptor open (reopened by
 * file handle if it was evicted). -ESTALE for an unknown node or one that
 * cannot be reopened, -ENFILE when no descriptor can be had. */
int fs_inode_get(struct fs_itable *t, uint64_t nodeid, struct fs_inode **ret);
void fs_inode_ref(struct fs_itable *t, struct fs_inode *ino);
void fs_inode_put(struct fs_itable *t, struct fs_inode *ino);
/* Make room for one more O_PATH descriptor (evicting idle ones);
 * -ENFILE when none can be made. Undo with fs_fd_unreserve() unless the
 * descriptor is handed to fs_inode_add(). */
int fs_fd_reserve(struct fs_itable *t);
void fs_fd_unreserve(struct fs_itable *t);
/* The client learns of the inode fd (O_PATH, reserved, taken) with
 * attributes st and host file type: the known inode with that identity,
 * or a new one. Adds one client reference and one server reference.
 * -ENFILE past max. */
int fs_inode_add(struct fs_itable *t, int fd, const struct stat *st, uint32_t type, struct fs_inode **ret);
/* The known inode with st's identity whose descriptor is open: one client
 * and one server reference, as fs_inode_add(); -ENOENT otherwise. */
int fs_inode_find(struct fs_itable *t, const struct stat *st, struct fs_inode **ret);
/* The client drops n references to nodeid (unknown nodes are ignored). */
void fs_inode_forget(struct fs_itable *t, uint64_t nodeid, uint64_t n);

/* ---- open files and directories (handle.c) -------------------------- */

/* A directory handle's getdents64 buffer (handle.c makes it, dir.c reads it). */
#define FS_DIRBUF_SIZE 32768

struct fs_dirbuf {
	pthread_mutex_t lock; /* one READDIR of a handle at a time */
	uint8_t *buf;
	size_t len, pos; /* getdents64 bytes, the next entry in them */
	uint64_t off; /* offset of the entry at pos (d_off of the one before) */
	bool valid; /* buf and the descriptor's position go with off */
};

struct fs_handle {
	int fd;
	struct fs_inode *ino; /* a server reference */
	uint32_t gen, refs;
	bool closing, dir;
	struct fs_dirbuf *dirbuf; /* directories */
};

struct fs_htable {
	pthread_mutex_t lock;
	struct fs_handle **slots;
	uint32_t cap, used, max;
	uint32_t gen, hint;
};

struct fs_server;

int fs_htable_init(struct fs_htable *h, uint32_t max);
void fs_htable_destroy(struct fs_server *s);
/* Close every handle (no request running). */
void fs_htable_clear(struct fs_server *s);
/* Enter fd (taken, also on failure) for ino (its reference taken); the
 * client's fh through ret_fh. -EMFILE past the bound. */
int fs_handle_add(struct fs_server *s, int fd, struct fs_inode *ino, bool dir, uint64_t *ret_fh);
/* Whether a handle could be added now (a hint: racing requests may take
 * the room). */
bool fs_handle_room(struct fs_server *s);
/* A reference to the open handle fh of the given kind; -EBADF otherwise. */
int fs_handle_get(struct fs_server *s, uint64_t fh, bool dir, struct fs_handle **ret);
void fs_handle_put(struct fs_server *s, struct fs_handle *h);
/* The client closes fh: gone for lookups now, closed at its last put. */
int fs_handle_release(struct fs_server *s, uint64_t fh, bool dir, struct fs_handle **ret);

/* A directory handle's getdents64 buffer and position (dir.c). */
int fs_dirbuf_new(struct fs_dirbuf **ret);
void fs_dirbuf_free(struct fs_dirbuf *d);

/* ---- the server ---------------------------------------------------- */

struct fs_intr;
struct fs_parked;

struct fs_server {
	struct fs_server_opts opts; /* root and root_names point to our copies */
	char *root;
	char **root_names;
	struct fs_itable it;
	struct fs_htable ht;
	int proc_fd; /* /proc/self/fd, to reopen O_PATH descriptors */
	int root_dir_fd; /* the root opened for reading: syncfs */
	/* Held shared by every request, alone by DESTROY: what DESTROY
	 * frees, no other request is using (a driver may send it while
	 * others are in flight). */
	pthread_rwlock_t session;
	pthread_mutex_t state_lock;
	bool initialized; /* under state_lock */
	uint32_t minor;
	uint32_t max_write;
	pthread_mutex_t plock_lock; /* every inode's plocks */
	uint32_t nplocks;
	pthread_mutex_t intr_lock; /* waits that an INTERRUPT can end */
	pthread_cond_t intr_cond;
	struct fs_intr *waits; /* locks waiting in a call */
	struct fs_parked *parked; /* deferred locks, retried by the lock thread */
	uint32_t nparked;
	pthread_t lock_thread;
	bool lock_thread_started, lock_thread_stop;
	bool completing; /* the lock thread is answering deferred locks */
	uint64_t recent_intr[16]; /* INTERRUPTs that found no wait yet */
	unsigned int recent_next;
	bool cancel; /* under intr_lock */
	unsigned int destroying; /* under intr_lock: DESTROYs waiting for the session */
};

struct fs_worker {
	struct fs_server *s;
	uint8_t *args; /* FS_ARGS_MAX */
	uint8_t *reply; /* FS_REPLY_MAX */
};

/* One request being run. */
struct fs_ctx {
	struct fs_server *s;
	struct fs_worker *w;
	struct fuse_in_header h;
	const uint8_t *arg; /* the arguments after the header, copied */
	size_t arg_len;
	const struct iovec *in; /* the whole request, for WRITE's data */
	unsigned int nin;
	size_t in_len;
	const struct iovec *out;
	unsigned int nout;
	size_t out_len;
	size_t reply_len; /* set once replied */
	const struct fs_request *req; /* how the transport takes deferred replies */
	gid_t saved_fsgid; /* the thread's own, while fs_creds_enter() holds the client's */
};

/* Handlers return 0 once they replied (fs_reply*), FS_NO_REPLY, FS_LATER
 * (the request was deferred), or a negative errno that becomes the reply. */
#define FS_NO_REPLY 1
#define FS_LATER 2
/* Deferred locks at most (then ENOLCK). */
#define FS_MAX_PARKED 1024

int fs_reply(struct fs_ctx *c, const void *p, size_t n);
/* Reply with n bytes that the handler already wrote into the out iovecs
 * after the header's 16 bytes. */
int fs_reply_written(struct fs_ctx *c, size_t n);
/* An answer with no payload and error (a negative errno) in its header. */
int fs_reply_error(struct fs_ctx *c, int32_t error);

/* The fixed argument struct of size n at the start of the arguments, or
 * NULL when they are shorter. */
const void *fs_arg(struct fs_ctx *c, size_t n);
/* A NUL-terminated name at byte off of the arguments, checked as one path
 * component (no '/', not empty, not "." or ".."); its end in *ret_next.
 * -EINVAL, or -ENAMETOOLONG past NAME_MAX. */
int fs_arg_name(struct fs_ctx *c, size_t off, const char **ret, size_t *ret_next);
/* A NUL-terminated string at off, not empty, shorter than max. */
int fs_arg_str(struct fs_ctx *c, size_t off, size_t max, const char **ret, size_t *ret_next);

/* "/proc/self/fd/N" for a descriptor (path-based calls on O_PATH ones). */
void fs_proc_path(int fd, char buf[32]);
/* Open inode ino's file through /proc/self/fd (O_PATH cannot be read). */
int fs_reopen(struct fs_server *s, const struct fs_inode *ino, int flags);

/* ---- attributes (attr.c) ------------------------------------------- */

/* What the client asked for a file whose host copy is kept plain. */
struct fs_override {
	uint32_t uid, gid, mode; /* mode with its S_IFMT bits */
	uint32_t rdev;
};

/* stat of the inode behind fd, with any override applied; the host's
 * file type in *ret_host_type (may be NULL). */
int fs_stat(struct fs_server *s, int fd, struct stat *st, uint32_t *ret_host_type);
void fs_fill_attr(struct fs_server *s, const struct stat *st, struct fuse_attr *a);
void fs_fill_entry(struct fs_server *s, const struct fs_inode *ino, const struct stat *st, struct fuse_entry_out *e);
/* The override of the regular file behind fd: 1 and *ret when it has one,
 * 0 when not. */
int fs_override_get(int fd, struct fs_override *ret);
/* Whether a node of mode must be kept as an override (device nodes,
 * set-user/group-ID regular files). */
bool fs_needs_override(uint32_t mode);
/* Write or remove (ov NULL) the override of the regular file behind fd,
 * an O_PATH or an open descriptor. */
int fs_override_set(int fd, bool opened, const struct fs_override *ov);
/* The client's credentials for a new node: fsgid set for this thread
 * until fs_creds_leave() (so set-group-ID directories work). */
void fs_creds_enter(struct fs_ctx *c);
void fs_creds_leave(struct fs_ctx *c);
/* Give the new node behind fd (O_PATH) the caller's uid; st updated. */
int fs_chown_new(struct fs_ctx *c, int fd, struct stat *st);

/* ---- handlers (ops-*.c) -------------------------------------------- */

int fs_op_lookup(struct fs_ctx *c);
int fs_op_forget(struct fs_ctx *c);
int fs_op_batch_forget(struct fs_ctx *c);
int fs_op_getattr(struct fs_ctx *c);
int fs_op_setattr(struct fs_ctx *c);
int fs_op_readlink(struct fs_ctx *c);
int fs_op_statfs(struct fs_ctx *c);
int fs_op_access(struct fs_ctx *c);

int fs_op_mknod(struct fs_ctx *c);
int fs_op_mkdir(struct fs_ctx *c);
int fs_op_symlink(struct fs_ctx *c);
int fs_op_link(struct fs_ctx *c);
int fs_op_create(struct fs_ctx *c);
int fs_op_unlink(struct fs_ctx *c);
int fs_op_rmdir(struct fs_ctx *c);
int fs_op_rename(struct fs_ctx *c);
int fs_op_rename2(struct fs_ctx *c);

int fs_op_open(struct fs_ctx *c);
int fs_op_read(struct fs_ctx *c);
int fs_op_write(struct fs_ctx *c);
int fs_op_release(struct fs_ctx *c);
int fs_op_flush(struct fs_ctx *c);
int fs_op_fsync(struct fs_ctx *c);
int fs_op_fallocate(struct fs_ctx *c);
int fs_op_lseek(struct fs_ctx *c);
int fs_op_copy_file_range(struct fs_ctx *c);
int fs_op_syncfs(struct fs_ctx *c);

int fs_op_opendir(struct fs_ctx *c);
int fs_op_readdir(struct fs_ctx *c);
int fs_op_readdirplus(struct fs_ctx *c);
int fs_op_releasedir(struct fs_ctx *c);
int fs_op_fsyncdir(struct fs_ctx *c);

int fs_op_setxattr(struct fs_ctx *c);
int fs_op_getxattr(struct fs_ctx *c);
int fs_op_listxattr(struct fs_ctx *c);
int fs_op_removexattr(struct fs_ctx *c);

int fs_op_getlk(struct fs_ctx *c);
int fs_op_setlk(struct fs_ctx *c);
int fs_op_setlkw(struct fs_ctx *c);
int fs_op_interrupt(struct fs_ctx *c);
/* Stop the lock thread, completing what it keeps with EINTR. */
void fs_locks_stop(struct fs_server *s);
/* Complete every deferred lock with EINTR and wait until done (before the
 * handles they hold are closed). */
void fs_locks_drain(struct fs_server *s);
/* Close the lock descriptors of ino (it is being freed, or on reset). */
void fs_plocks_drop(struct fs_inode *ino, void *server);
/* FLUSH: the POSIX locks of owner on ino are released. */
void fs_plocks_release_owner(struct fs_server *s, struct fs_inode *ino, uint64_t owner);

/* A share that shows only some names of its root (opts.root_names):
 * whether the client may see name in dir (always, in any other
 * directory or share). */
bool fs_name_visible(const struct fs_server *s, const struct fs_inode *dir, const char *name);
/* Whether the client may change dir itself (its entries, attributes,
 * xattrs): 0, or -EPERM for the root of such a share. */
int fs_dir_check_change(const struct fs_server *s, const struct fs_inode *dir);

/* The open_flags of an OPEN or CREATE reply (FOPEN_*). */
uint32_t fs_open_out_flags(const struct fs_server *s);

/* Host open flags for the client's: -EINVAL for a bad access mode. */
int fs_open_flags(uint32_t flags, int *ret);
/* A reference to node nodeid, which must be a directory (-ENOTDIR). */
int fs_dir_get(struct fs_ctx *c, uint64_t nodeid, struct fs_inode **ret);
/* Look name up under parent for the client: a new client reference,
 * entry filled. Used by LOOKUP, the creating operations and READDIRPLUS. */
int fs_do_lookup(struct fs_ctx *c, struct fs_inode *parent, const char *name, struct fuse_entry_out *e);

#endif
