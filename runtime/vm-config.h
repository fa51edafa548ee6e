/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a container's VM is made of, decided before the monitor starts: the
 * kernel, the initramfs (kvrun-init), the command line, guest RAM and vCPUs.
 *
 * The kernel is looked up, first hit wins, in: the annotation
 * `io.kvrun.kernel`, $KVRUN_KERNEL, "kernel" in the config file
 * ($KVRUN_CONFIG, else /etc/kvrun/config.json), and the installed default
 * /usr/local/share/kvrun/kernel/vmlinux. A kernel named but missing is an
 * error naming where the name came from.
 */
#ifndef KVRUN_RUNTIME_VM_CONFIG_H
#define KVRUN_RUNTIME_VM_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "oci-spec/spec.h"

#define VM_CONFIG_ANNOTATION_KERNEL "io.kvrun.kernel"
#define VM_CONFIG_DEFAULT_KERNEL "/usr/local/share/kvrun/kernel/vmlinux"
#define VM_CONFIG_DEFAULT_FILE "/etc/kvrun/config.json"
#define VM_CONFIG_DEFAULT_MEMORY (256ULL << 20)
#define VM_CONFIG_MIN_MEMORY (64ULL << 20)

struct vm_plan {
	char *kernel; /* absolute path of the kernel */
	char *initrd; /* the initramfs: from the config file, or built and cached */
	char *cmdline_extra; /* from the config file, or NULL */
	uint64_t mem_size; /* bytes */
	unsigned int ncpus;
	bool emulating_host; /* guest CPL0 code is emulated by the host (see vm-config.c) */
	bool early_create; /* config "early_create": create returns before the guest boots */
};

/* Decide the plan for spec. Reads the config file, checks that the kernel
 * exists, and builds (or finds in the cache) the initramfs. Errors name
 * the missing file and where its name came from. */
int vm_plan_make(const struct oci_spec *spec, struct vm_plan *ret);
void vm_plan_done(struct vm_plan *p);

/* Whether this host's KVM emulates guest kernel code (nested KVM without
 * VMX/SVM in /proc/cpuinfo); $KVRUN_EMULATING_HOST=0/1 overrides. */
bool vm_host_is_emulating(void);

/* The kernel command line for p with these virtio-mmio fragments
 * ("virtio_mmio.device=..." each). Malloc'd into *ret. */
int vm_plan_cmdline(const struct vm_plan *p, char *const *devices, char **ret);

#endif
