/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Paths inside a root that must not be left: an OCI mount destination or
 * source names a path inside the container's root filesystem, whose
 * symlinks are the container's (guest-init mounting, and the host planning
 * the mount points of a root disk image, resolve them the same way).
 */
#ifndef KVRUN_COMMON_PATH_H
#define KVRUN_COMMON_PATH_H

#include <stddef.h>

/* Resolve unsafe inside root as if root were "/": symlinks are followed
 * (absolute targets from root, at most 40), ".." stops at root, and
 * components that do not exist are kept as named. out (outlen bytes) gets
 * the result relative to root: "" for root itself, else "/a/b". Returns 0,
 * -ENAMETOOLONG, or -ELOOP. */
int path_resolve_in(const char *root, const char *unsafe, char *out, size_t outlen);

/* root joined with path_resolve_in(root, unsafe): *ret is malloc'd
 * ("<root>/a/b", or "<root>/" for root itself) and owned by the caller.
 * Also -ENAMETOOLONG when the joined path is longer than PATH_MAX. */
int path_join_in(const char *root, const char *unsafe, char **ret);

#endif
