/* SPDX-License-Identifier: Apache-2.0 */
/* What /proc/<pid>/stat says about a host process: enough to tell whether a
 * recorded pid is still the process we started (pids are reused). */
#ifndef KVRUN_RUNTIME_PROC_STAT_H
#define KVRUN_RUNTIME_PROC_STAT_H

#include <stdbool.h>
#include <sys/types.h>

struct proc_stat {
	char state; /* 'R', 'S', 'Z', ... */
	unsigned long long start_time; /* clock ticks after boot (field 22) */
};

/* Read /proc/<pid>/stat under proc_root ("/proc" unless testing). -ESRCH
 * when there is no such process; -EINVAL (err_msg set) if it is malformed. */
int proc_stat_read(const char *proc_root, pid_t pid, struct proc_stat *ret);

/* Parse the text of a stat file (the comm field may hold spaces and ')'). */
int proc_stat_parse(const char *text, struct proc_stat *ret);

/* Whether pid is alive, not a zombie, and (when start_time is not 0) started
 * at start_time: the test for "this is still our process". */
bool proc_is_alive(const char *proc_root, pid_t pid, unsigned long long start_time);

#endif
