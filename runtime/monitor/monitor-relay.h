/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One direction of a container's stdio between a host fd and a guest vsock
 * stream, copied by a thread with blocking I/O: the host fds are the ones
 * `create` was given (pipes, files, a terminal) and are not ours to make
 * non-blocking. Nothing is dropped: a slow reader slows the copy.
 */
#ifndef KVRUN_RUNTIME_MONITOR_RELAY_H
#define KVRUN_RUNTIME_MONITOR_RELAY_H

#include <stdbool.h>

struct relay;

/* Copy from -> to until EOF on from. With to_guest, EOF is passed on as
 * shutdown(to, SHUT_WR) (stdin EOF); otherwise the copy ends at the
 * stream's EOF. Neither fd is closed. NULL when no thread could start. */
struct relay *relay_start(int from, int to, bool to_guest);

/* Wait for the copy to end and free r. NULL is fine. */
void relay_join(struct relay *r);

#endif
