/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the host can learn about a guest kernel file without booting it: its
 * release string ("6.1.0-57-cloud-amd64") and where its modules are. A
 * kernel with a module tree is "modular": kvrun then packs the modules it
 * needs into the initramfs and describes the devices with ACPI (a stock
 * distro kernel has no virtio_mmio.device= parameter). docs/kernels.md.
 */
#ifndef KVRUN_RUNTIME_KERNEL_INFO_H
#define KVRUN_RUNTIME_KERNEL_INFO_H

#include <stdbool.h>
#include <stddef.h>

/* The release of the kernel image in buf (len bytes): for a bzImage the
 * string the setup header's kernel_version field points at, for anything
 * else (an ELF vmlinux) the first "Linux version <release> " banner. Only
 * the first word is returned (malloc'd in *ret). -ENOENT when there is no
 * version string. */
int kernel_version_from_image(const void *buf, size_t len, char **ret);

/* Read path and call kernel_version_from_image(). -errno when path cannot
 * be read (message set), -ENOENT when it has no version string. */
int kernel_version_read(const char *path, char **ret);

/* The module directory of kernel_path with release version: the first of
 * "<kernel dir>/../lib/modules/<version>" (an unpacked package or a /boot)
 * and "/lib/modules/<version>" that is a directory. Returns 1 and a
 * malloc'd *ret, or 0 when there is none (*ret NULL). */
int kernel_module_dir(const char *kernel_path, const char *version, char **ret);

/* Whether the kernel's build configuration, when installed beside it as
 * "config" (what kernel/build.sh installs), says "# CONFIG_MODULES is not
 * set": such a kernel never uses a module tree, even if one with its
 * release exists on the host. */
bool kernel_config_says_no_modules(const char *kernel_path);

#endif
