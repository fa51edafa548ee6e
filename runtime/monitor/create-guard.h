/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The create guard: a small process the monitor forks while it still holds
 * its privileges (before the jail drops them), which lives until `create`
 * has an outcome. Its one job: when the process that ran `create` died
 * before create finished, remove what the container holds on the host,
 * which nobody else would (that process would have; a `delete` need not
 * come): the network namespace's changes (TAPs, tc redirects, the moved
 * addresses and routes), which only a privileged process can give back,
 * the cgroup and the state directory (teardown.h).
 *
 * The monitor tells it one verdict and waits for its exit:
 *   keep   the outcome reached a creator that is alive (it removes a
 *          failed container itself): nothing to do;
 *   clean  the creator is gone: the monitor has ended the VM, left its
 *          cgroup and released the lock; remove the rest.
 * A monitor that dies without a verdict leaves the guard to look at the
 * creator (the state names it): alive, it removes the container itself
 * (it reads the monitor's end); gone, the guard does. The guard removes
 * only the directory it was forked for (a new container may have taken
 * the id), under the container's lock.
 */
#ifndef KVRUN_RUNTIME_MONITOR_CREATE_GUARD_H
#define KVRUN_RUNTIME_MONITOR_CREATE_GUARD_H

#include <stdbool.h>
#include <sys/types.h>

#include "runtime/store/state.h"

struct create_guard {
	pid_t pid; /* 0: none */
	int fd; /* the verdict's pipe, or -1 */
};

/* Fork the guard of container c (locked by our creator and us; the guard
 * does not keep the lock). It closes close_fds[0..n) too (what must reach
 * EOF when the monitor ends: the creator's pipe), and its fds 0-2 go to
 * /dev/null. 0, or a negative errno with err_set() (then g->pid is 0). */
int create_guard_start(const struct container *c, const int *close_fds, size_t n, struct create_guard *g);

/* Give the guard its verdict and wait for it to exit. Without a guard
 * (g->pid 0), nothing. */
void create_guard_end(struct create_guard *g, bool clean);

#endif
