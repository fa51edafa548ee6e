/* SPDX-License-Identifier: Apache-2.0 */
/* The systemd cgroup driver against a fake systemd: unit names, the
 * properties of StartTransientUnit (cgroup v2 and v1 names, systemd
 * version gates), waiting for JobRemoved, errors (a refused start, a
 * failed job, a leftover unit), StopUnit; then cgroup_join/cgroup_leave
 * end to end on a fake cgroup tree with the fake on a unix socket (private
 * socket and system bus), and the cgroupfs path when systemd is not
 * running. No root, no systemd. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "fake-peer.h"
#include "runtime/host/cgroup-systemd.h"
#include "runtime/host/cgroup.h"
#include "tap.h"

static char tmp[] = "/tmp/kvrun-test-sdcg-XXXXXX";

static const char *mask(const char *list)
{
	static char buf[128];
	uint8_t *m = NULL;
	size_t n = 0, at = 0;

	if (cgroup_cpuset_mask(list, &m, &n) < 0)
		return "ERROR";
	for (size_t i = 0; i < n; i++)
		at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s%02x", i ? " " : "", m[i]);
	free(m);
	return buf;
}

static const char *names(const char *p)
{
	static char buf[256];
	char *slice = NULL, *unit = NULL;

	if (cgroup_unit_names(p, &slice, &unit) < 0)
		return "ERROR";
	snprintf(buf, sizeof(buf), "%s %s", slice, unit);
	free(slice);
	free(unit);
	return buf;
}

static const char *resolve(const char *p)
{
	static char buf[256];
	char *r = NULL;

	if (cgroup_resolve(p, true, &r) < 0)
		return "ERROR";
	snprintf(buf, sizeof(buf), "%s", r);
	free(r);
	return buf;
}

TEST(setup)
{
	ok(mkdtemp(tmp) != NULL, "temp dir");
}

TEST(unit_names)
{
	is_str(names("system.slice:docker:abc"), "system.slice docker-abc.scope");
	is_str(names(":crio:x"), "system.slice crio-x.scope");
	is_str(names("machine.slice::x"), "machine.slice x.scope");
	is_str(names("-.slice:p:n"), "-.slice p-n.scope");
	is_str(names("a:b"), "ERROR");
	is_str(names("a:b:"), "ERROR");
	is_str(names("s.slice:p:a/b"), "ERROR");
	/* The root slice is the root of the tree, as runc expands it. */
	is_str(resolve("-.slice:p:n"), "/p-n.scope");
	is_str(resolve(":p:n"), "/system.slice/p-n.scope");
	is_str(resolve("user-1000.slice:p:n"), "/user.slice/user-1000.slice/p-n.scope");
}

TEST(cpuset_mask)
{
	is_str(mask("0"), "01");
	is_str(mask("0-9"), "ff 03");
	is_str(mask("1,3-5"), "3a");
	is_str(mask("8"), "00 01");
	is_str(mask(" 2 , 4,"), "14");
	is_str(mask("3-1"), "ERROR");
	is_str(mask("x"), "ERROR");
	is_str(mask(""), "ERROR");
	is_str(mask("1-"), "ERROR");
	is_str(mask("9000"), "ERROR");
}

static struct oci_linux_resources res(void)
{
	struct oci_linux_resources r = {0};
	static char cpus[] = "0-1", mems[] = "0";

	r.memory.has_limit = true, r.memory.limit = 256 << 20;
	r.cpu.has_quota = true, r.cpu.quota = 50000;
	r.cpu.has_period = true, r.cpu.period = 100000;
	r.cpu.has_shares = true, r.cpu.shares = 1024;
	r.cpu.cpus = cpus, r.cpu.mems = mems;
	r.pids.present = true, r.pids.limit = 100;
	return r;
}

static int pair(struct fake_peer *p, struct dbus_conn **c)
{
	int sv[2];

	p->handler = fake_systemd;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 || fake_peer_start_fd(p, sv[1]) < 0)
		return -1;
	return dbus_open_fd(sv[0], false, 5000, c);
}

static char want_pid[32];

TEST(start_v2)
{
	struct fake_peer p = {0};
	struct dbus_conn *c = NULL;
	struct oci_linux_resources r = res();
	struct cgroup_unit_req q = {.unit = "docker-abc.scope",
	                            .slice = "system.slice",
	                            .description = "kvrun container abc",
	                            .pid = 4242,
	                            .unified = true,
	                            .version = 252,
	                            .res = &r};
	char mem[32];

	is_int(pair(&p, &c), 0);
	is_int(cgroup_unit_start(c, &q, 5000), 0);
	dbus_close(c);
	fake_peer_stop(&p);
	is_int(p.bad_messages, 0);
	is_int(p.nstarts, 1);
	is_str(p.calls[0].member, "StartTransientUnit");
	is_str(p.calls[0].path, "/org/freedesktop/systemd1");
	is_str(p.calls[0].interface, "org.freedesktop.systemd1.Manager");
	is_str(p.calls[0].destination, "org.freedesktop.systemd1");
	is_str(p.calls[0].signature, "ssa(sv)a(sa(sv))");
	is_str(p.unit, "docker-abc.scope");
	is_str(p.mode, "replace");
	is_int(p.naux, 0);
	is_str(fake_prop(&p, "Description"), "s:kvrun container abc");
	is_str(fake_prop(&p, "Slice"), "s:system.slice");
	is_str(fake_prop(&p, "PIDs"), "au:[4242]");
	is_str(fake_prop(&p, "Delegate"), "b:1");
	is_str(fake_prop(&p, "DefaultDependencies"), "b:0");
	is_str(fake_prop(&p, "MemoryAccounting"), "b:1");
	is_str(fake_prop(&p, "CPUAccounting"), "b:1");
	is_str(fake_prop(&p, "IOAccounting"), "b:1");
	is_str(fake_prop(&p, "TasksAccounting"), "b:1");
	snprintf(mem, sizeof(mem), "t:%lld", (long long)((256 << 20) + CGROUP_MONITOR_ALLOWANCE));
	is_str(fake_prop(&p, "MemoryMax"), mem);
	is_str(fake_prop(&p, "CPUQuotaPeriodUSec"), "t:100000");
	is_str(fake_prop(&p, "CPUQuotaPerSecUSec"), "t:500000");
	is_str(fake_prop(&p, "CPUWeight"), "t:39");
	is_str(fake_prop(&p, "TasksMax"), "t:228");
	is_str(fake_prop(&p, "AllowedCPUs"), "ay:[03]");
	is_str(fake_prop(&p, "AllowedMemoryNodes"), "ay:[01]");
	ok(!fake_prop(&p, "MemoryLimit") && !fake_prop(&p, "CPUShares"), "no v1 names");
	is_int(p.nprops, 16);
	ok(!p.stop_unit[0], "nothing stopped");
}

TEST(start_v1_old_systemd)
{
	struct fake_peer p = {.signal_first = true};
	struct dbus_conn *c = NULL;
	struct oci_linux_resources r = res();
	struct cgroup_unit_req q = {.unit = "x.scope",
	                            .slice = "-.slice",
	                            .description = "d",
	                            .pid = 1,
	                            .unified = false,
	                            .version = 240,
	                            .res = &r};

	r.cpu.quota = 33333, r.pids.limit = -1;
	is_int(pair(&p, &c), 0);
	is_int(cgroup_unit_start(c, &q, 5000), 0);
	dbus_close(c);
	fake_peer_stop(&p);
	is_str(fake_prop(&p, "Slice"), "s:-.slice");
	ok(fake_prop(&p, "MemoryLimit") && !fake_prop(&p, "MemoryMax"), "MemoryLimit on cgroup v1");
	is_str(fake_prop(&p, "CPUShares"), "t:1024");
	is_str(fake_prop(&p, "BlockIOAccounting"), "b:1");
	/* 33333/100000 s per s: 333330 us, rounded up to whole percents. */
	is_str(fake_prop(&p, "CPUQuotaPerSecUSec"), "t:340000");
	ok(!fake_prop(&p, "CPUQuotaPeriodUSec"), "no period before systemd 242");
	ok(!fake_prop(&p, "AllowedCPUs") && !fake_prop(&p, "AllowedMemoryNodes"), "no cpuset before 244");
	is_str(fake_prop(&p, "TasksMax"), "t:18446744073709551615");
}

TEST(start_refused)
{
	struct fake_peer p = {.start_errors = 1,
	                      .start_error = "org.freedesktop.DBus.Error.AccessDenied",
	                      .start_error_text = "Access denied"};
	struct dbus_conn *c = NULL;
	struct cgroup_unit_req q = {.unit = "a-b.scope", .slice = "system.slice", .description = "d", .pid = 1};

	is_int(pair(&p, &c), 0);
	is_int(cgroup_unit_start(c, &q, 5000), -EACCES);
	is_str(err_msg(), "create systemd unit a-b.scope: org.freedesktop.DBus.Error.AccessDenied: Access denied");
	dbus_close(c);
	fake_peer_stop(&p);
	ok(!p.stop_unit[0], "no unit to stop when the start was refused");
}

TEST(start_job_failed)
{
	struct fake_peer p = {.job_result = "failed"};
	struct dbus_conn *c = NULL;
	struct cgroup_unit_req q = {.unit = "a-b.scope", .slice = "system.slice", .description = "d", .pid = 1};

	is_int(pair(&p, &c), 0);
	is_int(cgroup_unit_start(c, &q, 5000), -EIO);
	ok(strstr(err_msg(), "a-b.scope") && strstr(err_msg(), "\"failed\""), "says the job failed: %s", err_msg());
	dbus_close(c);
	fake_peer_stop(&p);
	is_str(p.stop_unit, "a-b.scope");
	is_str(p.reset_unit, "a-b.scope");
}

TEST(start_job_never_ends)
{
	struct fake_peer p = {.start_job_hangs = true};
	struct dbus_conn *c = NULL;
	struct cgroup_unit_req q = {.unit = "a-b.scope", .slice = "system.slice", .description = "d", .pid = 1};

	is_int(pair(&p, &c), 0);
	is_int(cgroup_unit_start(c, &q, 200), -ETIMEDOUT);
	ok(strstr(err_msg(), "no answer from systemd for job /org/freedesktop/systemd1/job/7") != NULL, "says so: %s",
	   err_msg());
	dbus_close(c);
	fake_peer_stop(&p);
	is_str(p.stop_unit, "a-b.scope");
}

TEST(start_leftover_unit)
{
	struct fake_peer p = {.start_errors = 1,
	                      .start_error = "org.freedesktop.systemd1.UnitExists",
	                      .start_error_text = "Unit a-b.scope already exists."};
	struct dbus_conn *c = NULL;
	struct cgroup_unit_req q = {.unit = "a-b.scope", .slice = "system.slice", .description = "d", .pid = 1};

	is_int(pair(&p, &c), 0);
	is_int(cgroup_unit_start(c, &q, 5000), 0);
	dbus_close(c);
	fake_peer_stop(&p);
	is_int(p.nstarts, 2);
	is_str(p.reset_unit, "a-b.scope");
}

TEST(stop)
{
	struct fake_peer p = {0}, gone = {.stop_missing = true};
	struct dbus_conn *c = NULL;

	is_int(pair(&p, &c), 0);
	is_int(cgroup_unit_stop(c, "a-b.scope", 5000), 0);
	dbus_close(c);
	fake_peer_stop(&p);
	is_str(p.stop_unit, "a-b.scope");
	is_str(p.stop_mode, "replace");
	is_str(p.reset_unit, "a-b.scope");
	is_str(p.calls[0].signature, "ss");
	is_int(pair(&gone, &c), 0);
	is_int(cgroup_unit_stop(c, "a-b.scope", 5000), 0);
	dbus_close(c);
	fake_peer_stop(&gone);
	is_str(gone.stop_unit, "a-b.scope");
}

/* A fake cgroup v2 tree under tmp/cg, systemd "running" (tmp/run), its
 * private socket tmp/private. */
static char cgroot[256], selff[256], rundir[256], priv[256], bus[256], scope[300];

static void fake_tree(bool with_scope)
{
	char f[400];

	snprintf(cgroot, sizeof(cgroot), "%s/cg", tmp);
	snprintf(selff, sizeof(selff), "%s/self-cgroup", tmp);
	snprintf(rundir, sizeof(rundir), "%s/run-systemd-system", tmp);
	snprintf(priv, sizeof(priv), "%s/private", tmp);
	snprintf(bus, sizeof(bus), "%s/system_bus_socket", tmp);
	snprintf(scope, sizeof(scope), "%s/system.slice/p-n.scope", cgroot);
	(void)rm_rf(cgroot);
	mkdir_p(cgroot, 0755);
	mkdir_p(rundir, 0755);
	write_file_atomic(selff, "0::/\n", 5, 0644);
	if (with_scope) {
		/* What systemd makes for the unit. */
		mkdir_p(scope, 0755);
		snprintf(f, sizeof(f), "%s/cgroup.procs", scope);
		write_file_atomic(f, "", 0, 0644);
		snprintf(f, sizeof(f), "%s/memory.max", scope);
		write_file_atomic(f, "", 0, 0644);
	}
	cgroup_mount_root = cgroot;
	cgroup_self_file = selff;
	cgroup_systemd_dir = rundir;
	cgroup_systemd_private = priv;
	cgroup_system_bus = bus;
}

static const char *scope_file(const char *name)
{
	static char buf[64];
	char f[400], *s = NULL;

	snprintf(f, sizeof(f), "%s/%s", scope, name);
	if (read_file_all(f, sizeof(buf), &s, NULL) < 0)
		return "MISSING";
	snprintf(buf, sizeof(buf), "%s", s);
	free(s);
	return buf;
}

TEST(join_and_leave)
{
	struct fake_peer p = {.handler = fake_systemd};
	struct oci_linux_resources r = {0};
	struct cgroup_place pl = {0};
	char mem[32];
	struct stat st;

	r.memory.has_limit = true, r.memory.limit = 128 << 20;
	fake_tree(true);
	p.rm_on_stop = scope;
	snprintf(want_pid, sizeof(want_pid), "au:[%d]", (int)getpid());
	is_int(fake_peer_start_listen(&p, priv), 0);
	ok(cgroup_systemd_running(), "systemd counts as running");
	is_int(cgroup_join("system.slice:p:n", "n", true, &r, getpid(), &pl), 0);
	is_str(pl.path, "/system.slice/p-n.scope");
	is_str(pl.unit, "p-n.scope");
	is_str(p.unit, "p-n.scope");
	is_str(fake_prop(&p, "PIDs"), want_pid);
	is_str(fake_prop(&p, "Slice"), "s:system.slice");
	is_str(fake_prop(&p, "Description"), "s:kvrun container n");
	/* The rest is written to the unit's cgroup files by kvrun. */
	snprintf(mem, sizeof(mem), "%d", getpid());
	is_str(scope_file("cgroup.procs"), mem);
	snprintf(mem, sizeof(mem), "%lld", (long long)((128 << 20) + CGROUP_MONITOR_ALLOWANCE));
	is_str(scope_file("memory.max"), mem);
	/* update: systemd is told, then the file is written. */
	r.memory.limit = 64 << 20;
	is_int(cgroup_update_unit(pl.path, NULL, pl.unit, &r), 0);
	is_str(p.set_unit, "p-n.scope");
	ok(p.set_runtime, "runtime properties");
	snprintf(mem, sizeof(mem), "t:%lld", (long long)((64 << 20) + CGROUP_MONITOR_ALLOWANCE));
	is_str(fake_prop(&p, "MemoryLimit"), mem);
	is_int(p.nprops, 1);
	is_str(scope_file("memory.max"), mem + 2);
	is_int(cgroup_leave(pl.path, NULL, pl.unit), 0);
	ok(stat(scope, &st) < 0 && errno == ENOENT, "the unit's cgroup is gone");
	fake_peer_stop(&p);
	is_str(p.stop_unit, "p-n.scope");
	ok(p.connections == 3, "one connection to start, one to update, one to stop (%d)", p.connections);
	is_str(p.calls[0].member, "Subscribe");
	is_str(p.calls[1].member, "Get");
	is_str(p.calls[2].member, "StartTransientUnit");
	is_int(p.bad_messages, 0);
	cgroup_place_free(&pl);
}

TEST(join_system_bus)
{
	struct fake_peer p = {.handler = fake_systemd};
	struct cgroup_place pl = {0};

	fake_tree(true);
	unlink(priv);
	p.rm_on_stop = scope;
	is_int(fake_peer_start_listen(&p, bus), 0);
	is_int(cgroup_join("system.slice:p:n", "n", true, NULL, getpid(), &pl), 0);
	is_str(pl.unit, "p-n.scope");
	is_int(cgroup_leave(pl.path, NULL, pl.unit), 0);
	fake_peer_stop(&p);
	is_str(p.calls[0].member, "Hello");
	is_str(p.calls[1].member, "AddMatch");
	is_str(p.calls[2].member, "Subscribe");
	is_str(p.stop_unit, "p-n.scope");
	cgroup_place_free(&pl);
}

TEST(join_fails_after_start)
{
	struct fake_peer p = {.handler = fake_systemd};
	struct cgroup_place pl = {0};
	struct stat st;

	/* No cgroup.procs: joining the unit's cgroup fails after the unit
	 * exists, which must then be stopped. */
	fake_tree(false);
	is_int(fake_peer_start_listen(&p, priv), 0);
	ok(cgroup_join("system.slice:p:n", "n", true, NULL, getpid(), &pl) < 0, "join fails");
	ok(strstr(err_msg(), "cgroup.procs") != NULL, "the error is the cgroupfs one: %s", err_msg());
	fake_peer_stop(&p);
	is_str(p.unit, "p-n.scope");
	is_str(p.stop_unit, "p-n.scope");
	ok(stat(scope, &st) < 0, "the directory made is removed");
	ok(!pl.path && !pl.unit, "nothing returned");
}

static void touch_procs(const char *rel)
{
	char f[600];

	snprintf(f, sizeof(f), "%s/%s", cgroot, rel);
	mkdir_p(f, 0755);
	snprintf(f, sizeof(f), "%s/%s/cgroup.procs", cgroot, rel);
	write_file_atomic(f, "", 0, 0644);
}

static const char *procs_of(const char *rel)
{
	static char buf[64];
	char f[600], *s = NULL;

	snprintf(f, sizeof(f), "%s/%s/cgroup.procs", cgroot, rel);
	if (read_file_all(f, sizeof(buf), &s, NULL) < 0)
		return "MISSING";
	snprintf(buf, sizeof(buf), "%s", s);
	free(s);
	unlink(f); /* a plain directory: rmdir needs it empty */
	return buf;
}

/* No linux.cgroupsPath: runc's place, <id> below the creator's cgroup in
 * each hierarchy (which differ here, as on a host whose memory hierarchy
 * puts us deeper), removed later by a process whose cgroups differ; with
 * --systemd-cgroup, system.slice:kvrun:<id>. */
TEST(default_place)
{
	static const char self[] = "4:memory:/process_api/x\n1:cpu:/\n0::/\n";
	struct cgroup_place pl = {0};
	char f[600], pid[32];
	struct stat st;

	fake_tree(false);
	rmdir(rundir);
	write_file_atomic(selff, self, strlen(self), 0644);
	touch_procs("memory/process_api/x/ctr");
	touch_procs("cpu/ctr");
	touch_procs("unified/ctr");
	snprintf(pid, sizeof(pid), "%d", getpid());
	is_int(cgroup_join(NULL, "ctr", false, NULL, getpid(), &pl), 0);
	is_str(pl.path, "ctr");
	is_str(pl.base, self);
	ok(pl.unit == NULL, "no unit");
	is_str(procs_of("memory/process_api/x/ctr"), pid);
	is_str(procs_of("cpu/ctr"), pid);
	is_str(procs_of("unified/ctr"), pid);
	write_file_atomic(selff, "4:memory:/else\n1:cpu:/else\n0::/else\n", 36, 0644);
	is_int(cgroup_leave(pl.path, pl.base, NULL), 0);
	snprintf(f, sizeof(f), "%s/memory/process_api/x/ctr", cgroot);
	ok(stat(f, &st) < 0 && errno == ENOENT, "removed from the memory hierarchy by its base");
	snprintf(f, sizeof(f), "%s/cpu/ctr", cgroot);
	ok(stat(f, &st) < 0 && errno == ENOENT, "removed from the cpu hierarchy");
	cgroup_place_free(&pl);

	ok(cgroup_join(NULL, "../x", false, NULL, getpid(), &pl) < 0, "an id that is no name refused");

	write_file_atomic(selff, "0::/user.slice\n", 15, 0644);
	touch_procs("unified/system.slice/kvrun-ctr.scope");
	is_int(cgroup_join("", "ctr", true, NULL, getpid(), &pl), 0);
	is_str(pl.path, "/system.slice/kvrun-ctr.scope");
	ok(pl.base == NULL, "an absolute path has no base");
	is_str(procs_of("unified/system.slice/kvrun-ctr.scope"), pid);
	is_int(cgroup_leave(pl.path, pl.base, pl.unit), 0);
	cgroup_place_free(&pl);
}

/* The cgroupfs driver on a hybrid host (v1 controllers and cgroup2 at
 * unified): the host-side limits go where each hierarchy takes them. */
static void hybrid_file(const char *root, const char *rel, const char *text)
{
	char f[600];

	snprintf(f, sizeof(f), "%s/%s", root, rel);
	write_file_atomic(f, text, strlen(text), 0644);
}

static const char *hybrid_read(const char *root, const char *rel)
{
	static char buf[64];
	char f[600], *s = NULL;

	snprintf(f, sizeof(f), "%s/%s", root, rel);
	if (read_file_all(f, sizeof(buf), &s, NULL) < 0)
		return "MISSING";
	snprintf(buf, sizeof(buf), "%s", s);
	free(s);
	return buf;
}

TEST(cgroupfs_host_limits)
{
	static const char *const files[] = {"memory/c/cgroup.procs",  "memory/c/memory.limit_in_bytes",
	                                    "cpu/c/cgroup.procs",     "cpu/c/cpu.cfs_period_us",
	                                    "cpu/c/cpu.cfs_quota_us", "cpu/c/cpu.cfs_burst_us",
	                                    "cpu/c/cpu.shares",       "cpuset/c/cgroup.procs",
	                                    "cpuset/c/cpuset.cpus",   "cpuset/c/cpuset.mems",
	                                    "pids/c/cgroup.procs",    "pids/c/pids.max",
	                                    "unified/c/cgroup.procs", "unified/c/cpu.weight"};
	struct oci_linux_resources r = {0};
	char root[300], d[400], v[32];

	snprintf(root, sizeof(root), "%s/hy", tmp);
	(void)rm_rf(root);
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		snprintf(d, sizeof(d), "%s/%s", root, files[i]);
		*strrchr(d, '/') = 0;
		mkdir_p(d, 0755);
		hybrid_file(root, files[i], "");
	}
	hybrid_file(root, "cpuset/cpuset.cpus", "0-7\n");
	hybrid_file(root, "cpuset/cpuset.mems", "0\n");
	snprintf(d, sizeof(d), "%s/self", root);
	hybrid_file(root, "self", "5:pids:/\n4:memory:/\n3:cpuset:/\n1:cpu:/\n0::/\n");
	cgroup_mount_root = root;
	cgroup_self_file = d;
	r.memory.has_limit = true, r.memory.limit = 256 << 20;
	r.cpu.has_quota = true, r.cpu.quota = 50000;
	r.cpu.has_burst = true, r.cpu.burst = 20000;
	r.cpu.has_shares = true, r.cpu.shares = 512;
	r.cpu.cpus = (char *)"2-3";
	r.pids.present = true, r.pids.limit = 100;
	is_int(cgroup_enter("/c", NULL, &r, getpid()), 0);
	snprintf(v, sizeof(v), "%lld", (long long)((256 << 20) + CGROUP_MONITOR_ALLOWANCE));
	is_str(hybrid_read(root, "memory/c/memory.limit_in_bytes"), v);
	is_str(hybrid_read(root, "cpu/c/cpu.cfs_quota_us"), "50000");
	is_str(hybrid_read(root, "cpu/c/cpu.cfs_period_us"), "100000");
	is_str(hybrid_read(root, "cpu/c/cpu.cfs_burst_us"), "20000");
	is_str(hybrid_read(root, "cpu/c/cpu.shares"), "512");
	/* Written over the parent's copy (a plain file here keeps its tail). */
	ok(strncmp(hybrid_read(root, "cpuset/c/cpuset.cpus"), "2-3", 3) == 0, "cpuset.cpus: %s",
	   hybrid_read(root, "cpuset/c/cpuset.cpus"));
	is_str(hybrid_read(root, "cpuset/c/cpuset.mems"), "0\n"); /* the parent's */
	snprintf(v, sizeof(v), "%d", 100 + CGROUP_MONITOR_TASKS_ALLOWANCE);
	is_str(hybrid_read(root, "pids/c/pids.max"), v);
	/* cgroup2 takes what it has files for (here: the weight). */
	snprintf(v, sizeof(v), "%llu", (unsigned long long)cgroup_shares_to_weight(512));
	is_str(hybrid_read(root, "unified/c/cpu.weight"), v);
	(void)rm_rf(root);
}

TEST(no_systemd_is_cgroupfs)
{
	struct fake_peer p = {.handler = fake_systemd};
	struct cgroup_place pl = {0};
	char f[400];
	struct stat st;

	fake_tree(false);
	rmdir(rundir);
	is_int(fake_peer_start_listen(&p, priv), 0);
	ok(!cgroup_systemd_running(), "systemd is not running");
	/* The directory is made by kvrun; cgroup.procs cannot be created in a
	 * plain directory, so give it one as the kernel would. */
	mkdir_p(scope, 0755);
	snprintf(f, sizeof(f), "%s/cgroup.procs", scope);
	write_file_atomic(f, "", 0, 0644);
	is_int(cgroup_join("system.slice:p:n", "n", true, NULL, getpid(), &pl), 0);
	is_str(pl.path, "/system.slice/p-n.scope");
	ok(pl.unit == NULL && pl.base == NULL, "no unit, no base");
	snprintf(want_pid, sizeof(want_pid), "%d", getpid());
	is_str(scope_file("cgroup.procs"), want_pid);
	unlink(f);
	is_int(cgroup_leave(pl.path, NULL, pl.unit), 0);
	ok(stat(scope, &st) < 0, "and removed by kvrun");
	fake_peer_stop(&p);
	is_int(p.connections, 0);
	cgroup_place_free(&pl);
	(void)rm_rf(tmp);
}

TAP_MAIN()
