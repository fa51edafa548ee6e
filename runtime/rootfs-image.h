/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The container's root disk: the bundle's rootfs directory copied into a
 * sparse ext4 image (mke2fs -d, from e2fsprogs), attached as virtio-blk.
 */
#ifndef KVRUN_RUNTIME_ROOTFS_IMAGE_H
#define KVRUN_RUNTIME_ROOTFS_IMAGE_H

#include <stdint.h>

/* Bytes the files under dir occupy (allocated blocks, not following
 * symlinks, not crossing mount points), and the number of inodes. */
int rootfs_dir_usage(const char *dir, uint64_t *ret_bytes, uint64_t *ret_inodes);

/* Build image (created, must not exist) from dir: a sparse file sized from
 * the directory's usage plus free space for writes (at least 256 MiB free
 * or the same again as the content), formatted with mke2fs -t ext4 -d.
 * mke2fs's own message is part of the error on failure; a partial image is
 * removed. */
int rootfs_image_build(const char *dir, const char *image);

#endif
