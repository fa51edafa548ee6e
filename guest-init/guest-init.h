/* SPDX-License-Identifier: Apache-2.0 */
/*
 * guest-init's library: everything PID 1 of the VM does to turn a START
 * message into a running container process. Kept apart from main.c so the
 * host can test the spec application in throwaway namespaces.
 *
 * All functions return >= 0 or a negative errno and record context with
 * err_set(); none of them exits, except gi_child_exec(), which never
 * returns.
 */
#ifndef KVRUN_GUEST_INIT_H
#define KVRUN_GUEST_INIT_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "common/protocol.h"

/* Where PID 1 keeps its things in the guest. */
#define GI_ROOTFS_DIR "/run/kvrun/rootfs"
#define GI_FILES_DIR "/run/kvrun/files"
/* Where each shared host directory's tag is mounted once (virtio-fs),
 * for the container's bind mounts to be made from. */
#define GI_SHARES_DIR "/run/kvrun/shares"
#define GI_CGROUP_DIR "/sys/fs/cgroup/kvrun"
/* A pod member n's root and staged files: <dir>/<n>/rootfs, <dir>/<n>/files
 * (its cgroup: GI_CGROUP_DIR "-<n>"). */
#define GI_MEMBERS_DIR "/run/kvrun/members"
/* The pod's /dev/shm (PROTO_POD_SHM_SOURCE), when its sandbox has one. */
#define GI_POD_SHM_DIR "/run/kvrun/pod-shm"
#define GI_MODULES_DIR "/lib/modules/kvrun"
#define GI_MODULES_LIST "/lib/modules/kvrun/load-order"

/* ---- mounts.c: root disk and the container's mounts ---- */

/* Mount s->root_device (type s->root_fstype, read-only when
 * s->root_readonly) at target, creating target. A virtio-fs root
 * ("virtiofs", root_device its tag) is mounted read-write: the container's
 * mount points are made in it, and gi_rootfs_finalize() makes it
 * read-only. */
int gi_mount_root_disk(const struct proto_start *s, const char *target);

/* Mount each virtio-fs tag the mounts of s name (once) at dir/<tag>, in
 * guest-init's own mount namespace: the container's bind mounts are made
 * from there (of the whole share, or of one entry of its root), and the
 * container, whose root is pivoted, sees none of them. A tag whose
 * directory is a mount already (an earlier container of the pod named it)
 * is left as it is. */
int gi_mount_shares(const struct proto_start *s, const char *dir);

/* Parse OCI mount options into mount(2) flags, propagation flags and the
 * remaining comma-joined data string (*ret_data malloc'd, may be ""). */
int gi_mount_options(char *const *options, unsigned long *ret_flags, unsigned long *ret_propagation, char **ret_data);

/* Apply the spec's mounts under rootfs (which must already be a mount
 * point, in a private mount namespace), then the default /dev contents.
 * Files carried inline are written below files_dir and bind-mounted. */
int gi_rootfs_mounts(const struct proto_start *s, const char *rootfs, const char *files_dir);
/* The pod's /dev/shm: where it is mounted (NULL: none; set by gi_serve()
 * from the server's pod_shm_dir), and gi_pod_shm_setup() mounting it for
 * the sandbox's START: a tmpfs with the options of its
 * PROTO_POD_SHM_SOURCE mount at /dev/shm. gi_rootfs_mounts() binds it at
 * such a mount once it is there, else mounts a tmpfs of the container's
 * own. Best effort: a failure is logged. */
extern const char *gi_pod_shm_dir;
void gi_pod_shm_setup(const struct proto_start *s);
bool gi_pod_shm_ready(void);

/* pivot_root into rootfs and detach the old root. */
int gi_rootfs_pivot(const char *rootfs);

/* After the pivot: maskedPaths, readonlyPaths, then root.readonly. */
int gi_rootfs_finalize(const struct proto_start *s);

/* Run the whole rootfs sequence: make the mount tree private (or as
 * s->rootfs_propagation says), bind rootfs onto itself, mounts, pivot,
 * hostname/domainname, sysctl, finalize. Needs new mount and UTS
 * namespaces. */
int gi_rootfs_setup(const struct proto_start *s, const char *rootfs, const char *files_dir);

/* ---- sysctl.c: hostname, domainname, sysctl ---- */

int gi_set_names(const struct proto_start *s);
/* Write each key (dots become slashes) under /proc/sys. */
int gi_apply_sysctl(const struct proto_start *s);

/* ---- passwd.c: users and groups from the container's files ---- */

struct gi_user {
	uid_t uid;
	gid_t gid;
	char *name; /* NULL when the uid has no passwd entry */
	char *home; /* "/" when unknown */
	gid_t *sgids; /* supplementary groups from /etc/group membership */
	size_t n_sgids;
};

/* Resolve p->user ("name|uid[:group|gid]") or else p->uid/p->gid against
 * passwd/group files (either may be missing, as in runc). */
int gi_user_resolve(const struct proto_process *p, const char *passwd_path, const char *group_path,
                    struct gi_user *ret);
void gi_user_free(struct gi_user *u);

/* ---- process.c and seccomp.c: from a set-up rootfs to execve ---- */

/* Load the seccomp filter described by sc (NULL: none). */
int gi_seccomp_load(const struct proto_seccomp *sc);

/* vsock-filter.c: a seccomp filter, stacked with any other, that makes
 * socket(AF_VSOCK, ...) fail with EPERM for this process and everything it
 * starts. Needs CAP_SYS_ADMIN or no_new_privs. */
int gi_deny_vsock(void);

/* What is left to do once the process is prepared: execve(path, args,
 * env). code is the exit status a failed preparation means (127: the
 * executable is not there, 126: it cannot be run, 1: anything else). */
struct gi_exec {
	char path[PATH_MAX];
	char **env; /* the spec's strings, plus home */
	char *home; /* "HOME=..." added from the passwd entry, or NULL */
	int code;
};

/* Everything runc's init does before it waits for `start`, in its order:
 * rlimits, oom_score_adj, seccomp (without no_new_privs), the cwd (tried
 * as root first, again as the user when refused), bounding set, user and
 * groups, capability sets (ambient included), umask, HOME, the lookup of
 * args[0] (Go's exec.LookPath in the process's $PATH, then access(X_OK))
 * and no_new_privs with its seccomp. Runs in the child. Failures carry
 * runc's wording: `exec: "/nope": stat /nope: no such file or directory`,
 * `exec: "nope": executable file not found in $PATH`, `exec: "/etc":
 * permission denied`, `chdir to cwd ("/x") set in config.json failed: ...`.
 * limits_set: PID 1 has set the rlimits and oom_score_adj already (a user
 * namespace, where the process itself may not). Release ret with
 * gi_exec_free() when not exec'ing. */
int gi_child_prepare(const struct proto_process *p, const struct proto_seccomp *sc, bool limits_set,
                     struct gi_exec *ret);
void gi_exec_free(struct gi_exec *e);

/* execve(e->path). A failure can only be told the way runc's init tells
 * it once `start` has returned: "exec <path>: <Go's errno text>" on the
 * process's stderr, exit status 1 (e.g. a script whose interpreter is
 * missing: "exec /run.sh: no such file or directory"). */
_Noreturn void gi_child_exec(const struct proto_process *p, struct gi_exec *e);

/* strerror(errnum) as Go prints it ("no such file or directory"), in buf. */
const char *gi_go_strerror(int errnum, char *buf, size_t size);

/* Map "RLIMIT_NOFILE" to its number, -EINVAL when unknown. */
int gi_rlimit_from_name(const char *name);

/* ---- hooks.c ---- */

/* Run hooks[0..n) in order with state on stdin; the first failure (exit
 * status, timeout) stops and is returned as "error running <kind> hook #i". */
int gi_run_hooks(const struct proto_hook *hooks, size_t n, const char *kind, const char *state);

/* ---- container.c: fork the container process ---- */

struct gi_spawn {
	const struct proto_start *start; /* START, or NULL for EXEC */
	const struct proto_start *container; /* the container's START (both); may be NULL */
	const struct proto_process *process; /* what to exec */
	const struct proto_seccomp *seccomp; /* container's filter, may be NULL */
	const char *rootfs; /* START: the mounted disk */
	const char *files_dir; /* START: staging for copied-in files */
	pid_t join_pid; /* EXEC: the container init to join (0 for START) */
	/* START of a pod member: the init of the pod's first container, whose
	 * IPC and UTS namespaces the child joins (and its pid namespace
	 * without new_pidns); 0: none (the first or only container). */
	pid_t pod_pid;
	const char *cgroup_dir; /* cgroup to place the child in, NULL = none */
	bool cgroup_required; /* failing to place it there is an error (limits, device filter) */
	bool new_pidns; /* START: CLONE_NEWPID as well */
	bool allow_vsock; /* the config allows AF_VSOCK sockets (else gi_deny_vsock()) */
	int stdio[3]; /* fds the child gets as 0,1,2 (-1: /dev/null); unused with a terminal */
	const int *extra; /* fds the child gets as 3, 4, ... (preserved fds' streams) */
	size_t n_extra;
};

struct gi_child {
	pid_t pid;
	int sync_fd; /* parent's end of the sync socket; -1 once exec'd */
	int pty_master; /* terminal only, received from the child */
};

/* Fork the child (in new namespaces for START, joined ones for EXEC) and
 * run the setup up to the point where it waits for go. Returns once the
 * child reported "ready" (and sent its pty master when p->terminal); on a
 * setup failure returns the negative errno with the child's message in
 * err_msg() and *ret->pid still set to the (exiting) child, to be reaped. */
int gi_spawn(const struct gi_spawn *sp, struct gi_child *ret);

/* Tell a ready child to go on. Returns 0 once it took "go": what is left
 * (startContainer hooks, execve) reports its failures on the process's
 * stderr with exit status 1, as under runc. Closes c->sync_fd. */
int gi_go(struct gi_child *c);

/* ---- userns.c: the container's user namespace ---- */

/* PID 1's part, between clone and the child's setup, when the container
 * has a user namespace (nothing otherwise): for START the uid and gid
 * maps, the staging directory owned by the namespace's root; for both,
 * the process's rlimits and oom_score_adj (they may need privilege over
 * the VM). */
int gi_userns_parent(const struct gi_spawn *sp, pid_t pid);
/* The child's part: become root of the new namespace (setresgid/uid 0). */
int gi_userns_become_root(void);

/* Signal every process in the pid namespace of init (kill --all). */
int gi_kill_container(pid_t init, int signo);
/* Signal every process (but the caller) whose namespace ns ("mnt") is
 * the one of device dev and inode ino (stat of /proc/PID/ns/<ns>). */
int gi_kill_ns(const char *ns, dev_t dev, ino_t ino, int signo);

/* ---- cgroup.c: the container's cgroup ---- */

/* Enable every controller root's cgroup.controllers lists for its
 * children, then make dir (the container's cgroup). Best effort. */
void gi_cgroup_init(const char *root, const char *dir);
/* Write START's cgroup values into cg (the container's cgroup), in order;
 * the first failure names its config.json field. */
int gi_cgroup_apply(const char *cg, const struct proto_start *s);
/* STATS: CPU, memory and pids counters of the cgroup cg (none when cg is
 * NULL; what cannot be read stays as it was) and the VM's memory. */
void gi_cgroup_stats(const char *cg, struct proto_stats *s);
/* Write v into the limit file of cg (0 is "max"). */
int gi_cgroup_set_limit(const char *cg, const char *file, uint64_t v);
/* cg's memory.events, open, with its counters read into *ret: an fd to
 * poll for POLLPRI (the kernel flags it whenever a counter moves), or -1
 * when there is none. */
int gi_oom_open(const char *cg, struct proto_oom *ret);
/* Read the OOM counters ("oom", "oom_kill") of memory.events again. */
int gi_oom_read(int fd, struct proto_oom *ret);
/* UPDATE's CPU limits of a pod member into cg: cpu.max (the quota or
 * period not given kept as the file has it), cpu.weight, cpuset.cpus.
 * The first failure is named (err_msg()). */
int gi_cgroup_set_cpu(const char *cg, const struct proto_update *u);
/* pause/resume: freeze (or thaw) cg through cgroup.freeze and wait up to
 * timeout_ms for cgroup.events to say "frozen 1" ("frozen 0"), as runc's
 * cgroup v2 manager does. A freeze that does not settle in time is undone
 * (-ETIMEDOUT); a kernel without cgroup.freeze (before 5.2) gives
 * -ENOTSUP. The error is named (err_msg()). */
int gi_cgroup_freeze(const char *cg, bool frozen, int timeout_ms);
/* Signal every process cgroup cg lists (cgroup.procs). Returns how many
 * were signalled. */
int gi_cgroup_signal(const char *cg, int signo);
/* Remove cgroup cg (a pod member's, once its init ended): what is left in
 * it is killed (cgroup.kill, or SIGKILL to each process), then rmdir,
 * tried again for up to timeout_ms while the dying processes leave. A
 * missing cgroup is removed already. */
int gi_cgroup_remove(const char *cg, int timeout_ms);

/* ---- ps.c: the container's processes ---- */

/* Every process of proc_dir ("/proc") in the pid namespace of init, with
 * the clock and memory their figures are measured against, into *ret (the
 * caller frees it with proto_msg_free of its message). */
int gi_ps_collect(const char *proc_dir, pid_t init, struct proto_ps *ret);

/* ---- devices.c: device nodes ---- */

/* Where the guest kernel lists its devices ("/sys/dev"; tests may point
 * it elsewhere). */
extern const char *gi_sysfs_dev;
/* The guest's node ("/dev/fuse") of a 'c' or 'b' device: 0, or -ENODEV
 * when the guest kernel has no such device. */
int gi_device_guest_node(uint32_t type, uint32_t major, uint32_t minor, char *out, size_t outlen);
/* runc's default nodes (null, zero, full, random, urandom, tty), then
 * s->devices, under rootfs/dev...: mknod, or with s->user_ns a bind of
 * the guest's node. A device the guest kernel lacks is refused naming
 * its linux.devices entry. */
int gi_devices_create(const struct proto_start *s, const char *rootfs);

/* ---- devfilter.c: the device cgroup filter ---- */

struct bpf_insn;
/* The BPF_PROG_TYPE_CGROUP_DEVICE program for START's device rules (see
 * struct proto_start). *ret is malloc'd. */
int gi_devfilter_build(const struct proto_start *s, struct bpf_insn **ret, size_t *ret_n);
/* Load it and attach it to cgroup_dir (nothing when s has no filter). */
int gi_devfilter_attach(const char *cgroup_dir, const struct proto_start *s);
/* Load the program of the default filter (proto_default_device_rules)
 * now, so that an attach of the same program needs no load (the kernel's
 * verifier, a large part of a container start where the guest kernel is
 * emulated). PID 1 does it before HELLO: a template has it loaded.
 * Nothing happens where it fails (the attach loads as before). */
void gi_devfilter_preload(void);

/* ---- restore.c: a VM restored from a template ---- */

/* Set the clock and seed the entropy pool from START's identity fields
 * (those present). Returns the last failure, or 0. */
int gi_apply_identity(const struct proto_start *s);

/* Measurement builds (meson option phase_marks): the step n (below 64)
 * of a container start or exec reached, written to the console as 0x1e,
 * 0x40 + n, where the monitor logs the vCPUs' counters instead
 * (docs/benchmarks.md). A no-op in other builds and until PID 1 opened
 * the console for it (gi_marks_open(); its children inherit the fd up to
 * their exec). */
void gi_marks_open(void);
void gi_mark(unsigned int n);

/* Wait until block device dev (a /dev path) has a non-zero size, up to
 * timeout_ms: a restored template's disk gets its media after the
 * restore. 0 at once when sysfs does not list dev; -ENOMEDIUM on timeout. */
int gi_wait_disk(const char *dev, int timeout_ms);

/* ---- modules.c ---- */

/* Load each module listed in list_path (one file name per line, relative to
 * dir, optional parameters after a space) with finit_module, in order.
 * A missing list is not an error. Returns the number loaded. */
int gi_load_modules(const char *dir, const char *list_path);

#endif
