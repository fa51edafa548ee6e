/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a container's VM is made of, decided before the monitor starts: the
 * kernel, the initramfs (kvrun-init), the command line, guest RAM and vCPUs.
 *
 * The kernel is looked up, first hit wins, in: the annotation
 * `io.kvrun.kernel`, the global flag --kernel, $KVRUN_KERNEL, "kernel" in
 * the config file ($KVRUN_CONFIG, else /etc/kvrun/config.json), and the
 * installed default <datadir>/kvrun/kernel/vmlinux (install-paths.h: the
 * configured prefix's, /usr/local/share/kvrun/kernel/vmlinux by default).
 * A kernel named but missing is an error naming where the name came from.
 *
 * The config file's "initrd", "modules" and "acpi" describe its kernel:
 * they apply when the kernel came from the config file or the default
 * location. The annotations io.kvrun.initrd, io.kvrun.kernel.modules and
 * io.kvrun.kernel.acpi apply to whichever kernel was chosen and win.
 *
 * A modular kernel (docs/kernels.md): when "modules" is a directory, or
 * "auto" (the default) finds /lib/modules/<release> for the release
 * string read from the kernel image (kernel-info.h), the modules of
 * kmod_kvrun_modules and their dependencies go into the initramfs and the
 * VM describes its devices with ACPI (unless "acpi" says otherwise).
 */
#ifndef KVRUN_RUNTIME_VM_CONFIG_H
#define KVRUN_RUNTIME_VM_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "oci-spec/spec.h"
#include "virtio/fs/fuse-server.h"

#define VM_CONFIG_ANNOTATION_KERNEL "io.kvrun.kernel"
#define VM_CONFIG_ANNOTATION_INITRD "io.kvrun.initrd"
#define VM_CONFIG_ANNOTATION_MODULES "io.kvrun.kernel.modules"
#define VM_CONFIG_ANNOTATION_ACPI "io.kvrun.kernel.acpi"
#define VM_CONFIG_DEFAULT_FILE "/etc/kvrun/config.json"
/* Guest RAM without a memory limit: room for databases and JVMs, which
 * costs the host only what the guest touches (lazy RAM, free page
 * reporting); docs/runtime.md "Kernel, initramfs and VM size". */
#define VM_CONFIG_DEFAULT_MEMORY (2ULL << 30)
/* The default where the host emulates guest kernel code (nested kvm_pvm):
 * there, containers of 2 GiB guests had their processes die of SIGSEGV
 * (docs/runtime.md, "Kernel, initramfs and VM size"). */
#define VM_CONFIG_EMULATING_HOST_MEMORY (256ULL << 20)
/* vCPUs without a CPU quota or cpuset, at most the host's online CPUs. */
#define VM_CONFIG_DEFAULT_CPUS 2
#define VM_CONFIG_MIN_MEMORY (64ULL << 20)
#define VM_CONFIG_MAX_CPUS 32
/* The cpu period runc assumes when only a quota is given. */
#define VM_CONFIG_DEFAULT_CPU_PERIOD 100000
/* Templates (runtime/sandbox/template.h): where they are kept, unless
 * $KVRUN_TEMPLATE_DIR or "template_dir" in the config file says otherwise;
 * used unless "templates": false, $KVRUN_TEMPLATES=0 or the annotation
 * io.kvrun.template=false. */
#define VM_CONFIG_DEFAULT_TEMPLATE_DIR "/var/lib/kvrun/templates"
/* What the root disk cache keeps of images no container uses. */
#define VM_CONFIG_ROOTFS_CACHE_SIZE (1ULL << 30)
#define VM_CONFIG_ANNOTATION_TEMPLATE "io.kvrun.template"
/* How the bundle's root filesystem reaches the guest: "block" (an ext4
 * image of it, the default) or "virtiofs" (the directory, shared); wins
 * over "rootfs" in the config file. */
#define VM_CONFIG_ANNOTATION_ROOTFS "io.kvrun.rootfs"
/* Where the POSIX and flock locks taken on the container's shared
 * directories are kept: "host" (the default) or "guest"; wins over
 * "fs_locks" in the config file (docs/virtio-fs.md, "Locks"). */
#define VM_CONFIG_ANNOTATION_FS_LOCKS "io.kvrun.fs.locks"

struct vm_plan {
	char *kernel; /* absolute path of the kernel */
	char *initrd; /* the initramfs: from the config file, or built and cached */
	char *cmdline_extra; /* from the config file, or NULL */
	char *kernel_release; /* read from the kernel image, or NULL */
	char *module_dir; /* the module tree used, or NULL: nothing built in needs loading */
	unsigned int nr_modules; /* module files packed into the initramfs */
	bool use_acpi; /* describe the devices with ACPI tables, not the command line */
	uint64_t mem_size; /* bytes */
	unsigned int ncpus;
	bool emulating_host; /* guest CPL0 code is emulated by the host (see vm-config.c) */
	char *template_dir; /* where templates are kept */
	bool use_templates; /* start from a matching template when there is one */
	bool early_create; /* config "early_create": create returns before the guest boots */
	/* The root disk cache (<cache dir>/rootfs, rootfs-cache.h), or NULL
	 * when off (config "rootfs_cache": false, $KVRUN_ROOTFS_CACHE=0); it
	 * keeps rootfs_cache_size bytes of images no container uses. */
	char *rootfs_cache_dir;
	uint64_t rootfs_cache_size;
	/* The root filesystem is the bundle's directory shared with virtio-fs
	 * (config "rootfs": "virtiofs", annotation io.kvrun.rootfs), not a
	 * disk image of it. */
	bool rootfs_virtiofs;
	/* Where the locks on every shared directory of the container (its
	 * root too) are kept: the annotation io.kvrun.fs.locks, else the
	 * config file's "fs_locks", else FS_LOCKS_HOST. */
	enum fs_locks fs_locks;
	/* The monitor's jail runs as uid and gid jail_uid_base + its pid
	 * ($KVRUN_JAIL_UID_BASE, else the config file's "jail_uid_base", else
	 * JAIL_UID_BASE_DEFAULT: runtime/host/jail.h). */
	unsigned long jail_uid_base;
	char *kernel_from; /* where the kernel's name came from ("$KVRUN_KERNEL", a config file...) */
	char *initrd_from; /* where the initramfs came from, or "built by kvrun from <init>" */
	char *init_path; /* the kvrun-init packed into the initramfs, NULL with a given initrd */
};

/* Decide the plan for spec. kernel_flag is the global --kernel flag (NULL
 * when not given). Reads the config file, checks that the kernel exists,
 * resolves the modules of a modular kernel and builds (or finds in the
 * cache) the initramfs. Errors name the missing file and where its name
 * came from. */
int vm_plan_make(const struct oci_spec *spec, const char *kernel_flag, struct vm_plan *ret);
void vm_plan_done(struct vm_plan *p);

/* The fs_locks of vm_plan_make() alone, for a container that joins
 * another's VM (a pod's app container): reads the config file. Errors
 * name the annotation or the config file's key. */
int vm_plan_fs_locks(const struct oci_spec *spec, enum fs_locks *ret);

/* vCPUs for the container's resources (res may be NULL): ceil(quota /
 * period) when a cpu quota is set (period default 100000 us), else the
 * number of CPUs in the cpuset (linux.resources.cpu.cpus, "0-3,6"), the
 * smaller of the two when both are; else dflt (0: vm_default_cpus()). At
 * most VM_CONFIG_MAX_CPUS. -EINVAL with a message for a malformed cpuset. */
int vm_plan_cpus(const struct oci_linux_resources *res, unsigned int dflt, unsigned int *ret);

/* VM_CONFIG_DEFAULT_CPUS, or the host's online CPUs when fewer. */
unsigned int vm_default_cpus(void);

/* Guest RAM for the container's resources (res may be NULL): the memory
 * limit, else dflt, else VM_CONFIG_DEFAULT_MEMORY (2 GiB; vm_plan_make()
 * passes VM_CONFIG_EMULATING_HOST_MEMORY as dflt on emulating hosts when
 * the config file has no "memory"); rounded down to
 * MiB, at least 64 MiB.
 * The host cgroup's limit is this plus the monitor's own allowance
 * (runtime/host/cgroup.c), so the VM's RAM is the container's limit. */
uint64_t vm_plan_memory(const struct oci_linux_resources *res, uint64_t dflt);

/* The number of CPUs in a cpuset list ("0-3,6"), or -EINVAL. */
int vm_cpuset_count(const char *list);

/* Whether this host's KVM emulates guest kernel code (nested KVM without
 * VMX/SVM in /proc/cpuinfo); $KVRUN_EMULATING_HOST=0/1 overrides. */
bool vm_host_is_emulating(void);

/* The kernel command line for p with these virtio-mmio fragments
 * ("virtio_mmio.device=..." each). Malloc'd into *ret. */
int vm_plan_cmdline(const struct vm_plan *p, char *const *devices, char **ret);

#endif
