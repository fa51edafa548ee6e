/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Driven by tests/integration/test_jail.py (KVRUN_JAIL_PROBE): one probe
 * action from inside the monitor's jail, made as a monitor makes it
 * (runtime/host/jail.h): its uid, the mount namespace holding the state
 * directory at JAIL_STATE_DIR, /dev/kvm and the paths given with --bind, a
 * new network namespace, a VM built between the build and the serving
 * filter. The action runs on the main thread (the serving filter), or with
 * --vcpu on a thread that took the vCPU filter first.
 *
 *   jail-probe --state-dir DIR [--bind PATH]... [--vcpu] ACTION [ARG]
 *
 * Actions: read PATH, mem PID (/proc/PID/mem), connect PATH (a unix
 * socket), unlink PATH, kill PID, tgkill PID, prlimit PID, tiocsti (on
 * fd 0), ptrace PID, nothing. Prints "jailed uid=U" once the jail is
 * complete, then "result=R" (0, or a negative errno) unless the action
 * killed it (SIGSYS). Exit status 0, or 2 when the jail failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include "common/error.h"
#include "runtime/host/jail.h"
#include "vmm/vm.h"

struct probe {
	const char *action, *arg;
};

static int err(long r)
{
	return r < 0 ? -errno : 0;
}

static int do_read(const char *path)
{
	char buf[16];
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	fd = (int)read(fd, buf, sizeof(buf));
	return fd < 0 ? -errno : 0;
}

static int do_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	return err(connect(fd, (struct sockaddr *)&sa, sizeof(sa)));
}

static int run(const struct probe *p)
{
	pid_t pid = p->arg ? (pid_t)atoi(p->arg) : 0;
	char path[64], c = 'x';
	struct rlimit rl;

	if (!strcmp(p->action, "read"))
		return do_read(p->arg);
	if (!strcmp(p->action, "mem")) {
		snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
		return do_read(path);
	}
	if (!strcmp(p->action, "connect"))
		return do_connect(p->arg);
	if (!strcmp(p->action, "unlink"))
		return err(unlink(p->arg));
	if (!strcmp(p->action, "kill"))
		return err(kill(pid, SIGTERM));
	if (!strcmp(p->action, "tgkill"))
		return err(syscall(SYS_tgkill, pid, pid, SIGTERM));
	if (!strcmp(p->action, "prlimit"))
		return err(prlimit(pid, RLIMIT_NOFILE, NULL, &rl));
	if (!strcmp(p->action, "tiocsti"))
		return err(ioctl(STDIN_FILENO, TIOCSTI, &c));
	if (!strcmp(p->action, "ptrace"))
		return err(syscall(SYS_ptrace, 16 /* PTRACE_ATTACH */, pid, 0, 0));
	if (!strcmp(p->action, "nothing"))
		return 0;
	return -EINVAL;
}

static struct jail *the_jail;

static void *vcpu_thread(void *opaque)
{
	int r = jail_vcpu_thread(the_jail);

	return (void *)(long)(r < 0 ? r : run(opaque));
}

/* As a monitor: the jail's root and build filter, a VM, the rest. */
static int enter(struct jail_config *c, struct vm **ret_vm)
{
	struct vm_config cfg = {.ncpus = 1, .mem_size = 2 << 20};
	unsigned long base;
	int r;

	r = jail_uid_base(&base);
	if (r < 0)
		return r;
	jail_ids_for(base, getpid(), &c->uid, &c->gid);
	r = jail_mount(c, &the_jail);
	if (r >= 0)
		r = jail_begin(the_jail);
	if (r >= 0)
		r = vm_create(&cfg, ret_vm);
	if (r >= 0)
		r = vm_memslots_wait(*ret_vm);
	if (r >= 0)
		r = jail_finish(the_jail);
	return r;
}

int main(int argc, char **argv)
{
	struct jail_config c = {.profile = JAIL_MONITOR, .devices = true, .net = JAIL_NET_NEW};
	struct probe p = {0};
	struct vm *vm = NULL;
	bool vcpu = false;
	long r;
	int i;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--state-dir") && i + 1 < argc)
			c.state_dir = argv[++i];
		else if (!strcmp(argv[i], "--bind") && i + 1 < argc)
			jail_config_bind(&c, argv[++i], false);
		else if (!strcmp(argv[i], "--vcpu"))
			vcpu = true;
		else
			break;
	}
	if (i >= argc) {
		fprintf(stderr, "usage: jail-probe --state-dir DIR [--bind PATH]... [--vcpu] ACTION [ARG]\n");
		return 2;
	}
	p = (struct probe){argv[i], i + 1 < argc ? argv[i + 1] : NULL};
	setvbuf(stdout, NULL, _IONBF, 0);
	if (enter(&c, &vm) < 0) {
		fprintf(stderr, "jail-probe: %s\n", err_msg());
		return 2;
	}
	printf("jailed uid=%u\n", (unsigned)getuid());
	if (vcpu) {
		pthread_t t;
		void *res = NULL;

		r = pthread_create(&t, NULL, vcpu_thread, &p) == 0 && pthread_join(t, &res) == 0 ? (long)res : -EAGAIN;
	} else {
		r = run(&p);
	}
	printf("result=%ld\n", r);
	_exit(0);
}
