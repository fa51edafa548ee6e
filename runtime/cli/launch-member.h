/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A pod's app containers, created inside the sandbox's VM
 * (launch-member.c).
 */
#ifndef KVRUN_RUNTIME_LAUNCH_MEMBER_H
#define KVRUN_RUNTIME_LAUNCH_MEMBER_H

#include <stdint.h>
#include <sys/types.h>

#include "runtime/cli/create.h"
#include "runtime/store/pod.h"
#include "runtime/store/state.h"

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

#endif
