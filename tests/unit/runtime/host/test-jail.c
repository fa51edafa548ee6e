/* SPDX-License-Identifier: Apache-2.0 */
/* The jail (runtime/host/jail.c): its uids, its filters, and, as root, the
 * whole of it in a forked child: what the parent sees of the child in
 * /proc, what the child still can do, and that what it must not do fails
 * (EACCES, ENOENT) or kills it (SIGSYS). */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <termios.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "runtime/host/jail-int.h"
#include "vmm/snapshot.h"
#include "vmm/vm.h"
#include "tap.h"

#define BASE 0x71000000ul

TEST(uid_base)
{
	unsigned long b = 0;
	uid_t u;
	gid_t g;

	unsetenv("KVRUN_JAIL_UID_BASE");
	is_int(jail_uid_base(&b), 0);
	ok(b == JAIL_UID_BASE_DEFAULT, "default base 0x%lx", b);
	setenv("KVRUN_JAIL_UID_BASE", "0x60000000", 1);
	is_int(jail_uid_base(&b), 0);
	ok(b == 0x60000000, "base from the environment");
	setenv("KVRUN_JAIL_UID_BASE", "12ab", 1);
	is_int(jail_uid_base(&b), -EINVAL);
	ok(strstr(err_msg(), "'12ab' is not a number") != NULL, "message: %s", err_msg());
	setenv("KVRUN_JAIL_UID_BASE", "1000", 1);
	is_int(jail_uid_base(&b), -EINVAL);
	setenv("KVRUN_JAIL_UID_BASE", "0x7fe00000", 1);
	is_int(jail_uid_base(&b), -EINVAL);
	ok(strstr(err_msg(), "leaves no room") != NULL, "message: %s", err_msg());
	unsetenv("KVRUN_JAIL_UID_BASE");
	is_int(jail_uid_base_check(0x7fffffff - JAIL_UID_RANGE + 1, "x"), 0);
	is_int(jail_uid_base_check(0x7fffffff - JAIL_UID_RANGE + 2, "x"), -EINVAL);
	jail_ids_for(BASE, 4242, &u, &g);
	ok(u == BASE + 4242 && g == u, "uid and gid are base + pid (%u)", (unsigned)u);
}

TEST(config_binds)
{
	struct jail_config c = {0};
	int r = 0;

	is_int(jail_config_bind(&c, NULL, false), 0);
	ok(c.nbinds == 0, "NULL binds nothing");
	for (int i = 0; i < JAIL_MAX_BINDS && r == 0; i++)
		r = jail_config_bind(&c, "/x", false);
	is_int(r, 0);
	is_int(jail_config_bind(&c, "/y", true), -ENOSPC);
}

TEST(switch)
{
	unsetenv("KVRUN_JAIL");
	ok(jail_enabled() && !jail_log_only(), "on by default");
	setenv("KVRUN_JAIL", "0", 1);
	ok(!jail_enabled(), "KVRUN_JAIL=0 turns it off");
	setenv("KVRUN_JAIL", "off", 1);
	ok(!jail_enabled(), "KVRUN_JAIL=off turns it off");
	setenv("KVRUN_JAIL", "log", 1);
	ok(jail_enabled() && jail_log_only(), "KVRUN_JAIL=log keeps it, logging");
	unsetenv("KVRUN_JAIL");
}

/* Each filter compiles; the vCPU filter is the smallest. */
TEST(filters_compile)
{
	struct jail j = {.profile = JAIL_MONITOR, .uid = BASE + 1, .gid = BASE + 1, .pid = getpid()};
	struct jail p = {.profile = JAIL_PROXY, .uid = BASE + 1, .gid = BASE + 1, .pid = getpid()};
	struct jail fs = {
	    .profile = JAIL_MONITOR, .uid = BASE + 1, .gid = BASE + 1, .pid = getpid(), .file_server = true};

	for (int f = 0; f < JAIL_NR_FILTERS; f++)
		is_int(jail_filter_compile(&j, (enum jail_filter)f), 0);
	is_int(jail_filter_compile(&p, JAIL_FILTER_BUILD), 0);
	is_int(jail_filter_compile(&p, JAIL_FILTER_SERVE), 0);
	ok(j.filters[JAIL_FILTER_VCPU].len > 0 && j.filters[JAIL_FILTER_VCPU].len < j.filters[JAIL_FILTER_SERVE].len &&
	       j.filters[JAIL_FILTER_SERVE].len < j.filters[JAIL_FILTER_BUILD].len,
	   "vCPU < serve < build (%u, %u, %u instructions)", j.filters[JAIL_FILTER_VCPU].len,
	   j.filters[JAIL_FILTER_SERVE].len, j.filters[JAIL_FILTER_BUILD].len);
	ok(p.filters[JAIL_FILTER_SERVE].len < j.filters[JAIL_FILTER_SERVE].len, "the proxy's is smaller");
	is_int(jail_filter_compile(&fs, JAIL_FILTER_BUILD), 0);
	is_int(jail_filter_compile(&fs, JAIL_FILTER_SERVE), 0);
	ok(fs.filters[JAIL_FILTER_SERVE].len > j.filters[JAIL_FILTER_SERVE].len &&
	       fs.filters[JAIL_FILTER_BUILD].len > j.filters[JAIL_FILTER_BUILD].len,
	   "a file server's are larger (%u, %u instructions)", fs.filters[JAIL_FILTER_SERVE].len,
	   fs.filters[JAIL_FILTER_BUILD].len);
	for (int f = 0; f < JAIL_NR_FILTERS; f++) {
		free(j.filters[f].filter);
		free(p.filters[f].filter);
		free(fs.filters[f].filter);
	}
}

/* ---- a jailed child ------------------------------------------------------ */

static char state_dir[] = "/tmp/kvrun-jail-test-XXXXXX";
static char bound[] = "/tmp/kvrun-jail-bound-XXXXXX";

/* What a child does once jailed; 0 when it got to its end. */
typedef int (*jailed_fn)(FILE *out, struct jail *j);

static int nothing_more(FILE *out, struct jail *j);

/* What it does between jail_begin() and jail_finish() (a monitor builds its
 * VM there), or NULL. */
static int (*build_fn)(FILE *out);
static bool with_devices;
/* A file of the state directory that stays writable once it is sealed. */
static const char *state_file;
/* A jail with a file server: a root-only directory it serves, opened (as
 * a monitor opens its shares) before the jail. */
static bool file_server;
static char shared[] = "/tmp/kvrun-jail-shared-XXXXXX";
static int shared_fd = -1;
/* The child's jail, once begun. */
static struct jail *child_jail;

struct child {
	pid_t pid;
	int status;
	char out[4096];
	char proc_status[4096]; /* /proc/<pid>/status once jailed */
	char task_caps[2048]; /* each thread's "Name CapEff CapPrm" then, one per line */
	bool root_is_host; /* /proc/<pid>/root is the host's / */
};

static int jail_child(struct jail **ret, enum jail_profile p, pid_t pid)
{
	struct jail_config c = {.profile = p,
	                        .state_dir = state_dir,
	                        .state_files = {state_file},
	                        .devices = with_devices,
	                        .net = JAIL_NET_NEW,
	                        .file_server = file_server};
	int r;

	if (file_server && (shared_fd = open(shared, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	jail_ids_for(BASE, pid, &c.uid, &c.gid);
	r = jail_config_bind(&c, bound, false);
	if (r >= 0)
		r = jail_mount(&c, ret);
	if (r >= 0)
		r = jail_begin(*ret);
	if (r >= 0)
		child_jail = *ret;
	return r;
}

/* The parent, which the jailed child must not reach. */
static pid_t victim;

static void child_main(jailed_fn fn, enum jail_profile p, int out_fd, int go_fd)
{
	FILE *out = fdopen(out_fd, "w");
	struct jail *j = NULL;
	char c;
	int r;

	victim = getppid();
	setvbuf(out, NULL, _IONBF, 0);
	r = jail_child(&j, p, getpid());
	if (r >= 0 && build_fn)
		r = build_fn(out);
	if (r >= 0)
		r = jail_finish(j);
	fprintf(out, "jail=%d %s\n", r, r < 0 ? err_msg() : "");
	if (r < 0)
		_exit(1);
	/* The parent looks at us in /proc now. */
	if (read(go_fd, &c, 1) != 1)
		_exit(2);
	_exit(fn(out, j) == 0 ? 0 : 3);
}

static bool same_root(pid_t pid)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%d/root/", (int)pid);
	return stat(path, &a) == 0 && stat("/", &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static const char *status_field(const char *s, const char *key)
{
	char pat[32];
	const char *p;

	snprintf(pat, sizeof(pat), "\n%s:\t", key);
	p = strstr(s, pat);
	return p ? p + strlen(pat) : "?\n";
}

/* Each thread's name, effective and permitted capabilities (the main
 * thread's status shows only its own). */
static void task_caps(struct child *ch)
{
	char path[300];
	struct dirent *de;
	DIR *d;
	size_t len = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)ch->pid);
	d = opendir(path);
	while (d && (de = readdir(d)) && len < sizeof(ch->task_caps) - 64) {
		_cleanup_free_ char *s = NULL, *st = NULL;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/status", (int)ch->pid, de->d_name);
		if (read_file_all(path, 1 << 16, &s, NULL) < 0 || asprintf(&st, "\n%s", s) < 0)
			continue;
		len += (size_t)snprintf(ch->task_caps + len, sizeof(ch->task_caps) - len, "%.*s %.16s %.16s\n",
		                        (int)strcspn(status_field(st, "Name"), "\n"), status_field(st, "Name"),
		                        status_field(st, "CapEff"), status_field(st, "CapPrm"));
	}
	if (d)
		closedir(d);
}

static void run_child(struct child *ch, jailed_fn fn, enum jail_profile p)
{
	int out[2], go[2];
	size_t len = 0;
	ssize_t n;

	*ch = (struct child){.status = -1};
	/* A child killed before it reads "go". */
	signal(SIGPIPE, SIG_IGN);
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0)
		return;
	fflush(NULL);
	ch->pid = fork();
	if (ch->pid == 0) {
		close(out[0]);
		close(go[1]);
		child_main(fn, p, out[1], go[0]);
	}
	close(out[1]);
	close(go[0]);
	/* The "jail=" line says the jail is complete. */
	while (len < sizeof(ch->out) - 1 && !(strstr(ch->out, "jail=") && strchr(strstr(ch->out, "jail="), '\n')) &&
	       (n = read(out[0], ch->out + len, sizeof(ch->out) - 1 - len)) > 0)
		ch->out[len += (size_t)n] = 0;
	{
		char path[64];
		_cleanup_free_ char *s = NULL;

		snprintf(path, sizeof(path), "/proc/%d/status", (int)ch->pid);
		if (read_file_all(path, sizeof(ch->proc_status) - 1, &s, NULL) == 0)
			snprintf(ch->proc_status, sizeof(ch->proc_status), "%s", s);
		ch->root_is_host = same_root(ch->pid);
		task_caps(ch);
		/* A socket the jail must reach, handed to its uid as the monitor
		 * hands its own (when there is one). */
		snprintf(path, sizeof(path), "%s/own.sock", state_dir);
		(void)chown(path, (uid_t)(BASE + (unsigned long)ch->pid), (gid_t)(BASE + (unsigned long)ch->pid));
	}
	(void)write(go[1], "g", 1);
	close(go[1]);
	while (len < sizeof(ch->out) - 1 && (n = read(out[0], ch->out + len, sizeof(ch->out) - 1 - len)) > 0)
		ch->out[len += (size_t)n] = 0;
	close(out[0]);
	waitpid(ch->pid, &ch->status, 0);
}

static const char *value(const char *out, const char *key)
{
	static char v[256];
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "%s=", key);
	for (p = out; (p = strstr(p, pat)); p++)
		if (p == out || p[-1] == '\n') {
			p += strlen(pat);
			snprintf(v, sizeof(v), "%.*s", (int)strcspn(p, "\n"), p);
			return v;
		}
	return "(missing)";
}

static bool killed_by_sigsys(const struct child *ch)
{
	return WIFSIGNALED(ch->status) && WTERMSIG(ch->status) == SIGSYS;
}

static void remove_dirs(void)
{
	rm_rf(state_dir);
	unlink(bound);
}

/* The state directory and the file to bind, made once (and removed at
 * the end). */
static bool can_jail(void)
{
	static int made;
	int fd;

	if (geteuid() != 0) {
		ok(1, "# SKIP the jail needs root");
		return false;
	}
	if (!made) {
		fd = mkdtemp(state_dir) ? mkstemp(bound) : -1;
		if (fd < 0) {
			ok(0, "temporary files: %s", strerror(errno));
			return false;
		}
		close(fd);
		/* As a state directory is: searchable by the jail's uid. */
		chmod(state_dir, 0711);
		atexit(remove_dirs);
		made = 1;
	}
	return true;
}

static void *nothing(void *arg)
{
	return arg;
}

static int err_of(int r)
{
	return r < 0 ? -errno : r;
}

/* What a jailed monitor still can and cannot do without dying. */
static int sees(FILE *out, struct jail *j)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX, .sun_path = JAIL_STATE_DIR "/root.sock"};
	struct rlimit rl;
	struct stat st;
	pthread_t t;
	void *res = NULL;
	int fd;

	fprintf(out, "uid=%d\n", (int)getuid() == (int)jail_uid(j));
	fprintf(out, "state=%d\n", err_of(stat(JAIL_STATE_DIR "/file", &st)));
	fprintf(out, "host_state=%d\n", err_of(stat(state_dir, &st)));
	fprintf(out, "bound=%d\n", err_of(stat(bound, &st)));
	fprintf(out, "proc=%d\n", err_of(stat("/proc/self", &st)));
	fprintf(out, "shadow=%d\n", err_of(stat("/etc/shadow", &st)));
	fprintf(out, "open_bound=%d\n", err_of(open(bound, O_RDONLY | O_CLOEXEC)));
	fprintf(out, "create=%d\n", err_of(open(JAIL_STATE_DIR "/new", O_WRONLY | O_CREAT | O_CLOEXEC, 0600)));
	fprintf(out, "unlink=%d\n", err_of(unlink(JAIL_STATE_DIR "/file")));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	fprintf(out, "unix=%d\n", fd >= 0 ? 0 : -errno);
	fprintf(out, "connect_root=%d\n", err_of(connect(fd, (struct sockaddr *)&sa, sizeof(sa))));
	close(fd);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/own.sock", JAIL_STATE_DIR);
	fprintf(out, "connect_own=%d\n", err_of(connect(fd, (struct sockaddr *)&sa, sizeof(sa))));
	fprintf(out, "thread=%d\n",
	        pthread_create(&t, NULL, nothing, (void *)1) == 0 && !pthread_join(t, &res) && res == (void *)1 ? 0
	                                                                                                        : -1);
	fprintf(out, "kill_self=%d\n", err_of(kill(getpid(), 0)));
	fprintf(out, "prlimit_self=%d\n", err_of(prlimit(0, RLIMIT_CORE, NULL, &rl)));
	return 0;
}

TEST(jailed_child)
{
	struct child ch;
	char want[64];
	int fd, own;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	if (!can_jail())
		return;
	/* A root-owned file and a root-only socket in the state directory. */
	snprintf(want, sizeof(want), "%s/file", state_dir);
	fd = open(want, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	close(fd);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/root.sock", state_dir);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ok(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && chmod(sa.sun_path, 0600) == 0 &&
	       listen(fd, 1) == 0,
	   "a root-only socket in the state directory");
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/own.sock", state_dir);
	own = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ok(own >= 0 && bind(own, (struct sockaddr *)&sa, sizeof(sa)) == 0 && chmod(sa.sun_path, 0600) == 0 &&
	       listen(own, 1) == 0,
	   "a socket for the jail's uid in the state directory");
	run_child(&ch, sees, JAIL_MONITOR);
	ok(WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == 0, "the jailed child ran to its end (0x%x)", ch.status);
	is_str(value(ch.out, "jail"), "0 ");
	ok(strstr(ch.proc_status, "\nSeccomp:\t2\n") != NULL, "Seccomp: 2");
	ok(strstr(ch.proc_status, "\nNoNewPrivs:\t1\n") != NULL, "NoNewPrivs: 1");
	ok(strstr(ch.proc_status, "\nCapEff:\t0000000000000000\n") != NULL, "CapEff: 0");
	ok(strstr(ch.proc_status, "\nCapPrm:\t0000000000000000\n") != NULL, "CapPrm: 0");
	ok(strstr(ch.proc_status, "\nCapBnd:\t0000000000000000\n") != NULL, "CapBnd: 0");
	snprintf(want, sizeof(want), "\nUid:\t%lu\t%lu\t%lu\t%lu\n", BASE + (unsigned long)ch.pid,
	         BASE + (unsigned long)ch.pid, BASE + (unsigned long)ch.pid, BASE + (unsigned long)ch.pid);
	ok(strstr(ch.proc_status, want) != NULL, "Uid: base + pid");
	ok(!ch.root_is_host, "its root is not the host's");
	is_str(value(ch.out, "uid"), "1");
	is_str(value(ch.out, "state"), "0");
	is_str(value(ch.out, "host_state"), "-2"); /* ENOENT */
	is_str(value(ch.out, "bound"), "0");
	is_str(value(ch.out, "proc"), "-2");
	is_str(value(ch.out, "shadow"), "-2");
	is_str(value(ch.out, "open_bound"), "-13"); /* EACCES: no file is opened while serving */
	is_str(value(ch.out, "create"), "-13");
	is_str(value(ch.out, "unlink"), "-13");
	is_str(value(ch.out, "unix"), "0");
	is_str(value(ch.out, "connect_root"), "-13");
	is_str(value(ch.out, "connect_own"), "0"); /* sealed: read-only, and still reached */
	is_str(value(ch.out, "thread"), "0");
	is_str(value(ch.out, "kill_self"), "0");
	is_str(value(ch.out, "prlimit_self"), "0");
	close(fd);
	close(own);
	unlink(sa.sun_path);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/root.sock", state_dir);
	unlink(sa.sun_path);
	snprintf(want, sizeof(want), "%s/file", state_dir);
	ok(access(want, F_OK) == 0, "the root-owned file is still there");
	unlink(want);
}

/* ---- what kills a jailed process ---------------------------------------- */

static int do_inet(FILE *out, struct jail *j)
{
	return socket(AF_INET, SOCK_STREAM, 0);
}

static int do_fork(FILE *out, struct jail *j)
{
	return (int)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0) == 0 ? (_exit(0), 0) : 0;
}

static int do_exec(FILE *out, struct jail *j)
{
	return execl("/bin/true", "true", (char *)NULL);
}

static int do_mmap_exec(FILE *out, struct jail *j)
{
	return mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED ? -1 : 0;
}

static int do_kill_parent(FILE *out, struct jail *j)
{
	return kill(victim, 0);
}

static int do_tgkill_parent(FILE *out, struct jail *j)
{
	return (int)syscall(SYS_tgkill, victim, victim, 0);
}

static int do_prlimit_parent(FILE *out, struct jail *j)
{
	struct rlimit rl;

	return prlimit(victim, RLIMIT_NOFILE, NULL, &rl);
}

static int do_tiocsti(FILE *out, struct jail *j)
{
	char c = 'x';

	return ioctl(STDIN_FILENO, TIOCSTI, &c);
}

static int do_ptrace(FILE *out, struct jail *j)
{
	return (int)syscall(SYS_ptrace, 16 /* PTRACE_ATTACH */, victim, 0, 0);
}

static void *vcpu_socket(void *opaque)
{
	int r = jail_vcpu_thread(opaque);

	return (void *)(long)(r < 0 ? r : socket(AF_UNIX, SOCK_STREAM, 0));
}

/* A vCPU thread's filter is narrower: no socket even of the unix kind. */
static int do_vcpu_socket(FILE *out, struct jail *j)
{
	pthread_t t;
	void *res = NULL;

	if (pthread_create(&t, NULL, vcpu_socket, j) != 0 || pthread_join(t, &res) != 0)
		return -1;
	fprintf(out, "vcpu=%ld\n", (long)res);
	return 0;
}

static void *vcpu_futex(void *opaque)
{
	return (void *)(long)jail_vcpu_thread(opaque);
}

/* ... and what a vCPU thread does still works under it. */
static int do_vcpu_ok(FILE *out, struct jail *j)
{
	pthread_t t;
	void *res = (void *)1;

	if (pthread_create(&t, NULL, vcpu_futex, j) != 0 || pthread_join(t, &res) != 0)
		return -1;
	return res == NULL ? 0 : -1;
}

TEST(what_kills)
{
	static const struct {
		const char *what;
		jailed_fn fn;
		enum jail_profile p;
	} cases[] = {
	    {"an inet socket", do_inet, JAIL_MONITOR},
	    {"a new process", do_fork, JAIL_MONITOR},
	    {"execve", do_exec, JAIL_MONITOR},
	    {"executable memory", do_mmap_exec, JAIL_MONITOR},
	    {"kill of another process", do_kill_parent, JAIL_MONITOR},
	    {"tgkill of another process", do_tgkill_parent, JAIL_MONITOR},
	    {"prlimit64 of another process", do_prlimit_parent, JAIL_MONITOR},
	    {"TIOCSTI", do_tiocsti, JAIL_MONITOR},
	    {"ptrace", do_ptrace, JAIL_MONITOR},
	    {"a socket on a vCPU thread", do_vcpu_socket, JAIL_MONITOR},
	    {"TIOCSTI in a proxy", do_tiocsti, JAIL_PROXY},
	    {"kill of another process in a proxy", do_kill_parent, JAIL_PROXY},
	};
	struct child ch;

	if (!can_jail())
		return;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		run_child(&ch, cases[i].fn, cases[i].p);
		ok(killed_by_sigsys(&ch), "%s kills the jailed process (status 0x%x, %s)", cases[i].what, ch.status,
		   value(ch.out, "jail"));
	}
	run_child(&ch, do_vcpu_ok, JAIL_MONITOR);
	ok(WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == 0, "a vCPU thread takes its filter (0x%x)", ch.status);
}

/* While the VM is built (uid 0 still): its build filter. */
static int build_kill_parent(FILE *out)
{
	return kill(victim, 0);
}

static int build_setuid_root(FILE *out)
{
	return setresuid(0, 0, 0) < 0 ? -errno : setresuid(12345, 12345, 12345);
}

TEST(what_kills_while_building)
{
	static const struct {
		const char *what;
		int (*fn)(FILE *out);
	} cases[] = {
	    {"kill of another process", build_kill_parent},
	    {"setresuid to other ids than the jail's", build_setuid_root},
	};
	struct child ch;

	if (!can_jail())
		return;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		build_fn = cases[i].fn;
		run_child(&ch, nothing_more, JAIL_MONITOR);
		build_fn = NULL;
		ok(killed_by_sigsys(&ch), "building: %s kills the jailed process (status 0x%x)", cases[i].what,
		   ch.status);
	}
}

/* ---- the state directory, sealed ----------------------------------------- */

static int err_open(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC, 0600);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* While the VM is built (uid 0 still, no capability that bypasses it),
 * only the disk of the state directory can be written. */
static int build_sealed(FILE *out)
{
	fprintf(out, "write_state=%d\n", err_open(JAIL_STATE_DIR "/file", O_WRONLY));
	fprintf(out, "create=%d\n", err_open(JAIL_STATE_DIR "/new", O_WRONLY | O_CREAT));
	fprintf(out, "unlink=%d\n", unlink(JAIL_STATE_DIR "/file") < 0 ? -errno : 0);
	fprintf(out, "write_disk=%d\n", err_open(JAIL_STATE_DIR "/disk.img", O_RDWR));
	return 0;
}

static int nothing_more(FILE *out, struct jail *j)
{
	return 0;
}

TEST(sealed_state_dir)
{
	char path[128];
	struct child ch;
	int fd;

	if (!can_jail())
		return;
	snprintf(path, sizeof(path), "%s/file", state_dir);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	close(fd);
	snprintf(path, sizeof(path), "%s/disk.img", state_dir);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	close(fd);
	build_fn = build_sealed;
	state_file = "disk.img";
	run_child(&ch, nothing_more, JAIL_MONITOR);
	build_fn = NULL;
	state_file = NULL;
	ok(WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == 0, "the jailed child ran to its end (0x%x: %s)", ch.status,
	   ch.out);
	is_str(value(ch.out, "write_state"), "-30"); /* EROFS */
	is_str(value(ch.out, "create"), "-30");
	is_str(value(ch.out, "unlink"), "-30");
	is_str(value(ch.out, "write_disk"), "0");
	snprintf(path, sizeof(path), "%s/file", state_dir);
	ok(access(path, F_OK) == 0, "the state directory's file is still there");
	unlink(path);
	snprintf(path, sizeof(path), "%s/disk.img", state_dir);
	unlink(path);
}

/* ---- a file server, jailed ---------------------------------------------- */

/* Threads made while the VM is built: a share's worker, which takes a
 * file server's credentials (jail_fs_thread()) and serves the shared
 * directory when told to (fs_go), and one of another device (a disk's
 * worker), which must keep nothing once the jail is finished. */
static int fs_go[2] = {-1, -1}, fs_ready[2] = {-1, -1}, other_ready[2] = {-1, -1}, other_stop[2] = {-1, -1};
static pthread_t fs_worker, other_worker;
static FILE *fs_out;

static int fs_err(int r)
{
	return r < 0 ? -errno : 0;
}

static void *serve_files(void *arg)
{
	struct {
		struct file_handle fh;
		unsigned char h[MAX_HANDLE_SZ];
	} fh = {.fh.handle_bytes = MAX_HANDLE_SZ};
	struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	char path[64], c;
	struct stat st;
	int fd, mfd, mnt, prev;

	pthread_setname_np(pthread_self(), "fs-worker");
	fd = jail_fs_thread(child_jail);
	(void)write(fs_ready[1], &fd, sizeof(fd));
	if (read(fs_go[0], &c, 1) != 1)
		return NULL;
	fprintf(fs_out, "mkdir=%d\n", fs_err(mkdirat(shared_fd, "d", 0755)));
	fd = openat(shared_fd, "f", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	fprintf(fs_out, "create=%d\n", fd >= 0 ? 0 : -errno);
	fprintf(fs_out, "lock=%d\n", fs_err(fcntl(fd, F_OFD_SETLK, &lk)));
	close(fd);
	fprintf(fs_out, "chown=%d\n", fs_err(fchownat(shared_fd, "f", 1000, 1000, AT_SYMLINK_NOFOLLOW)));
	fprintf(fs_out, "rename=%d\n", fs_err(renameat2(shared_fd, "f", shared_fd, "g", RENAME_NOREPLACE)));
	/* Path-based calls reach a descriptor's file through /proc/self/fd. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d/g", shared_fd);
	fprintf(fs_out, "xattr=%d\n", fs_err(setxattr(path, "user.k", "v", 1, 0)));
	fprintf(fs_out, "handle=%d\n", fs_err(name_to_handle_at(shared_fd, "g", &fh.fh, &mnt, 0)));
	/* The mount's descriptor must be an open one (as the server's is). */
	mfd = openat(shared_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fd = open_by_handle_at(mfd, &fh.fh, O_RDONLY | O_CLOEXEC);
	fprintf(fs_out, "by_handle=%d\n", fd >= 0 ? 0 : -errno);
	close(fd);
	close(mfd);
	/* A client's gid for what it creates. */
	prev = (int)syscall(SYS_setfsgid, 1000);
	fd = openat(shared_fd, "h", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	syscall(SYS_setfsgid, prev);
	fprintf(fs_out, "fsgid=%d\n", fd >= 0 && fstat(fd, &st) == 0 ? (int)st.st_gid : -errno);
	close(fd);
	fprintf(fs_out, "unlink=%d\n", fs_err(unlinkat(shared_fd, "g", 0)));
	fprintf(fs_out, "umask=%d\n", fs_err(unshare(CLONE_FS)));
	return NULL;
}

/* Until the child ends. */
static void *other_device(void *arg)
{
	char c;

	pthread_setname_np(pthread_self(), "disk-worker");
	(void)write(other_ready[1], "r", 1);
	(void)read(other_stop[0], &c, 1);
	return arg;
}

static int build_fs_worker(FILE *out)
{
	char c;
	int r;

	fs_out = out;
	if (pipe2(fs_go, O_CLOEXEC) < 0 || pipe2(fs_ready, O_CLOEXEC) < 0 || pipe2(other_ready, O_CLOEXEC) < 0 ||
	    pipe2(other_stop, O_CLOEXEC) < 0)
		return -errno;
	r = -pthread_create(&other_worker, NULL, other_device, NULL);
	if (r >= 0 && read(other_ready[0], &c, 1) != 1)
		r = -EIO;
	if (r >= 0)
		r = -pthread_create(&fs_worker, NULL, serve_files, NULL);
	/* Its ids and capabilities are set before the jail is finished. */
	if (r >= 0 && read(fs_ready[0], &r, sizeof(r)) != sizeof(r))
		r = -EIO;
	fprintf(out, "fs_thread=%d\n", r);
	return r;
}

/* Serving: the worker serves; this thread (as any made from now on) has
 * no capability: the root-only directory is closed to it. Files can be
 * opened (the server's openat), but the state directory stays sealed. */
static int fs_serving(FILE *out, struct jail *j)
{
	(void)write(fs_go[1], "g", 1);
	pthread_join(fs_worker, NULL);
	fprintf(out, "late_fs_thread=%d\n", jail_fs_thread(j));
	fprintf(out, "main_chown=%d\n", fs_err(fchownat(shared_fd, "h", 1001, 1001, AT_SYMLINK_NOFOLLOW)));
	fprintf(out, "main_create=%d\n", fs_err(open(JAIL_STATE_DIR "/new", O_WRONLY | O_CREAT | O_CLOEXEC, 0600)));
	return 0;
}

static int fs_unshare_ns(FILE *out, struct jail *j)
{
	return unshare(CLONE_NEWNS);
}

/* Lines of s (which starts with a newline) that end with end. */
static int count_lines(const char *s, const char *end)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, end)); p += strlen(end))
		n++;
	return n;
}

TEST(file_server)
{
	char want[64], path[128], caps[sizeof(((struct child *)0)->task_caps) + 1];
	int threads;
	struct child ch;

	if (!can_jail())
		return;
	if (!mkdtemp(shared)) {
		ok(0, "a shared directory: %s", strerror(errno));
		return;
	}
	/* Root's alone: only DAC_OVERRIDE reaches into it. */
	chmod(shared, 0700);
	build_fn = build_fs_worker;
	file_server = true;
	run_child(&ch, fs_serving, JAIL_MONITOR);
	ok(WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == 0, "the jailed child ran to its end (0x%x: %s)", ch.status,
	   ch.out);
	is_str(value(ch.out, "jail"), "0 ");
	ok(strstr(ch.proc_status, "\nCapEff:\t0000000000000000\n") != NULL, "CapEff of the main thread: 0");
	ok(strstr(ch.proc_status, "\nCapBnd:\t0000000000000000\n") != NULL, "CapBnd: 0");
	is_str(value(ch.out, "fs_thread"), "0");
	snprintf(want, sizeof(want), "\nfs-worker %016llx %016llx\n", (unsigned long long)JAIL_FS_CAPS,
	         (unsigned long long)JAIL_FS_CAPS);
	snprintf(caps, sizeof(caps), "\n%s", ch.task_caps);
	ok(strstr(caps, want) != NULL,
	   "the worker has a file server's capabilities and no others, CAP_SETUID not among them (%s)", ch.task_caps);
	ok(strstr(caps, "\ndisk-worker 0000000000000000 0000000000000000\n") != NULL,
	   "a thread of another device, made while the VM was built, has none, effective or permitted (%s)",
	   ch.task_caps);
	threads = count_lines(caps, "\n") - 1;
	ok(threads == 3 && count_lines(caps, " 0000000000000000 0000000000000000\n") == threads - 1,
	   "every thread but the worker has none (%s)", ch.task_caps);
	is_str(value(ch.out, "late_fs_thread"), "-22"); /* EINVAL: the jail is finished */
	is_str(value(ch.out, "mkdir"), "0");
	is_str(value(ch.out, "create"), "0");
	is_str(value(ch.out, "lock"), "0");
	is_str(value(ch.out, "chown"), "0");
	is_str(value(ch.out, "rename"), "0");
	is_str(value(ch.out, "xattr"), "0");
	is_str(value(ch.out, "handle"), "0");
	is_str(value(ch.out, "by_handle"), "0");
	is_str(value(ch.out, "fsgid"), "1000");
	is_str(value(ch.out, "unlink"), "0");
	is_str(value(ch.out, "umask"), "0");
	is_str(value(ch.out, "main_chown"), "-13"); /* EACCES: no DAC_OVERRIDE */
	is_str(value(ch.out, "main_create"), "-30"); /* EROFS */
	snprintf(path, sizeof(path), "%s/d", shared);
	ok(access(path, F_OK) == 0, "the directory made is on the host");
	build_fn = NULL;
	run_child(&ch, fs_unshare_ns, JAIL_MONITOR);
	ok(killed_by_sigsys(&ch), "unshare of anything but CLONE_FS kills a file server (0x%x)", ch.status);
	file_server = false;
	rm_rf(shared);
}

/* ---- a checkpoint, jailed -------------------------------------------- */

static int snap_fd = -1, copy_fd = -1, disk_fd = -1;
static struct vm *ckpt_vm;

/* The build: a VM, and the disk opened (as a monitor's blk device does). */
static int build_vm(FILE *out)
{
	struct vm_config cfg = {.ncpus = 1, .mem_size = 2 << 20};
	char disk[128];
	int r;

	r = vm_create(&cfg, &ckpt_vm);
	if (r >= 0)
		r = vm_memslots_wait(ckpt_vm);
	fprintf(out, "vm=%d\n", r);
	if (r < 0)
		return r;
	memset(guest_mem_ptr(&ckpt_vm->mem, 0x5000, 4096), 0x3c, 4096);
	snprintf(disk, sizeof(disk), "%s/disk.img", JAIL_STATE_DIR);
	disk_fd = open(disk, O_RDONLY | O_CLOEXEC);
	fprintf(out, "open_disk=%d\n", disk_fd >= 0 ? 0 : -errno);
	return 0;
}

/* Serving: the VM saved into a file it was given, the disk copied into
 * another; a snapshot by path (a file of its own) is refused. */
static int checkpoint(FILE *out, struct jail *j)
{
	fprintf(out, "save_fd=%d\n", vm_snapshot_save_fd(ckpt_vm, snap_fd, NULL, 0, NULL));
	fprintf(out, "copy=%d\n", disk_fd >= 0 ? fd_copy_sparse(disk_fd, copy_fd) : -EBADF);
	fprintf(out, "save_path=%d\n",
	        vm_snapshot_save(ckpt_vm, JAIL_STATE_DIR "/other.snap", NULL, 0, NULL) < 0 ? -1 : 0);
	return 0;
}

TEST(checkpoint_into_fds)
{
	char snap[128], disk[128], copy[128], other[128], buf[4096];
	static char data[8192];
	struct vm_snapshot *s = NULL;
	struct child ch;
	struct stat st;
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC), fd;

	if (!can_jail())
		return;
	if (kvm < 0) {
		ok(1, "# SKIP /dev/kvm: %s", strerror(errno));
		return;
	}
	close(kvm);
	snprintf(snap, sizeof(snap), "%s/vm.snap", state_dir);
	snprintf(disk, sizeof(disk), "%s/disk.img", state_dir);
	snprintf(copy, sizeof(copy), "%s/copy.img", state_dir);
	snprintf(other, sizeof(other), "%s/other.snap", state_dir);
	snap_fd = open(snap, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	copy_fd = open(copy, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	fd = open(disk, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	memset(data, 0x42, sizeof(data));
	/* Data, a hole, data, and a hole to the end. */
	ok(pwrite(fd, data, sizeof(data), 0) == sizeof(data) && pwrite(fd, data, 4096, 1 << 20) == 4096 &&
	       ftruncate(fd, 4 << 20) == 0,
	   "disk image written");
	close(fd);
	build_fn = build_vm;
	with_devices = true;
	state_file = "disk.img";
	run_child(&ch, checkpoint, JAIL_MONITOR);
	build_fn = NULL;
	with_devices = false;
	state_file = NULL;
	ok(WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == 0, "the jailed child ran to its end (0x%x: %s)", ch.status,
	   ch.out);
	is_str(value(ch.out, "vm"), "0");
	is_str(value(ch.out, "open_disk"), "0");
	is_str(value(ch.out, "save_fd"), "0");
	is_str(value(ch.out, "copy"), "0");
	is_str(value(ch.out, "save_path"), "-1");
	ok(access(other, F_OK) < 0, "no snapshot file of its own");
	is_int(vm_snapshot_open(snap, 0, &s), 0);
	if (s) {
		struct vm_config cfg;

		vm_snapshot_config(s, &cfg);
		ok(cfg.ncpus == 1 && cfg.mem_size == 2 << 20, "the snapshot checks out (its checksums included)");
		vm_snapshot_close(s);
	}
	ok(fstat(copy_fd, &st) == 0 && st.st_size == 4 << 20, "the copy has the disk's size");
	ok(pread(copy_fd, buf, 4096, 4096) == 4096 && memcmp(buf, data, 4096) == 0, "data copied");
	ok(pread(copy_fd, buf, 4096, 1 << 20) == 4096 && memcmp(buf, data, 4096) == 0, "data after a hole copied");
	ok(st.st_blocks * 512 < (1 << 20), "holes kept (%lld bytes allocated)", (long long)st.st_blocks * 512);
	close(snap_fd);
	close(copy_fd);
	unlink(snap);
	unlink(disk);
	unlink(copy);
}

TAP_MAIN()
