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

/* launch-member.c: create app container id of pod (whose sandbox runs)
 * inside the sandbox's VM, with s its new state (taken, also on failure):
 * its member proxy forked, its process created and waiting for start.
 * *ret_pid is the proxy's pid (in the state and the pid file). */
int launch_member(struct cli_context *ctx, const char *id, const struct create_opts *o, const struct bundle *b,
                  const struct pod_ref *pod, struct oci_state *s, pid_t *ret_pid);

/* Whether c is an app container created in its sandbox's VM (1): its
 * sandbox (loaded without the lock, the caller's) and the guest pid of
 * its init. 0 when not; a negative errno when its sandbox is gone. */
int launch_member_of(const struct container *c, const char *root, struct container **ret_sandbox,
                     uint32_t *ret_guest_pid);

/* The same with the sandbox's state directory (malloc'd) only. */
int launch_member_sandbox(const struct container *c, const char *root, char **ret_dir, uint32_t *ret_guest_pid);

/* Remove container c (its lock held; c is freed) after a failed create or
 * the end of `run`: its state is read again (the monitor records its
 * cgroup there), then teardown_container() without poststop hooks: the
 * cgroup, the network namespace's interfaces, the state directory. */
int launch_destroy(struct container *c);

/* `start`: have the monitor of a created container exec its process, and
 * record it running. */
int launch_start(struct cli_context *ctx, const char *id);

/* Send signo to the container's process through its monitor (0 only asks
 * whether it is there), as runc kill: a stopped container is "container
 * not running" (with all, success: nothing to signal); signo < 0 stands
 * for an integer that is no signal ("unable to signal init: invalid
 * argument"). For SIGKILL, kill an unresponsive monitor itself. */
int launch_kill(struct cli_context *ctx, const char *id, int signo, bool all);

/* SIGKILL the monitor with pid (if alive) and wait up to timeout_ms for it
 * to be gone (it need not be our child). */
int launch_kill_monitor(pid_t pid, int timeout_ms);

/* Wait up to timeout_ms until the monitor the state s names (pid and start
 * time) has finished exiting: a monitor killed a moment ago, already
 * reported dead, may still be leaving its cgroup. 0 at once when it is
 * gone (or the pid is another process's now). */
int launch_wait_exited(const struct oci_state *s, int timeout_ms);

/* Wait for our child monitor pid, forwarding SIGINT, SIGTERM, SIGHUP,
 * SIGQUIT, SIGUSR1 and SIGUSR2 to the container through it. Returns the
 * exit status for the caller: the code, or 128 + N for signal N. */
int launch_wait(struct cli_context *ctx, const char *id, pid_t pid);

#endif
