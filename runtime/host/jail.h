/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The monitor's own sandbox (Firecracker's jailer as the model): once a
 * VM monitor or an exec proxy has done everything that needs privilege
 * (cgroup, hooks, opening /dev/kvm, TAPs and sockets), it drops every
 * capability, sets no_new_privs and installs a seccomp allowlist of the
 * system calls it makes while serving.
 *
 * A call outside the allowlist fails with EPERM (the process keeps
 * running and reports the failure as any other error) and is logged by
 * the kernel's audit (type=1326 SECCOMP records in dmesg or audit.log,
 * naming the pid, the executable and the syscall number), since the
 * filter is installed with SECCOMP_FILTER_FLAG_LOG.
 *
 * $KVRUN_JAIL=0 (or "off") turns all of it off, for debugging; the
 * monitor logs which it did.
 */
#ifndef KVRUN_RUNTIME_JAIL_H
#define KVRUN_RUNTIME_JAIL_H

#include <linux/capability.h>
#include <stdbool.h>
#include <stdint.h>

enum jail_profile {
	JAIL_PROXY, /* exec proxy: sockets, its stdio or pty, signals */
	JAIL_MONITOR, /* the proxy's set plus KVM, vhost, TAP, disk I/O */
	JAIL_MONITOR_FS, /* the monitor's set plus a file server's (virtio-fs shares) */
};

/* The capabilities a monitor serving shared directories keeps
 * (jail_drop_caps_except()): its file server makes files for the guest's
 * users (CHOWN, FOWNER, FSETID, SETGID for setfsgid, SETFCAP for file
 * capabilities), reaches every file the guest may (DAC_OVERRIDE) and
 * reopens evicted inodes by handle (DAC_READ_SEARCH). */
#define JAIL_FS_CAPS                                                                                               \
	((1ULL << CAP_CHOWN) | (1ULL << CAP_DAC_OVERRIDE) | (1ULL << CAP_DAC_READ_SEARCH) | (1ULL << CAP_FOWNER) | \
	 (1ULL << CAP_FSETID) | (1ULL << CAP_SETGID) | (1ULL << CAP_SETFCAP))

/* False when $KVRUN_JAIL is "0" or "off". */
bool jail_enabled(void);

/* Drop every capability of the calling thread: effective, permitted,
 * inheritable, ambient and the bounding set. Threads created afterwards
 * inherit the empty sets, so call it before the first thread. */
int jail_drop_caps(void);

/* The same, but the capabilities in keep (a mask of 1 << CAP_*) stay
 * permitted and effective (the bounding set is emptied all the same). */
int jail_drop_caps_except(uint64_t keep);

/* Set no_new_privs and load the allowlist of profile p on every thread
 * of the process (SECCOMP_FILTER_FLAG_TSYNC). */
int jail_seccomp(enum jail_profile p);

/* jail_drop_caps() and jail_seccomp() in one, for processes whose
 * threads all hold nothing privileged. */
int jail_enter(enum jail_profile p);

#endif
