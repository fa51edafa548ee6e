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
#include "common/path.h"
#include "common/spec-support.h"
#include "oci-spec/spec.h"
#include "guest-init/guest-init.h"
#include "spec-harness.h"
#include "tap.h"

static const char root_script[] = "echo pid=$$\n"
				  "echo host=$(hostname)\n"
				  "echo domain=$(cat /proc/sys/kernel/domainname)\n"
				  "echo msgmax=$(cat /proc/sys/kernel/msgmax)\n"
				  "echo cpuinfo=$(wc -c < /proc/cpuinfo)\n"
				  "echo firmware=$(ls /sys/firmware | wc -l)\n"
				  "(echo 1 > /proc/sys/kernel/msgmax) 2>/dev/null && echo sys=rw || echo sys=ro\n"
				  "touch /sysfs-probe 2>/dev/null && echo root=rw || echo root=ro\n"
				  "touch /tmp/x 2>/dev/null && echo tmp=rw || echo tmp=ro\n"
				  "echo resolv=$(cat /etc/resolv.conf)\n"
				  "echo nofile=$(ulimit -n)/$(ulimit -Hn)\n"
				  "echo umask=$(umask)\n"
				  "echo cwd=$(pwd)\n"
				  "echo env=$FOO,$HOME\n"
				  "echo null=$(ls -l /dev/null | cut -c1)$(echo x > /dev/null && echo w)\n"
				  "echo ptmx=$(readlink /dev/ptmx)\n"
				  "echo fd=$(readlink /dev/fd)\n"
				  "echo pts=$(grep ' /dev/pts ' /proc/mounts | cut -d' ' -f3)\n"
				  "echo shm=$(grep ' /dev/shm ' /proc/mounts | cut -d' ' -f3)\n"
				  "echo cg=$(grep ' /sys/fs/cgroup ' /proc/mounts | cut -d' ' -f3)\n"
				  "echo id=$(id -u):$(id -g)\n"
				  "exit 42\n";

TEST(root_spec_applied)
{
	struct proto_start s;
	struct result res;
	struct proto_mount *m;

	base_spec(&s, root_script);
	default_mounts(&s);
	add_mount(&s, "/etc/resolv.conf", "bind", "/var/lib/docker/resolv.conf",
	          (const char *const[]){"rbind", "ro", NULL});
	m = &s.mounts[s.n_mounts - 1];
	m->has_data = true;
	m->data = (uint8_t *)strdup("nameserver 192.0.2.53\n");
	m->data_len = strlen((char *)m->data);
	add_mount(&s, "/tmp", "tmpfs", "tmpfs", (const char *const[]){"nosuid", NULL});
	s.hostname = strdup("kvbox");
	s.domainname = strdup("kv.example");
	s.masked_paths = strv((const char *const[]){"/proc/cpuinfo", "/sys/firmware", "/proc/nonexistent", NULL});
	s.readonly_paths = strv((const char *const[]){"/proc/sys", NULL});
	s.n_sysctl = 1;
	s.sysctl = calloc(1, sizeof(*s.sysctl));
	s.sysctl[0] = (struct proto_keyval){strdup("kernel.msgmax"), strdup("12345")};
	s.root_readonly = true;
	s.process.n_rlimits = 1;
	s.process.rlimits = calloc(1, sizeof(struct proto_rlimit));
	s.process.rlimits[0] = (struct proto_rlimit){strdup("RLIMIT_NOFILE"), 321, 654};
	s.process.has_umask = true;
	s.process.umask = 027;

	run(&s, NULL, &res);
	is_int(res.spawn_err, 0);
	is_int(res.go_err, 0);
	if (res.msg[0])
		printf("# %s\n", res.msg);
	ok(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 42, "exit code 42 (status 0x%x)", res.status);
	has(&res, "pid=1");
	has(&res, "host=kvbox");
	has(&res, "domain=kv.example");
	has(&res, "msgmax=12345");
	has(&res, "cpuinfo=0");
	has(&res, "firmware=0");
	has(&res, "sys=ro");
	has(&res, "root=ro");
	has(&res, "tmp=rw");
	has(&res, "resolv=nameserver 192.0.2.53");
	has(&res, "nofile=321/654");
	has(&res, "umask=0027");
	has(&res, "cwd=/work");
	has(&res, "env=bar,/root");
	has(&res, "null=cw");
	has(&res, "ptmx=pts/ptmx");
	has(&res, "fd=/proc/self/fd");
	has(&res, "pts=devpts");
	has(&res, "shm=tmpfs");
	has(&res, "cg=cgroup2");
	has(&res, "id=0:0");
	proto_start_free(&s);
}

static const char user_script[] =
    "echo id=$(id -u):$(id -g)\n"
    "echo groups=$(id -G)\n"
    "grep -E '^(CapBnd|CapEff|CapPrm|NoNewPrivs|Seccomp):' /proc/self/status | tr -d '\\t'\n"
    "mkdir /tmp/d 2>&1 | grep -q 'not permitted' && echo mkdir=EPERM\n"
    "touch /tmp/f && echo touch=ok\n"
    "echo env=$HOME\n"
    "echo umask=$(umask)\n"
    "exit 1\n";

TEST(user_caps_seccomp)
{
	struct proto_start s;
	struct result res;
	struct proto_seccomp *sc;

	base_spec(&s, user_script);
	default_mounts(&s);
	add_mount(&s, "/tmp", "tmpfs", "tmpfs", (const char *const[]){"mode=1777", NULL});
	s.process.uid = 1000;
	s.process.gid = 1000;
	s.process.n_additional_gids = 1;
	s.process.additional_gids = calloc(1, sizeof(uint32_t));
	s.process.additional_gids[0] = 3000;
	s.process.has_caps = true;
	/* CAP_CHOWN (0) and CAP_KILL (5) only. */
	s.process.cap_bounding = s.process.cap_effective = s.process.cap_permitted = 0x21;
	s.process.no_new_privileges = true;
	sc = s.seccomp = calloc(1, sizeof(*sc));
	sc->default_action = strdup("SCMP_ACT_ALLOW");
	sc->architectures = strv((const char *const[]){"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", NULL});
	sc->n_rules = 1;
	sc->rules = calloc(1, sizeof(*sc->rules));
	sc->rules[0].names = strv((const char *const[]){"mkdir", "mkdirat", "no_such_syscall", NULL});
	sc->rules[0].action = strdup("SCMP_ACT_ERRNO");
	sc->rules[0].has_errno_ret = true;
	sc->rules[0].errno_ret = EPERM;

	run(&s, NULL, &res);
	is_int(res.spawn_err, 0);
	is_int(res.go_err, 0);
	if (res.msg[0])
		printf("# %s\n", res.msg);
	ok(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 1, "exit code 1 (status 0x%x)", res.status);
	has(&res, "id=1000:1000");
	has(&res, "groups=1000 2000 3000");
	has(&res, "CapBnd:0000000000000021");
	has(&res, "CapEff:0000000000000000");
	has(&res, "CapPrm:0000000000000000");
	has(&res, "NoNewPrivs:1");
	has(&res, "Seccomp:2");
	has(&res, "mkdir=EPERM");
	has(&res, "touch=ok");
	has(&res, "env=/home/tester");
	proto_start_free(&s);
}

TEST(signal_death)
{
	struct proto_start s;
	struct result res;

	base_spec(&s, "echo ready; while :; do sleep 1; done");
	default_mounts(&s);
	run(&s, "ready\n", &res);
	is_int(res.spawn_err, 0);
	ok(WIFSIGNALED(res.status) && WTERMSIG(res.status) == SIGKILL, "killed by SIGKILL (status 0x%x)", res.status);
	proto_start_free(&s);
}

/* guest-init's own GLIBC_TUNABLES (from the kernel command line, which
 * kvrun sets on emulating hosts only) reaches a process whose spec sets
 * none; a spec's own value is kept as it is. */
TEST(glibc_tunables_passed_on)
{
	const char *mine[] = {"PATH=/bin", "GLIBC_TUNABLES=glibc.malloc.check=0", NULL};
	struct proto_start s;
	struct result res;

	unsetenv("GLIBC_TUNABLES");
	base_spec(&s, "echo tun=${GLIBC_TUNABLES-unset}");
	default_mounts(&s);
	run(&s, NULL, &res);
	has(&res, "tun=unset");
	proto_start_free(&s);

	setenv("GLIBC_TUNABLES", "glibc.cpu.hwcaps=-AVX,-AVX2", 1);
	base_spec(&s, "echo tun=${GLIBC_TUNABLES-unset},$FOO,$HOME");
	default_mounts(&s);
	run(&s, NULL, &res);
	has(&res, "tun=glibc.cpu.hwcaps=-AVX,-AVX2,bar,/root");
	proto_start_free(&s);

	base_spec(&s, "echo tun=${GLIBC_TUNABLES-unset}");
	default_mounts(&s);
	for (char **e = s.process.env; *e; e++)
		free(*e);
	free(s.process.env);
	s.process.env = strv(mine);
	run(&s, NULL, &res);
	has(&res, "tun=glibc.malloc.check=0");
	proto_start_free(&s);
	unsetenv("GLIBC_TUNABLES");
}

static void set_arg0(struct proto_start *s, const char *arg0)
{
	free(s->process.args[0]);
	s->process.args[0] = strdup(arg0);
}

static void write_mode(const char *rel, const char *text, mode_t mode)
{
	char path[512];

	write_text(rel, text);
	snprintf(path, sizeof(path), "%s/%s", rootfs, rel);
	chmod(path, mode);
}

/* What runc's init finds before "ready" fails the create (or exec) with
 * Go's exec.LookPath's words; what only execve can tell comes after
 * start, on the process's stderr, with exit status 1. */
TEST(exec_failures)
{
	struct proto_start s;
	struct result res;

	write_mode("notexec", "echo hi\n", 0644);
	write_mode("badinterp", "#!/nonexistent/interp\necho hi\n", 0755);
	write_mode("garbage", "not a program at all\n", 0755);
	base_spec(&s, "");
	set_arg0(&s, "/nope");
	run(&s, NULL, &res);
	is_int(res.spawn_err, -ENOENT);
	is_str(res.msg, "exec: \"/nope\": stat /nope: no such file or directory");
	ok(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 127, "exit 127 (status 0x%x)", res.status);

	set_arg0(&s, "nope");
	run(&s, NULL, &res);
	is_int(res.spawn_err, -ENOENT);
	is_str(res.msg, "exec: \"nope\": executable file not found in $PATH");

	set_arg0(&s, "/notexec");
	run(&s, NULL, &res);
	is_int(res.spawn_err, -EACCES);
	is_str(res.msg, "exec: \"/notexec\": permission denied");
	ok(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 126, "exit 126 (status 0x%x)", res.status);

	set_arg0(&s, "/etc");
	run(&s, NULL, &res);
	is_int(res.spawn_err, -EACCES);
	is_str(res.msg, "exec: \"/etc\": permission denied");

	set_arg0(&s, "/badinterp");
	run(&s, NULL, &res);
	is_int(res.spawn_err, 0);
	is_int(res.go_err, 0);
	is_str(res.out, "exec /badinterp: no such file or directory\n");
	ok(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 1, "bad interpreter: exit 1 (status 0x%x)", res.status);

	set_arg0(&s, "/garbage");
	run(&s, NULL, &res);
	is_int(res.go_err, 0);
	is_str(res.out, "exec /garbage: exec format error\n");
	ok(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 1, "ENOEXEC: exit 1 (status 0x%x)", res.status);

	/* No PATH at all: nothing is searched (Go's LookPath). */
	set_arg0(&s, "sh");
	free(s.process.env[0]);
	s.process.env[0] = strdup("NOPATH=1");
	run(&s, NULL, &res);
	is_int(res.spawn_err, -ENOENT);
	is_str(res.msg, "exec: \"sh\": executable file not found in $PATH");

	free(s.process.cwd);
	s.process.cwd = strdup("/does/not/exist");
	run(&s, NULL, &res);
	is_int(res.spawn_err, -ENOENT);
	is_str(res.msg, "chdir to cwd (\"/does/not/exist\") set in config.json failed: no such file or directory");
	proto_start_free(&s);
}

/* runc enters the cwd before it drops privileges: root without
 * CAP_DAC_OVERRIDE gets into a directory only another user may enter
 * (runc spec's capabilities and a /root that is not root's), and the
 * ambient set reaches the exec'd program. */
TEST(cwd_before_caps_and_ambient)
{
	struct proto_start s;
	struct result res;
	char path[512];

	snprintf(path, sizeof(path), "%s/locked", rootfs);
	mkdir(path, 0700);
	chown(path, 1000, 1000);
	base_spec(&s, "pwd; busybox grep -E '^Cap(Inh|Eff|Amb):' /proc/self/status | busybox tr -d '\\t'");
	default_mounts(&s);
	free(s.process.cwd);
	s.process.cwd = strdup("/locked");
	s.process.has_caps = true;
	/* CAP_KILL (5) and CAP_NET_BIND_SERVICE (10), inheritable and ambient. */
	s.process.cap_bounding = s.process.cap_effective = s.process.cap_permitted = 0x420;
	s.process.cap_inheritable = s.process.cap_ambient = 0x420;
	run(&s, NULL, &res);
	is_int(res.spawn_err, 0);
	if (res.msg[0])
		printf("# %s\n", res.msg);
	has(&res, "/locked");
	has(&res, "CapAmb:0000000000000420");

	s.process.uid = s.process.gid = 1000;
	run(&s, NULL, &res);
	is_int(res.spawn_err, 0);
	has(&res, "CapInh:0000000000000420");
	has(&res, "CapEff:0000000000000420");
	has(&res, "CapAmb:0000000000000420");
	proto_start_free(&s);
}

TEST(setup_failure_reported)
{
	struct proto_start s;
	struct result res;

	base_spec(&s, "exit 0");
	add_mount(&s, "/mnt", "nosuchfs", "none", (const char *const[]){NULL});
	run(&s, NULL, &res);
	ok(res.spawn_err < 0, "spawn fails");
	ok(strstr(res.msg, "nosuchfs") != NULL, "message names the mount: %s", res.msg);
	ok(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 1, "child exits 1");
	proto_start_free(&s);
}

/* Two shared directories as gi_mount_shares() leaves them, in the child's
 * namespace: GI_SHARES_DIR (on a tmpfs over /run, so nothing reaches the
 * host's) holding kvrun-fs0, a directory of files of which the spec binds
 * one, and kvrun-fs1, a volume: both the test's own directories, so what
 * the container writes is seen here. */
static int stage_shares(void)
{
	char src[512], dst[512];

	if (mount("tmpfs", "/run", "tmpfs", 0, "mode=755") < 0)
		return -errno;
	for (int i = 0; i < 2; i++) {
		snprintf(src, sizeof(src), "%s/share%d", tmpdir, i);
		snprintf(dst, sizeof(dst), "%s/kvrun-fs%d", GI_SHARES_DIR, i);
		if (mkdir_p(dst, 0755) < 0 || mount(src, dst, NULL, MS_BIND, NULL) < 0)
			return -errno;
	}
	return 0;
}

static bool file_is(const char *path, const char *want)
{
	char *got = NULL;
	size_t n;
	bool same = read_file_all(path, 4096, &got, &n) == 0 && n == strlen(want) && !memcmp(got, want, n);

	free(got);
	return same;
}

static void add_share(struct proto_start *s, const char *dst, const char *tag, const char *entry,
                      const char *const *opts)
{
	add_mount(s, dst, "bind", "/host/path", opts);
	s->mounts[s->n_mounts - 1].share = strdup(tag);
	s->mounts[s->n_mounts - 1].share_path = entry ? strdup(entry) : NULL;
}

static const char share_script[] =
    "echo hosts=$(cat /etc/hosts)\n"
    "echo other=$(ls /etc/other 2>&1 | grep -c 'No such')\n"
    "echo hi > /vol/new && echo vol=rw\n"
    "echo vol-file=$(cat /vol/data)\n"
    "touch /rovol/x 2>/dev/null && echo rovol=rw || echo rovol=ro\n"
    "echo x >> /etc/hosts 2>/dev/null && echo hosts=rw || echo hosts=ro\n"
    "echo log > /dev/termination-log && echo termlog=written\n"
    "grep ' /rovol ' /proc/mounts | cut -d' ' -f4 | tr ',' '\\n' | grep -E '^(ro|nosuid|noexec)$' | "
    "sort | tr '\\n' ' '; echo\n"
    "echo roroot-file=$(cat /rovol/data)\n"
    "exit 0\n";

/* Bind mounts of shared directories: a file of one (live: written through),
 * a volume whole, the same volume read-only with nosuid and noexec. */
TEST(shared_binds)
{
	char path[512];
	struct proto_start s;
	struct result res;

	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/share%d", tmpdir, i);
		mkdir_p(path, 0755);
	}
	snprintf(path, sizeof(path), "%s/share0/hosts", tmpdir);
	write_file_atomic(path, "127.0.0.1 shared\n", 17, 0644);
	snprintf(path, sizeof(path), "%s/share0/termination-log", tmpdir);
	write_file_atomic(path, "", 0, 0644);
	snprintf(path, sizeof(path), "%s/share1/data", tmpdir);
	write_file_atomic(path, "volume\n", 7, 0644);
	base_spec(&s, share_script);
	default_mounts(&s);
	add_share(&s, "/etc/hosts", "kvrun-fs0", "hosts", (const char *const[]){"rbind", "ro", NULL});
	add_share(&s, "/vol", "kvrun-fs1", NULL, (const char *const[]){"rbind", "rw", NULL});
	add_share(&s, "/rovol", "kvrun-fs1", NULL, (const char *const[]){"rbind", "ro", "nosuid", "noexec", NULL});
	add_share(&s, "/dev/termination-log", "kvrun-fs0", "termination-log", (const char *const[]){"rbind", NULL});
	run_child_setup = stage_shares;
	run(&s, NULL, &res);
	run_child_setup = NULL;
	is_int(res.spawn_err, 0);
	is_int(res.go_err, 0);
	if (res.msg[0])
		printf("# %s\n", res.msg);
	has(&res, "hosts=127.0.0.1 shared");
	has(&res, "vol=rw");
	has(&res, "vol-file=volume");
	has(&res, "rovol=ro");
	has(&res, "hosts=ro");
	has(&res, "termlog=written");
	has(&res, "noexec nosuid ro ");
	has(&res, "roroot-file=volume");
	snprintf(path, sizeof(path), "%s/share1/new", tmpdir);
	ok(file_is(path, "hi\n"), "the container's write reached the volume's directory");
	snprintf(path, sizeof(path), "%s/share0/termination-log", tmpdir);
	ok(file_is(path, "log\n"), "the file bind is live: the write reached the host file");
	proto_start_free(&s);
}

/* A share the spec names with a tag or entry that is not a name. */
TEST(shared_bind_refused)
{
	struct proto_start s;
	struct result res;

	base_spec(&s, "exit 0");
	add_share(&s, "/x", "../etc", NULL, (const char *const[]){"rbind", NULL});
	run(&s, NULL, &res);
	ok(res.spawn_err < 0 && strstr(res.msg, "bad virtio-fs tag"), "a tag with a slash: %s", res.msg);
	proto_start_free(&s);
	base_spec(&s, "exit 0");
	add_share(&s, "/x", "kvrun-fs0", "a/../../b", (const char *const[]){"rbind", NULL});
	run(&s, NULL, &res);
	ok(res.spawn_err < 0 && strstr(res.msg, "bad virtio-fs tag"), "an entry with a slash: %s", res.msg);
	proto_start_free(&s);
}

/* In a mount namespace of its own: dir/kvrun-fs0 a mount already (a tag a
 * pod's earlier container had mounted: a tmpfs with a marker stands for
 * it), dir/kvrun-fs9 not. Exit bits: 1 the mounted tag was left alone
 * (gi_mount_shares() returned 0, the marker still seen), 2 the other was
 * tried (virtio-fs cannot be mounted here: the mount's error). */
static int shares_once_child(const char *dir)
{
	char path[512], marker[600];
	struct proto_start s = {0};
	int bits = 0;

	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return 100;
	snprintf(path, sizeof(path), "%s/kvrun-fs0", dir);
	snprintf(marker, sizeof(marker), "%s/marker", path);
	if (mkdir_p(path, 0755) < 0 || mount("tmpfs", path, "tmpfs", 0, NULL) < 0 ||
	    write_file_atomic(marker, "m", 1, 0644) < 0)
		return 101;
	add_share(&s, "/a", "kvrun-fs0", NULL, (const char *const[]){"rbind", NULL});
	add_share(&s, "/b", "kvrun-fs0", "x", (const char *const[]){"rbind", NULL});
	if (gi_mount_shares(&s, dir) == 0 && access(marker, F_OK) == 0)
		bits |= 1;
	add_share(&s, "/c", "kvrun-fs9", NULL, (const char *const[]){"rbind", NULL});
	if (gi_mount_shares(&s, dir) < 0 && strstr(err_msg(), "virtio-fs tag kvrun-fs9"))
		bits |= 2;
	proto_start_free(&s);
	return bits;
}

/* A pod member's START mounts its tags as the first container's did: a
 * tag whose directory is a mount already is not mounted over again. */
TEST(shares_mounted_once)
{
	char dir[300];
	pid_t pid;
	int st;

	snprintf(dir, sizeof(dir), "%s/shares-once", tmpdir);
	pid = fork();
	if (pid == 0)
		_exit(shares_once_child(dir));
	waitpid(pid, &st, 0);
	ok(WIFEXITED(st) && (WEXITSTATUS(st) & 1), "a mounted tag left as it is (0x%x)", st);
	ok(WIFEXITED(st) && (WEXITSTATUS(st) & 2), "a new tag mounted (0x%x)", st);
}

static void add_hook(struct proto_hook **hooks, size_t *n, const char *script)
{
	*hooks = realloc(*hooks, (*n + 1) * sizeof(**hooks));
	memset(&(*hooks)[*n], 0, sizeof(**hooks));
	(*hooks)[*n].path = strdup("/bin/busybox");
	(*hooks)[*n].args = strv((const char *const[]){"busybox", "sh", "-c", script, NULL});
	(*hooks)[*n].env = strv((const char *const[]){"PATH=/bin", NULL});
	(*hooks)[*n].has_timeout = true;
	(*hooks)[*n].timeout = 30;
	(*n)++;
}

TEST(hooks)
{
	struct proto_start s;
	struct result res;

	base_spec(&s, "cat /tmp/hooks; exit 0");
	default_mounts(&s);
	add_mount(&s, "/tmp", "tmpfs", "tmpfs", (const char *const[]){NULL});
	s.state_json = strdup("{\"ociVersion\":\"1.2.0\",\"id\":\"c1\",\"status\":\"created\"}");
	add_hook(&s.create_container_hooks, &s.n_create_container_hooks, "echo create=$(cat) > /tmp/hooks");
	add_hook(&s.start_container_hooks, &s.n_start_container_hooks, "echo start=$(hostname) >> /tmp/hooks");
	s.hostname = strdup("hooked");
	run(&s, NULL, &res);
	is_int(res.spawn_err, 0);
	is_int(res.go_err, 0);
	has(&res, "create={\"ociVersion\":\"1.2.0\",\"id\":\"c1\",\"status\":\"created\"}");
	has(&res, "start=hooked");
	proto_start_free(&s);

	base_spec(&s, "exit 0");
	add_hook(&s.create_container_hooks, &s.n_create_container_hooks, "exit 0");
	add_hook(&s.create_container_hooks, &s.n_create_container_hooks, "echo said; echo oops >&2; exit 3");
	run(&s, NULL, &res);
	ok(res.spawn_err < 0, "a failing hook fails the create");
	is_str(res.msg, "error running createContainer hook #1: exit status 3, stdout: said, stderr: oops");
	proto_start_free(&s);

	/* After start, as runc's init: on the process's stderr, exit 1. */
	base_spec(&s, "echo main-ran");
	add_hook(&s.start_container_hooks, &s.n_start_container_hooks, "busybox cat /nosuchfile");
	run(&s, NULL, &res);
	is_int(res.spawn_err, 0);
	is_int(res.go_err, 0);
	is_str(res.out, "error running startContainer hook #0: exit status 1, stdout: , stderr: cat: can't open "
	                "'/nosuchfile': No such file or directory\n");
	ok(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 1, "failed startContainer hook: exit 1 (status 0x%x)",
	   res.status);
	proto_start_free(&s);
}

/* This process's bounding set (root's: every capability of the kernel). */
static uint64_t host_caps(void)
{
	char *status = NULL, *p;
	uint64_t v = 0;

	if (read_file_all("/proc/self/status", 65536, &status, NULL) == 0 && (p = strstr(status, "CapBnd:")))
		v = strtoull(p + 7, NULL, 16);
	free(status);
	return v;
}

/* Each namespace kvrun features lists is one the process gets (those
 * guest-init unshares; "network" is the VM's own stack; the cgroup
 * namespace as the config asks for it here; the user namespace, which
 * needs maps, in test-spec-linux), and a process given every listed
 * capability has each of them. */
TEST(listed_namespaces_and_capabilities)
{
	static const char *const files[][2] = {
	    {"ipc", "ipc"}, {"mount", "mnt"}, {"pid", "pid"}, {"uts", "uts"}, {"cgroup", "cgroup"}};
	struct proto_start s;
	struct result res;
	char script[512], line[128], own[64];
	size_t n = 0;

	n += (size_t)snprintf(script + n, sizeof(script) - n,
	                      "busybox grep CapBnd /proc/self/status | busybox tr -d '\\t';");
	for (size_t i = 0; i < ARRAY_SIZE(files); i++)
		n += (size_t)snprintf(script + n, sizeof(script) - n, "echo %s=$(busybox readlink /proc/self/ns/%s);",
		                      files[i][0], files[i][1]);
	base_spec(&s, script);
	default_mounts(&s);
	s.cgroup_ns = true;
	s.process.has_caps = true;
	/* Those this kernel has (a guest's has them all). */
	for (const char *const *c = oci_capability_names(); *c; c++)
		s.process.cap_bounding |= (1ull << (c - oci_capability_names())) & host_caps();
	s.process.cap_effective = s.process.cap_permitted = s.process.cap_bounding;
	run(&s, NULL, &res);
	is_int(res.spawn_err, 0);
	if (res.msg[0])
		printf("# %s\n", res.msg);
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		bool listed = false;
		char path[64];
		ssize_t len;

		for (size_t k = 0; k < spec_namespaces_count; k++)
			listed |= strcmp(spec_namespaces[k].name, files[i][0]) == 0;
		snprintf(path, sizeof(path), "/proc/self/ns/%s", files[i][1]);
		len = readlink(path, own, sizeof(own) - 1);
		own[len > 0 ? len : 0] = '\0';
		snprintf(line, sizeof(line), "%s=%s:[", files[i][0], files[i][1]);
		if (!ok(strstr(res.out, line) != NULL, "%s namespace seen", files[i][0]))
			continue;
		snprintf(line, sizeof(line), "%s=%s", files[i][0], own);
		ok(has_line(res.out, line) != listed, "%s namespace: %s (ours %s)", files[i][0],
		   listed ? "listed and new" : "not listed and shared", own);
	}
	snprintf(line, sizeof(line), "CapBnd:%016llx", (unsigned long long)(s.process.cap_bounding & host_caps()));
	has(&res, line);
	proto_start_free(&s);
}

/* kvrun ps's source: the processes of a pid namespace from /proc, in
 * the namespace's numbering, whatever the image holds. */
TEST(ps_collect)
{
	struct proto_msg m = {.type = PROTO_MSG_PS};
	char comm[64] = "", path[64];
	int pfd[2], st;
	pid_t c, g = 0;

	if (pipe(pfd) < 0)
		return;
	c = fork();
	if (c == 0) {
		if (unshare(CLONE_NEWPID) < 0)
			_exit(1);
		g = fork();
		if (g == 0) {
			execl("/bin/busybox", "sleep", "30", (char *)NULL);
			_exit(1);
		}
		(void)!write(pfd[1], &g, sizeof(g));
		waitpid(g, NULL, 0);
		_exit(0);
	}
	close(pfd[1]);
	if (read(pfd[0], &g, sizeof(g)) != sizeof(g))
		g = 0;
	ok(g > 0, "the namespace's init is %d", (int)g);
	close(pfd[0]);
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)g);
	for (int i = 0; i < 200 && strncmp(comm, "busybox", 7) != 0; i++) {
		char *s = NULL;

		usleep(10000);
		if (read_file_all(path, sizeof(comm), &s, NULL) == 0)
			snprintf(comm, sizeof(comm), "%s", s);
		free(s);
	}
	is_int(gi_ps_collect("/proc", g, &m.u.ps), 0);
	is_int(m.u.ps.n_procs, 1);
	if (m.u.ps.n_procs == 1) {
		struct proto_ps_proc *p = &m.u.ps.procs[0];

		ok(p->pid == 1 && p->ppid == 0, "pid 1 of its namespace, parent outside (%u, %u)", p->pid, p->ppid);
		is_str(p->comm, "busybox");
		ok(p->args && p->args[0] && p->args[1] && !strcmp(p->args[1], "30") && !p->args[2], "its command line");
		ok(p->stat && p->stat[0] == 'S', "sleeping: %s", p->stat ? p->stat : "(none)");
		ok(p->uid == 0 && p->rss_kb > 0 && p->vsize_kb > 0, "owner and sizes");
	}
	ok(m.u.ps.hz > 0 && m.u.ps.boot_time > 0 && m.u.ps.uptime_cs > 0 && m.u.ps.mem_total_kb > 0,
	   "clock and memory to measure against");
	proto_msg_free(&m);
	kill(g, SIGKILL);
	waitpid(c, &st, 0);
}

int main(void)
{
	return harness_main();
}
