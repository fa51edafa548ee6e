/* SPDX-License-Identifier: Apache-2.0 */
/*
 * linux.resources.devices as runc applies it on cgroup v2: the spec's
 * rules, then runc's default rules (mknod of anything; null, zero, full,
 * random, urandom, tty, ptmx, the ptys, /dev/net/tun), fed in order to an
 * emulation of the cgroup v1 devices controller, whose result (a default
 * and exceptions to it) becomes guest-init's BPF device filter.
 */
#ifndef KVRUN_RUNTIME_DEVICE_RULES_H
#define KVRUN_RUNTIME_DEVICE_RULES_H

#include "common/protocol.h"
#include "oci-spec/spec.h"

/* Fill s->device_filter, device_default_allow and device_rules from res
 * (may be NULL: runc's defaults alone). A rule the v1 controller would
 * refuse (an empty access, a deny that punches a hole in a wildcard
 * allow) is an error naming it: "linux.resources.devices[3]: ...". */
int device_rules_from_oci(const struct oci_linux_resources *res, struct proto_start *s);

/* linux.devices into s->devices (mode 0666 and owner 0:0 when not given,
 * as runc). A major or minor out of the kernel's range is refused. */
int device_nodes_from_oci(const struct oci_linux *l, struct proto_start *s);

#endif
