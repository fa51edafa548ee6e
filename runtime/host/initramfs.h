/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The guest's initramfs: an uncompressed newc cpio (the guest's gunzip would
 * run in emulated kernel code) holding /init (kvrun-init), the directories
 * it mounts on, /dev/console, and optional kernel modules with their load
 * order in /lib/modules/kvrun/load-order. Built once per distinct input and
 * cached.
 */
#ifndef KVRUN_RUNTIME_INITRAMFS_H
#define KVRUN_RUNTIME_INITRAMFS_H

#include <stddef.h>
#include <stdint.h>

struct initramfs_spec {
	const char *init_path; /* the static kvrun-init binary */
	/* Module files in load order (NULL-terminated, may be NULL). Each is
	 * stored under its base name; names must be unique. */
	const char *const *modules;
};

/* Build the cpio image of spec into a malloc'd buffer owned by the caller.
 * *ret_key receives a hash of the inputs (format version, names, sizes and
 * contents) that names the cached file. */
int initramfs_build(const struct initramfs_spec *spec, uint8_t **ret_buf, size_t *ret_len, uint32_t *ret_key);

/* Return in *ret_path (malloc'd) the cached image for spec under cache_dir,
 * creating cache_dir and writing the image atomically when it is missing.
 * *ret_hit (may be NULL) tells whether the cache already had it. */
int initramfs_get(const struct initramfs_spec *spec, const char *cache_dir, char **ret_path, int *ret_hit);

#endif
