/* SPDX-License-Identifier: Apache-2.0 */
/* What jail.c, jail-mount.c and jail-seccomp.c share (jail.h). */
#ifndef KVRUN_RUNTIME_JAIL_INT_H
#define KVRUN_RUNTIME_JAIL_INT_H

#include <linux/filter.h>
#include <stdbool.h>
#include <sys/types.h>

#include "runtime/host/jail.h"

/* The filters of a jail, in the order they are loaded. */
enum jail_filter {
	JAIL_FILTER_BUILD, /* jail_begin(): the process, while the VM is built */
	JAIL_FILTER_SERVE, /* jail_finish(): every thread, while serving */
	JAIL_FILTER_VCPU, /* jail_vcpu_thread(): each vCPU thread (monitor only) */
	JAIL_NR_FILTERS,
};

struct jail {
	enum jail_profile profile;
	uid_t uid;
	gid_t gid;
	pid_t pid; /* the jailed process: the only one its signals may reach */
	bool log_only; /* $KVRUN_JAIL=log: the filters' default logs and allows */
	bool seal_state_dir; /* JAIL_STATE_DIR goes read-only at jail_begin() */
	bool file_server; /* keeps JAIL_FS_CAPS and the file server's calls */
	bool begun, finished;
	struct sock_fprog filters[JAIL_NR_FILTERS]; /* compiled by jail_begin() */
};

/* $KVRUN_JAIL is "log". */
bool jail_log_only(void);

/* Compile filter f of j into j->filters[f] (a BPF program, malloc'd). */
int jail_filter_compile(struct jail *j, enum jail_filter f);

/* Load j->filters[f] on the calling thread, or with tsync on every
 * thread of the process. */
int jail_filter_load(const struct jail *j, enum jail_filter f, bool tsync);

#endif
