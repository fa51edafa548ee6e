/* SPDX-License-Identifier: Apache-2.0 */
/* The example config.json that `spec` writes into a bundle. */
#ifndef KVRUN_OCI_SPEC_DEFAULTS_H
#define KVRUN_OCI_SPEC_DEFAULTS_H

#include <stdbool.h>

/* The bytes of the config.json that `runc spec` (rootless: `runc spec
 * --rootless`) writes: tab indentation, no trailing newline. The rootless
 * variant maps container root to the caller's effective uid/gid. *ret is
 * malloc'd and owned by the caller. 0 or -ENOMEM. */
int oci_spec_default_json(bool rootless, char **ret);

#endif
