/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What this host offers a VM: /dev/kvm and what kind of virtualisation is
 * behind it, the vhost devices, the cgroup layout. Read by `kvrun check`
 * (runtime/cli/cmd-check.c) and by the VM plan (whether the host emulates
 * guest kernel code: vm_host_is_emulating()).
 *
 * Every probe reads below a root directory: "" (or NULL) for this host,
 * anything else for a test that fakes /dev, /proc/cpuinfo and /sys there
 * ($KVRUN_HOST_ROOT for `kvrun check`). A regular file standing in for a
 * device under a fake root counts as present and usable; only a real
 * character device is opened and asked for its API version.
 */
#ifndef KVRUN_RUNTIME_HOST_HOST_PROBE_H
#define KVRUN_RUNTIME_HOST_HOST_PROBE_H

#include <stdbool.h>

/* What kind of virtualisation /dev/kvm offers, from the CPU flags. */
enum host_virt {
	HOST_VIRT_UNKNOWN, /* no readable /proc/cpuinfo */
	HOST_VIRT_HARDWARE, /* vmx/svm, not a guest itself: KVM on bare metal */
	HOST_VIRT_NESTED, /* vmx/svm and the hypervisor flag: nested, hardware-assisted */
	HOST_VIRT_EMULATED, /* hypervisor flag, no vmx/svm: a KVM that emulates guest kernel code */
	HOST_VIRT_NONE, /* neither vmx/svm nor a hypervisor: no KVM possible */
};

/* The kind above for the "flags" line of <root>/proc/cpuinfo. */
enum host_virt host_virt_probe(const char *root);

/* "hardware", "nested", "emulated", ... */
const char *host_virt_name(enum host_virt v);

struct host_kvm {
	bool present; /* <root>/dev/kvm exists */
	bool usable; /* it opens read-write (or is a stand-in file we may read and write) */
	int error; /* errno of the failed open or stat, when not usable */
	int api_version; /* KVM_GET_API_VERSION of a real device, else 0 */
};

/* Probe <root>/dev/kvm. Never fails: what went wrong is in ret. */
void host_kvm_probe(const char *root, struct host_kvm *ret);

/* Whether <root><dev> exists ("/dev/vhost-net"). */
bool host_dev_present(const char *root, const char *dev);

enum host_cgroup_layout {
	HOST_CGROUP_NONE, /* nothing mounted at /sys/fs/cgroup */
	HOST_CGROUP_V2, /* unified: cgroup2 at /sys/fs/cgroup */
	HOST_CGROUP_HYBRID, /* v1 controllers and cgroup2 at /sys/fs/cgroup/unified */
	HOST_CGROUP_V1, /* v1 controllers only */
};

struct host_cgroups {
	enum host_cgroup_layout layout;
	char controllers[256]; /* v2: cgroup.controllers; v1: the controller directories */
	bool systemd; /* systemd is the init system (<root>/run/systemd/system) */
};

/* Probe <root>/sys/fs/cgroup and <root>/run/systemd/system. */
void host_cgroups_probe(const char *root, struct host_cgroups *ret);

/* "v2 (unified)", "hybrid (v1 + v2)", ... */
const char *host_cgroup_layout_name(enum host_cgroup_layout l);

#endif
