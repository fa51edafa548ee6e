/* SPDX-License-Identifier: Apache-2.0 */
/* Private to oci-spec/: the name lists behind the *_known() checks, for
 * features.json. NULL-terminated. */
#ifndef KVRUN_OCI_SPEC_TABLES_H
#define KVRUN_OCI_SPEC_TABLES_H

extern const char *const oci_seccomp_actions[];
extern const char *const oci_seccomp_operators[];
extern const char *const oci_seccomp_archs[];
extern const char *const oci_seccomp_flags[];

#endif
