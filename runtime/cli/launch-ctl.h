/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verbs that reach a created container's monitor, and the waits on it
 * (launch-ctl.c).
 */
#ifndef KVRUN_RUNTIME_LAUNCH_CTL_H
#define KVRUN_RUNTIME_LAUNCH_CTL_H

#include <stdbool.h>
#include <sys/types.h>

#include "oci-spec/state.h"
#include "runtime/cli/cli.h"

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
