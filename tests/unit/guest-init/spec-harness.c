/* SPDX-License-Identifier: Apache-2.0 */
/*
 * guest-init's spec application, run on the host in throwaway namespaces:
 * a busybox rootfs in a temp dir, a spec applied by the same functions PID 1
 * uses (gi_spawn/gi_go), and busybox printing what the process sees.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "guest-init/guest-init.h"
#include "spec-harness.h"
#include "tap.h"

char tmpdir[] = "/tmp/kvrun-gi-XXXXXX";
char rootfs[256], files_dir[256];
const char *run_cgroup_dir;
pid_t run_pod_pid;
bool run_share_pidns;
int (*run_child_setup)(void);

char **strv(const char *const *v)
{
	size_t n = 0;
	char **r;

	while (v[n])
		n++;
	r = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; i < n; i++)
		r[i] = strdup(v[i]);
	return r;
}

void write_text(const char *rel, const char *text)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", rootfs, rel);
	write_file_atomic(path, text, strlen(text), 0644);
}

int make_rootfs(void)
{
	static const char *const dirs[] = {"bin", "etc", "proc", "sys", "dev", "tmp", "work", "home/tester"};
	char path[1024];

	if (!mkdtemp(tmpdir))
		return -errno;
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", tmpdir);
	snprintf(files_dir, sizeof(files_dir), "%s/files", tmpdir);
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		snprintf(path, sizeof(path), "%s/%s", rootfs, dirs[i]);
		if (mkdir_p(path, 0755) < 0)
			return -errno;
	}
	snprintf(path, sizeof(path), "%s/tmp", rootfs);
	chmod(path, 01777);
	snprintf(path, sizeof(path), "cp /bin/busybox %s/bin/busybox && ln -s busybox %s/bin/sh", rootfs, rootfs);
	if (system(path) != 0)
		return -EIO;
	write_text("etc/passwd", "root:x:0:0:root:/root:/bin/sh\ntester:x:1000:1000:Tester:/home/tester:/bin/sh\n");
	write_text("etc/group", "root:x:0:\ntester:x:1000:\nextra:x:2000:someone,tester\nother:x:2001:root\n");
	return 0;
}

void base_spec(struct proto_start *s, const char *script)
{
	const char *args[] = {"/bin/busybox", "sh", "-c", script, NULL};
	const char *env[] = {"PATH=/bin", "FOO=bar", NULL};

	memset(s, 0, sizeof(*s));
	s->process.args = strv(args);
	s->process.env = strv(env);
	s->process.cwd = strdup("/work");
}

void add_mount(struct proto_start *s, const char *dst, const char *type, const char *src, const char *const *opts)
{
	struct proto_mount *m;

	s->mounts = realloc(s->mounts, (s->n_mounts + 1) * sizeof(*m));
	m = &s->mounts[s->n_mounts++];
	memset(m, 0, sizeof(*m));
	m->destination = strdup(dst);
	m->type = strdup(type);
	m->source = strdup(src);
	m->options = strv(opts);
}

/* The usual docker/podman mount list. */
void default_mounts(struct proto_start *s)
{
	add_mount(s, "/proc", "proc", "proc", (const char *const[]){"nosuid", "noexec", "nodev", NULL});
	add_mount(s, "/dev", "tmpfs", "tmpfs", (const char *const[]){"nosuid", "strictatime", "mode=755", NULL});
	add_mount(s, "/dev/pts", "devpts", "devpts",
	          (const char *const[]){"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", NULL});
	add_mount(s, "/dev/shm", "tmpfs", "shm",
	          (const char *const[]){"nosuid", "noexec", "nodev", "mode=1777", "size=65536k", NULL});
	add_mount(s, "/dev/mqueue", "mqueue", "mqueue", (const char *const[]){"nosuid", "noexec", "nodev", NULL});
	add_mount(s, "/sys", "sysfs", "sysfs", (const char *const[]){"nosuid", "noexec", "nodev", "ro", NULL});
	add_mount(s, "/sys/fs/cgroup", "cgroup", "cgroup",
	          (const char *const[]){"nosuid", "noexec", "nodev", "relatime", "ro", NULL});
}

/* Run the spec in a forked child (its own mount namespace); when
 * kill_on is set, SIGKILL the process once its output contains it. */
void run(struct proto_start *s, const char *kill_on, struct result *res)
{
	struct result *shared = mmap(NULL, sizeof(*res), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t tc;
	int st;

	memset(shared, 0, sizeof(*shared));
	tc = fork();
	if (tc == 0) {
		struct gi_spawn sp = {.start = s,
		                      .container = s,
		                      .process = &s->process,
		                      .seccomp = s->seccomp,
		                      .rootfs = rootfs,
		                      .files_dir = files_dir,
		                      .cgroup_dir = run_cgroup_dir,
		                      .cgroup_required = run_cgroup_dir != NULL,
		                      .pod_pid = run_pod_pid,
		                      .new_pidns = !run_share_pidns};
		struct gi_child c;
		int pfd[2], status = 0;
		size_t len = 0;
		ssize_t n;

		if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			_exit(3);
		if (run_child_setup && run_child_setup() < 0)
			_exit(4);
		if (pipe2(pfd, O_CLOEXEC) < 0)
			_exit(3);
		sp.stdio[0] = -1;
		sp.stdio[1] = sp.stdio[2] = pfd[1];
		shared->spawn_err = gi_spawn(&sp, &c);
		close(pfd[1]);
		if (shared->spawn_err == 0) {
			shared->go_err = gi_go(&c);
		}
		if (shared->spawn_err || shared->go_err)
			snprintf(shared->msg, sizeof(shared->msg), "%s", err_msg());
		while (len < sizeof(shared->out) - 1 &&
		       (n = read(pfd[0], shared->out + len, sizeof(shared->out) - 1 - len)) > 0) {
			len += (size_t)n;
			if (kill_on && c.pid > 0 && strstr(shared->out, kill_on))
				kill(c.pid, SIGKILL);
		}
		if (c.pid > 0)
			waitpid(c.pid, &status, 0);
		shared->status = status;
		_exit(0);
	}
	waitpid(tc, &st, 0);
	*res = *shared;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		res->spawn_err = -ECHILD;
	munmap(shared, sizeof(*shared));
}

bool has_line(const char *out, const char *line)
{
	size_t len = strlen(line);

	for (const char *p = out; (p = strstr(p, line)); p++)
		if ((p == out || p[-1] == '\n') && (p[len] == '\n' || p[len] == '\0'))
			return true;
	return false;
}

int can_unshare(void)
{
	pid_t pid = fork();
	int st;

	if (pid == 0)
		_exit(unshare(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWPID) == 0 ? 0 : 1);
	waitpid(pid, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

struct tap_test tap_tests[TAP_MAX_TESTS];
int tap_nr_tests, tap_count, tap_failed;
const char *tap_current = "";

int harness_main(void)
{
	char cmd[300];

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0)
		tap_skip_all("needs root for namespaces and mounts");
	if (access("/bin/busybox", X_OK) != 0)
		tap_skip_all("needs /bin/busybox (busybox-static)");
	if (!can_unshare())
		tap_skip_all("unshare of mount/uts/ipc/pid namespaces not permitted");
	if (make_rootfs() < 0)
		tap_skip_all("cannot build the busybox rootfs");
	for (int i = 0; i < tap_nr_tests; i++) {
		tap_current = tap_tests[i].name;
		tap_tests[i].fn();
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", tmpdir);
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}
