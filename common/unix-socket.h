/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unix stream sockets at paths of any length. sun_path holds 107 bytes; a
 * longer path (a long --root with a 64-character container id) is reached
 * through an O_PATH descriptor of its directory, "/proc/self/fd/N/name",
 * which bind() and connect() resolve like any path.
 */
#ifndef KVRUN_COMMON_UNIX_SOCKET_H
#define KVRUN_COMMON_UNIX_SOCKET_H

#include <sys/un.h>

/* The address of path in *ret. When path is too long for sun_path,
 * *ret_dirfd is the O_PATH descriptor of its directory that the address
 * names, to close after bind() or connect(); else -1. -ENAMETOOLONG (with
 * err_set()) when even the file name alone does not fit. */
int unix_sockaddr(const char *path, struct sockaddr_un *ret, int *ret_dirfd);

/* A listening, non-blocking, close-on-exec socket bound at path (a stale
 * file there is replaced), with backlog; or a negative errno with
 * err_set(). */
int unix_listen(const char *path, int backlog);

/* A close-on-exec socket connected to path (flags: more SOCK_* type flags,
 * e.g. SOCK_NONBLOCK); or a negative errno with err_set(): "connect to
 * <what>" (what NULL: the path). */
int unix_connect(const char *path, int flags, const char *what);

#endif
