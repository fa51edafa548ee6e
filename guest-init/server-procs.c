/* SPDX-License-Identifier: Apache-2.0 */
/* The processes guest-init's server runs: their table, the spawn of a
 * container's init (START) or of a process in it (EXEC), GO, and the
 * answers on the control stream. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "common/protocol.h"
#include "guest-init/guest-init.h"
#include "guest-init/server-int.h"

int server_reply(struct state *st, uint16_t type, uint64_t id, struct proto_msg *m)
{
	m->type = type;
	m->id = id;
	return proto_send(st->srv->ctl, m);
}

/* ERROR with err 0 acknowledges a request that has no other answer. */
int server_reply_error(struct state *st, uint64_t id, int negerr, const char *msg)
{
	struct proto_msg m = {.u.error = {(uint32_t)-negerr, (char *)msg}};

	return server_reply(st, PROTO_MSG_ERROR, id, &m);
}

void proc_close(struct proc *p)
{
	proc_extra_close(p);
	for (size_t i = 0; i < ARRAY_SIZE(p->fds); i++)
		if (p->fds[i] >= 0)
			close(p->fds[i]);
	if (p->child.sync_fd >= 0)
		close(p->child.sync_fd);
	memset(p, 0, sizeof(*p));
}

static struct proc *proc_new(struct state *st)
{
	for (size_t i = 0; i < MAX_PROCS; i++)
		if (!st->procs[i].used) {
			struct proc *p = &st->procs[i];

			memset(p, 0, sizeof(*p));
			p->used = true;
			p->child.sync_fd = p->child.pty_master = -1;
			for (size_t j = 0; j < ARRAY_SIZE(p->fds); j++)
				p->fds[j] = -1;
			return p;
		}
	return NULL;
}

struct proc *proc_find(struct state *st, pid_t pid)
{
	if (pid == 0)
		pid = st->init_pid;
	for (size_t i = 0; i < MAX_PROCS; i++)
		if (st->procs[i].used && st->procs[i].pid == pid)
			return &st->procs[i];
	return NULL;
}

/* Spawn for START (join == 0) or EXEC; on failure the ERROR is sent and
 * the proc stays to report the child's exit. */
int proc_spawn(struct state *st, const struct proto_msg *m, pid_t join, struct proc **ret)
{
	const struct proto_process *pp = join ? &m->u.exec : &m->u.start.process;
	struct proc *p = proc_new(st);
	int child_fds[3], r;

	if (!p)
		return server_reply_error(st, m->id, -EAGAIN, "too many processes");
	p->id = m->id;
	p->init = !join;
	r = proc_stdio_connect(st, p, pp, child_fds);
	if (r >= 0)
		r = proc_extra_connect(st, p, pp);
	if (r >= 0) {
		const struct proto_start *c = &st->start.u.start;
		struct gi_spawn sp = {
		    .start = join ? NULL : &m->u.start,
		    .container = c,
		    .process = pp,
		    .seccomp = st->start.u.start.seccomp,
		    .rootfs = st->srv->rootfs_dir,
		    .files_dir = st->srv->files_dir,
		    .join_pid = join,
		    .cgroup_dir = st->srv->cgroup_dir,
		    .cgroup_required = c->device_filter || c->n_cgroup,
		    .new_pidns = true,
		    .allow_vsock = st->start.u.start.allow_vsock,
		    .stdio = {child_fds[0], child_fds[1], child_fds[2]},
		    .extra = p->extra,
		    .n_extra = p->n_extra,
		};
		r = gi_spawn(&sp, &p->child);
		p->pid = p->child.pid;
	}
	/* The child has its own copies: the streams end with it. */
	proc_extra_close(p);
	for (int i = 0; i < 3; i++)
		if (child_fds[i] >= 0)
			close(child_fds[i]);
	if (r >= 0 && pp->terminal)
		proc_terminal_relays(p);
	if (p->init)
		st->init_pid = p->pid;
	*ret = p;
	if (r < 0) {
		server_reply_error(st, m->id, r, err_msg());
		if (!p->pid) {
			p->exited = true;
			p->status = 1 << 8;
		}
		return r;
	}
	return 0;
}

int proc_go(struct state *st, struct proc *p, uint64_t id)
{
	struct proto_msg m = {.u.started = {(uint32_t)p->pid}};
	int r = gi_go(&p->child);

	if (r < 0)
		return server_reply_error(st, id, r, err_msg());
	return server_reply(st, PROTO_MSG_STARTED, id, &m);
}
