/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Turning a bundle into the START message guest-init applies (the
 * container's process, mounts, names, paths, sysctl, seccomp, hooks).
 */
#ifndef KVRUN_RUNTIME_GUEST_SPEC_H
#define KVRUN_RUNTIME_GUEST_SPEC_H

#include <stdint.h>

#include "common/protocol.h"
#include "oci-spec/spec.h"
#include "oci-spec/state.h"
#include "runtime/host/rootfs-image.h"
#include "runtime/sandbox/guest-channel.h"

struct guest_shares;

/* The container's processes may open AF_VSOCK sockets: "allow"; "deny" (or
 * no annotation) leaves guest-init's filter on (docs/security.md). */
#define GUEST_SPEC_ANNOTATION_VSOCK "io.kvrun.vsock"

/* A pod's /dev/shm: the tmpfs START gives for a bind of the host's shm
 * at /dev/shm (guest_mount_is_shm()) becomes the pod's one
 * (PROTO_POD_SHM_SOURCE): for a pod's sandbox, and for an app container
 * that binds the sandbox's shm directory. Whether there was one. */
bool guest_spec_pod_shm(struct proto_start *s);

/* Fill *ret from spec: the root is /dev/vda (ext4), or the root share of g
 * (virtiofs); each bind mount names its share in g (guest-shares.h): its
 * tag and the entry bound. A bind mount without one is refused (-EINVAL,
 * naming it). g may be NULL for a spec without bind mounts. state (may be
 * NULL) is the OCI state handed to hooks. *ret is owned by the caller
 * (proto_start_free()), also zeroed on failure. */
int guest_spec_from_oci(const struct oci_spec *spec, const struct oci_state *state, const struct guest_shares *g,
                        struct proto_start *ret);

/* Give s a copy of the guest's network configuration (cfg NULL or without
 * interfaces: none, loopback only). Returns 0 or -ENOMEM. */
int guest_spec_set_net(struct proto_start *s, const struct net_config *cfg);

/* Whether the host side of a spec passes the checks of
 * guest_spec_from_oci() (the annotations, the fields kvrun supports, the
 * device rules and cgroup values, the scheduler) and can be served: its
 * bind mounts and, with rootfs (the bundle's rootfs directory; NULL: a
 * disk image), a shared root, as guest_shares_plan() checks them (used by
 * create before anything is built). */
int guest_spec_check(const struct oci_spec *spec, const char *rootfs);

/* The paths the guest mounts on or enters, for the root disk to have
 * (rootfs_image_build()): every mount destination (binds of host files
 * are file points, the rest directories), /dev and the process's cwd.
 * *ret is the caller's to free; its paths are borrowed from spec. Returns
 * 0 or -ENOMEM. */
int guest_spec_mount_points(const struct oci_spec *spec, struct rootfs_mount_point **ret, size_t *ret_n);

/* Fill *ret from an exec'd process (runc exec's process.json): as START's
 * process, plus terminal and console size. The stdio ports are the
 * container's and are for the caller to replace. *ret is the caller's
 * (proto_process_free()), zeroed on failure. */
int guest_process_from_oci(const struct oci_process *op, struct proto_process *ret);

/* Per-instance identity in START: the host's wall-clock time and fresh
 * random bytes (a VM restored from a template has the template's). */
int guest_spec_set_identity(struct proto_start *s);

#endif
