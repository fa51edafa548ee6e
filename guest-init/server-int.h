/* SPDX-License-Identifier: Apache-2.0 */
/* What server.c (the control loop) shares with server-stdio.c (the
 * processes' stdio streams). Internal to guest-init. */
#ifndef KVRUN_GUEST_INIT_SERVER_INT_H
#define KVRUN_GUEST_INIT_SERVER_INT_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/protocol.h"
#include "guest-init/guest-init.h"
#include "guest-init/relay.h"
#include "guest-init/server.h"

#define MAX_PROCS 64

struct proc {
	bool used, init, exited, reported;
	pid_t pid;
	int status;
	uint64_t id; /* request that started it */
	struct gi_child child;
	int fds[6]; /* owned: sockets, pipe ends, pty master */
	struct relay in, out, err;
};

struct state {
	struct gi_server *srv;
	struct proc procs[MAX_PROCS];
	struct proto_msg start; /* kept: exec'd processes share its seccomp */
	bool started;
	pid_t init_pid;
	int init_status;
	bool init_done, host_gone;
	int oom_fd; /* the container cgroup's memory.events, or -1 */
	struct proto_oom oom; /* its counters last read */
};

/* O_NONBLOCK on fd: 0 or -errno. */
int nonblock(int fd);

/* Connect the stdio streams of process pp (each opened with its token)
 * and make the pipes the child gets: p->fds[0..2] = host streams,
 * p->fds[3..5] = our pipe ends; child_fds[] the child's ends (-1: none). */
int proc_stdio(struct state *st, struct proc *p, const struct proto_process *pp, int child_fds[3]);

/* A terminal process: its pty master relayed to the one stream. */
void proc_terminal(struct proc *p);

/* The poll entries of p's active relays, appended at pfd[*n]. */
void relay_events(struct proc *p, struct pollfd *pfd, size_t *n, struct relay **who);

/* Relay r of p reached its end: EOF passed on. */
void relay_done(struct proc *p, struct relay *r);

/* After a reconnection: open the init's streams again (the new HELLO's
 * token), kill the exec'd processes (their host side is gone). */
void reopen_streams(struct state *st);

#endif
