/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The jail's seccomp filters (jail.h; each thread's profile is tabled in
 * docs/security.md, which must follow these tables). Each filter is
 * compiled by libseccomp into a BPF program while no filter is loaded yet,
 * and loaded later with seccomp(2) itself: loading needs nothing of
 * libseccomp's own probing, which a loaded filter would have to allow.
 *
 * Every call not listed kills the process. Calls that reach other
 * processes are allowed only towards this one (its pid is compared);
 * ioctls only with the exact request numbers the code uses.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <linux/if_tun.h>
#include <linux/fs.h>
#include <linux/seccomp.h>
#include <linux/vhost.h>
#include <sched.h>
#include <seccomp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include "config.h"
#include "common/cleanup.h"
#include "common/error.h"
#include "runtime/host/jail-int.h"

/* How an argument is compared. */
enum cmp_kind {
	CMP_EQ, /* == value */
	CMP_MASKED, /* (arg & mask) == value */
	CMP_SELF, /* == the jailed process's pid */
	CMP_UID, /* == the jail's uid */
	CMP_GID, /* == the jail's gid */
};

struct cmp {
	uint8_t arg, kind;
	uint64_t mask, value;
};

struct rule {
	const char *name;
	int err; /* 0: allow; else fail with this errno */
	unsigned int ncmp;
	struct cmp cmp[3];
};

#define ANY(n)                    \
	{                         \
		n, 0, 0,          \
		{                 \
			{         \
				0 \
			}         \
		}                 \
	}
#define DENY(n, e)                \
	{                         \
		n, e, 0,          \
		{                 \
			{         \
				0 \
			}         \
		}                 \
	}
#define IF1(n, c0)         \
	{                  \
		n, 0, 1,   \
		{          \
			c0 \
		}          \
	}
#define IF2(n, c0, c1)         \
	{                      \
		n, 0, 2,       \
		{              \
			c0, c1 \
		}              \
	}
#define IF3(n, c0, c1, c2)         \
	{                          \
		n, 0, 3,           \
		{                  \
			c0, c1, c2 \
		}                  \
	}
#define EQ(a, v)                \
	{                       \
		a, CMP_EQ, 0, v \
	}
#define MASKED(a, m, v)             \
	{                           \
		a, CMP_MASKED, m, v \
	}
#define SELF(a)                   \
	{                         \
		a, CMP_SELF, 0, 0 \
	}
#define UID(a)                   \
	{                        \
		a, CMP_UID, 0, 0 \
	}
#define GID(a)                   \
	{                        \
		a, CMP_GID, 0, 0 \
	}

#define CLONE_NEW_ANY                                                                                                \
	(CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | \
	 0x80 /* CLONE_NEWTIME */)

/* Every thread, vCPUs included: memory, waiting, time, signals to itself,
 * its end. */
static const struct rule common_rules[] = {
    ANY("read"),
    ANY("readv"),
    ANY("write"),
    ANY("writev"),
    ANY("close"),
    ANY("futex"),
    IF1("mmap", MASKED(2, PROT_EXEC, 0)),
    IF1("mprotect", MASKED(2, PROT_EXEC, 0)),
    ANY("munmap"),
    ANY("mremap"),
    ANY("madvise"),
    ANY("brk"),
    ANY("rt_sigreturn"),
    ANY("rt_sigprocmask"),
    ANY("sigaltstack"),
    ANY("exit"),
    ANY("exit_group"),
    ANY("restart_syscall"),
    ANY("getpid"),
    ANY("gettid"),
    ANY("clock_gettime"),
    ANY("clock_nanosleep"),
    ANY("nanosleep"),
    ANY("gettimeofday"),
    ANY("sched_yield"),
    ANY("getrandom"),
    ANY("fstat"),
    ANY("newfstatat"),
    IF1("tgkill", SELF(0)),
};

/* The other threads of a monitor or a proxy while it serves: sockets (unix
 * only), polling, threads (never processes), its own limits. */
static const struct rule serve_rules[] = {
    ANY("epoll_wait"),
    ANY("epoll_pwait"),
    ANY("epoll_ctl"),
    ANY("poll"),
    ANY("ppoll"),
    ANY("accept"),
    ANY("accept4"),
    ANY("connect"),
    IF1("socket", EQ(0, AF_UNIX)),
    ANY("sendmsg"),
    ANY("recvmsg"),
    ANY("sendto"),
    ANY("recvfrom"),
    ANY("shutdown"),
    ANY("getsockopt"),
    ANY("setsockopt"),
    ANY("getsockname"),
    ANY("getpeername"),
    /* Not F_SETOWN or F_SETSIG: a signal at I/O, to a process chosen
     * while still uid 0, would reach any. */
    IF1("fcntl", EQ(1, F_GETFD)),
    IF1("fcntl", EQ(1, F_SETFD)),
    IF1("fcntl", EQ(1, F_GETFL)),
    IF1("fcntl", EQ(1, F_SETFL)),
    IF1("fcntl", EQ(1, F_DUPFD_CLOEXEC)),
    ANY("dup"),
    ANY("dup3"),
    ANY("pipe2"),
    ANY("eventfd2"),
    ANY("timerfd_settime"),
    ANY("timerfd_gettime"),
    ANY("lseek"),
    ANY("statx"),
    ANY("pread64"),
    ANY("pwrite64"),
    ANY("rt_sigaction"),
    ANY("rt_sigtimedwait"),
    ANY("rt_sigpending"),
    ANY("getuid"),
    ANY("geteuid"),
    ANY("getgid"),
    ANY("getegid"),
    ANY("getresuid"),
    ANY("getresgid"),
    ANY("set_robust_list"),
    ANY("rseq"),
    IF1("clone", MASKED(0, CLONE_THREAD | CLONE_NEW_ANY, CLONE_THREAD)),
    /* clone3 passes its flags in memory, out of a filter's reach: ENOSYS
     * makes the C library fall back to clone. */
    DENY("clone3", ENOSYS),
    IF1("prctl", EQ(0, PR_SET_NAME)),
    IF1("prctl", EQ(0, PR_GET_NAME)),
    IF1("kill", SELF(0)),
    IF1("prlimit64", EQ(0, 0)),
    IF1("prlimit64", SELF(0)),
    ANY("getrlimit"),
#ifdef __SANITIZE_ADDRESS__
    /* ASan builds (CI's): each new thread reads its own affinity
     * (pthread_getattr_np), naming itself by its tid. */
    ANY("sched_getaffinity"),
#else
    IF1("sched_getaffinity", EQ(0, 0)),
#endif
};

/* Serving, and not building: opening and removing files fail (EACCES),
 * nothing in the jail is there for that. */
static const struct rule serve_only_rules[] = {
    DENY("open", EACCES),
    DENY("openat", EACCES),
    DENY("unlink", EACCES),
    DENY("unlinkat", EACCES),
};

/* Serving with a file server: opening and removing by descriptor are its
 * (file_server_rules); by path they still fail. */
static const struct rule serve_only_fs_rules[] = {
    DENY("open", EACCES),
    DENY("unlink", EACCES),
};

/* A file server (virtio-fs shares, when the VM has them), while building
 * and serving: what it does to the shared files, each by a descriptor it
 * holds or through /proc/self/fd (jail.h), the locks the guest takes (open
 * file description locks), its workers' own fsgid and umask. */
static const struct rule file_server_rules[] = {
    ANY("openat"),
    ANY("unlinkat"),
    ANY("mkdirat"),
    ANY("mknodat"),
    ANY("symlinkat"),
    ANY("linkat"),
    ANY("renameat2"),
    ANY("readlinkat"),
    ANY("fchownat"),
    ANY("fchown"),
    ANY("chmod"),
    ANY("fchmod"),
    ANY("utimensat"),
    ANY("getdents64"),
    ANY("fstatfs"),
    ANY("syncfs"),
    ANY("getxattr"),
    ANY("setxattr"),
    ANY("listxattr"),
    ANY("removexattr"),
    ANY("fsetxattr"),
    ANY("fremovexattr"),
    ANY("name_to_handle_at"),
    ANY("open_by_handle_at"),
    IF1("fcntl", EQ(1, F_OFD_GETLK)),
    IF1("fcntl", EQ(1, F_OFD_SETLK)),
    ANY("setfsgid"),
    IF1("unshare", EQ(0, CLONE_FS)),
    ANY("umask"),
};

/* A file server, while building: each of its threads taking the jail's
 * ids for itself, keeping the server's capabilities (jail_fs_thread(); the
 * ids' calls are build_rules'). */
static const struct rule file_server_build_rules[] = {
    IF2("prctl", EQ(0, PR_SET_KEEPCAPS), EQ(1, 1)),
    ANY("capset"),
};

/* A monitor's disk I/O, and a checkpoint written into files it was given
 * (sized, emptied and filled by copy between two fds it holds). */
static const struct rule monitor_serve_rules[] = {
    ANY("preadv"),
    ANY("pwritev"),
    ANY("preadv2"),
    ANY("pwritev2"),
    ANY("fsync"),
    ANY("fdatasync"),
    ANY("fallocate"),
    ANY("sync_file_range"),
    ANY("copy_file_range"),
    ANY("ftruncate"),
    ANY("flock"),
    /* The create guard (create-guard.h), forked before the jail, is the
     * monitor's one child: reaped once create has an outcome. */
    ANY("wait4"),
    /* Each vCPU thread's own filter (flags 0: no TSYNC, no listener). */
    IF2("seccomp", EQ(0, SECCOMP_SET_MODE_FILTER), EQ(1, 0)),
};

/* Building the VM, then leaving root: files opened in the jail, the vsock
 * listener made, threads named; the ids, and the next filter. */
static const struct rule build_rules[] = {
    ANY("open"),
    ANY("openat"),
    ANY("unlink"),
    ANY("unlinkat"),
    ANY("bind"),
    ANY("listen"),
    ANY("access"),
    ANY("faccessat"),
    ANY("faccessat2"),
    ANY("readlink"),
    ANY("epoll_create1"),
    ANY("timerfd_create"),
    ANY("signalfd4"),
    IF1("setgroups", EQ(0, 0)),
    IF3("setresgid", GID(0), GID(1), GID(2)),
    IF3("setresuid", UID(0), UID(1), UID(2)),
    IF2("prctl", EQ(0, PR_SET_DUMPABLE), EQ(1, 0)),
    IF2("seccomp", EQ(0, SECCOMP_SET_MODE_FILTER), EQ(1, SECCOMP_FILTER_FLAG_TSYNC)),
};

/* What a vCPU thread does: KVM_RUN and the exits it handles (MMIO and
 * port I/O to the devices, whose activation at DRIVER_OK starts vhost and
 * sets the TAP's header size and offloads), its own registers for crash
 * reports and RIP samples, interrupts, waking the event loop, logging. */
static const unsigned long vcpu_ioctls[] = {
    KVM_RUN,
    KVM_GET_REGS,
    KVM_GET_SREGS,
    KVM_IRQ_LINE,
    TUNGETVNETHDRSZ,
    TUNSETVNETHDRSZ,
    TUNSETOFFLOAD,
    TUNSETQUEUE,
    VHOST_SET_FEATURES,
    VHOST_SET_MEM_TABLE,
    VHOST_SET_VRING_NUM,
    VHOST_SET_VRING_ADDR,
    VHOST_SET_VRING_BASE,
    VHOST_SET_VRING_KICK,
    VHOST_SET_VRING_CALL,
    VHOST_NET_SET_BACKEND,
};

static const struct rule vcpu_rules[] = {
    ANY("epoll_ctl"),
#if KVRUN_PHASE_MARKS
    /* Measurement builds only: KVM's statistics read at a phase mark. */
    ANY("pread64"),
#endif
};

/* A terminal: its attributes (raw mode set and restored) and size. Never
 * TIOCSTI or anything else of the 'T' family. */
static const unsigned long tty_ioctls[] = {TCGETS, TCSETS, TCSETSW, TCSETSF, TIOCGWINSZ};

/* A monitor serving: the vCPUs' set, a checkpoint (every state the VM and
 * its vCPUs save, the disk cloned into the given file), the devices torn
 * down at the end, KVM's read-only statistics of its own VM and vCPUs
 * (`kvrun events --stats`). */
static const unsigned long monitor_serve_ioctls[] = {
    KVM_CHECK_EXTENSION, KVM_GET_MSR_INDEX_LIST, KVM_GET_MSRS,    KVM_GET_LAPIC, KVM_GET_VCPU_EVENTS,
    KVM_GET_DEBUGREGS,   KVM_GET_MP_STATE,       KVM_GET_FPU,     KVM_GET_XSAVE, KVM_GET_XSAVE2,
    KVM_GET_XCRS,        KVM_GET_CLOCK,          KVM_GET_IRQCHIP, KVM_GET_PIT2,  KVM_IRQFD,
    KVM_IOEVENTFD,       KVM_GET_STATS_FD,       FICLONE,
};

/* Building the VM: creating it and its vCPUs, loading a snapshot's state,
 * the disks' sizes, the TAPs' and vhost's setup. */
static const unsigned long monitor_build_ioctls[] = {
    KVM_GET_API_VERSION,    KVM_CREATE_VM,
    KVM_GET_VCPU_MMAP_SIZE, KVM_GET_SUPPORTED_CPUID,
    KVM_CREATE_VCPU,        KVM_SET_USER_MEMORY_REGION,
    KVM_CREATE_IRQCHIP,     KVM_CREATE_PIT2,
    KVM_SET_TSS_ADDR,       KVM_SET_IDENTITY_MAP_ADDR,
    KVM_SET_CPUID2,         KVM_SET_MSRS,
    KVM_SET_LAPIC,          KVM_SET_FPU,
    KVM_SET_XSAVE,          KVM_SET_REGS,
    KVM_SET_SREGS,          KVM_SET_XCRS,
    KVM_SET_VCPU_EVENTS,    KVM_SET_MP_STATE,
    KVM_SET_DEBUGREGS,      KVM_SET_CLOCK,
    KVM_SET_IRQCHIP,        KVM_SET_PIT2,
    BLKGETSIZE64,           TUNSETVNETHDRSZ,
    TUNGETVNETHDRSZ,        VHOST_SET_OWNER,
    VHOST_GET_FEATURES,
};

struct table {
	const struct rule *rules;
	size_t n;
};

struct ioctls {
	const unsigned long *req;
	size_t n;
};

#define TABLE(t)                 \
	{                        \
		t, ARRAY_SIZE(t) \
	}

static int add_rule(scmp_filter_ctx ctx, const struct jail *j, const struct rule *r)
{
	struct scmp_arg_cmp c[3];
	uint32_t action = r->err ? SCMP_ACT_ERRNO((uint32_t)r->err) : SCMP_ACT_ALLOW;
	int nr = seccomp_syscall_resolve_name(r->name), q;

	if (nr == __NR_SCMP_ERROR)
		return 0; /* not on this architecture */
	for (unsigned int i = 0; i < r->ncmp; i++) {
		const struct cmp *m = &r->cmp[i];
		uint64_t v = m->kind == CMP_SELF  ? (uint64_t)j->pid
		             : m->kind == CMP_UID ? (uint64_t)j->uid
		             : m->kind == CMP_GID ? (uint64_t)j->gid
		                                  : m->value;

		c[i] = m->kind == CMP_MASKED ? (struct scmp_arg_cmp){m->arg, SCMP_CMP_MASKED_EQ, m->mask, v}
		                             : (struct scmp_arg_cmp){m->arg, SCMP_CMP_EQ, v, 0};
	}
	q = seccomp_rule_add_array(ctx, action, nr, r->ncmp, c);
	return q < 0 ? err_setsys(q, "seccomp: %s", r->name) : 0;
}

static int add_table(scmp_filter_ctx ctx, const struct jail *j, struct table t)
{
	for (size_t i = 0; i < t.n; i++) {
		int r = add_rule(ctx, j, &t.rules[i]);

		if (r < 0)
			return r;
	}
	return 0;
}

static int add_ioctls(scmp_filter_ctx ctx, struct ioctls t)
{
	for (size_t i = 0; i < t.n; i++) {
		int r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1, SCMP_A1(SCMP_CMP_EQ, t.req[i]));

		if (r < 0)
			return err_setsys(r, "seccomp: ioctl 0x%lx", t.req[i]);
	}
	return 0;
}

/* The tables filter f of j is made of. */
static int add_all(scmp_filter_ctx ctx, const struct jail *j, enum jail_filter f)
{
	bool monitor = j->profile == JAIL_MONITOR;
	struct table t[6] = {TABLE(common_rules)}, serve_only = TABLE(serve_only_rules);
	struct ioctls io[4] = {{0}};
	int r = 0;

	if (f == JAIL_FILTER_VCPU) {
		t[1] = (struct table)TABLE(vcpu_rules);
		io[0] = (struct ioctls)TABLE(vcpu_ioctls);
	} else {
		t[1] = (struct table)TABLE(serve_rules);
		io[0] = (struct ioctls)TABLE(tty_ioctls);
		if (monitor) {
			t[2] = (struct table)TABLE(monitor_serve_rules);
			io[1] = (struct ioctls)TABLE(vcpu_ioctls);
			io[2] = (struct ioctls)TABLE(monitor_serve_ioctls);
		}
		if (monitor && j->file_server) {
			t[4] = (struct table)TABLE(file_server_rules);
			serve_only = (struct table)TABLE(serve_only_fs_rules);
			if (f == JAIL_FILTER_BUILD)
				t[5] = (struct table)TABLE(file_server_build_rules);
		}
		t[3] = f == JAIL_FILTER_BUILD ? (struct table)TABLE(build_rules) : serve_only;
		if (f == JAIL_FILTER_BUILD && monitor)
			io[3] = (struct ioctls)TABLE(monitor_build_ioctls);
	}
	for (size_t i = 0; r >= 0 && i < ARRAY_SIZE(t); i++)
		r = add_table(ctx, j, t[i]);
	for (size_t i = 0; r >= 0 && i < ARRAY_SIZE(io); i++)
		r = add_ioctls(ctx, io[i]);
	return r;
}

/* The program libseccomp made of ctx, copied out (through a memfd: this
 * libseccomp exports only to a file descriptor). */
static int export(scmp_filter_ctx ctx, struct sock_fprog *ret)
{
	_cleanup_close_ int fd = memfd_create("kvrun-seccomp", MFD_CLOEXEC);
	struct sock_filter *prog;
	off_t size;
	int r;

	if (fd < 0)
		return err_setsys(-errno, "seccomp: memfd");
	r = seccomp_export_bpf(ctx, fd);
	if (r < 0)
		return err_setsys(r, "seccomp: export the filter");
	size = lseek(fd, 0, SEEK_END);
	if (size <= 0 || size % sizeof(*prog) || size / sizeof(*prog) > BPF_MAXINSNS)
		return err_set(-EINVAL, "seccomp: a filter of %lld bytes", (long long)size);
	prog = malloc((size_t)size);
	if (!prog)
		return -ENOMEM;
	if (pread(fd, prog, (size_t)size, 0) != size) {
		free(prog);
		return err_setsys(-EIO, "seccomp: read the filter back");
	}
	*ret = (struct sock_fprog){.len = (unsigned short)(size / sizeof(*prog)), .filter = prog};
	return 0;
}

int jail_filter_compile(struct jail *j, enum jail_filter f)
{
	/* Log-only (debugging): what the filter lacks is logged, not fatal. */
	uint32_t def = j->log_only ? SCMP_ACT_LOG : SCMP_ACT_KILL_PROCESS;
	scmp_filter_ctx ctx = seccomp_init(def);
	int r;

	if (!ctx)
		return err_set(-ENOMEM, "seccomp_init");
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	/* no_new_privs is the jail's own step; the export does not carry it. */
	if (r >= 0)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	if (r < 0)
		r = err_setsys(r, "seccomp: attributes");
	/* A binary tree of the syscall numbers, not a list (best effort). */
	(void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (r >= 0)
		r = add_all(ctx, j, f);
	if (r >= 0)
		r = export(ctx, &j->filters[f]);
	seccomp_release(ctx);
	return r;
}

int jail_filter_load(const struct jail *j, enum jail_filter f, bool tsync)
{
	long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, tsync ? SECCOMP_FILTER_FLAG_TSYNC : 0, &j->filters[f]);

	if (r < 0)
		return -errno;
	/* With TSYNC, a positive value is a thread that could not follow. */
	if (r > 0)
		return err_set(-EBUSY, "seccomp: thread %ld could not take the filter", r);
	return 0;
}
