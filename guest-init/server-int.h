/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control loop's state, shared by server.c (the loop: dispatch,
 * reaping, exits, stream relays, reconnection), server-procs.c (the
 * container's processes: START, GO, EXEC, SIGNAL, RESIZE) and
 * server-cgroup.c (STATS, UPDATE, OOM events of the container's cgroup).
 */
#ifndef KVRUN_GUEST_INIT_SERVER_INT_H
#define KVRUN_GUEST_INIT_SERVER_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

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

static inline int gi_reply(struct state *st, uint16_t type, uint64_t id, struct proto_msg *m)
{
	m->type = type;
	m->id = id;
	return proto_send(st->srv->ctl, m);
}

/* ERROR with err 0 acknowledges a request that has no other answer. */
static inline int gi_reply_error(struct state *st, uint64_t id, int negerr, const char *msg)
{
	struct proto_msg m = {.u.error = {(uint32_t)-negerr, (char *)msg}};

	return gi_reply(st, PROTO_MSG_ERROR, id, &m);
}

/* server-procs.c */
void gi_proc_close(struct proc *p);
/* The process with guest pid (0: the container's init), or NULL. */
struct proc *gi_proc_find(struct state *st, pid_t pid);
/* A stream to host port, non-blocking, into *ret. */
int gi_open_port(struct state *st, uint32_t port, int *ret);
int gi_handle_start(struct state *st, struct proto_msg *m);
/* GO: the created container's process runs (STARTED with its pid). */
int gi_handle_go(struct state *st, const struct proto_msg *m);
int gi_handle_exec(struct state *st, struct proto_msg *m);
int gi_handle_signal(struct state *st, const struct proto_msg *m);
int gi_handle_resize(struct state *st, const struct proto_msg *m);

/* server-cgroup.c */
int gi_handle_stats(struct state *st, uint64_t id);
int gi_handle_update(struct state *st, const struct proto_msg *m);
/* Watch the container cgroup's memory.events (st->oom_fd), and pass new
 * OOM kills on as OOM messages. */
void gi_oom_watch(struct state *st);
void gi_oom_check(struct state *st);

#endif
