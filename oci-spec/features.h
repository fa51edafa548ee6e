/* SPDX-License-Identifier: Apache-2.0 */
/* What the runtime supports, in the runtime-spec features.json shape that
 * `runc features` prints. */
#ifndef KVRUN_OCI_SPEC_FEATURES_H
#define KVRUN_OCI_SPEC_FEATURES_H

#include <stdbool.h>

#include "oci-spec/spec.h"

/* An optional boolean: omitted from the JSON when unset. */
enum oci_tristate {
	OCI_UNSET = -1,
	OCI_FALSE = 0,
	OCI_TRUE = 1,
};

/* Lists are NULL-terminated arrays of borrowed strings; a NULL list is
 * omitted from the JSON, an empty one ({ NULL }) prints as []. */
struct oci_features {
	const char *oci_version_min;
	const char *oci_version_max;
	const char *const *hooks;
	const char *const *mount_options;
	struct {
		bool present;
		const char *const *namespaces;
		const char *const *capabilities;
		struct {
			bool present;
			enum oci_tristate v1, v2, systemd, systemd_user, rdma;
		} cgroup;
		struct {
			bool present;
			enum oci_tristate enabled;
			const char *const *actions;
			const char *const *operators;
			const char *const *archs;
			const char *const *known_flags;
			const char *const *supported_flags;
		} seccomp;
		enum oci_tristate apparmor_enabled; /* "apparmor": {"enabled"} */
		enum oci_tristate selinux_enabled; /* "selinux": {"enabled"} */
		enum oci_tristate intel_rdt_enabled; /* "intelRdt": {"enabled"} */
		enum oci_tristate idmap_mounts; /* "mountExtensions": {"idmap": {"enabled"}} */
	} linux_features;
	/* Keys printed sorted, as Go prints a map. Borrowed. */
	const struct oci_map *annotations;
	/* "potentiallyUnsafeConfigAnnotations": annotation names, or prefixes
	 * ending in ".", whose values the runtime trusts like the bundle (an
	 * engine should let only privileged users set them). */
	const char *const *unsafe_annotations;
};

/* The features kvrun implements (static storage; annotations NULL). */
const struct oci_features *oci_features_kvrun(void);

/* Four-space indented JSON as `runc features` prints it (field order of the
 * runtime-spec features struct, Go's escaping), with a trailing newline.
 * *ret is malloc'd and owned by the caller. */
int oci_features_to_json(const struct oci_features *f, char **ret);

#endif
