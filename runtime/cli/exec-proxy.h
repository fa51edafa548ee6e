/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exec proxy: the host process that stands for one process exec'd in
 * a container's VM. Its pid is what --pid-file gets (containerd's shim
 * reaps and kill(2)s it), it relays its own stdio (or a pty) to the
 * process's streams, forwards the signals it receives into the guest
 * through the monitor, and exits with the process's wait status.
 *
 * The proxy listens itself on <dir>/vsock_<port> for the process's stdio
 * streams (the vsock device connects a guest stream for port P to that
 * socket), so stdio never passes through the monitor; the monitor only
 * carries EXEC, SIGNAL, RESIZE and the EXIT ("exec" in monitor-serve.c).
 *
 * Once its streams are connected the proxy jails itself as the monitor
 * does (runtime/host/jail.h, docs/security.md): the container's jail uid,
 * a mount namespace holding only the state directory (read-only: its
 * control.sock), a new network namespace, the proxy's seccomp filters.
 */
#ifndef KVRUN_RUNTIME_EXEC_PROXY_H
#define KVRUN_RUNTIME_EXEC_PROXY_H

#include <stdbool.h>
#include <sys/types.h>

#include "common/protocol.h"

struct exec_proxy_opts {
	const char *dir; /* the container's state directory (control.sock) */
	struct proto_process *proc; /* ports and, for a terminal, size are filled in */
	const char *console_socket; /* receives the pty master; NULL: none */
	const char *pid_file; /* absolute, or NULL */
	bool detach;
	/* The container's jail uid (and gid), which the proxy's own jail runs
	 * as and the stdio sockets it listens on are handed to; 0: no jail
	 * ($KVRUN_JAIL=0 here, or at the container's create). */
	uid_t jail_uid;
	/* A pod's app container instead of a process (its member proxy):
	 * member_line ("member <n> <share>...", monitor-pod.c) with the n
	 * directories' descriptors, then start (PROTO_MSG_START, whose process
	 * is proc) go to the sandbox's monitor, whose state directory is dir.
	 * The process waits for `start` ("go"). */
	const char *member_line;
	const int *share_fds;
	unsigned int n_share_fds;
	struct proto_msg *start;
	/* A descriptor of the caller's the detached proxy closes (the lock of
	 * the state being created), or -1 (0: none either). */
	int close_fd;
	/* Detached: the proxy's pid and the process's guest pid (may be NULL). */
	pid_t *ret_pid;
	uint32_t *ret_guest_pid;
};

/* Start o->proc in the container. Detached: fork the proxy (in its own
 * session; with a console socket its stdio is /dev/null, so nothing keeps
 * the caller's stdout/stderr open), wait until the process started, write
 * the proxy's pid to the pid file and return 0. Not detached: this process
 * is the proxy and does not return once the process started (it exits like
 * the process). Returns a negative errno with the error recorded when the
 * process could not be started. */
int exec_proxy_run(const struct exec_proxy_opts *o);

#endif
