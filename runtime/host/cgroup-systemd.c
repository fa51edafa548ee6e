/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "runtime/host/cgroup-systemd.h"

const char *cgroup_systemd_dir = "/run/systemd/system";
const char *cgroup_systemd_private = "/run/systemd/private";
const char *cgroup_system_bus = "/run/dbus/system_bus_socket";

#define SD_DEST "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define SD_MANAGER "org.freedesktop.systemd1.Manager"
#define CPUSET_MAX_CPU 8192
#define SEEN_JOBS 16

bool cgroup_systemd_running(void)
{
	struct stat st;

	return lstat(cgroup_systemd_dir, &st) == 0 && S_ISDIR(st.st_mode);
}

int cgroup_unit_names(const char *cgroups_path, char **ret_slice, char **ret_unit)
{
	const char *c1 = strchr(cgroups_path, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	_cleanup_free_ char *slice = NULL, *unit = NULL;
	int n;

	if (!c2 || strchr(c2 + 1, ':') || !c2[1])
		return err_set(-EINVAL, "expected cgroupsPath to be of format \"slice:prefix:name\", got \"%s\"",
		               cgroups_path);
	slice = c1 == cgroups_path ? strdup("system.slice") : strndup(cgroups_path, (size_t)(c1 - cgroups_path));
	if (c2 == c1 + 1)
		n = asprintf(&unit, "%s.scope", c2 + 1);
	else
		n = asprintf(&unit, "%.*s-%s.scope", (int)(c2 - c1 - 1), c1 + 1, c2 + 1);
	if (!slice || n < 0)
		return -ENOMEM;
	if (strchr(unit, '/'))
		return err_set(-EINVAL, "invalid unit name %s (from cgroupsPath %s)", unit, cgroups_path);
	*ret_slice = TAKE_PTR(slice);
	*ret_unit = TAKE_PTR(unit);
	return 0;
}

int cgroup_cpuset_mask(const char *list, uint8_t **ret, size_t *ret_len)
{
	_cleanup_free_ uint8_t *mask = calloc(CPUSET_MAX_CPU / 8, 1);
	const char *p = list;
	size_t len = 0;

	if (!mask)
		return -ENOMEM;
	while (*p) {
		char *end;
		unsigned long a, b;

		while (*p == ' ' || *p == ',')
			p++;
		if (!*p)
			break;
		a = b = strtoul(p, &end, 10);
		if (end == p)
			return err_set(-EINVAL, "invalid cpuset \"%s\"", list);
		if (*end == '-') {
			p = end + 1;
			b = strtoul(p, &end, 10);
			if (end == p)
				return err_set(-EINVAL, "invalid cpuset \"%s\"", list);
		}
		if (a > b || b >= CPUSET_MAX_CPU || (*end && *end != ',' && *end != ' '))
			return err_set(-EINVAL, "invalid cpuset \"%s\"", list);
		for (unsigned long i = a; i <= b; i++)
			mask[i / 8] |= (uint8_t)(1u << (i % 8));
		if (b / 8 + 1 > len)
			len = b / 8 + 1;
		p = end;
	}
	if (!len)
		return err_set(-EINVAL, "empty cpuset \"%s\"", list);
	*ret = TAKE_PTR(mask);
	*ret_len = len;
	return 0;
}

/* ---- properties ------------------------------------------------------- */

static void prop(struct dbus_writer *w, const char *name)
{
	dbus_w_align(w, 8);
	dbus_w_str(w, name);
}

static void prop_bool(struct dbus_writer *w, const char *name, bool v)
{
	prop(w, name);
	dbus_w_variant_bool(w, v);
}

static void prop_u64(struct dbus_writer *w, const char *name, uint64_t v)
{
	prop(w, name);
	dbus_w_variant_u64(w, v);
}

static int prop_mask(struct dbus_writer *w, const char *name, const char *list)
{
	_cleanup_free_ uint8_t *mask = NULL;
	struct dbus_array a;
	size_t n;
	int q = cgroup_cpuset_mask(list, &mask, &n);

	if (q < 0)
		return q;
	prop(w, name);
	dbus_w_sig(w, "ay");
	a = dbus_w_array_open(w, 1);
	for (size_t i = 0; i < n; i++)
		dbus_w_u8(w, mask[i]);
	dbus_w_array_close(w, a);
	return 0;
}

/* runc's conversion: microseconds of CPU per wall second, rounded up to
 * whole percents (systemd keeps CPUQuota as a percentage). */
static uint64_t quota_per_sec(int64_t quota, uint64_t period)
{
	uint64_t v;

	if (quota <= 0)
		return UINT64_MAX; /* USEC_INFINITY */
	if (!period)
		period = 100000;
	v = (uint64_t)quota * 1000000 / period;
	return v % 10000 ? (v / 10000 + 1) * 10000 : v;
}

uint64_t cgroup_shares_to_weight(uint64_t shares)
{
	if (shares < 2)
		shares = 2;
	if (shares > 262144)
		shares = 262144;
	return 1 + ((shares - 2) * 9999) / 262142;
}

static int resource_props(struct dbus_writer *w, const struct cgroup_unit_req *q)
{
	const struct oci_linux_resources *res = q->res;
	int r;

	if (!res)
		return 0;
	/* The same host-side limits as the cgroupfs driver writes. */
	if (res->memory.has_limit && res->memory.limit > 0)
		prop_u64(w, q->unified ? "MemoryMax" : "MemoryLimit",
		         (uint64_t)res->memory.limit + CGROUP_MONITOR_ALLOWANCE);
	if (res->cpu.has_period && res->cpu.period && q->version >= 242)
		prop_u64(w, "CPUQuotaPeriodUSec", res->cpu.period);
	if ((res->cpu.has_quota && res->cpu.quota) || (res->cpu.has_period && res->cpu.period))
		prop_u64(w, "CPUQuotaPerSecUSec",
		         quota_per_sec(res->cpu.has_quota ? res->cpu.quota : 0, res->cpu.period));
	if (res->cpu.has_shares && res->cpu.shares)
		prop_u64(w, q->unified ? "CPUWeight" : "CPUShares",
		         q->unified ? cgroup_shares_to_weight(res->cpu.shares) : res->cpu.shares);
	if (res->pids.present && res->pids.limit > 0)
		prop_u64(w, "TasksMax", (uint64_t)res->pids.limit + CGROUP_MONITOR_TASKS_ALLOWANCE);
	else if (res->pids.present && res->pids.limit < 0)
		prop_u64(w, "TasksMax", UINT64_MAX);
	if (q->version >= 244 && res->cpu.cpus && *res->cpu.cpus &&
	    (r = prop_mask(w, "AllowedCPUs", res->cpu.cpus)) < 0)
		return r;
	if (q->version >= 244 && res->cpu.mems && *res->cpu.mems &&
	    (r = prop_mask(w, "AllowedMemoryNodes", res->cpu.mems)) < 0)
		return r;
	return 0;
}

int cgroup_unit_properties(struct dbus_writer *w, const struct cgroup_unit_req *q)
{
	struct dbus_array a = dbus_w_array_open(w, 8), pids;
	int r;

	prop(w, "Description");
	dbus_w_variant_str(w, q->description);
	prop(w, "Slice");
	dbus_w_variant_str(w, q->slice);
	prop(w, "PIDs");
	dbus_w_sig(w, "au");
	pids = dbus_w_array_open(w, 4);
	dbus_w_u32(w, (uint32_t)q->pid);
	dbus_w_array_close(w, pids);
	prop_bool(w, "Delegate", true);
	/* Always account, as runc: the counters are what engines read. */
	prop_bool(w, "MemoryAccounting", true);
	prop_bool(w, "CPUAccounting", true);
	prop_bool(w, q->unified ? "IOAccounting" : "BlockIOAccounting", true);
	prop_bool(w, "TasksAccounting", true);
	prop_bool(w, "DefaultDependencies", false);
	r = resource_props(w, q);
	if (r < 0)
		return r;
	dbus_w_array_close(w, a);
	return w->err;
}

/* ---- talking to systemd ----------------------------------------------- */

static int manager_call(struct dbus_conn *c, struct dbus_writer *w, dbus_signal_fn fn, void *u,
                        struct dbus_incoming *ret)
{
	return dbus_call(c, w, CGROUP_SYSTEMD_TIMEOUT_MS, fn, u, ret);
}

static int add_match(struct dbus_conn *c)
{
	_cleanup_(dbus_writer_free) struct dbus_writer w = {0};

	dbus_call_begin(&w, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "AddMatch", "s");
	dbus_w_str(&w, "type='signal',sender='" SD_DEST "',path='" SD_PATH "',interface='" SD_MANAGER
	               "',member='JobRemoved'");
	return manager_call(c, &w, NULL, NULL, NULL);
}

int cgroup_systemd_connect(struct dbus_conn **ret)
{
	_cleanup_(dbus_writer_free) struct dbus_writer w = {0};
	struct dbus_conn *c = NULL;
	int r;

	/* The private socket needs no bus daemon and is root's (runc goes
	 * through the system bus; either reaches the same Manager). */
	r = dbus_open(cgroup_systemd_private, false, CGROUP_SYSTEMD_TIMEOUT_MS, &c);
	if (r < 0) {
		log_debug("systemd private socket: %s; trying the system bus", err_msg());
		r = dbus_open(cgroup_system_bus, true, CGROUP_SYSTEMD_TIMEOUT_MS, &c);
		if (r >= 0)
			r = add_match(c);
	}
	if (r >= 0) {
		dbus_call_begin(&w, SD_DEST, SD_PATH, SD_MANAGER, "Subscribe", "");
		r = manager_call(c, &w, NULL, NULL, NULL);
	}
	if (r < 0) {
		dbus_close(c);
		return err_prefix(r, "connect to systemd");
	}
	*ret = c;
	return 0;
}

int cgroup_systemd_version(struct dbus_conn *c)
{
	_cleanup_(dbus_writer_free) struct dbus_writer w = {0};
	struct dbus_incoming in = {0};
	struct dbus_reader r;
	const char *sig, *s;
	int v = -1;

	dbus_call_begin(&w, SD_DEST, SD_PATH, "org.freedesktop.DBus.Properties", "Get", "ss");
	dbus_w_str(&w, SD_MANAGER);
	dbus_w_str(&w, "Version");
	if (manager_call(c, &w, NULL, NULL, &in) < 0) {
		log_debug("systemd version: %s", err_msg());
		err_clear();
		return -1;
	}
	r = dbus_msg_body(&in.m);
	if (in.m.signature && strcmp(in.m.signature, "v") == 0 && dbus_r_sig(&r, &sig) == 0 && strcmp(sig, "s") == 0 &&
	    dbus_r_str(&r, &s) == 0) {
		/* "252.30-1~deb12u2", "v245.4-1.fc32", "245" */
		s += *s == 'v';
		if (*s >= '0' && *s <= '9')
			v = atoi(s);
	}
	dbus_incoming_free(&in);
	return v;
}

/* JobRemoved signals seen, until the one for our job. */
struct jobs {
	struct {
		char path[128], result[32];
	} seen[SEEN_JOBS];
	unsigned n;
};

static void on_signal(const struct dbus_msg *m, void *userdata)
{
	struct jobs *j = userdata;
	struct dbus_reader r = dbus_msg_body(m);
	const char *path, *unit, *result;
	uint32_t id;

	if (strcmp(m->path, SD_PATH) || strcmp(m->interface, SD_MANAGER) || strcmp(m->member, "JobRemoved") ||
	    !m->signature || strcmp(m->signature, "uoss"))
		return;
	if (dbus_r_u32(&r, &id) < 0 || dbus_r_str(&r, &path) < 0 || dbus_r_str(&r, &unit) < 0 ||
	    dbus_r_str(&r, &result) < 0)
		return;
	snprintf(j->seen[j->n % SEEN_JOBS].path, sizeof(j->seen[0].path), "%s", path);
	snprintf(j->seen[j->n % SEEN_JOBS].result, sizeof(j->seen[0].result), "%s", result);
	j->n++;
}

static const char *job_result(const struct jobs *j, const char *job)
{
	for (unsigned i = 0; i < SEEN_JOBS && i < j->n; i++)
		if (strcmp(j->seen[i].path, job) == 0)
			return j->seen[i].result;
	return NULL;
}

/* Wait for job's JobRemoved (signals that came with the reply are in j
 * already) and copy its result. */
static int wait_job(struct dbus_conn *c, struct jobs *j, const char *job, char *result, size_t size, int timeout_ms)
{
	struct timespec ts;
	int64_t deadline;
	const char *res;

	/* One deadline for the job, however many other signals come. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	deadline = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + timeout_ms;
	while (!(res = job_result(j, job))) {
		struct dbus_incoming in = {0};
		int64_t left;
		int r;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		left = deadline - ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
		r = left > 0 ? dbus_recv(c, (int)left, &in) : -ETIMEDOUT;
		if (r == -ETIMEDOUT)
			return err_set(r, "no answer from systemd for job %s in %d ms", job, timeout_ms);
		if (r < 0)
			return r;
		if (in.m.type == DBUS_SIGNAL)
			on_signal(&in.m, j);
		dbus_incoming_free(&in);
	}
	snprintf(result, size, "%s", res);
	return 0;
}

/* A job-returning Manager call ("o" reply) and its result. */
static int job_call(struct dbus_conn *c, struct dbus_writer *w, int timeout_ms, char *result, size_t size)
{
	struct jobs j = {0};
	struct dbus_incoming in = {0};
	struct dbus_reader r;
	_cleanup_free_ char *job = NULL;
	const char *p;
	int q;

	q = dbus_call(c, w, timeout_ms, on_signal, &j, &in);
	if (q < 0)
		return q;
	r = dbus_msg_body(&in.m);
	if (!in.m.signature || strcmp(in.m.signature, "o") || dbus_r_str(&r, &p) < 0 || !(job = strdup(p)))
		q = err_set(-EBADMSG, "systemd: unexpected reply (signature \"%s\")",
		            in.m.signature ? in.m.signature : "");
	dbus_incoming_free(&in);
	return q < 0 ? q : wait_job(c, &j, job, result, size, timeout_ms);
}

static int unit_call(struct dbus_conn *c, const char *member, const char *unit)
{
	_cleanup_(dbus_writer_free) struct dbus_writer w = {0};

	dbus_call_begin(&w, SD_DEST, SD_PATH, SD_MANAGER, member, "s");
	dbus_w_str(&w, unit);
	return manager_call(c, &w, NULL, NULL, NULL);
}

static int start_once(struct dbus_conn *c, const struct cgroup_unit_req *q, int timeout_ms, char *res, size_t size)
{
	_cleanup_(dbus_writer_free) struct dbus_writer w = {0};
	struct dbus_array aux;
	int r;

	dbus_call_begin(&w, SD_DEST, SD_PATH, SD_MANAGER, "StartTransientUnit", "ssa(sv)a(sa(sv))");
	dbus_w_str(&w, q->unit);
	dbus_w_str(&w, "replace");
	r = cgroup_unit_properties(&w, q);
	if (r < 0)
		return r;
	aux = dbus_w_array_open(&w, 8);
	dbus_w_array_close(&w, aux);
	return job_call(c, &w, timeout_ms, res, size);
}

int cgroup_unit_start(struct dbus_conn *c, const struct cgroup_unit_req *q, int timeout_ms)
{
	char result[32];
	int r;

	r = start_once(c, q, timeout_ms, result, sizeof(result));
	if (r == -EEXIST) {
		/* Perhaps a failed unit of an earlier container of this name:
		 * reset it so systemd lets it go, and try once more. */
		log_debug("%s exists (%s): resetting it", q->unit, err_msg());
		if (unit_call(c, "ResetFailedUnit", q->unit) < 0)
			log_debug("reset %s: %s", q->unit, err_msg());
		r = start_once(c, q, timeout_ms, result, sizeof(result));
	}
	if (r >= 0 && strcmp(result, "done") != 0)
		r = err_set(-EIO, "systemd job for %s ended with \"%s\"", q->unit, result);
	if (r < 0) {
		int keep = r;
		char msg[1024];

		snprintf(msg, sizeof(msg), "%s", err_msg());
		/* The job may have been queued, or left a failed unit. */
		if (r != -EEXIST && r != -EINVAL && r != -EACCES)
			(void)cgroup_unit_stop(c, q->unit, timeout_ms);
		err_set(keep, "%s", msg);
		return err_prefix(keep, "create systemd unit %s", q->unit);
	}
	log_debug("systemd unit %s in %s for pid %d", q->unit, q->slice, (int)q->pid);
	return 0;
}

int cgroup_unit_set(struct dbus_conn *c, const struct cgroup_unit_req *q)
{
	_cleanup_(dbus_writer_free) struct dbus_writer w = {0};
	struct dbus_array a;
	int r;

	dbus_call_begin(&w, SD_DEST, SD_PATH, SD_MANAGER, "SetUnitProperties", "sba(sv)");
	dbus_w_str(&w, q->unit);
	dbus_w_bool(&w, true); /* runtime: not written to /etc */
	a = dbus_w_array_open(&w, 8);
	r = resource_props(&w, q);
	if (r < 0)
		return r;
	dbus_w_array_close(&w, a);
	r = manager_call(c, &w, NULL, NULL, NULL);
	return r < 0 ? err_prefix(r, "set properties of systemd unit %s", q->unit) : 0;
}

int cgroup_unit_stop(struct dbus_conn *c, const char *unit, int timeout_ms)
{
	_cleanup_(dbus_writer_free) struct dbus_writer w = {0};
	char result[32];
	int r;

	dbus_call_begin(&w, SD_DEST, SD_PATH, SD_MANAGER, "StopUnit", "ss");
	dbus_w_str(&w, unit);
	dbus_w_str(&w, "replace");
	r = job_call(c, &w, timeout_ms, result, sizeof(result));
	if (r == -ENOENT) {
		err_clear();
		return 0; /* gone already: an empty scope stops by itself */
	}
	if (r < 0)
		return err_prefix(r, "stop systemd unit %s", unit);
	if (strcmp(result, "done") != 0)
		log_debug("stopping %s: job ended with \"%s\"", unit, result);
	/* A unit that failed would stay listed (and block its name). */
	if (unit_call(c, "ResetFailedUnit", unit) < 0) {
		log_debug("reset %s: %s", unit, err_msg());
		err_clear();
	}
	return 0;
}
