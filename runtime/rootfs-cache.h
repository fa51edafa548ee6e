/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The root disk cache. Building a container's root disk (mke2fs -d) costs
 * time in proportion to the rootfs, at every create. Instead, an image is
 * built once per rootfs content and kept in <root>/~rootfs-cache (a name
 * no container id can take): <id>.img with <id>.key, the text it was built
 * from (rootfs_scan()'s key: every entry's path, mode, owner, size, times,
 * inode and links, plus the mount points created and the image size; the
 * id is a hash of it and only an identical text is a hit). A container
 * gets a hard link to the image as MONITOR_DISK_BASE and an empty overlay
 * as MONITOR_DISK; its VM reads the base and writes the overlay
 * (virtio/blk's copy-on-write disk), so containers of one image share the
 * image and its page cache. An image no container links (link count 1) is
 * kept for the next create until the cache's unused images exceed their
 * budget; then the least recently used go.
 */
#ifndef KVRUN_RUNTIME_ROOTFS_CACHE_H
#define KVRUN_RUNTIME_ROOTFS_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/rootfs-image.h"

#define ROOTFS_CACHE_DIR "~rootfs-cache"

struct rootfs_disk_req {
	const char *rootfs; /* the bundle's rootfs directory */
	const char *cache_dir; /* the cache; NULL: a private image, built into disk */
	uint64_t cache_max; /* bytes (allocated) of unused images kept */
	const char *disk; /* the container's disk: the image, or the overlay */
	const char *base_link; /* where the base's hard link goes */
	const struct rootfs_mount_point *points; /* created in the image when missing */
	size_t npoints;
};

/* Prepare the container's root disk. Returns 1 when disk is an (empty)
 * overlay of the cached image linked at base_link (found, or built now),
 * 0 when disk is a private image (no cache, or the cache could not serve:
 * said at debug level). Errors building the image are the container's
 * (the tool's message); nothing of the container's is left on failure. */
int rootfs_disk_prepare(const struct rootfs_disk_req *q);

/* Remove the least recently used images of dir that no container links
 * until those left take at most max bytes, and builds abandoned for an
 * hour. Returns the number of images removed, or -errno. */
int rootfs_cache_prune(const char *dir, uint64_t max);

#endif
