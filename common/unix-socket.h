/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unix socket addresses for any path. sun_path holds 107 bytes; a longer
 * path (a deep --root, a container directory named by a 64-character id)
 * is reached through an O_PATH descriptor of its directory, as
 * "/proc/self/fd/N/name", without changing the working directory.
 */
#ifndef KVRUN_COMMON_UNIX_SOCKET_H
#define KVRUN_COMMON_UNIX_SOCKET_H

#include <sys/un.h>

/* The address of the socket at path, for bind() or connect(). When path
 * does not fit sun_path, *ret_dirfd is the descriptor of its directory
 * that the address goes through, to close once bind() or connect()
 * returned; else -1. Fails (-ENAMETOOLONG, or open's error, with
 * err_set()) when even the name alone does not fit. */
int unix_sockaddr(const char *path, struct sockaddr_un *ret, int *ret_dirfd);

/* A SOCK_STREAM socket connected to path; flags are socket(2)'s
 * SOCK_NONBLOCK and SOCK_CLOEXEC. Returns the fd, or a negative errno with
 * err_set() context ("connect to <path>" when connect(2) failed). A
 * non-blocking unix stream connect completes at once or fails (-EAGAIN:
 * the listener's backlog is full). */
int unix_connect(const char *path, int flags);

/* A SOCK_STREAM socket bound to path and listening with backlog; flags as
 * for unix_connect(). Whatever is at path stays (callers remove a stale
 * socket first). Returns the fd, or a negative errno with err_set()
 * context ("listen on <path>" when bind(2) or listen(2) failed). */
int unix_listen(const char *path, int flags, int backlog);

#endif
