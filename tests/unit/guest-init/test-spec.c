/* SPDX-License-Identifier: Apache-2.0 */
/*
 * guest-init's spec application, run on the host in throwaway namespaces:
 * a busybox rootfs in a temp dir, a spec applied by the same functions PID 1
 * uses (gi_spawn/gi_go), and busybox printing what the process sees.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
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

TEST(exec_failures)
{
	struct proto_start s;
	struct result res;

	base_spec(&s, "");
	free(s.process.args[0]);
	s.process.args[0] = strdup("/nope");
	run(&s, NULL, &res);
	/* Found missing before "ready": create fails, as under runc. */
	is_int(res.spawn_err, -ENOENT);
	is_str(res.msg, "exec: \"/nope\": stat /nope: no such file or directory");
	ok(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 127, "exit 127 (status 0x%x)", res.status);

	free(s.process.args[0]);
	s.process.args[0] = strdup("nope");
	run(&s, NULL, &res);
	is_int(res.spawn_err, -ENOENT);
	is_str(res.msg, "exec: \"nope\": executable file not found in $PATH");

	free(s.process.args[0]);
	s.process.args[0] = strdup("/etc/passwd");
	run(&s, NULL, &res);
	is_int(res.go_err, -EACCES);
	is_str(res.msg, "exec: \"/etc/passwd\": permission denied");
	ok(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 126, "exit 126 (status 0x%x)", res.status);

	free(s.process.cwd);
	s.process.cwd = strdup("/does/not/exist");
	run(&s, NULL, &res);
	ok(res.spawn_err < 0 && strstr(res.msg, "chdir to cwd"), "bad cwd refused at spawn: %s", res.msg);
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
	add_hook(&s.create_container_hooks, &s.n_create_container_hooks, "exit 3");
	run(&s, NULL, &res);
	ok(res.spawn_err < 0, "a failing hook fails the create");
	is_str(res.msg, "error running createContainer hook #1: exit status 3");
	proto_start_free(&s);
}

int main(void)
{
	return harness_main();
}
