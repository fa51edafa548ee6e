/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "runtime/host/jail.h"

/* What a monitor or proxy does while serving: I/O on fds it already has,
 * waiting, threads' bookkeeping, signals, its end. */
static const char *const base_calls[] = {
    "read",
    "write",
    "readv",
    "writev",
    "pread64",
    "pwrite64",
    "preadv",
    "pwritev",
    "preadv2",
    "pwritev2",
    "close",
    "close_range",
    "lseek",
    "poll",
    "ppoll",
    "select",
    "pselect6",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    "epoll_ctl",
    "epoll_create1",
    "futex",
    "futex_waitv",
    "set_robust_list",
    "get_robust_list",
    "rseq",
    "sched_yield",
    "sched_getaffinity",
    "nanosleep",
    "clock_nanosleep",
    "clock_gettime",
    "clock_getres",
    "gettimeofday",
    "time",
    "getpid",
    "gettid",
    "getppid",
    "getuid",
    "geteuid",
    "getgid",
    "getegid",
    "getresuid",
    "getresgid",
    "getpgrp",
    "getsid",
    "rt_sigaction",
    "rt_sigprocmask",
    "rt_sigreturn",
    "rt_sigtimedwait",
    "rt_sigpending",
    "sigaltstack",
    "tgkill",
    "tkill",
    "exit",
    "exit_group",
    "restart_syscall",
    "munmap",
    "mremap",
    "madvise",
    "brk",
    "fcntl",
    "dup",
    "dup2",
    "dup3",
    "pipe2",
    "eventfd2",
    "timerfd_create",
    "timerfd_settime",
    "timerfd_gettime",
    "signalfd4",
    "connect",
    "accept",
    "accept4",
    "sendmsg",
    "recvmsg",
    "sendto",
    "recvfrom",
    "shutdown",
    "getsockopt",
    "setsockopt",
    "getsockname",
    "getpeername",
    "fstat",
    "newfstatat",
    "statx",
    "unlink",
    "unlinkat",
    "getrlimit",
    "setrlimit",
    "prlimit64",
    "getrandom",
};

/* The VM's disk: writes, flushes, discards. And a checkpoint, written into
 * files `kvrun checkpoint` created and passed over control.sock: ftruncate
 * empties and sizes them (the snapshot's and the disk copy's holes), and
 * copy_file_range copies the disk between two fds already held. */
static const char *const monitor_calls[] = {
    "fsync", "fdatasync", "fallocate", "sync_file_range", "ftruncate", "copy_file_range",
};

/* ioctl types by the second byte of the request: KVM's, vhost's, and the
 * 'T' family (terminal attributes and window size, FIONBIO, TUN). */
/* A file server (virtio-fs): every operation on the shared files, by
 * descriptor or through /proc/self/fd, and per-thread credentials. */
static const char *const fs_calls[] = {
    "fstatfs",
    "statfs",
    "mkdirat",
    "mknodat",
    "symlinkat",
    "linkat",
    "renameat2",
    "readlinkat",
    "fchownat",
    "fchown",
    "chmod",
    "fchmod",
    "fchmodat",
    "fchmodat2",
    "utimensat",
    "getdents64",
    "flock",
    "syncfs",
    "getxattr",
    "lgetxattr",
    "fgetxattr",
    "setxattr",
    "lsetxattr",
    "fsetxattr",
    "listxattr",
    "llistxattr",
    "flistxattr",
    "removexattr",
    "lremovexattr",
    "fremovexattr",
    "name_to_handle_at",
    "open_by_handle_at",
    "setfsuid",
    "setfsgid",
    "umask",
    "openat",
};

static const unsigned long base_ioctl_types[] = {0x54};
static const unsigned long monitor_ioctl_types[] = {0xAE, 0xAF};

bool jail_enabled(void)
{
	const char *s = getenv("KVRUN_JAIL");

	return !s || (strcmp(s, "0") != 0 && strcmp(s, "off") != 0);
}

int jail_drop_caps_except(uint64_t keep)
{
	cap_t caps;
	int r = 0;

	/* The bounding set needs CAP_SETPCAP: it goes first. */
	for (int c = 0; c <= CAP_LAST_CAP; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL && errno != EPERM)
			return err_setsys(-errno, "drop capability %d from the bounding set", c);
	(void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	caps = cap_init();
	if (!caps)
		return err_setsys(-errno, "cap_init");
	for (cap_value_t c = 0; c <= CAP_LAST_CAP && c < 64; c++)
		if ((keep & (1ULL << c)) && (cap_set_flag(caps, CAP_PERMITTED, 1, &c, CAP_SET) < 0 ||
		                             cap_set_flag(caps, CAP_EFFECTIVE, 1, &c, CAP_SET) < 0))
			r = err_setsys(-errno, "keep capability %d", (int)c);
	if (r >= 0 && cap_set_proc(caps) < 0)
		r = err_setsys(-errno, "drop capabilities");
	cap_free(caps);
	return r;
}

int jail_drop_caps(void)
{
	return jail_drop_caps_except(0);
}

static int allow_names(scmp_filter_ctx ctx, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int nr = seccomp_syscall_resolve_name(names[i]);
		int r;

		if (nr == __NR_SCMP_ERROR)
			continue; /* not on this architecture */
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
		if (r < 0)
			return err_setsys(r, "seccomp: allow %s", names[i]);
	}
	return 0;
}

static int allow_ioctls(scmp_filter_ctx ctx, const unsigned long *types, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
		                         SCMP_A1(SCMP_CMP_MASKED_EQ, 0xff00, types[i] << 8));

		if (r < 0)
			return err_setsys(r, "seccomp: allow ioctl type 0x%lx", types[i]);
	}
	return 0;
}

/* The calls allowed only with some arguments. */
static int add_conditional(scmp_filter_ctx ctx)
{
	const scmp_datum_t writing = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC;
	int r;

	/* Unix sockets only: the vsock device's host side. */
	r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_EQ, AF_UNIX));
	/* Threads, never processes. clone3 passes its flags in memory, out
	 * of a filter's reach: ENOSYS makes glibc fall back to clone. */
	if (r >= 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
		                     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
	if (r >= 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	/* Memory, but no new executable code. */
	if (r >= 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	if (r >= 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
		                     SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	/* Reading files (/proc, the C library's own), never writing one. */
	if (r >= 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, writing, 0));
	if (r >= 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(open), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, writing, 0));
	/* Thread names. */
	if (r >= 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1, SCMP_A0(SCMP_CMP_EQ, PR_SET_NAME));
	if (r >= 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1, SCMP_A0(SCMP_CMP_EQ, PR_GET_NAME));
	return r < 0 ? err_setsys(r, "seccomp: conditional rules") : 0;
}

int jail_seccomp(enum jail_profile p)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
	int r;

	if (!ctx)
		return err_set(-ENOMEM, "seccomp_init");
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	if (r < 0) {
		seccomp_release(ctx);
		return err_setsys(r, "seccomp: thread sync");
	}
	/* Best effort: older kernels cannot log the denials. */
	(void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_LOG, 1);
	r = allow_names(ctx, base_calls, ARRAY_SIZE(base_calls));
	if (r >= 0)
		r = allow_ioctls(ctx, base_ioctl_types, ARRAY_SIZE(base_ioctl_types));
	if (r >= 0)
		r = add_conditional(ctx);
	if (r >= 0 && p != JAIL_PROXY)
		r = allow_names(ctx, monitor_calls, ARRAY_SIZE(monitor_calls));
	if (r >= 0 && p != JAIL_PROXY)
		r = allow_ioctls(ctx, monitor_ioctl_types, ARRAY_SIZE(monitor_ioctl_types));
	/* openat with any flags: the server opens files to write and
	 * creates them. */
	if (r >= 0 && p == JAIL_MONITOR_FS)
		r = allow_names(ctx, fs_calls, ARRAY_SIZE(fs_calls));
	/* A worker's own file system attributes (its umask). */
	if (r >= 0 && p == JAIL_MONITOR_FS)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(unshare), 1, SCMP_A0(SCMP_CMP_EQ, CLONE_FS));
	if (r >= 0) {
		/* Sets no_new_privs (SCMP_FLTATR_CTL_NNP is on by default). */
		r = seccomp_load(ctx);
		if (r < 0)
			err_setsys(r, "seccomp: load the filter");
	}
	seccomp_release(ctx);
	return r;
}

int jail_enter(enum jail_profile p)
{
	int r = jail_drop_caps();

	return r < 0 ? r : jail_seccomp(p);
}
