/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.json's "linux" beyond mounts and paths, into START: the cgroup
 * files runc writes at create (pids.max, memory.max/low/swap.max,
 * hugetlb.*.max, linux.resources.unified) for the container's cgroup in
 * the VM, devices and the device cgroup filter (device-rules.h), user and
 * cgroup namespaces and personality.
 */
#ifndef KVRUN_RUNTIME_GUEST_LINUX_H
#define KVRUN_RUNTIME_GUEST_LINUX_H

#include "common/protocol.h"
#include "oci-spec/spec.h"

/* Fill those fields of s from l (NULL: no "linux" section; runc's default
 * device rules still apply). A value runc refuses is refused naming its
 * field (-EINVAL). On failure what was filled is for proto_start_free(). */
int guest_linux_from_oci(const struct oci_linux *l, struct proto_start *s);

/* runc's conversion of cgroup v1 cpu shares (2..262144) into cgroup v2's
 * cpu.weight (1..10000); 0 for 0. */
uint64_t guest_cpu_weight(uint64_t shares);

/* A pod's app container (whose VM's CPUs are the pod's, not its own): its
 * CPU limits as runc's cgroup v2 manager writes them, added to s's cgroup
 * values: cpu.max from cpu.quota and cpu.period, cpu.weight from
 * cpu.shares, cpuset.cpus. Shares out of runc's range are refused naming
 * the field. */
int guest_linux_cpu_sets(const struct oci_cpu *c, struct proto_start *s);

#endif
