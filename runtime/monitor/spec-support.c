/* SPDX-License-Identifier: Apache-2.0 */
/* What a container in its own VM cannot have, refused by name. */
#include <errno.h>
#include <string.h>

#include "common/error.h"
#include "runtime/monitor/spec-support.h"

#define REFUSE(...) err_set(-ENOTSUP, __VA_ARGS__)

static const char *pfx(const char *prefix)
{
	return prefix ? prefix : "";
}

static const char *dot(const char *prefix)
{
	return prefix ? "." : "";
}

/* No Linux security module policy is ever loaded in the VM: kvrun's
 * kernel has none (CONFIG_SECURITY is not set) and guest-init loads no
 * AppArmor profile or SELinux policy into any kernel. runc fails a
 * profile or label it cannot apply; so does kvrun, before the VM boots.
 * "unconfined" asks for what every process in the VM already is. */
static int check_lsm(const struct oci_process *p, const char *prefix)
{
	const char *aa = p->apparmor_profile;

	if (aa && *aa && strcmp(aa, "unconfined") != 0)
		return REFUSE("%s%sapparmorProfile: apparmor profile \"%s\" is set, but AppArmor is not enabled in the "
		              "container's VM (only \"unconfined\" can be honoured)",
		              pfx(prefix), dot(prefix), aa);
	if (p->selinux_label && *p->selinux_label)
		return REFUSE(
		    "%s%sselinuxLabel: selinux label is specified in config, but SELinux is not enabled in the "
		    "container's VM",
		    pfx(prefix), dot(prefix));
	return 0;
}

int spec_support_check_process(const struct oci_process *p, const char *prefix)
{
	int r;

	if (!p)
		return 0;
	r = check_lsm(p, prefix);
	if (r < 0)
		return r;
	/* CPU numbers name the host's CPUs; the process runs on the VM's. */
	if (p->exec_cpu_affinity.initial && *p->exec_cpu_affinity.initial)
		return REFUSE("%s%sexecCPUAffinity.initial: CPU affinity is not supported: the container's processes "
		              "run on the VM's virtual CPUs, not on host CPUs",
		              pfx(prefix), dot(prefix));
	if (p->exec_cpu_affinity.final && *p->exec_cpu_affinity.final)
		return REFUSE("%s%sexecCPUAffinity.final: CPU affinity is not supported: the container's processes "
		              "run on the VM's virtual CPUs, not on host CPUs",
		              pfx(prefix), dot(prefix));
	return 0;
}

/* Only the network namespace can be one that exists: the VM serves it.
 * The others are the VM's own; sharing them between containers (pods)
 * means one VM for several containers, which kvrun does not do yet. */
static int check_namespaces(const struct oci_linux *l)
{
	for (size_t i = 0; i < l->n_namespaces; i++) {
		const struct oci_namespace *ns = &l->namespaces[i];

		if (ns->kind == OCI_NS_TIME)
			return REFUSE("linux.namespaces[%zu]: time namespaces are not supported", i);
		if (ns->kind == OCI_NS_NETWORK || !ns->path || !*ns->path)
			continue;
		return REFUSE("linux.namespaces[%zu].path: joining the %s namespace at %s is not supported: each "
		              "container is its own VM, and kvrun cannot share a VM's namespaces with another "
		              "container (yet)",
		              i, ns->type, ns->path);
	}
	return 0;
}

static int check_mounts(const struct oci_spec *spec)
{
	for (size_t i = 0; i < spec->n_mounts; i++) {
		const struct oci_mount *m = &spec->mounts[i];

		if (m->n_uid_mappings || m->n_gid_mappings)
			return REFUSE("mounts[%zu].%s: idmapped mounts are not supported", i,
			              m->n_uid_mappings ? "uidMappings" : "gidMappings");
	}
	return 0;
}

/* runc applies these on cgroup v1 only (or not at all) and ignores them
 * on v2; the VM's cgroup is v2, and kvrun says so instead of ignoring a
 * value that asks for something. */
static int check_memory(const struct oci_memory *m)
{
	if (m->has_kernel && m->kernel)
		return REFUSE("linux.resources.memory.kernel: kernel memory limits are not supported (cgroup v2)");
	if (m->has_kernel_tcp && m->kernel_tcp)
		return REFUSE(
		    "linux.resources.memory.kernelTCP: kernel TCP memory limits are not supported (cgroup v2)");
	if (m->has_swappiness)
		return REFUSE("linux.resources.memory.swappiness: not supported (cgroup v2 has no per-cgroup "
		              "swappiness)");
	if (m->has_disable_oom_killer && m->disable_oom_killer)
		return REFUSE("linux.resources.memory.disableOOMKiller: the OOM killer cannot be disabled (cgroup v2)");
	if (m->has_use_hierarchy && !m->use_hierarchy)
		return REFUSE("linux.resources.memory.useHierarchy: false is not supported: cgroup v2 is always "
		              "hierarchical");
	return 0;
}

static int check_cpu(const struct oci_cpu *c)
{
	if (c->has_realtime_runtime && c->realtime_runtime)
		return REFUSE("linux.resources.cpu.realtimeRuntime: real-time CPU limits are not supported");
	if (c->has_realtime_period && c->realtime_period)
		return REFUSE("linux.resources.cpu.realtimePeriod: real-time CPU limits are not supported");
	if (c->has_idle && c->idle)
		return REFUSE("linux.resources.cpu.idle: not supported");
	return 0;
}

static int check_block_io(const struct oci_block_io *b)
{
	static const char *const names[] = {"throttleReadBpsDevice", "throttleWriteBpsDevice", "throttleReadIOPSDevice",
	                                    "throttleWriteIOPSDevice"};
	const struct oci_throttle_list *lists[] = {&b->throttle_read_bps, &b->throttle_write_bps,
	                                           &b->throttle_read_iops, &b->throttle_write_iops};

	/* Host device numbers mean nothing to the VM's disk; the VM's I/O is
	 * the monitor's on the host, and kvrun does not weigh it (yet). */
	if (b->has_weight && b->weight)
		return REFUSE("linux.resources.blockIO.weight: block I/O weights are not supported");
	if (b->has_leaf_weight && b->leaf_weight)
		return REFUSE("linux.resources.blockIO.leafWeight: block I/O weights are not supported");
	if (b->n_weight_devices)
		return REFUSE("linux.resources.blockIO.weightDevice: block I/O weights are not supported");
	for (size_t i = 0; i < ARRAY_SIZE(lists); i++)
		if (lists[i]->n)
			return REFUSE("linux.resources.blockIO.%s: block I/O limits of host devices are not supported",
			              names[i]);
	return 0;
}

static int check_resources(const struct oci_linux_resources *r)
{
	int ret;

	if (!r)
		return 0;
	if ((ret = check_memory(&r->memory)) < 0 || (ret = check_cpu(&r->cpu)) < 0 ||
	    (ret = check_block_io(&r->block_io)) < 0)
		return ret;
	if (r->network.has_class_id && r->network.class_id)
		return REFUSE("linux.resources.network.classID: net_cls is a cgroup v1 controller; not supported");
	if (r->network.n_priorities)
		return REFUSE("linux.resources.network.priorities: net_prio is a cgroup v1 controller; not supported");
	if (r->n_rdma)
		return REFUSE("linux.resources.rdma: the VM has no RDMA devices");
	return 0;
}

static int check_linux(const struct oci_linux *l)
{
	int r;

	if ((r = check_namespaces(l)) < 0 || (r = check_resources(l->resources)) < 0)
		return r;
	if (l->n_time_offsets)
		return REFUSE("linux.timeOffsets: time namespaces are not supported");
	if (l->intel_rdt.present)
		return REFUSE("linux.intelRdt: intelRdt is specified in config, but Intel RDT is not available in "
		              "the VM");
	if (l->mount_label && *l->mount_label)
		return REFUSE(
		    "linux.mountLabel: a mount label is specified in config, but SELinux is not enabled in the "
		    "container's VM");
	if (l->personality.flags && l->personality.flags[0])
		return REFUSE("linux.personality.flags: personality flags are not supported");
	/* The notification fd would be the guest kernel's. */
	if (l->seccomp && l->seccomp->listener_path && *l->seccomp->listener_path)
		return REFUSE("linux.seccomp.listenerPath: seccomp notifications cannot leave the VM");
	if (l->seccomp && l->seccomp->listener_metadata && *l->seccomp->listener_metadata)
		return REFUSE("linux.seccomp.listenerMetadata: seccomp notifications cannot leave the VM");
	return 0;
}

int spec_support_check(const struct oci_spec *spec)
{
	int r;

	r = spec_support_check_process(spec->process, "process");
	if (r >= 0)
		r = check_mounts(spec);
	if (r >= 0 && spec->linux_spec)
		r = check_linux(spec->linux_spec);
	return r;
}
