/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The jail of a VM monitor and of an exec proxy (Firecracker's jailer as
 * the model; docs/security.md has the threat model and each thread's
 * profile). In three steps, all before the guest's first instruction:
 *
 *   jail_mount()  while single-threaded and privileged: a network
 *                 namespace (the container's, or a new empty one), a
 *                 mount namespace pivoted into a tmpfs that holds only what
 *                 the VM needs (its state directory at JAIL_STATE_DIR,
 *                 its images bound read-only at their own paths,
 *                 /dev/kvm and /dev/vhost-net), no /proc;
 *   jail_begin()  the state directory sealed (read-only but for the VM's
 *                 disk), every capability but CAP_SETUID/CAP_SETGID (and
 *                 a file server's, below) dropped (the bounding set
 *                 emptied), no_new_privs, not dumpable, and
 *                 the build filter: seccomp with SCMP_ACT_KILL_PROCESS as
 *                 the default, signals and rlimits only for the process
 *                 itself, no other process reachable. The VM is built under
 *                 it (files opened, snapshots parsed, threads created);
 *   jail_finish() the uid and gid of the jail (jail_ids_for()), which
 *                 clears the last capabilities of every thread, and the
 *                 serving filter on every thread (TSYNC). Each vCPU thread
 *                 adds the vCPU filter on itself (jail_vcpu_thread()).
 *
 * A jail with a file server (a VM with shared directories: virtio-fs, whose
 * FUSE passthrough server runs in the VMM) keeps what that server needs:
 * the capabilities of JAIL_FS_CAPS on the server's threads and on no
 * other, the file server's calls in the build and serving filters, and
 * /proc/self/fd (the process's own descriptors, through which the server
 * reaches the files it holds by descriptor). The thread that builds the VM
 * holds JAIL_FS_CAPS too (the threads it makes start with what it has);
 * each server thread, made while the VM is built, takes the jail's ids for
 * itself alone and keeps JAIL_FS_CAPS (jail_fs_thread()). The ids' change
 * of jail_finish() then clears every capability of every other thread
 * (the builder's, every thread it made: disk workers, and any other), and
 * every thread made after it (vCPUs, event loop) has none.
 *
 * Filters stack: a thread runs a call only when every filter it has allows
 * it, so each one narrows the one before. A call no filter allows kills
 * the process (SIGSYS); the kernel's audit logs it (type=1326 SECCOMP
 * records: pid, executable, syscall number).
 *
 * $KVRUN_JAIL=0 (or "off") turns all of it off, for debugging; "log" keeps
 * everything but makes the filters' default action log-and-allow, which
 * lists in the audit log what a workload needs that they lack.
 */
#ifndef KVRUN_RUNTIME_JAIL_H
#define KVRUN_RUNTIME_JAIL_H

#include <linux/capability.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Where the state directory is inside the jail: short, so that socket
 * paths below it always fit in sun_path (no /proc/self/fd detour, which
 * needs /proc). */
#define JAIL_STATE_DIR "/state"

/* The jail's uid and gid are base + the jailed process's pid (the
 * monitor's for its exec proxies): unique among live monitors without any
 * allocation, since pids are. The default base is in the range systemd
 * leaves unused (0x70000000-0x7ffdffff); $KVRUN_JAIL_UID_BASE or the config
 * file's "jail_uid_base" moves it. */
#define JAIL_UID_BASE_DEFAULT 0x71000000u
/* Pids go up to 2^22 (PID_MAX_LIMIT on 64-bit). */
#define JAIL_UID_RANGE (1u << 22)

enum jail_profile {
	JAIL_PROXY, /* exec proxy: its stdio or pty, control.sock, signals */
	JAIL_MONITOR, /* a VM: KVM, vhost, TAP, disks, vsock, control.sock */
};

/* The capabilities a jail with a file server keeps (jail_config's
 * file_server), a mask of 1 << CAP_*: the server makes files for the
 * guest's users and gives them their owners (CHOWN, FOWNER, FSETID, and
 * SETGID for each request's fsgid, SETFCAP for file capabilities),
 * reaches every file the guest may (DAC_OVERRIDE) and reopens evicted
 * inodes by handle (DAC_READ_SEARCH). Not CAP_MKNOD: device nodes are
 * regular files with an attribute on the host. */
#define JAIL_FS_CAPS                                                                                               \
	((1ULL << CAP_CHOWN) | (1ULL << CAP_DAC_OVERRIDE) | (1ULL << CAP_DAC_READ_SEARCH) | (1ULL << CAP_FOWNER) | \
	 (1ULL << CAP_FSETID) | (1ULL << CAP_SETGID) | (1ULL << CAP_SETFCAP))

/* What jail_mount() puts in the jail besides the state directory. */
#define JAIL_MAX_BINDS 16

struct jail_bind {
	const char *path; /* absolute; bound at the same path in the jail */
	bool writable;
};

enum jail_net {
	JAIL_NET_NEW, /* a new network namespace with nothing in it */
	JAIL_NET_KEEP, /* the one the process is in (its own already) */
	JAIL_NET_JOIN, /* the one at netns_path */
};

/* Files of the state directory that stay writable once it is sealed. */
#define JAIL_MAX_STATE_FILES 2

struct jail_config {
	enum jail_profile profile;
	uid_t uid;
	gid_t gid;
	/* A host directory bound at JAIL_STATE_DIR, or NULL. Writable until
	 * jail_begin() (the sockets the jail serves are made there), then
	 * sealed: read-only but for state_files (the names of files in it,
	 * each bound writable on its own), so that nothing that runs in the
	 * jail can touch the rest (state.json, whose bundle path names the
	 * hooks `delete` runs). state_dir_writable leaves it writable
	 * throughout (`kvrun boot`, whose vsock device makes its socket there
	 * while the VM is built). */
	const char *state_dir;
	bool state_dir_writable;
	const char *state_files[JAIL_MAX_STATE_FILES];
	struct jail_bind binds[JAIL_MAX_BINDS];
	unsigned int nbinds;
	bool devices; /* /dev/kvm, and /dev/vhost-net when the host has it */
	enum jail_net net;
	const char *netns_path; /* JAIL_NET_JOIN */
	/* The process serves shared directories (JAIL_MONITOR only): see
	 * above. Their directories are opened before jail_mount(). */
	bool file_server;
};

/* A jail being entered; opaque. */
struct jail;

/* False when $KVRUN_JAIL is "0" or "off". */
bool jail_enabled(void);

/* $KVRUN_JAIL_UID_BASE, else JAIL_UID_BASE_DEFAULT; -EINVAL (with a
 * message) when it is not a number leaving the whole range between 65536
 * and 2^31 - 1. */
int jail_uid_base(unsigned long *ret);
/* Check a base from elsewhere (the config file) the same way. */
int jail_uid_base_check(unsigned long base, const char *what);

/* The uid and gid of the jail of process pid. */
void jail_ids_for(unsigned long base, pid_t pid, uid_t *ret_uid, gid_t *ret_gid);

/* Add path to c's binds; -ENOSPC past JAIL_MAX_BINDS. NULL is ignored. */
int jail_config_bind(struct jail_config *c, const char *path, bool writable);

/* Make the jail of c and move the calling process into it: the network
 * namespace, then the mount namespace pivoted into its tmpfs (the paths
 * bound must exist; nothing of the host is visible afterwards, /proc
 * included). Needs root and a process with one thread (namespaces are
 * per thread: threads made before would stay outside). *ret is freed with
 * jail_free(). */
int jail_mount(const struct jail_config *c, struct jail **ret);

/* The build filter and everything before it (see above). The filters of
 * every step are compiled here. */
int jail_begin(struct jail *j);

/* The uid and gid, and the serving filter on every thread: a thread still
 * doing what only the build filter allows (vm_memslots_wait() first) would
 * be killed. */
int jail_finish(struct jail *j);

/* Each vCPU thread, before its first KVM_RUN: the vCPU filter on itself.
 * opaque is the struct jail. 0 or a negative errno. */
int jail_vcpu_thread(void *opaque);

/* Each file server thread (a share's worker: fs_server_opts' thread_init),
 * first, between jail_begin() and jail_finish() (the caller waits for it):
 * the jail's uid, gid and no supplementary group on this thread alone,
 * with JAIL_FS_CAPS and no other capability, which the change of ids in
 * jail_finish() leaves it. The threads it makes start with the same.
 * opaque is the struct jail of a file server. 0 or a negative errno. */
int jail_fs_thread(void *opaque);

/* The uid the jail runs as. */
uid_t jail_uid(const struct jail *j);

/* Free what jail_mount() allocated (the jail itself stays). NULL is fine. */
void jail_free(struct jail *j);

/* Make path (a socket the jailed process must reach, created before the
 * uid changed) owned by uid:gid and mode 0600. */
int jail_own_path(const char *path, uid_t uid, gid_t gid);

#endif
