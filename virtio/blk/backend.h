/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Storage behind a virtio-blk device. The device speaks only this interface,
 * so other image formats can sit behind it: file-backend.c is the raw file
 * (or block device) one, cow-backend.c the copy-on-write disk of a base
 * image, and backend-open.c picks one. I/O goes straight between the
 * backing store and guest memory iovecs, without bounce buffers. Calls may
 * block: the device makes them on its worker thread.
 */
#ifndef KVRUN_VIRTIO_BLK_BACKEND_H
#define KVRUN_VIRTIO_BLK_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct blk_backend;

struct blk_backend_ops {
	/* Like preadv/pwritev: bytes transferred (short counts possible), or
	 * -errno. */
	ssize_t (*preadv)(struct blk_backend *b, const struct iovec *iov, int n, uint64_t off);
	ssize_t (*pwritev)(struct blk_backend *b, const struct iovec *iov, int n, uint64_t off);
	/* Make completed writes durable. */
	int (*flush)(struct blk_backend *b);
	/* Write the whole disk as it reads now into the regular file out
	 * (sized to the disk; holes where nothing was written), for a
	 * checkpoint. Negative errno, no message. */
	int (*export)(struct blk_backend *b, int out);
	void (*close)(struct blk_backend *b);
};

struct blk_backend {
	const struct blk_backend_ops *ops;
	uint64_t size; /* bytes */
	bool read_only;
	/* preadv/pwritev of disjoint ranges may run on two threads at once. */
	bool concurrent;
	/* Only preadv may: two reads of disjoint ranges at once, never a
	 * write beside anything (set with or without concurrent). */
	bool concurrent_reads;
};

/* Open path (a regular file or a block device) as a raw disk. The file is
 * locked (shared when read_only, exclusive otherwise) so that two VMs never
 * write one image. Returns 0 and a backend owned by the caller (free with
 * blk_backend_close()), or -errno with err_set() context. */
int blk_file_open(const char *path, bool read_only, struct blk_backend **ret);

/* path opened read-only and share-locked, or read-write and locked
 * exclusively (never blocking), so that two VMs never write one image: the
 * fd, or -errno with err_set() context. For backends. */
int blk_open_locked(const char *path, bool read_only);

/* A copy-on-write disk (cow-backend.c): reads come from base (a regular
 * file, opened read-only and share-locked, so that many VMs use it at
 * once, never written) except the 64 KiB blocks written since the open,
 * which live in overlay (a regular file, locked exclusively, emptied and
 * sized to the base). The base's size must be a multiple of 4 KiB. */
int blk_cow_open(const char *base, const char *overlay, struct blk_backend **ret);

/* The root disk of a container: with base, the copy-on-write disk of
 * base and path, or base itself when read_only (nothing is written then);
 * without, the raw image path. */
int blk_open(const char *path, const char *base, bool read_only, struct blk_backend **ret);

/* Close and free; accepts NULL. */
void blk_backend_close(struct blk_backend *b);

#endif
