/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The "linux" parts of START that guest-init applies, on the host in
 * throwaway namespaces (spec-harness.c): linux.devices, the device filter
 * with the cgroup entered before the first step, a user namespace with
 * a mapped root filesystem, a cgroup namespace, personality, scheduler
 * and I/O priority; a pod member's namespaces.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "guest-init/guest-init.h"
#include "spec-harness.h"
#include "tap.h"

static void add_device(struct proto_start *s, const char *path, char type, unsigned major, unsigned minor,
                       unsigned mode, unsigned uid, unsigned gid)
{
	s->devices = realloc(s->devices, (s->n_devices + 1) * sizeof(*s->devices));
	s->devices[s->n_devices++] = (struct proto_device){strdup(path), (uint32_t)type, major, minor, mode, uid, gid};
}

static void show(const struct result *res)
{
	if (res->msg[0])
		printf("# %s\n", res->msg);
}

TEST(devices)
{
	struct proto_start s;
	struct result res;

	base_spec(&s, "stat -c '%A %u %g %t:%T %n' /dev/mynull /dev/sub/zero /dev/fifo\n"
	              "echo x > /dev/mynull && echo mynull=w\n"
	              "echo null=$(ls -l /dev/null | cut -c1-10)\n");
	default_mounts(&s);
	add_device(&s, "/dev/mynull", 'c', 1, 3, 0600, 1000, 1001);
	add_device(&s, "/dev/sub/zero", 'c', 1, 5, 0640, 0, 0);
	add_device(&s, "/dev/fifo", 'p', 0, 0, 0600, 0, 0);
	run(&s, NULL, &res);
	is_int(res.spawn_err, 0);
	show(&res);
	has(&res, "crw------- 1000 1001 1:3 /dev/mynull");
	has(&res, "crw-r----- 0 0 1:5 /dev/sub/zero");
	has(&res, "prw------- 0 0 0:0 /dev/fifo");
	has(&res, "mynull=w");
	has(&res, "null=crw-rw-rw-");
	proto_start_free(&s);

	/* A spec device of a default's path replaces it. */
	base_spec(&s, "echo null=$(ls -ln /dev/null | awk '{print $1, $3}')\n");
	default_mounts(&s);
	add_device(&s, "/dev/null", 'c', 1, 3, 0600, 7, 7);
	run(&s, NULL, &res);
	has(&res, "null=crw------- 7");
	proto_start_free(&s);

	/* No such device in the (here: host's) kernel: refused by name. */
	base_spec(&s, "exit 0");
	default_mounts(&s);
	add_device(&s, "/dev/fuse", 'c', 10, 229, 0666, 0, 0);
	add_device(&s, "/dev/nope", 'c', 4095, 4095, 0666, 0, 0);
	run(&s, NULL, &res);
	ok(res.spawn_err == -ENODEV, "spawn fails (%d)", res.spawn_err);
	is_str(res.msg, "linux.devices[1] (/dev/nope, c 4095:4095): the VM's kernel has no such device");
	proto_start_free(&s);
}

static char cg[256];

static int make_cgroup(void)
{
	static const char *const roots[] = {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"};
	struct statfs sf;

	for (size_t i = 0; i < ARRAY_SIZE(roots); i++)
		if (statfs(roots[i], &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC) {
			snprintf(cg, sizeof(cg), "%s/kvrun-gi-linux-%d", roots[i], (int)getpid());
			return mkdir(cg, 0755) < 0 ? -errno : 0;
		}
	return -ENOENT;
}

/* runc's defaults with a deny-all first (what `runc spec` and podman
 * give): device-rules.c's result for them. */
static void runc_default_filter(struct proto_start *s)
{
	static const struct proto_device_rule rules[] = {
	    {'c', false, false, 0, 0, PROTO_DEV_ACC_MKNOD},
	    {'b', false, false, 0, 0, PROTO_DEV_ACC_MKNOD},
	    {'c', true, true, 1, 3, 7},
	    {'c', true, true, 1, 5, 7},
	    {'c', true, true, 1, 7, 7},
	    {'c', true, true, 1, 8, 7},
	    {'c', true, true, 1, 9, 7},
	    {'c', true, true, 5, 0, 7},
	    {'c', true, true, 5, 2, 7},
	    {'c', true, true, 10, 200, 7},
	    {'c', true, false, 136, 0, 7},
	};

	s->device_filter = true;
	s->n_device_rules = ARRAY_SIZE(rules);
	s->device_rules = malloc(sizeof(rules));
	memcpy(s->device_rules, rules, sizeof(rules));
}

TEST(device_filter_from_the_start)
{
	struct proto_start s;
	struct result res;

	if (make_cgroup() < 0) {
		ok(1, "# SKIP no cgroup2 hierarchy to make a cgroup in");
		return;
	}
	base_spec(&s, "echo x > /dev/null && echo null=ok\n"
	              "head -c1 /dev/zero > /dev/null && echo zero=ok\n"
	              "head -c1 /dev/kmsg 2>&1 | grep -q 'not permitted' && echo kmsg=EPERM\n"
	              "mknod /tmp/kmsg c 1 11 && echo mknod=ok\n"
	              "head -c1 /tmp/kmsg 2>&1 | grep -q 'not permitted' && echo mknoded=EPERM\n");
	default_mounts(&s);
	add_mount(&s, "/tmp", "tmpfs", "tmpfs", (const char *const[]){NULL});
	add_device(&s, "/dev/kmsg", 'c', 1, 11, 0600, 0, 0);
	runc_default_filter(&s);
	is_int(gi_devfilter_attach(cg, &s), 0);
	run_cgroup_dir = cg;
	run(&s, NULL, &res);
	run_cgroup_dir = NULL;
	is_int(res.spawn_err, 0);
	show(&res);
	has(&res, "null=ok");
	has(&res, "zero=ok");
	has(&res, "kmsg=EPERM");
	has(&res, "mknod=ok");
	has(&res, "mknoded=EPERM");
	proto_start_free(&s);
}

static void add_map(struct proto_id_map **m, size_t *n, uint32_t c, uint32_t h, uint32_t size)
{
	*m = realloc(*m, (*n + 1) * sizeof(**m));
	(*m)[(*n)++] = (struct proto_id_map){c, h, size};
}

static int chown_rootfs(unsigned id)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "chown -hR %u:%u %s", id, id, rootfs);
	return system(cmd);
}

/* Whether this process may raise a hard limit (CAP_SYS_RESOURCE, which
 * some hosts' root lacks): then the limits below need PID 1's help. */
static bool can_raise(void)
{
	pid_t pid = fork();
	struct rlimit rl;
	int st;

	if (pid == 0) {
		getrlimit(RLIMIT_MEMLOCK, &rl);
		rl.rlim_max += 1024;
		_exit(rl.rlim_max != RLIM_INFINITY + 1024 && setrlimit(RLIMIT_MEMLOCK, &rl) == 0 ? 0 : 1);
	}
	waitpid(pid, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

TEST(user_namespace)
{
	bool raise = can_raise();
	struct proto_start s;
	struct result res;
	struct rlimit rl;

	getrlimit(RLIMIT_MEMLOCK, &rl);
	rl.rlim_max = raise ? rl.rlim_max + 1024 : rl.rlim_max - 1024;
	if (!raise)
		printf("# no CAP_SYS_RESOURCE here: limits lowered, not raised\n");
	base_spec(&s, "echo map=$(cat /proc/self/uid_map)\n"
	              "echo gmap=$(cat /proc/self/gid_map)\n"
	              "echo id=$(id -u):$(id -g)\n"
	              "echo owner=$(stat -c %u:%g /bin/busybox)\n"
	              "echo pid=$$ host=$(hostname)\n"
	              "echo x > /dev/null && echo null=ok\n"
	              "echo resolv=$(cat /etc/resolv.conf)\n"
	              "echo memlock=$(ulimit -Hl)\n"
	              "echo oom=$(cat /proc/self/oom_score_adj)\n"
	              "echo sys=$(ls /sys/class | wc -l)\n"
	              "touch /tmp/x && echo tmp=ok\n");
	default_mounts(&s);
	add_mount(&s, "/tmp", "tmpfs", "tmpfs", (const char *const[]){NULL});
	add_mount(&s, "/etc/resolv.conf", "bind", "/host/resolv.conf", (const char *const[]){"rbind", "ro", NULL});
	s.mounts[s.n_mounts - 1].has_data = true;
	s.mounts[s.n_mounts - 1].data = (uint8_t *)strdup("nameserver 192.0.2.1\n");
	s.mounts[s.n_mounts - 1].data_len = 21;
	s.hostname = strdup("userns");
	s.user_ns = true;
	add_map(&s.uid_mappings, &s.n_uid_mappings, 0, 100000, 65536);
	add_map(&s.gid_mappings, &s.n_gid_mappings, 0, 100000, 65536);
	/* Above the hard limit and below 0: only PID 1 may, from outside. */
	s.process.n_rlimits = 1;
	s.process.rlimits = calloc(1, sizeof(*s.process.rlimits));
	s.process.rlimits[0] = (struct proto_rlimit){strdup("RLIMIT_MEMLOCK"), rl.rlim_max, rl.rlim_max};
	s.process.has_oom_score_adj = true;
	s.process.oom_score_adj = raise ? -300 : 300;
	is_int(chown_rootfs(100000), 0);
	chmod(tmpdir, 0755); /* as the VM's /run/kvrun: the namespace's root passes */
	run(&s, NULL, &res);
	chown_rootfs(0);
	is_int(res.spawn_err, 0);
	is_int(res.go_err, 0);
	show(&res);
	has(&res, "map= 0 100000 65536");
	has(&res, "gmap= 0 100000 65536");
	has(&res, "id=0:0");
	has(&res, "owner=0:0");
	has(&res, "pid=1 host=userns");
	has(&res, "null=ok");
	has(&res, "resolv=nameserver 192.0.2.1");
	{
		char want[64];

		snprintf(want, sizeof(want), "memlock=%llu", (unsigned long long)rl.rlim_max / 1024);
		has(&res, want);
	}
	has(&res, raise ? "oom=-300" : "oom=300");
	ok(!has_line(res.out, "sys=0"), "/sys shows the (VM's) sysfs");
	has(&res, "tmp=ok");
	proto_start_free(&s);

	/* Root of the namespace must be mapped. */
	base_spec(&s, "exit 0");
	s.user_ns = true;
	add_map(&s.uid_mappings, &s.n_uid_mappings, 1, 100000, 10);
	add_map(&s.gid_mappings, &s.n_gid_mappings, 1, 100000, 10);
	run(&s, NULL, &res);
	ok(res.spawn_err < 0 && strstr(res.msg, "is container gid 0 mapped?"), "unmapped root refused: %s", res.msg);
	proto_start_free(&s);
}

/* Read what fd gives until EOF into out (NUL-terminated). */
static void read_all(int fd, char *out, size_t size)
{
	size_t len = 0;
	ssize_t n;

	while (len < size - 1 && (n = read(fd, out + len, size - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = 0;
}

/* An exec'd process joins the container's user namespace first (it owns
 * the others) and gets the process's limits from PID 1. */
static void exec_in_userns(struct proto_start *s, struct result *shared)
{
	const char *args[] = {"/bin/busybox", "sh", "-c",
	                      "echo map=$(cat /proc/self/uid_map); echo id=$(id -u); "
	                      "echo host=$(hostname); echo oom=$(cat /proc/self/oom_score_adj)",
	                      NULL};
	struct proto_process ep = {.args = strv(args),
	                           .env = strv((const char *const[]){"PATH=/bin", NULL}),
	                           .cwd = strdup("/"),
	                           .has_oom_score_adj = true,
	                           .oom_score_adj = 200};
	struct gi_spawn sp = {.start = s,
	                      .container = s,
	                      .process = &s->process,
	                      .rootfs = rootfs,
	                      .files_dir = files_dir,
	                      .new_pidns = true,
	                      .stdio = {-1, -1, -1}};
	struct gi_child init, ex;
	int pfd[2];

	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 || pipe2(pfd, O_CLOEXEC))
		_exit(3);
	shared->spawn_err = gi_spawn(&sp, &init);
	if (shared->spawn_err == 0)
		shared->spawn_err = gi_go(&init);
	if (shared->spawn_err < 0) {
		snprintf(shared->msg, sizeof(shared->msg), "%s", err_msg());
		_exit(0);
	}
	sp = (struct gi_spawn){.container = s, .process = &ep, .join_pid = init.pid, .stdio = {-1, pfd[1], pfd[1]}};
	shared->go_err = gi_spawn(&sp, &ex);
	close(pfd[1]);
	if (shared->go_err == 0)
		shared->go_err = gi_go(&ex);
	if (shared->go_err < 0)
		snprintf(shared->msg, sizeof(shared->msg), "%s", err_msg());
	read_all(pfd[0], shared->out, sizeof(shared->out));
	if (ex.pid > 0)
		waitpid(ex.pid, &shared->status, 0);
	kill(init.pid, SIGKILL);
	waitpid(init.pid, NULL, 0);
	_exit(0);
}

TEST(exec_joins_user_namespace)
{
	struct result *shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct proto_start s;
	pid_t pid;

	memset(shared, 0, sizeof(*shared));
	base_spec(&s, "while :; do sleep 1; done");
	default_mounts(&s);
	s.hostname = strdup("joined");
	s.user_ns = true;
	add_map(&s.uid_mappings, &s.n_uid_mappings, 0, 100000, 65536);
	add_map(&s.gid_mappings, &s.n_gid_mappings, 0, 100000, 65536);
	chown_rootfs(100000);
	pid = fork();
	if (pid == 0)
		exec_in_userns(&s, shared);
	waitpid(pid, NULL, 0);
	chown_rootfs(0);
	is_int(shared->spawn_err, 0);
	is_int(shared->go_err, 0);
	show(shared);
	has(shared, "map= 0 100000 65536");
	has(shared, "id=0");
	has(shared, "host=joined");
	has(shared, "oom=200");
	ok(WIFEXITED(shared->status) && WEXITSTATUS(shared->status) == 0, "exit 0 (0x%x)", shared->status);
	munmap(shared, sizeof(*shared));
	proto_start_free(&s);
}

TEST(cgroup_namespace)
{
	struct proto_start s;
	struct result res;

	if (!cg[0]) {
		ok(1, "# SKIP no cgroup2 hierarchy to make a cgroup in");
		return;
	}
	base_spec(&s, "grep '^0::' /proc/self/cgroup\n");
	default_mounts(&s);
	run_cgroup_dir = cg;
	run(&s, NULL, &res);
	ok(strstr(res.out, "0::/kvrun-gi-linux-") != NULL, "without: the cgroup's path: %s", res.out);
	s.cgroup_ns = true;
	run(&s, NULL, &res);
	run_cgroup_dir = NULL;
	has(&res, "0::/");
	proto_start_free(&s);
}

TEST(personality_scheduler_ioprio)
{
	struct proto_start s;
	struct result res;

	base_spec(&s, "echo arch=$(uname -m)\n"
	              "echo sched=$(cut -d' ' -f19,41 /proc/$$/stat)\n"
	              "echo io=$(ionice -p $$)\n");
	s.has_personality = true;
	s.personality = PER_LINUX32;
	s.process.sched = calloc(1, sizeof(*s.process.sched));
	s.process.sched->policy = 3; /* SCHED_BATCH */
	s.process.sched->nice = 5;
	s.process.has_ioprio = true;
	s.process.ioprio = 3 << 13; /* IOPRIO_CLASS_IDLE */
	default_mounts(&s);
	run(&s, NULL, &res);
	is_int(res.spawn_err, 0);
	show(&res);
	has(&res, "arch=i686");
	has(&res, "sched=5 3");
	has(&res, "io=idle");
	proto_start_free(&s);
}

/* The pod's first container as a member's spawn sees it: a process in
 * UTS, IPC and pid namespaces of its own, hostname "podhost". Returns its
 * pid; *holder is its parent, which ends when it is killed. */
static pid_t pod_first(pid_t *holder)
{
	pid_t first = 0;
	int p[2];

	if (pipe2(p, O_CLOEXEC) < 0)
		return 0;
	*holder = fork();
	if (*holder == 0) {
		pid_t c;

		if (unshare(CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWPID) < 0 || sethostname("podhost", 7) < 0)
			_exit(1);
		c = fork();
		if (c == 0)
			for (;;)
				pause();
		(void)!write(p[1], &c, sizeof(c));
		waitpid(c, NULL, 0);
		_exit(0);
	}
	close(p[1]);
	if (read(p[0], &first, sizeof(first)) != sizeof(first))
		first = 0;
	close(p[0]);
	return first;
}

static void ns_line(char *buf, size_t size, const char *key, pid_t pid, const char *ns)
{
	char path[64], link[64] = "";

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, ns);
	if (readlink(path, link, sizeof(link) - 1) < 0)
		link[0] = 0;
	snprintf(buf, size, "%s=%s", key, link);
}

/* A pod member joins the first container's IPC and UTS namespaces (its
 * hostname), with a pid namespace of its own or, shared, the first's. */
TEST(pod_member_namespaces)
{
	static const char script[] = "echo uts=$(readlink /proc/self/ns/uts)\n"
				     "echo ipc=$(readlink /proc/self/ns/ipc)\n"
				     "echo pid=$(readlink /proc/self/ns/pid)\n"
				     "echo host=$(hostname)\n"
				     "[ $$ = 1 ] && echo init=1 || echo init=other\n";
	char want[128];
	struct proto_start s;
	struct result res;
	pid_t holder = 0, first = pod_first(&holder);

	ok(first > 0, "the first container runs");
	for (int shared = 0; shared < 2; shared++) {
		base_spec(&s, script);
		default_mounts(&s);
		run_pod_pid = first;
		run_share_pidns = shared;
		run(&s, NULL, &res);
		run_pod_pid = 0;
		run_share_pidns = false;
		show(&res);
		is_int(res.spawn_err, 0);
		ns_line(want, sizeof(want), "uts", first, "uts");
		has(&res, want);
		ns_line(want, sizeof(want), "ipc", first, "ipc");
		has(&res, want);
		has(&res, "host=podhost");
		ns_line(want, sizeof(want), "pid", first, "pid");
		ok(has_line(res.out, want) == (shared == 1), "%s pid namespace", shared ? "the first's" : "its own");
		has(&res, shared ? "init=other" : "init=1");
		proto_start_free(&s);
	}
	kill(first, SIGKILL);
	waitpid(holder, NULL, 0);
}

int main(void)
{
	int r = harness_main();

	if (cg[0])
		rmdir(cg);
	return r;
}
