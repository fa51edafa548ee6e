/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bringing a container up and down around its monitor: what create, run,
 * start, kill and delete share.
 */
#ifndef KVRUN_RUNTIME_LAUNCH_H
#define KVRUN_RUNTIME_LAUNCH_H

#include <stdbool.h>
#include <sys/types.h>

#include "runtime/cli/create.h"
#include "runtime/store/pod.h"
#include "runtime/store/state.h"

/* Create container id from b: check what the VM cannot do, find the kernel
 * and initramfs, claim the state directory, build the root disk, fork the
 * monitor (in its own session; it keeps our stdio) and wait until it
 * reports the container created. On failure nothing is left: no monitor,
 * no state directory. *ret_pid is the monitor's pid (our child). */
int launch_container(struct cli_context *ctx, const char *id, const struct create_opts *o, const struct bundle *b,
                     pid_t *ret_pid);

/* Remove container c (its lock held; c is freed) after a failed create or
 * the end of `run`: its state is read again (the monitor records its
 * cgroup there), then teardown_container() without poststop hooks: the
 * cgroup, the network namespace's interfaces, the state directory. */
int launch_destroy(struct container *c);

#endif
