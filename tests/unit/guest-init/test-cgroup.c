/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The container's cgroup, on the host's cgroup2 (a throwaway cgroup of
 * the test's own): START's values written with their fields named, and
 * the BPF device filter judged by the kernel: a child placed in the
 * cgroup opens and mknods devices the rules allow and is refused the rest.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "guest-init/guest-init.h"
#include "tap.h"

static char cg[256], nodes[] = "/tmp/kvrun-devfilter-XXXXXX";

static const char *cgroup2_root(void)
{
	static const char *const roots[] = {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"};
	struct statfs sf;

	for (size_t i = 0; i < ARRAY_SIZE(roots); i++)
		if (statfs(roots[i], &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC)
			return roots[i];
	return NULL;
}

static struct proto_cgroup_set set(const char *file, const char *value, const char *field, bool optional)
{
	return (struct proto_cgroup_set){(char *)file, (char *)value, (char *)field, optional};
}

TEST(values_written)
{
	struct proto_cgroup_set sets[2];
	struct proto_start s = {.cgroup = sets, .n_cgroup = 1};
	_cleanup_free_ char *v = NULL;
	char path[300];

	sets[0] = set("cgroup.max.descendants", "5", "linux.resources.unified[\"cgroup.max.descendants\"]", false);
	is_int(gi_cgroup_apply(cg, &s), 0);
	snprintf(path, sizeof(path), "%s/cgroup.max.descendants", cg);
	is_int(read_file_all(path, 64, &v, NULL), 0);
	ok(v && strcmp(v, "5\n") == 0, "cgroup.max.descendants reads 5: %s", v ? v : "");

	sets[1] = set("nosuch.limit", "10", "linux.resources.pids.limit", false);
	s.n_cgroup = 2;
	is_int(gi_cgroup_apply(cg, &s), -ENOENT);
	is_str(err_msg(), "linux.resources.pids.limit: set nosuch.limit to 10 in the container's cgroup: No such file "
	                  "or directory");
	sets[1].optional = true;
	is_int(gi_cgroup_apply(cg, &s), 0);

	sets[1] = set("../cgroup.procs", "1", "linux.resources.unified[\"../cgroup.procs\"]", false);
	is_int(gi_cgroup_apply(cg, &s), -EINVAL);
	is_str(err_msg(), "linux.resources.unified[\"../cgroup.procs\"]: bad cgroup file name");
	s.n_cgroup = 1;
	is_int(gi_cgroup_apply(NULL, &s), -ENOTSUP);
}

/* What a child in the filtered cgroup may do: one bit per probe. */
enum {
	NULL_RW = 1,
	ZERO_R = 2,
	ZERO_W = 4,
	FULL_R = 8,
	MKNOD_C = 16,
	MKNOD_B = 32,
};

static int probe_open(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

static int probe_mknod(const char *name, mode_t kind, dev_t dev)
{
	char path[300];
	int r;

	snprintf(path, sizeof(path), "%s/%s", nodes, name);
	unlink(path);
	r = mknod(path, kind | 0600, dev) == 0;
	unlink(path);
	return r;
}

static int probes_in_cgroup(void)
{
	char procs[300], me[16];
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		int got = 0;

		snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
		snprintf(me, sizeof(me), "%d", (int)getpid());
		int fd = open(procs, O_WRONLY | O_CLOEXEC);

		if (fd < 0 || write(fd, me, strlen(me)) < 0)
			_exit(101);
		close(fd);
		got |= probe_open("/dev/null", O_RDWR) ? NULL_RW : 0;
		got |= probe_open("/dev/zero", O_RDONLY) ? ZERO_R : 0;
		got |= probe_open("/dev/zero", O_WRONLY) ? ZERO_W : 0;
		got |= probe_open("/dev/full", O_RDONLY) ? FULL_R : 0;
		got |= probe_mknod("c", S_IFCHR, makedev(1, 7)) ? MKNOD_C : 0;
		got |= probe_mknod("b", S_IFBLK, makedev(7, 0)) ? MKNOD_B : 0;
		_exit(got);
	}
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A fresh cgroup for each filter: attached programs stay until it goes. */
static int fresh_cgroup(const char *root, int n)
{
	if (cg[0])
		rmdir(cg);
	snprintf(cg, sizeof(cg), "%s/kvrun-devfilter-%d-%d", root, (int)getpid(), n);
	return mkdir(cg, 0755) < 0 ? -errno : 0;
}

TEST(device_filter)
{
	const char *root = cgroup2_root();
	struct proto_device_rule deny_default[] = {
	    {'c', true, true, 1, 3, PROTO_DEV_ACC_READ | PROTO_DEV_ACC_WRITE | PROTO_DEV_ACC_MKNOD},
	    {'c', true, true, 1, 5, PROTO_DEV_ACC_READ},
	    {'c', false, false, 0, 0, PROTO_DEV_ACC_MKNOD},
	};
	struct proto_device_rule allow_default[] = {
	    {'c', true, true, 1, 3, PROTO_DEV_ACC_READ | PROTO_DEV_ACC_WRITE},
	    {'b', false, false, 0, 0, PROTO_DEV_ACC_MKNOD},
	};
	struct proto_start s = {.device_filter = true, .device_rules = deny_default, .n_device_rules = 3};
	int got;

	is_int(fresh_cgroup(root, 1), 0);
	err_clear();
	is_int(gi_devfilter_attach(cg, &s), 0);
	if (err_msg()[0])
		printf("# %s\n", err_msg());
	got = probes_in_cgroup();
	is_int(got, NULL_RW | ZERO_R | MKNOD_C);

	s = (struct proto_start){
	    .device_filter = true, .device_default_allow = true, .device_rules = allow_default, .n_device_rules = 2};
	is_int(fresh_cgroup(root, 2), 0);
	is_int(gi_devfilter_attach(cg, &s), 0);
	got = probes_in_cgroup();
	is_int(got, ZERO_R | ZERO_W | FULL_R | MKNOD_C);

	/* An empty rule set with a deny default: nothing at all. */
	s = (struct proto_start){.device_filter = true};
	is_int(fresh_cgroup(root, 3), 0);
	is_int(gi_devfilter_attach(cg, &s), 0);
	is_int(probes_in_cgroup(), 0);
}

/* The id of the one program attached to cg (0: none or not one). */
static uint32_t attached_prog(void)
{
	uint32_t ids[4] = {0};
	union bpf_attr attr;
	int fd = open(cg, O_DIRECTORY | O_RDONLY | O_CLOEXEC);

	memset(&attr, 0, sizeof(attr));
	attr.query.target_fd = (uint32_t)fd;
	attr.query.attach_type = BPF_CGROUP_DEVICE;
	attr.query.prog_ids = (uint64_t)(uintptr_t)ids;
	attr.query.prog_cnt = 4;
	if (fd < 0 || syscall(SYS_bpf, BPF_PROG_QUERY, &attr, sizeof(attr)) < 0 || attr.query.prog_cnt != 1)
		ids[0] = 0;
	if (fd >= 0)
		close(fd);
	return ids[0];
}

/* The default filter (runc's devices), loaded ahead as PID 1 does: each
 * START with it attaches that program, loaded once; another rule set
 * gets a program of its own. */
TEST(device_filter_preloaded)
{
	const char *root = cgroup2_root();
	struct proto_start s = {.device_filter = true,
	                        .device_rules = (struct proto_device_rule *)proto_default_device_rules,
	                        .n_device_rules = proto_n_default_device_rules};
	struct proto_device_rule null_only[] = {{'c', true, true, 1, 3, PROTO_DEV_ACC_READ | PROTO_DEV_ACC_WRITE}};
	uint32_t first;

	gi_devfilter_preload();
	is_int(fresh_cgroup(root, 4), 0);
	is_int(gi_devfilter_attach(cg, &s), 0);
	is_int(probes_in_cgroup(), NULL_RW | ZERO_R | ZERO_W | FULL_R | MKNOD_C | MKNOD_B);
	first = attached_prog();
	ok(first != 0, "one program attached (id %u)", first);
	is_int(fresh_cgroup(root, 5), 0);
	is_int(gi_devfilter_attach(cg, &s), 0);
	is_int(probes_in_cgroup(), NULL_RW | ZERO_R | ZERO_W | FULL_R | MKNOD_C | MKNOD_B);
	ok(attached_prog() == first, "the same program again: loaded once (id %u)", attached_prog());
	s.device_rules = null_only;
	s.n_device_rules = 1;
	is_int(fresh_cgroup(root, 6), 0);
	is_int(gi_devfilter_attach(cg, &s), 0);
	is_int(probes_in_cgroup(), NULL_RW);
	ok(attached_prog() && attached_prog() != first, "another rule set: a program of its own");
}

static uint64_t file_value(const char *path, const char *key)
{
	char line[256];
	size_t klen = strlen(key);
	uint64_t v = UINT64_MAX;
	FILE *f = fopen(path, "re");

	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, key, klen) == 0 && line[klen] == ' ')
			v = strtoull(line + klen + 1, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

/* STATS: cpu.stat's three counters (read once), and MemTotal as
 * /proc/meminfo has it, in bytes. */
TEST(stats_read)
{
	const char *root = cgroup2_root();
	struct proto_stats st = {0};
	char path[300], procs[300], me[16];
	pid_t pid;
	int status;

	is_int(fresh_cgroup(root, 7), 0);
	pid = fork();
	if (pid == 0) {
		struct timespec t0, t;
		int fd;

		snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
		snprintf(me, sizeof(me), "%d", (int)getpid());
		fd = open(procs, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, me, strlen(me)) < 0)
			_exit(1);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do /* some CPU time for the counters */
			clock_gettime(CLOCK_MONOTONIC, &t);
		while ((t.tv_sec - t0.tv_sec) * 1000000000L + t.tv_nsec - t0.tv_nsec < 30000000L);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	gi_cgroup_stats(cg, &st);
	snprintf(path, sizeof(path), "%s/cpu.stat", cg);
	ok(st.cpu_usage_usec > 0 && st.cpu_usage_usec == file_value(path, "usage_usec"), "usage_usec %llu",
	   (unsigned long long)st.cpu_usage_usec);
	is_int(st.cpu_user_usec, file_value(path, "user_usec"));
	is_int(st.cpu_system_usec, file_value(path, "system_usec"));
	ok(st.memory_total > 0 && st.memory_total == file_value("/proc/meminfo", "MemTotal:") * 1024,
	   "MemTotal: %llu bytes", (unsigned long long)st.memory_total);
}

TEST(bad_rules_refused)
{
	struct proto_device_rule bad = {'a', false, false, 0, 0, PROTO_DEV_ACC_READ};
	struct proto_start s = {.device_filter = true, .device_rules = &bad, .n_device_rules = 1};
	struct bpf_insn *insn = NULL;
	size_t n;

	is_int(gi_devfilter_build(&s, &insn, &n), -EINVAL);
	bad.type = 'c';
	is_int(gi_devfilter_build(&s, &insn, &n), 0);
	/* The loads, then the rule (type, access, allow), then the default. */
	ok(n == 6 + 6 + 2, "one rule of any number and partial access: %zu instructions", n);
	free(insn);
}

/* A pod member's cgroup at its end: its processes (a child and the
 * child's own child) signalled, then killed with the cgroup removed. */
TEST(member_cgroup_removed)
{
	const char *root = cgroup2_root();
	char dir[300], procs[320], me[16], c;
	int p[2], st;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/kvrun-member-%d", root, (int)getpid());
	is_int(mkdir(dir, 0755), 0);
	is_int(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	if (pid == 0) {
		int fd;

		snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
		snprintf(me, sizeof(me), "%d", (int)getpid());
		fd = open(procs, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, me, strlen(me)) < 0)
			_exit(101);
		if (fork() == 0)
			for (;;)
				pause();
		(void)!write(p[1], "x", 1);
		for (;;)
			pause();
	}
	close(p[1]);
	is_int(read(p[0], &c, 1), 1);
	close(p[0]);
	is_int(gi_cgroup_signal(dir, 0), 2);
	is_int(gi_cgroup_remove(dir, 2000), 0);
	ok(access(dir, F_OK) < 0 && errno == ENOENT, "the cgroup is gone");
	waitpid(pid, &st, 0);
	ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "its process was killed (0x%x)", st);
	is_int(gi_cgroup_remove(dir, 0), 0);
	is_int(gi_cgroup_signal(dir, 0), -ENOENT);
}

/* Bytes the child wrote into the pipe since the last look (non-blocking). */
static int drain(int fd)
{
	char buf[4096];
	ssize_t n;
	int total = 0;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		total += (int)n;
	return total;
}

/* pause/resume of a pod member: its cgroup frozen (cgroup.events says so,
 * its process stops writing), thawed (it writes again), and a frozen
 * process still dies by SIGKILL, as runc's kill of a paused container. */
TEST(member_cgroup_frozen)
{
	const char *root = cgroup2_root();
	struct timespec tick = {0, 200 * 1000 * 1000};
	_cleanup_free_ char *ev = NULL;
	char dir[300], procs[320], path[320], me[16];
	int p[2], st;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/kvrun-freeze-%d", root, (int)getpid());
	snprintf(path, sizeof(path), "%s/cgroup.freeze", dir);
	is_int(mkdir(dir, 0755), 0);
	if (access(path, F_OK) < 0) {
		printf("# skipped: the host's cgroup2 has no cgroup.freeze (Linux 5.2)\n");
		is_int(gi_cgroup_freeze(dir, true, 100), -ENOTSUP);
		rmdir(dir);
		return;
	}
	is_int(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	pid = fork();
	if (pid == 0) {
		struct timespec ms = {0, 10 * 1000 * 1000};
		int fd;

		snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
		snprintf(me, sizeof(me), "%d", (int)getpid());
		fd = open(procs, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, me, strlen(me)) < 0)
			_exit(101);
		for (;;) {
			(void)!write(p[1], "x", 1);
			nanosleep(&ms, NULL);
		}
	}
	close(p[1]);
	nanosleep(&tick, NULL);
	ok(drain(p[0]) > 0, "the process runs");
	err_clear();
	is_int(gi_cgroup_freeze(dir, true, 5000), 0);
	snprintf(path, sizeof(path), "%s/cgroup.events", dir);
	is_int(read_file_all(path, 4096, &ev, NULL), 0);
	ok(ev && strstr(ev, "frozen 1"), "cgroup.events says frozen 1: %s", ev ? ev : "");
	drain(p[0]);
	nanosleep(&tick, NULL);
	is_int(drain(p[0]), 0);
	is_int(gi_cgroup_freeze(dir, false, 5000), 0);
	nanosleep(&tick, NULL);
	ok(drain(p[0]) > 0, "thawed, it writes again");
	is_int(gi_cgroup_freeze(dir, true, 5000), 0);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "frozen, it died by SIGKILL (0x%x)", st);
	close(p[0]);
	is_int(gi_cgroup_remove(dir, 2000), 0);
	is_int(gi_cgroup_freeze(NULL, true, 100), -ENOTSUP);
	is_str(err_msg(), "freeze: the container has no cgroup");
	is_int(gi_cgroup_freeze(dir, false, 100), -ENOENT);
}

struct tap_test tap_tests[TAP_MAX_TESTS];
int tap_nr_tests, tap_count, tap_failed;
const char *tap_current = "";

int main(void)
{
	const char *root = cgroup2_root();

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0)
		tap_skip_all("needs root for cgroups and BPF");
	if (!root)
		tap_skip_all("no cgroup2 hierarchy mounted at /sys/fs/cgroup or /sys/fs/cgroup/unified");
	if (!mkdtemp(nodes) || fresh_cgroup(root, 0) < 0)
		tap_skip_all("cannot make a cgroup under the cgroup2 hierarchy, or a temporary directory");
	for (int i = 0; i < tap_nr_tests; i++) {
		tap_current = tap_tests[i].name;
		tap_tests[i].fn();
	}
	rmdir(cg);
	rmdir(nodes);
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}
