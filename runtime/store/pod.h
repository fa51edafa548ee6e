/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pods: which containers belong together in one VM. A Kubernetes pod is a
 * sandbox ("pause") container plus app containers that join its network,
 * IPC and UTS namespaces; the engines say so in annotations (containerd's
 * CRI plugin, CRI-O), and without them (podman pods, plain runc users) an
 * app container names the sandbox's namespaces by path.
 *
 * This file only recognises a pod and finds its sandbox in the state store;
 * what is done with it is the caller's (docs/engines.md, "Kubernetes").
 */
#ifndef KVRUN_RUNTIME_POD_H
#define KVRUN_RUNTIME_POD_H

#include <stdbool.h>
#include <stdint.h>

#include "oci-spec/spec.h"

/* containerd's CRI plugin (1.6 and later, 2.x alike). */
#define POD_ANN_CRI_TYPE "io.kubernetes.cri.container-type"
#define POD_ANN_CRI_SANDBOX "io.kubernetes.cri.sandbox-id"
/* containerd's sizing of the pod, on its sandbox: the sums of its
 * containers' limits (0 or absent: none). */
#define POD_ANN_CRI_MEMORY "io.kubernetes.cri.sandbox-memory"
#define POD_ANN_CRI_CPU_QUOTA "io.kubernetes.cri.sandbox-cpu-quota"
#define POD_ANN_CRI_CPU_PERIOD "io.kubernetes.cri.sandbox-cpu-period"
/* CRI-O. */
#define POD_ANN_CRIO_TYPE "io.kubernetes.cri-o.ContainerType"
#define POD_ANN_CRIO_SANDBOX "io.kubernetes.cri-o.SandboxID"
/* Who made the container: "libpod" for podman, which shares CRI-O's
 * annotation names; its CRI-O keys are not taken as a pod's. */
#define POD_ANN_MANAGER "io.container.manager"
/* podman's default infra command (catatonit in its pause mode): the
 * podman-pause image's, or catatonit bound into the infra's rootfs. */
#define POD_PODMAN_INFRA_CMD "/catatonit"
#define POD_PODMAN_INFRA_ARG "-P"

enum pod_role {
	POD_ROLE_NONE, /* not part of a pod (or a pod kvrun cannot see) */
	POD_ROLE_SANDBOX, /* the pod's sandbox: its VM is the pod's */
	POD_ROLE_CONTAINER, /* an app container of the pod whose sandbox is sandbox_id */
};

struct pod_ref {
	enum pod_role role;
	/* CONTAINER: the sandbox's container id; SANDBOX: its own as the
	 * engine gave it (may be NULL). Malloc'd. */
	char *sandbox_id;
	/* What said so, for messages: the annotation key or the namespace
	 * path ("annotation io.kubernetes.cri.sandbox-id"). Malloc'd. */
	char *source;
	/* The sandbox may not exist as a container: CRI-O's pods without a
	 * PID namespace of their own have none (drop_infra_ctr). */
	bool sandbox_optional;
	/* CONTAINER: its sandbox runs (create_check_pod()): the container is
	 * created inside the sandbox's VM. */
	bool live;
};

void pod_ref_clear(struct pod_ref *p);

/* The role the annotations give: the engine's container type and sandbox
 * id. When both engines' keys are present they must agree. CRI-O's keys
 * on a container podman made (POD_ANN_MANAGER "libpod") are not read.
 * -EINVAL naming the annotation for an unknown type, an app container
 * without a valid sandbox id, or engines that disagree. No pod
 * annotation: role NONE. */
int pod_from_annotations(const struct oci_map *ann, struct pod_ref *ret);

/* The live kvrun container under root (created, running or paused) whose
 * namespace of this kind the file at path is: `/proc/<pid>/ns/<type>` of
 * its monitor (any kind; the pid and its start time must be the state's),
 * or for the network namespace also any path of the namespace its VM
 * serves (the monitor's, or the one recorded in its state: a CNI netns
 * bind mount). 1 with *ret_id (malloc'd), 0 when no kvrun container has
 * it, negative errno on failure. Reads /proc under container_proc_root. */
int pod_sandbox_from_ns(const char *root, const struct oci_namespace *ns, char **ret_id);

/* Whether spec is a podman pod's infra container: made by podman
 * (POD_ANN_MANAGER "libpod"), without CRI-O's container type or sandbox id
 * (podman puts them on a pod's other containers only), running podman's
 * default infra command, exactly `/catatonit -P`. podman marks its infra
 * container no other way (a Kata-style runtime takes any container without
 * a type for a sandbox); an ordinary container runs its image's command.
 * An infra container with another command (--infra-command,
 * --infra-image) is not recognised. */
bool pod_is_podman_infra(const struct oci_spec *spec);

/* The role of a new container with spec: the annotations' when they name
 * one; a podman pod's sandbox when it is its infra container
 * (pod_is_podman_infra()); else an app container when one of its network,
 * IPC or UTS namespace paths is a live kvrun container's
 * (pod_sandbox_from_ns()). */
int pod_classify(const char *root, const struct oci_spec *spec, struct pod_ref *ret);

/* What the pod's containers may use, from the sandbox's annotations. */
struct pod_size {
	uint64_t memory; /* bytes; 0: no limit given */
	uint64_t cpu_quota, cpu_period; /* us; quota 0: none; period 0: the default */
};

/* Read POD_ANN_CRI_MEMORY and the cpu quota and period: decimal integers,
 * a quota of -1 (containerd's "none") reads as 0. -EINVAL naming the
 * annotation for anything else. */
int pod_size_from_annotations(const struct oci_map *ann, struct pod_size *ret);

/* For an app container: that its sandbox exists under root and is alive
 * (1). -ENOENT "pod sandbox X (from <source>) does not exist", unless it
 * may not (sandbox_optional: 0); -ESRCH "... is stopped": a container
 * cannot join a pod whose VM is gone. 0 for the other roles. */
int pod_check_sandbox(const char *root, const struct pod_ref *p);

#endif
