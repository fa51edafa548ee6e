/* SPDX-License-Identifier: Apache-2.0 */
/* Talking to a container's monitor over <dir>/control.sock (monitor.h). */
#ifndef KVRUN_RUNTIME_MONITOR_CLIENT_H
#define KVRUN_RUNTIME_MONITOR_CLIENT_H

#include <stddef.h>

/* Send request (one line, without newline) to the monitor of the container
 * in dir and wait up to timeout_ms for its answer. Returns 0 with the
 * detail after "ok" in *ret_detail (malloc'd, may be ""; ret_detail may be
 * NULL); the monitor's message with -EIO for "error ..."; -ECONNREFUSED or
 * -ENOENT when no monitor listens; -ETIMEDOUT when it does not answer. */
int monitor_call(const char *dir, const char *request, int timeout_ms, char **ret_detail);

/* monitor_call() that also passes nfds (at most MONITOR_CALL_MAX_FDS)
 * descriptors with the request (SCM_RIGHTS); the caller keeps its own. */
#define MONITOR_CALL_MAX_FDS 4
int monitor_call_fds(const char *dir, const char *request, const int *fds, size_t nfds, int timeout_ms,
                     char **ret_detail);

/* Subscribe to the events of the container in dir ("events" request):
 * returns the connection (an fd the caller closes) once the monitor said
 * "ok". The monitor then writes one line per event ("oom") and closes it
 * when the container's process has exited. */
int monitor_subscribe(const char *dir, int timeout_ms);
/* The same for a pod's app container whose init is guest pid container
 * (dir: its sandbox's): its own events, until it ends. */
int monitor_subscribe_member(const char *dir, uint32_t container, int timeout_ms);

struct proto_msg;

/* The container's processes ("procs" request): the guest's PS answer in
 * *ret (proto_msg_free() it). "error ..." answers as monitor_call(). */
int monitor_procs(const char *dir, uint32_t container, int timeout_ms, struct proto_msg *ret);

#endif
