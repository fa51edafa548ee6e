/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The systemd cgroup driver, as runc's: with --systemd-cgroup and systemd
 * running, the monitor's cgroup is a transient scope unit that systemd
 * creates for us (StartTransientUnit on org.freedesktop.systemd1.Manager,
 * over /run/systemd/private or else the system bus), and StopUnit removes
 * it. cgroupsPath "slice:prefix:name" names the scope "<prefix>-<name>.scope"
 * in slice (default system.slice; "-.slice" is the root slice).
 */
#ifndef KVRUN_RUNTIME_CGROUP_SYSTEMD_H
#define KVRUN_RUNTIME_CGROUP_SYSTEMD_H

#include <stdbool.h>
#include <sys/types.h>

#include "common/dbus.h"
#include "oci-spec/spec.h"

/* Where systemd is looked for (tests point them elsewhere): the directory
 * that exists when systemd is PID 1, its private socket, the system bus. */
extern const char *cgroup_systemd_dir;
extern const char *cgroup_systemd_private;
extern const char *cgroup_system_bus;

/* How long to wait for systemd's job (runc waits 30 s as well). */
#define CGROUP_SYSTEMD_TIMEOUT_MS 30000

/* Host tasks allowed to a monitor beyond the container's pids limit: its
 * vCPU, device, relay and exec threads (the guest's processes are not
 * host tasks; the guest's own cgroup enforces the limit on them). */
#define CGROUP_MONITOR_TASKS_ALLOWANCE 128

/* Host memory allowed to a monitor beyond the guest's memory: the VMM's
 * own code, threads and device buffers (both drivers set it). */
#define CGROUP_MONITOR_ALLOWANCE ((int64_t)64 << 20)

/* cgroup v1 shares [2, 262144] onto v2 weight [1, 10000], as runc. */
uint64_t cgroup_shares_to_weight(uint64_t shares);

/* Whether systemd is the init system (cgroup_systemd_dir is a directory). */
bool cgroup_systemd_running(void);

/* Split "slice:prefix:name" into the slice unit ("system.slice" when
 * empty) and the scope's unit name ("<prefix>-<name>.scope", "<name>.scope"
 * with no prefix), both malloc'd. -EINVAL with a message when malformed. */
int cgroup_unit_names(const char *cgroups_path, char **ret_slice, char **ret_unit);

/* What to ask systemd for. */
struct cgroup_unit_req {
	const char *unit, *slice, *description;
	pid_t pid;
	/* cgroup v2 names (MemoryMax, CPUWeight, IOAccounting) rather than
	 * v1's (MemoryLimit, CPUShares, BlockIOAccounting). */
	bool unified;
	/* systemd's version (-1 unknown): CPUQuotaPeriodUSec needs 242,
	 * AllowedCPUs/AllowedMemoryNodes 244; older ones get cgroupfs only. */
	int version;
	const struct oci_linux_resources *res; /* may be NULL */
};

/* Write the unit's properties as the a(sv) argument of
 * StartTransientUnit. -EINVAL (with a message) for a cpuset that does not
 * parse, -ENOMEM. */
int cgroup_unit_properties(struct dbus_writer *w, const struct cgroup_unit_req *q);

/* Connect to systemd: its private socket, else the system bus (Hello,
 * a match rule for JobRemoved). Then Subscribe. */
int cgroup_systemd_connect(struct dbus_conn **ret);

/* systemd's version from the Manager's Version property, -1 when it
 * cannot be read or parsed. */
int cgroup_systemd_version(struct dbus_conn *c);

/* StartTransientUnit(unit, "replace", properties, []) and wait for the
 * job's JobRemoved; a result other than "done" is an error. A leftover
 * unit of the same name is reset once and the start retried (as runc). On
 * failure after the job was queued, the unit is stopped again. */
int cgroup_unit_start(struct dbus_conn *c, const struct cgroup_unit_req *q, int timeout_ms);

/* StopUnit(unit, "replace") and wait for its job, then ResetFailedUnit so
 * that a failed unit does not linger. A unit that no longer exists is
 * fine (an empty scope stops by itself). */
int cgroup_unit_stop(struct dbus_conn *c, const char *unit, int timeout_ms);

/* SetUnitProperties(unit, runtime, properties) with the resource
 * properties of q (those of cgroup_unit_properties() that come from
 * q->res), as runc's update does before writing the cgroup files. */
int cgroup_unit_set(struct dbus_conn *c, const struct cgroup_unit_req *q);

/* Parse a cpuset list ("0-3,8") into systemd's byte mask (bit n of byte
 * n/8, trailing zero bytes cut). *ret malloc'd. -EINVAL when malformed
 * or empty. */
int cgroup_cpuset_mask(const char *list, uint8_t **ret, size_t *ret_len);

#endif
