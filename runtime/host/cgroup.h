/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host cgroup of a container: the monitor (the container's "init pid"
 * for the outside) is moved into linux.cgroupsPath in every mounted
 * hierarchy (cgroup v1 controllers, the named systemd hierarchy, cgroup2,
 * also in the hybrid layout), so that engines find it through
 * /proc/<pid>/cgroup and read its counters; host-side memory and CPU
 * limits are set there. The container's own limits (pids, memory) are
 * enforced again inside the VM by the guest's cgroup.
 *
 * Paths: cgroupfs form ("/a/b", or "a/b" taken from the root of each
 * hierarchy), or with --systemd-cgroup "slice:prefix:name", which maps to
 * /<expanded slice>/<prefix>-<name>.scope (as systemd names the scope).
 * With systemd running, that scope is a transient unit systemd creates
 * for the monitor (runtime/host/cgroup-systemd.h); without it kvrun writes the
 * same cgroupfs path itself.
 *
 * Without linux.cgroupsPath a container goes where runc puts one: with
 * --systemd-cgroup "system.slice:kvrun:<id>" (runc's is
 * "system.slice:runc:<id>"), else "<id>" below the cgroup the creating
 * process is in, in each hierarchy (which may differ between v1
 * hierarchies). That relative path is recorded with the creator's
 * /proc/self/cgroup text, the base, which every later step gets.
 */
#ifndef KVRUN_RUNTIME_CGROUP_H
#define KVRUN_RUNTIME_CGROUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "oci-spec/spec.h"

/* Where the hierarchies are mounted (tests may point it elsewhere), and
 * the file listing this process's cgroups ("/proc/self/cgroup"). */
extern const char *cgroup_mount_root;
extern const char *cgroup_self_file;

/* The cgroup path (starting with '/') for cgroups_path, as above. *ret is
 * malloc'd. -EINVAL with a message for a malformed systemd path. */
int cgroup_resolve(const char *cgroups_path, bool systemd, char **ret);

/* In the functions below, path is absolute (the same in every hierarchy)
 * or relative to base: /proc/self/cgroup text of the process that created
 * the container (NULL: the calling process's own cgroups). */

/* Create path in every hierarchy, set the host-side limits from res (may
 * be NULL) and move pid there. On failure what was created is removed. */
int cgroup_enter(const char *path, const char *base, const struct oci_linux_resources *res, pid_t pid);

/* Apply the host-side limits in res (memory limit plus the allowance, cpu
 * quota/period and shares) to the existing path in every hierarchy. */
int cgroup_update(const char *path, const char *base, const struct oci_linux_resources *res);

/* Remove path from every hierarchy (children first are not handled: a
 * container's cgroup has none). Moves the calling process out first if it
 * is inside. Missing directories are fine. */
int cgroup_remove(const char *path, const char *base);

/* Where a container's cgroup is (all malloc'd): path (absolute, or
 * relative to base), base (NULL for an absolute path) and the systemd
 * unit's name (or NULL). */
struct cgroup_place {
	char *path, *base, *unit;
};

/* The whole of joining a container's cgroup: resolve cgroups_path (empty
 * or NULL: the default for id, above), with systemd (and systemd running)
 * have it create the transient scope unit with pid in it, then
 * cgroup_enter() for the rest. *ret is filled on success; on failure
 * nothing is left: the unit is stopped, the paths removed. */
int cgroup_join(const char *cgroups_path, const char *id, bool systemd, const struct oci_linux_resources *res,
                pid_t pid, struct cgroup_place *ret);
void cgroup_place_free(struct cgroup_place *p);

/* Where cgroup_join() would put the container (nothing is created), for
 * whoever cleans up after a create that failed: the monitor, which has
 * dropped its capabilities by then, cannot remove a cgroup at the top of
 * a hierarchy (mode 555). Called by the creating process, whose cgroups
 * are the monitor's base. */
int cgroup_place_of(const char *cgroups_path, const char *id, bool systemd, struct cgroup_place *ret);

/* With unit (cgroup_join's) and systemd running, tell systemd the new
 * limits in res (SetUnitProperties), so that it keeps them; then, either
 * way, cgroup_update(path, res). */
int cgroup_update_unit(const char *path, const char *base, const char *unit, const struct oci_linux_resources *res);

/* Undo cgroup_join: step out of path if we are in it, stop the unit (when
 * not NULL) and remove path (when not NULL). The first error is
 * returned, and everything is attempted. */
int cgroup_leave(const char *path, const char *base, const char *unit);

#endif
