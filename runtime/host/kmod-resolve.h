/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kernel modules a distro kernel needs for kvrun, resolved on the host with
 * libkmod from the kernel's module directory (/lib/modules/<version> with
 * the indexes depmod wrote): every module asked for and its dependencies,
 * dependencies first, each once; built-in modules are reported, not
 * loaded. The guest's init then loads the files in that order with
 * finit_module() (guest-init/modules.c), with no dependency logic of its own.
 * Soft dependencies are not followed: they are optional, and guest-init
 * treats a failed load as fatal (docs/kernels.md).
 *
 * Compressed module files (.ko.xz, .ko.zst, .ko.gz) are decompressed on the
 * host (kmod_module_file()), with the xz, zstd or gzip tool: guest-init
 * passes no MODULE_INIT_COMPRESSED_FILE flag, a kernel needs
 * CONFIG_MODULE_DECOMPRESS to accept one, and decompressing in the guest
 * would run in guest kernel code, which is the slow part on some hosts.
 * The image is built once per input and cached, so the host pays once.
 */
#ifndef KVRUN_RUNTIME_KMOD_RESOLVE_H
#define KVRUN_RUNTIME_KMOD_RESOLVE_H

#include <stddef.h>

/* What a container VM needs from a modular kernel (NULL-terminated):
 * virtio_mmio, virtio_blk, virtio_net, vmw_vsock_virtio_transport, ext4,
 * erofs, overlay. */
extern const char *const kmod_kvrun_modules[];

struct kmod_resolved {
	size_t n; /* modules to load */
	char **names; /* n module names, load order */
	char **paths; /* n absolute file paths (possibly compressed) */
	size_t n_builtin;
	char **builtin; /* names asked for (or needed) that are built in */
};

/*
 * Resolve wanted (NULL-terminated module names or aliases) in moddir, a
 * module directory with modules.dep.bin (depmod's output). Returns 0 and
 * fills *ret (free with kmod_resolved_free()); -ENOENT naming the first
 * module that is neither a module file nor built in; -EINVAL when moddir
 * has no indexes; -ELOOP on a dependency cycle. Records context with
 * err_set().
 */
int kmod_resolve(const char *moddir, const char *const *wanted, struct kmod_resolved *ret);

void kmod_resolved_free(struct kmod_resolved *r);

/* A path to an uncompressed copy of module file path: strdup(path) for a
 * .ko, else "<out_dir>/<name>.ko" written by `xz -dc`, `zstd -dc` or
 * `gzip -dc` (out_dir must exist; an existing file of that name is
 * replaced atomically). Returns 0 and a malloc'd *ret, -ENOTSUP for another
 * suffix, -EIO when the tool failed. */
int kmod_module_file(const char *path, const char *out_dir, char **ret);

/* Resolve wanted in moddir and return in *ret_files a NULL-terminated,
 * malloc'd list of uncompressed module files in load order (compressed
 * ones decompressed into out_dir), ready for initramfs_spec.modules; free
 * with kmod_files_free(). */
int kmod_initramfs_files(const char *moddir, const char *const *wanted, const char *out_dir, char ***ret_files);

void kmod_files_free(char **files);

#endif
