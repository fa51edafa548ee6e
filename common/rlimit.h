/* SPDX-License-Identifier: Apache-2.0 */
/* OCI rlimit names ("RLIMIT_NOFILE") to setrlimit() resources, shared by
 * the spec parser on the host and guest-init. */
#ifndef KVRUN_COMMON_RLIMIT_H
#define KVRUN_COMMON_RLIMIT_H

/* The RLIMIT_* resource for name, or -EINVAL for NULL or an unknown name. */
int rlimit_from_name(const char *name);

#endif
