/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Removing a container from the host: what `delete`, a failed `create`
 * and a create abandoned by its creator (create-guard.h) share. Everything
 * comes from what the state records, so it works after any process died:
 * the network namespace the VM served (STATE_KEY_NETNS, written before
 * anything was done in it), the cgroup and systemd unit (written by the
 * monitor as soon as it joined them).
 */
#ifndef KVRUN_RUNTIME_MONITOR_TEARDOWN_H
#define KVRUN_RUNTIME_MONITOR_TEARDOWN_H

#include <stdbool.h>

#include "runtime/store/state.h"

/* Remove container c (locked exclusively; c is freed): its cgroup (the
 * systemd unit stopped), with poststop its poststop hooks (runc's: after
 * the container's process is gone, failures are warnings), the network
 * namespace's interfaces given back (TAPs, tc redirects, addresses and
 * routes: netns_teardown()), then its state directory. Failures of all but
 * the last are logged, not returned; the result is that of removing the
 * directory. The VM must be gone (its monitor dead or ending). */
int teardown_container(struct container *c, bool poststop);

#endif
