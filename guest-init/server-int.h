/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to guest-init's server (server.c, server-procs.c,
 * server-members.c, server-streams.c): the state of the control loop, the
 * containers of the VM (the first, and a pod's members) and the processes
 * it runs, and the streams each process's stdio and preserved fds travel
 * on.
 */
#ifndef KVRUN_GUEST_INIT_SERVER_INT_H
#define KVRUN_GUEST_INIT_SERVER_INT_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/protocol.h"
#include "guest-init/guest-init.h"
#include "guest-init/relay.h"
#include "guest-init/server.h"

#define MAX_PROCS 64
/* The first container and a pod's members running at once. */
#define MAX_CONTAINERS 16

/* A container of the VM: ctrs[0] is the first (a pod's sandbox, or the
 * only one), the others are pod members (server-members.c). */
struct ctr {
	bool used;
	bool ended; /* a member whose init's EXIT went: freed with its last process */
	struct proto_msg start; /* kept: exec'd processes share its seccomp, personality */
	pid_t init_pid; /* once spawned */
	/* Its init's mount namespace (stat of /proc/PID/ns/mnt): what tells
	 * a member's processes in the first's pid namespace. */
	dev_t mnt_dev;
	ino_t mnt_ino;
	unsigned int n_procs; /* processes of the table that run in it */
	bool root_mounted; /* a member's root, to unmount at its end */
	bool frozen; /* its cgroup frozen (pause): no process may join it */
	/* A member's memory.events (-1: none) and its counters last read:
	 * its OOM kills are told with its init's pid. */
	int oom_fd;
	struct proto_oom oom;
	/* The first's: the server's; a member's: in paths[] (cgroup NULL:
	 * none). */
	const char *rootfs, *files_dir, *cgroup;
	char paths[3][256];
};

struct proc {
	bool used, init, exited, reported; /* init: of its container */
	pid_t pid;
	int status;
	uint64_t id; /* request that started it */
	struct gi_child child;
	int fds[6]; /* owned: sockets, pipe ends, pty master */
	int extra[PROTO_MAX_EXTRA_FDS]; /* preserved fds' streams, until the child has them */
	size_t n_extra;
	struct relay in, out, err;
	struct ctr *ctr; /* the container it runs in */
};

struct state {
	struct gi_server *srv;
	struct proc procs[MAX_PROCS];
	struct ctr ctrs[MAX_CONTAINERS];
	unsigned int n_members; /* started so far: numbers their directories */
	int init_status; /* the first container's */
	bool init_done, host_gone;
	int oom_fd; /* the container cgroup's memory.events, or -1 */
	struct proto_oom oom; /* its counters last read */
};

/* Send m as type with id on the control stream. */
int server_reply(struct state *st, uint16_t type, uint64_t id, struct proto_msg *m);
/* ERROR: -negerr and msg; err 0 acknowledges a request that has no other
 * answer. */
int server_reply_error(struct state *st, uint64_t id, int negerr, const char *msg);
/* Close what p owns and free its slot (and its container's, when that
 * ended and p was its last process). */
void proc_close(struct proc *p);
/* The process of guest pid pid (0: the first container's init), or NULL. */
struct proc *proc_find(struct state *st, pid_t pid);
/* Spawn c's init for its START (m is c->start), or a process in c for
 * EXEC m. On failure the ERROR is sent and, when *ret is not NULL, the
 * proc stays to report the child's exit. */
int proc_spawn(struct state *st, const struct proto_msg *m, struct ctr *c, struct proc **ret);
/* GO for p: STARTED, or ERROR. */
int proc_go(struct state *st, struct proc *p, uint64_t id);
/* Container p->ctr's init p was created for its START: READY with
 * PROTO_START_F_WAIT, else on at once (GO: STARTED). */
int proc_created(struct state *st, struct proc *p);

/* A free slot for a pod member, marked used, or NULL. */
struct ctr *ctr_new(struct state *st);
/* Free c's slot (its START included). */
void ctr_free(struct ctr *c);
/* Whether c's init was spawned and has not ended. */
bool ctr_running(const struct state *st, const struct ctr *c);
/* The running container whose init has guest pid pid (0: the first;
 * its init's pid names it too). */
struct ctr *ctr_find(struct state *st, uint32_t pid);
/* The root of c's START (when it names a root_device) at c->rootfs,
 * then the virtio-fs tags its mounts name under GI_SHARES_DIR. */
int ctr_mount_root(struct state *st, struct ctr *c);
/* START's cgroup values and device filter, written into cg before the
 * init enters it. */
int ctr_cgroup_setup(const char *cg, const struct proto_start *s);
/* SIGNAL with all: every process of c. */
int ctr_signal_all(struct state *st, struct ctr *c, int signo);

/* server-members.c: a pod member's START (PROTO_START_F_MEMBER), answered
 * as the first container's (an EXIT of its id follows a refusal or a
 * failure). */
int member_start(struct state *st, struct proto_msg *m);
/* Member c's init was reaped: in the first's pid namespace, what it left
 * is killed now (its output ends with it, and so the wait for the EXIT). */
void member_init_exited(struct state *st, struct ctr *c);
/* After the EXIT of member c's init: what is left of it killed, its root
 * unmounted, its cgroup and directories removed. */
/* A member's memory.events moved: its OOM counters to the host (OOM with
 * its init's pid as container), when they changed. */
void member_oom_check(struct state *st, struct ctr *c);
void member_ended(struct state *st, struct ctr *c);
/* The first container ended: every member's init is killed. */
void members_kill(struct state *st);

/* Connect the stdio streams and make the pipes the child gets. */
int proc_stdio_connect(struct state *st, struct proc *p, const struct proto_process *pp, int child_fds[3]);
/* Connect the preserved fds' streams into p->extra. */
int proc_extra_connect(struct state *st, struct proc *p, const struct proto_process *pp);
/* Close what proc_extra_connect() left (the child has its copies). */
void proc_extra_close(struct proc *p);
/* A terminal: relay between the host stream and the pty master. */
void proc_terminal_relays(struct proc *p);
/* The pollfds of p's active relays, appended at pfd[*n] (who[] says whose). */
void proc_relay_events(struct proc *p, struct pollfd *pfd, size_t *n, struct relay **who);
/* A relay of p reached EOF: pass it on. */
void proc_relay_done(struct proc *p, struct relay *r);
/* After a restore: the first container's init's streams again from
 * START's ports; exec'd processes and pod members (whose host side is
 * gone) are killed. */
void server_reopen_streams(struct state *st);

#endif
