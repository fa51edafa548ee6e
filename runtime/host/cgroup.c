/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/fileio.h"
#include "common/log.h"
#include "runtime/host/cgroup-systemd.h"
#include "runtime/host/cgroup.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

const char *cgroup_mount_root = "/sys/fs/cgroup";
const char *cgroup_self_file = "/proc/self/cgroup";

#define MAX_HIER 16

/* snprintf into a path buffer; a path that does not fit is an error. */
static int pathf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int pathf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n >= 0 && (size_t)n < size ? 0 : err_set(-ENAMETOOLONG, "cgroup path too long: %s", buf);
}

/* The mounted hierarchies, from this process's own cgroup list: a
 * directory under cgroup_mount_root per line, whose controllers the line
 * names ("" is cgroup2: the root itself on a v2 host, "unified" on a
 * hybrid one). */
struct hier {
	char dir[256];
	char cur[256]; /* where this process (or the base) is in it */
	char path[512]; /* the container's cgroup in it (hier_resolve) */
	bool v2;
	bool memory, cpu, cpuset, pids;
};

/* The hierarchies, with cur as base says (text in /proc/self/cgroup's
 * form; NULL: this process's own cgroups). */
static int hierarchies(const char *base, struct hier *h, int max)
{
	_cleanup_fclose_ FILE *f = base ? fmemopen((void *)base, strlen(base), "r") : fopen(cgroup_self_file, "re");
	char line[512];
	int n = 0;

	if (!f)
		return err_setsys(-errno, "open %s", base ? "the recorded cgroups" : cgroup_self_file);
	while (n < max && fgets(line, sizeof(line), f)) {
		char *ctl = strchr(line, ':'), *end;
		struct stat st;

		if (!ctl || !(end = strchr(++ctl, ':')))
			continue;
		*end = 0;
		h[n] = (struct hier){0};
		snprintf(h[n].cur, sizeof(h[n].cur), "%.*s", (int)strcspn(end + 1, "\n"), end + 1);
		if (!*ctl) {
			h[n].v2 = true;
			(void)pathf(h[n].dir, sizeof(h[n].dir), "%s/unified", cgroup_mount_root);
			if (stat(h[n].dir, &st) < 0)
				(void)pathf(h[n].dir, sizeof(h[n].dir), "%s", cgroup_mount_root);
		} else {
			(void)pathf(h[n].dir, sizeof(h[n].dir), "%s/%s", cgroup_mount_root,
			            strncmp(ctl, "name=", 5) == 0 ? ctl + 5 : ctl);
			h[n].memory = strstr(ctl, "memory") != NULL;
			h[n].cpu = strcmp(ctl, "cpu") == 0 || strncmp(ctl, "cpu,", 4) == 0;
			h[n].cpuset = strcmp(ctl, "cpuset") == 0;
			h[n].pids = strcmp(ctl, "pids") == 0;
		}
		if (stat(h[n].dir, &st) == 0 && S_ISDIR(st.st_mode))
			n++;
	}
	return n;
}

/* Each hierarchy's h.path for the container's path: an absolute path is
 * taken from the hierarchy's root; a relative one (a container without
 * linux.cgroupsPath) lies below cur, as runc's cgroupfs driver puts it. */
static int hier_resolve(struct hier *h, int n, const char *path)
{
	for (int i = 0; i < n; i++) {
		int r = path[0] == '/'
		            ? pathf(h[i].path, sizeof(h[i].path), "%s", path)
		            : pathf(h[i].path, sizeof(h[i].path), "%s/%s", strcmp(h[i].cur, "/") ? h[i].cur : "", path);

		if (r < 0)
			return r;
	}
	return 0;
}

/* hierarchies() and hier_resolve() for path. */
static int hierarchies_for(const char *base, const char *path, struct hier *h, int max)
{
	int n = hierarchies(base, h, max), r;

	if (n < 0)
		return n;
	r = hier_resolve(h, n, path);
	return r < 0 ? r : n;
}

/* "a-b-c.slice" -> "/a.slice/a-b.slice/a-b-c.slice"; "-.slice" is the
 * root slice (""), and no slice at all means system.slice, as runc. */
static int expand_slice(const char *slice, char *buf, size_t size)
{
	size_t len = strlen(slice), at = 0;

	if (strcmp(slice, "-.slice") == 0) {
		buf[0] = 0;
		return 0;
	}
	if (!len)
		slice = "system.slice", len = strlen(slice);
	if (len < 7 || strcmp(slice + len - 6, ".slice") || strchr(slice, '/'))
		return err_set(-EINVAL, "invalid slice name: %s", slice);
	for (size_t i = 0; i + 6 <= len; i++) {
		if (slice[i] != '-' && i + 6 != len)
			continue;
		if (i == 0 || slice[i - 1] == '-')
			return err_set(-EINVAL, "invalid slice name: %s", slice);
		at += (size_t)snprintf(buf + at, at < size ? size - at : 0, "/%.*s.slice", (int)i, slice);
	}
	return at < size ? 0 : err_set(-ENAMETOOLONG, "slice name too long: %s", slice);
}

int cgroup_resolve(const char *cgroups_path, bool systemd, char **ret)
{
	char slice[1024];
	const char *c1, *c2;
	int r;

	if (!systemd) {
		if (strstr(cgroups_path, ".."))
			return err_set(-EINVAL, "invalid cgroupsPath %s", cgroups_path);
		return asprintf(ret, "%s%s", cgroups_path[0] == '/' ? "" : "/", cgroups_path) < 0 ? -ENOMEM : 0;
	}
	c1 = strchr(cgroups_path, ':');
	c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	if (!c2 || strchr(c2 + 1, ':') || !c2[1])
		return err_set(-EINVAL,
		               "expected cgroupsPath to be of format \"slice:prefix:name\" for systemd cgroups, got "
		               "\"%s\" instead",
		               cgroups_path);
	{
		_cleanup_free_ char *s = strndup(cgroups_path, (size_t)(c1 - cgroups_path));

		if (!s)
			return -ENOMEM;
		r = expand_slice(s, slice, sizeof(slice));
		if (r < 0)
			return r;
	}
	if (c2 == c1 + 1)
		return asprintf(ret, "%s/%s.scope", slice, c2 + 1) < 0 ? -ENOMEM : 0;
	return asprintf(ret, "%s/%.*s-%s.scope", slice, (int)(c2 - c1 - 1), c1 + 1, c2 + 1) < 0 ? -ENOMEM : 0;
}

/* Write value to an existing cgroup file (no O_CREAT, no truncation). */
static int write_file(const char *path, const char *value)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return write(fd, value, strlen(value)) < 0 ? -errno : 0;
}

static int write_value(const char *dir, const char *file, const char *value)
{
	char path[1024];
	int r;

	(void)pathf(path, sizeof(path), "%s/%s", dir, file);
	r = write_file(path, value);
	return r < 0 ? err_setsys(r, "write %s to %s", value, path) : 0;
}

/* An empty v1 cpuset.cpus/mems takes the parent's, top down (a new cpuset
 * cgroup starts empty, and no task can join it then). */
static void cpuset_init(const char *root, const char *path)
{
	char dir[1024], parent[1024];

	for (const char *p = path + 1;; p++) {
		if (*p != '/' && *p)
			continue;
		(void)pathf(dir, sizeof(dir), "%s%.*s", root, (int)(p - path), path);
		(void)pathf(parent, sizeof(parent), "%s", dir);
		*strrchr(parent, '/') = 0;
		for (int k = 0; k < 2; k++) {
			const char *f = k ? "cpuset.mems" : "cpuset.cpus";
			_cleanup_free_ char *cur = NULL, *up = NULL;
			char cf[1200], pf[1200];

			(void)pathf(cf, sizeof(cf), "%s/%s", dir, f);
			(void)pathf(pf, sizeof(pf), "%s/%s", parent, f);
			if (read_file_all(cf, 4096, &cur, NULL) == 0 && cur[0] && cur[0] != '\n')
				continue;
			if (read_file_all(pf, 4096, &up, NULL) == 0)
				(void)write_file(cf, up);
		}
		if (!*p)
			break;
	}
}

/* A v2 file a hybrid host's cgroup2 lacks (it has no controllers) is
 * not an error: the v1 hierarchies hold the limit. */
static int write_limit(const struct hier *h, const char *dir, const char *file, const char *value)
{
	int r = write_value(dir, file, value);

	if (h->v2 && r == -ENOENT)
		r = 0, err_clear();
	return r;
}

static int set_memory(const struct hier *h, const char *dir, const struct oci_linux_resources *res)
{
	char v[64];

	if (!res->memory.has_limit || res->memory.limit <= 0 || !(h->memory || h->v2))
		return 0;
	snprintf(v, sizeof(v), "%" PRId64, res->memory.limit + CGROUP_MONITOR_ALLOWANCE);
	return write_limit(h, dir, h->v2 ? "memory.max" : "memory.limit_in_bytes", v);
}

static int set_cpu(const struct hier *h, const char *dir, const struct oci_linux_resources *res)
{
	const struct oci_cpu *c = &res->cpu;
	uint64_t period = c->has_period && c->period ? c->period : 100000;
	char v[64];
	int r = 0;

	if (!h->cpu && !h->v2)
		return 0;
	if (c->has_quota && c->quota > 0) {
		if (h->v2) {
			snprintf(v, sizeof(v), "%" PRId64 " %" PRIu64, c->quota, period);
			r = write_limit(h, dir, "cpu.max", v);
		} else {
			snprintf(v, sizeof(v), "%" PRIu64, period);
			r = write_value(dir, "cpu.cfs_period_us", v);
			snprintf(v, sizeof(v), "%" PRId64, c->quota);
			if (r >= 0)
				r = write_value(dir, "cpu.cfs_quota_us", v);
		}
	}
	if (r >= 0 && c->has_burst && c->burst) {
		snprintf(v, sizeof(v), "%" PRIu64, c->burst);
		r = write_limit(h, dir, h->v2 ? "cpu.max.burst" : "cpu.cfs_burst_us", v);
	}
	if (r >= 0 && c->has_shares && c->shares) {
		snprintf(v, sizeof(v), "%" PRIu64, h->v2 ? cgroup_shares_to_weight(c->shares) : c->shares);
		r = write_limit(h, dir, h->v2 ? "cpu.weight" : "cpu.shares", v);
	}
	return r;
}

/* The VM's vCPU threads run on the container's CPUs, its memory on its
 * nodes (the vCPU count follows cpu.cpus too: vm-config.c). */
static int set_cpuset(const struct hier *h, const char *dir, const struct oci_linux_resources *res)
{
	int r = 0;

	if (!h->cpuset && !h->v2)
		return 0;
	if (res->cpu.cpus && *res->cpu.cpus)
		r = write_limit(h, dir, "cpuset.cpus", res->cpu.cpus);
	if (r >= 0 && res->cpu.mems && *res->cpu.mems)
		r = write_limit(h, dir, "cpuset.mems", res->cpu.mems);
	return r;
}

/* The container's processes are the guest's (limited in the VM); the
 * host bounds the monitor's tasks: the limit plus its own threads. */
static int set_pids(const struct hier *h, const char *dir, const struct oci_linux_resources *res)
{
	char v[32];

	if (!res->pids.present || res->pids.limit <= 0 || !(h->pids || h->v2))
		return 0;
	snprintf(v, sizeof(v), "%" PRId64, res->pids.limit + CGROUP_MONITOR_TASKS_ALLOWANCE);
	return write_limit(h, dir, "pids.max", v);
}

static int set_limits(const struct hier *h, const char *dir, const struct oci_linux_resources *res)
{
	int r;

	if (!res)
		return 0;
	r = set_memory(h, dir, res);
	if (r >= 0)
		r = set_cpu(h, dir, res);
	if (r >= 0)
		r = set_cpuset(h, dir, res);
	if (r >= 0)
		r = set_pids(h, dir, res);
	return r;
}

int cgroup_enter(const char *path, const char *base, const struct oci_linux_resources *res, pid_t pid)
{
	struct hier h[MAX_HIER];
	char dir[1024], spid[32];
	int n, r = 0;

	n = hierarchies_for(base, path, h, MAX_HIER);
	if (n < 0)
		return n;
	snprintf(spid, sizeof(spid), "%d", (int)pid);
	for (int i = 0; i < n && r >= 0; i++) {
		(void)pathf(dir, sizeof(dir), "%s%s", h[i].dir, h[i].path);
		r = mkdir_p(dir, 0755);
		if (r < 0 && r != -EEXIST) {
			r = err_setsys(r, "create cgroup %s", dir);
			break;
		}
		r = 0;
		if (h[i].cpuset)
			cpuset_init(h[i].dir, h[i].path);
		r = set_limits(&h[i], dir, res);
		if (r >= 0)
			r = write_value(dir, "cgroup.procs", spid);
	}
	if (r < 0) {
		int keep = r;

		cgroup_remove(path, base);
		return keep;
	}
	log_debug("in cgroup %s (%d hierarchies)", path, n);
	return 0;
}

int cgroup_update(const char *path, const char *base, const struct oci_linux_resources *res)
{
	struct hier h[MAX_HIER];
	char dir[1024];
	int n, r = 0;

	n = hierarchies_for(base, path, h, MAX_HIER);
	if (n < 0)
		return n;
	for (int i = 0; i < n && r >= 0; i++) {
		r = pathf(dir, sizeof(dir), "%s%s", h[i].dir, h[i].path);
		if (r >= 0)
			r = set_limits(&h[i], dir, res);
	}
	return r;
}

/* rmdir of a container's cgroup in which something is left (a hook's
 * background child): as runc's destroy, SIGKILL it and try again for up
 * to a second. -1 with errno as rmdir's. */
static int rmdir_emptied(const char *dir)
{
	char procs[1100];

	for (int tries = 0; rmdir(dir) < 0; tries++) {
		_cleanup_free_ char *list = NULL;

		if (errno != EBUSY || tries == 100 || pathf(procs, sizeof(procs), "%s/cgroup.procs", dir) < 0)
			return -1;
		if (read_file_all(procs, 1 << 20, &list, NULL) == 0)
			for (char *p = list, *end; *p; p = end) {
				long pid = strtol(p, &end, 10);

				if (end == p)
					break;
				if (pid > 0 && pid != getpid())
					kill((pid_t)pid, SIGKILL);
			}
		usleep(10 * 1000);
		errno = EBUSY;
	}
	return 0;
}

int cgroup_remove(const char *path, const char *base)
{
	struct hier h[MAX_HIER];
	char dir[1024], root_procs[1024], spid[32];
	int n, r = 0;

	if (!path || !*path || strcmp(path, "/") == 0)
		return 0;
	n = hierarchies_for(base, path, h, MAX_HIER);
	if (n < 0)
		return n;
	snprintf(spid, sizeof(spid), "%d", (int)getpid());
	for (int i = 0; i < n; i++) {
		if (strcmp(h[i].path, "/") == 0)
			continue;
		(void)pathf(dir, sizeof(dir), "%s%s", h[i].dir, h[i].path);
		/* If we are inside, step out to the hierarchy's root. */
		(void)pathf(root_procs, sizeof(root_procs), "%s/cgroup.procs", h[i].dir);
		if (rmdir(dir) < 0 && errno == EBUSY) {
			(void)write_file(root_procs, spid);
			if (rmdir_emptied(dir) < 0 && errno != ENOENT && r == 0)
				r = err_setsys(-errno, "remove cgroup %s", dir);
		} else if (errno != ENOENT && access(dir, F_OK) == 0 && r == 0) {
			r = err_setsys(-errno, "remove cgroup %s", dir);
		}
	}
	return r;
}

/* ---- the systemd driver ----------------------------------------------- */

/* The request for unit from what the host tells (v2 or not, systemd's
 * version). */
static void unit_req(struct dbus_conn *c, struct cgroup_unit_req *q)
{
	struct statfs sfs;

	q->unified = statfs(cgroup_mount_root, &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC;
	q->version = cgroup_systemd_version(c);
}

/* Keep the current message across a cleanup step that may set its own. */
static int cleanup_keeping_error(int keep, const char *unit)
{
	char msg[1024];

	snprintf(msg, sizeof(msg), "%s", err_msg());
	(void)cgroup_leave(NULL, NULL, unit);
	return err_set(keep, "%s", msg);
}

static int systemd_start(const char *cgroups_path, const struct oci_linux_resources *res, pid_t pid, char **ret_unit)
{
	_cleanup_free_ char *slice = NULL, *unit = NULL, *desc = NULL;
	struct dbus_conn *c = NULL;
	struct cgroup_unit_req q = {.pid = pid, .res = res};
	int r;

	r = cgroup_unit_names(cgroups_path, &slice, &unit);
	if (r < 0)
		return r;
	if (asprintf(&desc, "kvrun container %s", strrchr(cgroups_path, ':') + 1) < 0)
		return -ENOMEM;
	r = cgroup_systemd_connect(&c);
	if (r < 0)
		return r;
	q.unit = unit, q.slice = slice, q.description = desc;
	unit_req(c, &q);
	r = cgroup_unit_start(c, &q, CGROUP_SYSTEMD_TIMEOUT_MS);
	dbus_close(c);
	if (r < 0)
		return r;
	*ret_unit = TAKE_PTR(unit);
	return 0;
}

int cgroup_update_unit(const char *path, const char *base, const char *unit, const struct oci_linux_resources *res)
{
	struct cgroup_unit_req q = {.unit = unit, .res = res};
	struct dbus_conn *c = NULL;
	int r;

	if (unit && cgroup_systemd_running()) {
		r = cgroup_systemd_connect(&c);
		if (r >= 0) {
			unit_req(c, &q);
			r = cgroup_unit_set(c, &q);
		}
		dbus_close(c);
		if (r < 0)
			return r;
	}
	return path ? cgroup_update(path, base, res) : 0;
}

/* This process's cgroups, as /proc/self/cgroup lists them. */
static int own_cgroups(char **ret)
{
	int r = read_file_all(cgroup_self_file, 64 * 1024, ret, NULL);

	return r < 0 ? err_setsys(r, "read %s", cgroup_self_file) : 0;
}

/* The default cgroupsPath with --systemd-cgroup, or NULL. */
static int default_systemd_path(const char *cgroups_path, const char *id, bool systemd, char **ret)
{
	*ret = NULL;
	/* runc's place for a container without linux.cgroupsPath: its
	 * systemd driver's "system.slice:runc:<id>" (here kvrun's own
	 * prefix), or <id> below the caller's cgroup in each hierarchy. */
	if ((!cgroups_path || !*cgroups_path) && systemd && asprintf(ret, "system.slice:kvrun:%s", id) < 0)
		return -ENOMEM;
	return 0;
}

/* path and base of the container's cgroup (no unit). */
static int resolve_place(const char *cgroups_path, const char *id, bool systemd, struct cgroup_place *ret)
{
	if (cgroups_path && *cgroups_path)
		return cgroup_resolve(cgroups_path, systemd, &ret->path);
	if (!id || !*id || strchr(id, '/') || !strcmp(id, ".") || !strcmp(id, ".."))
		return err_set(-EINVAL, "invalid container id for a cgroup: %s", id ? id : "");
	ret->path = strdup(id);
	return ret->path ? own_cgroups(&ret->base) : -ENOMEM;
}

int cgroup_place_of(const char *cgroups_path, const char *id, bool systemd, struct cgroup_place *ret)
{
	_cleanup_free_ char *dflt = NULL, *slice = NULL;
	struct cgroup_place p = {0};
	int r;

	r = default_systemd_path(cgroups_path, id, systemd, &dflt);
	if (r >= 0)
		r = resolve_place(dflt ? dflt : cgroups_path, id, systemd, &p);
	if (r >= 0 && systemd && cgroup_systemd_running())
		r = cgroup_unit_names(dflt ? dflt : cgroups_path, &slice, &p.unit);
	if (r < 0) {
		cgroup_place_free(&p);
		return r;
	}
	*ret = p;
	return 0;
}

int cgroup_join(const char *cgroups_path, const char *id, bool systemd, const struct oci_linux_resources *res,
                pid_t pid, struct cgroup_place *ret)
{
	_cleanup_free_ char *dflt = NULL;
	struct cgroup_place p = {0};
	int r;

	r = default_systemd_path(cgroups_path, id, systemd, &dflt);
	if (dflt)
		cgroups_path = dflt;
	if (r >= 0)
		r = resolve_place(cgroups_path, id, systemd, &p);
	if (r >= 0 && systemd && cgroup_systemd_running())
		r = systemd_start(cgroups_path, res, pid, &p.unit);
	else if (r >= 0 && systemd)
		log_info("systemd is not running: placing the container in the cgroupfs path of %s", cgroups_path);
	/* Hierarchies systemd leaves alone (v1 cpuset, net_cls...) and the
	 * limits it has no property for, written to the unit's files. */
	if (r >= 0) {
		r = cgroup_enter(p.path, p.base, res, pid);
		if (r < 0 && p.unit)
			r = cleanup_keeping_error(r, p.unit);
	}
	if (r < 0) {
		cgroup_place_free(&p);
		return r;
	}
	*ret = p;
	return 0;
}

void cgroup_place_free(struct cgroup_place *p)
{
	free(p->path);
	free(p->base);
	free(p->unit);
	*p = (struct cgroup_place){0};
}

/* Move this process to the root of every hierarchy where it is in path
 * (so that stopping the unit does not signal us). */
static void step_out(const char *path)
{
	struct hier h[MAX_HIER];
	char procs[1024], spid[32];
	int n = hierarchies(NULL, h, MAX_HIER);

	snprintf(spid, sizeof(spid), "%d", (int)getpid());
	for (int i = 0; i < n; i++)
		if (strcmp(h[i].cur, path) == 0 && pathf(procs, sizeof(procs), "%s/cgroup.procs", h[i].dir) == 0)
			(void)write_file(procs, spid);
	err_clear();
}

int cgroup_leave(const char *path, const char *base, const char *unit)
{
	struct dbus_conn *c = NULL;
	int r = 0, q;

	if (unit) {
		if (path)
			step_out(path);
		r = cgroup_systemd_connect(&c);
		if (r >= 0)
			r = cgroup_unit_stop(c, unit, CGROUP_SYSTEMD_TIMEOUT_MS);
		dbus_close(c);
	}
	if (path) {
		char msg[1024];

		snprintf(msg, sizeof(msg), "%s", err_msg());
		q = cgroup_remove(path, base);
		if (r < 0)
			err_set(r, "%s", msg);
		else
			r = q;
	}
	return r;
}
