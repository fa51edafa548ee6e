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
 * own struct fs_worker.
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

struct fs_server_opts {
	const char *root; /* the shared host directory */
	bool read_only; /* modifications answer EROFS */
	uint32_t max_write; /* largest READ/WRITE payload offered, 4 KiB..16 MiB */
	/* Bounds on what the client can make the host hold. */
	uint32_t max_inodes; /* inodes the client knows at once (LOOKUP answers ENFILE past it) */
	uint32_t max_inode_fds; /* O_PATH descriptors kept; past it, idle ones are closed and
	                         * reopened by file handle when needed (ENFILE if none can be) */
	uint32_t max_handles; /* open files and directories (OPEN answers EMFILE past it),
	                       * and as many POSIX lock owners */
	/* Cache timeouts given to the client, in seconds. */
	double entry_timeout, attr_timeout, negative_timeout;
};

/* Defaults: writable, 1 MiB transfers, 65536 inodes, 1024 inode
 * descriptors, 1024 handles, 1 s entry and attribute timeouts, no negative
 * entries cached. */
void fs_server_opts_default(struct fs_server_opts *o);

struct fs_server;
struct fs_worker;

/* Open the shared directory and set up the tables. Returns 0, or -errno
 * with err_set() context (not a directory, no /proc, bad options). */
int fs_server_new(const struct fs_server_opts *opts, struct fs_server **ret);
/* Close every descriptor. No request may be running. Accepts NULL. */
void fs_server_free(struct fs_server *s);

/* Scratch space for one request at a time (argument copies, replies). */
int fs_worker_new(struct fs_server *s, struct fs_worker **ret);
void fs_worker_free(struct fs_worker *w);

/* Run one request. Returns the bytes written into out (the reply's
 * length), or 0 when the request takes no reply (FORGET, BATCH_FORGET,
 * INTERRUPT) or when out cannot hold even a reply header, or when the
 * request has no readable header. Malformed requests are answered with
 * EINVAL, unknown opcodes with ENOSYS; nothing a client sends makes the
 * server fail. */
size_t fs_server_handle(struct fs_server *s, struct fs_worker *w, const struct iovec *in, unsigned int nin,
                        const struct iovec *out, unsigned int nout);

/* Forget everything the client was told: inodes but the root, open files,
 * locks; the next request must be INIT again. For a device reset: no
 * request may be running. */
void fs_server_reset(struct fs_server *s);

/* Make requests that wait (SETLKW) give up with EINTR now and until
 * called with false: before a reset, so that no worker stays blocked. */
void fs_server_cancel_waits(struct fs_server *s, bool cancel);

struct fs_server_stats {
	uint64_t inodes; /* known to the client, the root included */
	uint64_t inode_fds; /* O_PATH descriptors open */
	uint64_t handles; /* open files and directories */
	uint64_t plocks; /* POSIX lock owners with a descriptor */
	uint64_t evictions; /* O_PATH descriptors closed for the bound */
	uint64_t reopens; /* ... and opened again by file handle */
	bool initialized; /* INIT answered */
	uint32_t minor; /* the protocol minor version agreed */
};

void fs_server_get_stats(struct fs_server *s, struct fs_server_stats *ret);

/* The shared directory (as given in the options). */
const char *fs_server_root(const struct fs_server *s);

/* The negotiated max_write (valid after INIT), for sizing transport
 * buffers: a transport must offer at least max_write + FS_REPLY_OVERHEAD
 * bytes for a request and for a reply. */
uint32_t fs_server_max_write(const struct fs_server *s);

#endif
