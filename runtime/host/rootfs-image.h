/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The container's root disk: the bundle's rootfs directory copied into a
 * sparse ext4 image (mke2fs -d, from e2fsprogs), attached as virtio-blk.
 */
#ifndef KVRUN_RUNTIME_ROOTFS_IMAGE_H
#define KVRUN_RUNTIME_ROOTFS_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A path the guest mounts on (or enters, for the cwd). The disk may be
 * read-only in the guest, so a missing one is created in the image, as
 * runc creates mount points before it makes the root read-only. */
struct rootfs_mount_point {
	const char *path; /* absolute, in the container */
	bool file; /* an empty file (a file bind mount), else a directory */
};

/* What a walk of a rootfs directory found (not following symlinks, not
 * crossing mount points). */
struct rootfs_scan {
	uint64_t bytes; /* allocated, at least 4 KiB per file */
	uint64_t inodes;
	/* With want_key: one line per entry (path, type and mode, owner;
	 * a symlink's target, a device's number, a file's size, times, inode
	 * and links), in the walk's order: the same text means the same
	 * content, for the root disk cache (rootfs-image.c says why these).
	 * Else NULL. */
	char *key;
	size_t key_len;
	FILE *key_out; /* private to the walk */
};

int rootfs_scan(const char *dir, bool want_key, struct rootfs_scan *ret);
void rootfs_scan_done(struct rootfs_scan *s);

/* The image's size for a scan: the content, metadata, and free space for
 * writes (at least 256 MiB or the same again as the content), 1 MiB
 * aligned. */
uint64_t rootfs_image_size(const struct rootfs_scan *s);

/* Build image (created, must not exist) from dir: a sparse file sized from
 * the directory's usage plus free space for writes (at least 256 MiB free
 * or the same again as the content), formatted with mke2fs -t ext4 -d.
 * Then the n points (borrowed) that dir lacks are created in the image
 * with debugfs (dir itself is not touched): directories, or empty files
 * (mode 0755, root's, as runc makes them) for file points, with any
 * missing parents; symlinks in a path are followed inside dir, as
 * guest-init resolves it. A point blocked by an existing non-directory is
 * skipped (the guest reports it when it mounts). The tool's own message is
 * part of the error on failure; a partial image is removed. */
int rootfs_image_build(const char *dir, const char *image, const struct rootfs_mount_point *points, size_t n);
/* The same with dir's scan done already. */
int rootfs_image_build_scanned(const char *dir, const struct rootfs_scan *s, const char *image,
                               const struct rootfs_mount_point *points, size_t n);

/* The debugfs commands rootfs_image_build() runs for the points: *ret
 * (the caller's to free, NULL when empty) and its length. Returns 0 or
 * -ENOMEM. */
int rootfs_mount_point_script(const char *dir, const struct rootfs_mount_point *points, size_t n, char **ret,
                              size_t *ret_len);

#endif
