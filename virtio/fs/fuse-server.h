/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A FUSE passthrough file server over one host directory, apart from any
 * transport: the virtio-fs device (virtio/fs/fs.h) feeds it requests from
 * its virtqueues, and a test program feeds it the host kernel's /dev/fuse.
 *
 * A request is the bytes the FUSE client sent (struct fuse_in_header, its
 * arguments, the data of a WRITE) in the iovecs in[], and room for the
 * reply in out[]. fs_server_handle() runs it and writes the whole reply
 * (struct fuse_out_header first) into out[]:
 *
 *   struct fs_server *s;
 *   struct fs_worker *w;          one per thread that runs requests
 *   struct fs_server_opts o;
 *   fs_server_opts_default(&o);
 *   o.root = "/srv/share";
 *   fs_server_new(&o, &s);
 *   fs_worker_new(s, &w);
 *   size_t n = fs_server_handle(s, w, in, nin, out, nout);   n == 0: no reply
 *   fs_worker_free(w);
 *   fs_server_free(s);
 *
 * Containment: every name the client gives is one path component resolved
 * with *at() calls relative to the parent's O_PATH descriptor, never
 * following a symlink; inodes are reached only through descriptors the
 * server opened itself, from the shared directory down. Device nodes and
 * set-user/group-ID bits the client asks for are kept in an xattr on a
 * plain host file (docs/virtio-fs.md). Host descriptors are bounded (see
 * struct fs_server_opts).
 *
 * Threads: any number of threads may run requests at once, each with its
 * own struct fs_worker; a DESTROY (which drops every inode and handle)
 * waits for the others to finish and runs alone. The server makes one of its own, FS_LOCK_THREAD_NAME,
 * from a thread running a request (it retries the locks the client waits
 * for), which starts with what that thread has (its credentials).
 */
#ifndef KVRUN_VIRTIO_FS_FUSE_SERVER_H
#define KVRUN_VIRTIO_FS_FUSE_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Bytes of reply room a READ of max_write bytes needs (the largest
 * reply), and of request a WRITE of max_write bytes needs. */
#define FS_REPLY_OVERHEAD 4096
#define FS_DEFAULT_MAX_WRITE (1u << 20)

/* The name of the server's own thread (/proc/PID/task/TID/comm). Every
 * thread that serves a shared directory has a name that starts "fs-". */
#define FS_LOCK_THREAD_NAME "fs-locks"

/* Where the client's POSIX record locks and flock locks are kept
 * (docs/virtio-fs.md, "Locks"). */
enum fs_locks {
	/* On the host's files (the default): the server offers lock
	 * forwarding at INIT (FUSE_POSIX_LOCKS, FUSE_FLOCK_LOCKS) and takes
	 * each lock on the host, where host processes and every other client
	 * of the directory see it. The client then keeps no record of them,
	 * so each close() sends a FLUSH that drops the closing process's
	 * POSIX locks: one round trip per close. */
	FS_LOCKS_HOST = 0,
	/* In the client: no lock forwarding offered, so the client's kernel
	 * keeps the locks itself, seen only through this server's connection
	 * (one client kernel, one superblock). Files are opened with
	 * FOPEN_NOFLUSH (protocol 7.35 on), so close() sends nothing, and
	 * FLUSH, GETLK, SETLK and SETLKW are answered ENOSYS (an older client
	 * then sends no more FLUSH; a client that sends lock requests anyway
	 * gets no host lock). */
	FS_LOCKS_GUEST,
};

struct fs_server_opts {
	const char *root; /* the shared host directory (also what messages name) */
	/* When >= 0: the shared directory already opened (O_PATH or not,
	 * borrowed: the server keeps a duplicate), so nothing is looked up by
	 * path, e.g. in a process jailed since. root still names it. */
	int root_fd;
	/* When >= 0: /proc/self/fd of this process, opened (borrowed, as
	 * root_fd), for a process that may no longer reach /proc. */
	int proc_fd;
	/* NULL: the whole directory. Else a NULL-terminated list of names:
	 * only these entries of the root are seen (LOOKUP, READDIR), and the
	 * root itself cannot be changed (no entry made, removed or renamed in
	 * it, no attribute or xattr set on it): a share of a few files, or of
	 * some entries, of a directory the client must not otherwise see. */
	char *const *root_names;
	bool read_only; /* modifications answer EROFS */
	enum fs_locks locks; /* where the client's locks are kept */
	uint32_t max_write; /* largest READ/WRITE payload offered, 4 KiB..16 MiB */
	/* Bounds on what the client can make the host hold. */
	uint32_t max_inodes; /* inodes the client knows at once (LOOKUP answers ENFILE past it) */
	uint32_t max_inode_fds; /* O_PATH descriptors kept; past it, idle ones are closed and
	                         * reopened by file handle when needed (ENFILE if none can be) */
	uint32_t max_handles; /* open files and directories (OPEN answers EMFILE past it),
	                       * and as many POSIX lock owners */
	/* Cache timeouts given to the client, in seconds. */
	double entry_timeout, attr_timeout, negative_timeout;
	/* When set, for the transport: what each thread it makes to run
	 * requests runs first (a jail's jail_fs_thread(): the credentials of
	 * a file server on that thread alone), with thread_opaque; 0, or a
	 * negative errno that fails the setup. The server's own thread
	 * starts with what it set on the request's thread. */
	int (*thread_init)(void *opaque);
	void *thread_opaque;
};

/* Defaults: no root_fd or proc_fd (-1), every name seen, writable, locks
 * on the host (FS_LOCKS_HOST), 1 MiB transfers, 262144 inodes, 65536
 * inode descriptors, 4096 handles, 1 s entry and attribute timeouts, no
 * negative entries cached. fs_server_new() lowers the descriptor bounds
 * to what the process's RLIMIT_NOFILE allows (leaving 64 descriptors):
 * raise the limit first to keep them. */
void fs_server_opts_default(struct fs_server_opts *o);

struct fs_server;
struct fs_worker;

/* Open the shared directory and set up the tables. Returns 0, or -errno
 * with err_set() context (not a directory, no /proc, bad options). */
int fs_server_new(const struct fs_server_opts *opts, struct fs_server **ret);
/* Close every descriptor; deferred requests are completed with EINTR
 * first. No request may be running. Accepts NULL. */
void fs_server_free(struct fs_server *s);

/* Scratch space for one request at a time (argument copies, replies). */
int fs_worker_new(struct fs_server *s, struct fs_worker **ret);
void fs_worker_free(struct fs_worker *w);

/* Run one request. Returns the bytes written into out (the reply's
 * length), or 0 when the request takes no reply (FORGET, BATCH_FORGET,
 * INTERRUPT) or when out cannot hold even a reply header, or when the
 * request has no readable header. Malformed requests are answered with
 * EINVAL, unknown opcodes with ENOSYS; nothing a client sends makes the
 * server fail. A lock that must wait (SETLKW) waits in this call. */
size_t fs_server_handle(struct fs_server *s, struct fs_worker *w, const struct iovec *in, unsigned int nin,
                        const struct iovec *out, unsigned int nout);

/* A request whose transport can take its reply later. */
struct fs_request {
	const struct iovec *in, *out;
	unsigned int nin, nout;
	/* A lock that must wait (SETLKW) is kept by the server instead of
	 * blocking the caller (which a pool of workers could not afford: the
	 * unlock it waits for needs a worker too). defer(opaque) runs inside
	 * fs_server_run() and returns the transport's token for the request
	 * (NULL: wait in the call instead); fs_server_run() then returns
	 * FS_DEFERRED. Later, once, on a thread of the server,
	 * complete(token, reply, len) hands over the whole reply: the lock
	 * granted, an error, or EINTR after an INTERRUPT or
	 * fs_server_cancel_waits(). Both NULL: as fs_server_handle(). */
	void *(*defer)(void *opaque);
	void (*complete)(void *token, const void *reply, size_t len);
	void *opaque;
};

#define FS_DEFERRED ((size_t)-1)

size_t fs_server_run(struct fs_server *s, struct fs_worker *w, const struct fs_request *req);

/* Forget everything the client was told: inodes but the root, open files,
 * locks; the next request must be INIT again. For a device reset: no
 * request may be running. */
void fs_server_reset(struct fs_server *s);

/* Make requests that wait (SETLKW, in a call or deferred) give up with
 * EINTR now and until called with false: before a reset, so that no
 * worker stays blocked and every deferred request is completed. */
void fs_server_cancel_waits(struct fs_server *s, bool cancel);

struct fs_server_stats {
	uint64_t inodes; /* known to the client, the root included */
	uint64_t inode_fds; /* O_PATH descriptors open */
	uint64_t handles; /* open files and directories */
	uint64_t plocks; /* POSIX lock owners with a descriptor */
	uint64_t deferred; /* waiting locks the server keeps */
	uint64_t evictions; /* O_PATH descriptors closed for the bound */
	uint64_t reopens; /* ... and opened again by file handle */
	bool initialized; /* INIT answered */
	uint32_t max_inode_fds, max_handles; /* the bounds in force (RLIMIT_NOFILE) */
	uint32_t minor; /* the protocol minor version agreed */
};

void fs_server_get_stats(struct fs_server *s, struct fs_server_stats *ret);

/* Whether a client has the share mounted: INIT answered, and no DESTROY
 * (the client's unmount) or fs_server_reset() since. Only INIT makes it
 * true again. */
bool fs_server_mounted(struct fs_server *s);

/* "host" or "guest" (NULL for another value). */
const char *fs_locks_name(enum fs_locks locks);

/* The shared directory (as given in the options). */
const char *fs_server_root(const struct fs_server *s);

/* The negotiated max_write (valid after INIT), for sizing transport
 * buffers: a transport must offer at least max_write + FS_REPLY_OVERHEAD
 * bytes for a request and for a reply. */
uint32_t fs_server_max_write(const struct fs_server *s);

#endif
