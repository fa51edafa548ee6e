/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The root disk cache. Building a container's root disk (mke2fs -d) costs
 * time in proportion to the rootfs, at every create. Instead, an image is
 * built once per rootfs content and kept in the cache directory
 * (<kvrun's cache dir>/rootfs): <id>.img with <id>.key, the text it was
 * built from (rootfs_scan()'s key plus the mount points created and the
 * image size; the id is a hash of it and only an identical text is a hit).
 * A container gets MONITOR_DISK_BASE, a symlink to the image, and
 * MONITOR_DISK, an empty overlay; its VM reads the base and writes the
 * overlay (virtio/blk's copy-on-write disk), so containers of one image
 * share the image and its page cache. Every user of an image holds a
 * shared flock on it (create from the lookup on, its monitor for its
 * life); pruning removes only images it can lock exclusively, least
 * recently used first, while the unused ones exceed their budget.
 */
#ifndef KVRUN_RUNTIME_ROOTFS_CACHE_H
#define KVRUN_RUNTIME_ROOTFS_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/host/rootfs-image.h"

struct rootfs_disk_req {
	const char *rootfs; /* the bundle's rootfs directory */
	const char *cache_dir; /* the cache; NULL: a private image, built into disk */
	uint64_t cache_max; /* bytes (allocated) of unused images kept */
	const char *disk; /* the container's disk: the image, or the overlay */
	const char *base_link; /* where the symlink to the base goes */
	const struct rootfs_mount_point *points; /* created in the image when missing */
	size_t npoints;
};

/* Prepare the container's root disk. Returns 1 when disk is an (empty)
 * overlay of the cached image base_link points to (found, or built now),
 * with *ret_lock the image open and share-locked (the caller keeps it as
 * long as the image is in use: a process inheriting it keeps it in use);
 * 0 when disk is a private image (no cache, or the cache could not serve:
 * said at debug level), *ret_lock -1. Errors building the image are the
 * container's (the tool's message); nothing of the container's is left on
 * failure. */
int rootfs_disk_prepare(const struct rootfs_disk_req *q, int *ret_lock);

/* Remove the least recently used images of dir that nobody has locked
 * until those left unlocked take at most max bytes, and builds abandoned
 * for an hour. Returns the number of images removed, or -errno. */
int rootfs_cache_prune(const char *dir, uint64_t max);

#endif
