/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kvrun's own configuration file (/etc/kvrun/config.json), parsed here
 * because this layer is the only one that sees JSON. Every key is optional:
 *
 *   {"kernel": "/path/vmlinux", "initrd": "/path/initramfs.cpio",
 *    "modules": "auto", "acpi": "auto",
 *    "cmdline_extra": "loglevel=4", "memory": 268435456, "cpus": 1,
 *    "template_dir": "/var/lib/kvrun/templates", "templates": true,
 *    "early_create": false, "rootfs_cache": true, "rootfs_cache_size": "1G",
 *    "rootfs": "block", "fs_locks": "host", "jail_uid_base": 1895825408}
 *
 * "memory" is bytes (a number) or a string with a K/M/G suffix ("512M"),
 * as is "rootfs_cache_size" (what the root disk cache keeps of images no
 * container uses; 0 keeps none). "rootfs_cache": false builds every
 * container its own root disk (runtime/host/rootfs-cache.h).
 * "jail_uid_base" is where the uids of the monitors' jails start
 * (runtime/host/jail.h). "modules" is the kernel's module directory (/lib/modules/<version>, with
 * depmod's indexes), "auto" (found from the kernel's version string) or
 * "none" (everything built in). "acpi" is true, false or "auto" (ACPI
 * device description exactly when the kernel loads modules).
 * "rootfs" is how the guest reaches the bundle's root filesystem: "block"
 * (the default: an ext4 disk image built from it, cached) or "virtiofs"
 * (the directory itself, shared: writes land in it).
 * "fs_locks" is where the POSIX and flock locks taken on shared
 * directories are kept: "host" (the default: on the host's files, seen by
 * host processes and other VMs) or "guest" (by the guest kernel alone;
 * docs/virtio-fs.md, "Locks").
 */
#ifndef KVRUN_OCI_SPEC_KVRUN_CONFIG_H
#define KVRUN_OCI_SPEC_KVRUN_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

/* How a kernel's devices are described: "acpi" and io.kvrun.kernel.acpi. */
enum kvrun_acpi_mode {
	KVRUN_ACPI_UNSET = 0, /* not given: same as auto */
	KVRUN_ACPI_AUTO,
	KVRUN_ACPI_ON,
	KVRUN_ACPI_OFF,
};

/* How the root filesystem reaches the guest: "rootfs" and io.kvrun.rootfs. */
enum kvrun_rootfs_mode {
	KVRUN_ROOTFS_UNSET = 0, /* not given: block */
	KVRUN_ROOTFS_BLOCK,
	KVRUN_ROOTFS_VIRTIOFS,
};

/* Where locks on shared directories are kept: "fs_locks" and
 * io.kvrun.fs.locks. */
enum kvrun_fs_locks {
	KVRUN_FS_LOCKS_UNSET = 0, /* not given: host */
	KVRUN_FS_LOCKS_HOST,
	KVRUN_FS_LOCKS_GUEST,
};

struct kvrun_config {
	char *kernel; /* NULL when absent */
	char *initrd;
	char *modules; /* a directory, "auto" or "none"; NULL when absent */
	enum kvrun_acpi_mode acpi;
	char *cmdline_extra;
	uint64_t memory; /* 0 when absent */
	unsigned int cpus; /* 0 when absent */
	char *template_dir; /* where VM templates are kept; NULL when absent */
	int templates; /* start containers from templates: 1, 0, or -1 when absent */
	/* create returns once the VM runs, before the guest has booted; the
	 * container is built in the guest afterwards and start waits for it.
	 * For engines that bound create (podman: 240 s) on hosts where a boot
	 * takes minutes. Errors of the guest's part then end the container
	 * (its pid exits) instead of failing create. */
	bool early_create;
	bool rootfs_cache_off; /* "rootfs_cache": false */
	bool has_rootfs_cache_size;
	uint64_t rootfs_cache_size; /* bytes, when has_rootfs_cache_size */
	enum kvrun_rootfs_mode rootfs;
	enum kvrun_fs_locks fs_locks;
	unsigned long jail_uid_base; /* the jail's uids start here; 0 when absent */
};

/* Parse len bytes of JSON; name prefixes messages ("<name>: memory: ...").
 * Unknown keys are an error (a typo must not be silently ignored). On
 * success *ret is filled and owned by the caller (kvrun_config_clear()). */
int kvrun_config_parse(const char *json, size_t len, const char *name, struct kvrun_config *ret);

/* Read and parse path; -ENOENT (no message) when it does not exist. */
int kvrun_config_load(const char *path, struct kvrun_config *ret);

/* Parse an "acpi" value given as a string ("true", "false", "auto"); name
 * prefixes the message. Returns 0 or -EINVAL. */
int kvrun_acpi_mode_parse(const char *s, const char *name, enum kvrun_acpi_mode *ret);

/* Parse a "rootfs" value ("block", "virtiofs"); name prefixes the
 * message. Returns 0 or -EINVAL. */
int kvrun_rootfs_mode_parse(const char *s, const char *name, enum kvrun_rootfs_mode *ret);

/* Parse an "fs_locks" value ("host", "guest"); name prefixes the message.
 * Returns 0 or -EINVAL. */
int kvrun_fs_locks_parse(const char *s, const char *name, enum kvrun_fs_locks *ret);

void kvrun_config_clear(struct kvrun_config *c);

#endif
