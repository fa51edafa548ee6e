/* SPDX-License-Identifier: Apache-2.0 */
/* A bundle on disk: its directory, config.json (parsed and validated through
 * oci-spec) and root filesystem. */
#ifndef KVRUN_RUNTIME_BUNDLE_H
#define KVRUN_RUNTIME_BUNDLE_H

#include "common/cleanup.h"
#include "oci-spec/spec.h"

struct bundle {
	char *path; /* absolute, symlinks resolved */
	char *rootfs; /* absolute: root.path, relative to path unless absolute */
	struct oci_spec *spec;
};

/* Load the bundle at path (the current directory when NULL or ""): read
 * and validate config.json and check that the rootfs is a directory. Errors
 * name what is wrong: the bundle path, config.json with the JSON path or
 * line of the problem, or the rootfs. On success *ret is owned by the
 * caller (bundle_free()). */
int bundle_load(const char *path, struct bundle **ret);

void bundle_free(struct bundle *b);
static inline void bundle_freep(struct bundle **b)
{
	bundle_free(*b);
}
#define _cleanup_bundle_ _cleanup_(bundle_freep)

#endif
