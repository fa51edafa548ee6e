/* SPDX-License-Identifier: Apache-2.0 */
/* The containers and processes guest-init's server runs: their tables,
 * the spawn of a container's init (START) or of a process in it (EXEC),
 * GO, signals to a whole container, and the answers on the control
 * stream. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
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
	struct ctr *c = p->ctr;

	proc_extra_close(p);
	for (size_t i = 0; i < ARRAY_SIZE(p->fds); i++)
		if (p->fds[i] >= 0)
			close(p->fds[i]);
	if (p->child.sync_fd >= 0)
		close(p->child.sync_fd);
	memset(p, 0, sizeof(*p));
	if (c && --c->n_procs == 0 && c->ended)
		ctr_free(c);
}

static struct proc *proc_new(struct state *st, struct ctr *c)
{
	for (size_t i = 0; i < MAX_PROCS; i++)
		if (!st->procs[i].used) {
			struct proc *p = &st->procs[i];

			memset(p, 0, sizeof(*p));
			p->used = true;
			p->ctr = c;
			c->n_procs++;
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
		pid = st->ctrs[0].init_pid;
	for (size_t i = 0; i < MAX_PROCS; i++)
		if (st->procs[i].used && st->procs[i].pid == pid)
			return &st->procs[i];
	return NULL;
}

static void ctr_set_init(struct ctr *c, pid_t pid)
{
	char path[64];
	struct stat ns;

	c->init_pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	if (pid > 0 && stat(path, &ns) == 0) {
		c->mnt_dev = ns.st_dev;
		c->mnt_ino = ns.st_ino;
	}
}

/* The spawn of p: c's init for its START, or a process of EXEC in c. */
static int proc_spawn_child(struct state *st, struct proc *p, const struct proto_process *pp, struct ctr *c,
                            const int child_fds[3])
{
	const struct proto_start *cs = &c->start.u.start;
	bool member = c != &st->ctrs[0];
	struct gi_spawn sp = {
	    .start = p->init ? cs : NULL,
	    .container = cs,
	    .process = pp,
	    .seccomp = cs->seccomp,
	    .rootfs = c->rootfs,
	    .files_dir = c->files_dir,
	    .join_pid = p->init ? 0 : c->init_pid,
	    .pod_pid = member ? st->ctrs[0].init_pid : 0,
	    .cgroup_dir = c->cgroup,
	    .cgroup_required = cs->device_filter || cs->n_cgroup,
	    .new_pidns = !(member && (c->start.flags & PROTO_START_F_SHARE_PID)),
	    .allow_vsock = cs->allow_vsock,
	    .stdio = {child_fds[0], child_fds[1], child_fds[2]},
	    .extra = p->extra,
	    .n_extra = p->n_extra,
	};
	int r = gi_spawn(&sp, &p->child);

	p->pid = p->child.pid;
	return r;
}

int proc_spawn(struct state *st, const struct proto_msg *m, struct ctr *c, struct proc **ret)
{
	const struct proto_process *pp = m->type == PROTO_MSG_START ? &m->u.start.process : &m->u.exec;
	struct proc *p = proc_new(st, c);
	int child_fds[3], r;

	*ret = p;
	if (!p) {
		server_reply_error(st, m->id, -EAGAIN, "too many processes");
		return -EAGAIN;
	}
	p->id = m->id;
	p->init = m->type == PROTO_MSG_START;
	r = proc_stdio_connect(st, p, pp, child_fds);
	if (r >= 0)
		r = proc_extra_connect(st, p, pp);
	gi_mark(15);
	if (r >= 0)
		r = proc_spawn_child(st, p, pp, c, child_fds);
	/* The child has its own copies: the streams end with it. */
	proc_extra_close(p);
	for (int i = 0; i < 3; i++)
		if (child_fds[i] >= 0)
			close(child_fds[i]);
	if (r >= 0 && pp->terminal)
		proc_terminal_relays(p);
	if (p->init)
		ctr_set_init(c, p->pid);
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

int proc_created(struct state *st, struct proc *p)
{
	const struct proto_msg *start = &p->ctr->start;
	struct proto_msg m = {.u.started = {(uint32_t)p->pid}};

	if (start->flags & PROTO_START_F_WAIT) {
		int r = server_reply(st, PROTO_MSG_READY, start->id, &m);

		gi_mark(23);
		return r;
	}
	return proc_go(st, p, start->id);
}

int proc_go(struct state *st, struct proc *p, uint64_t id)
{
	struct proto_msg m = {.u.started = {(uint32_t)p->pid}};
	int r = gi_go(&p->child);

	gi_mark(33);
	if (r < 0)
		return server_reply_error(st, id, r, err_msg());
	r = server_reply(st, PROTO_MSG_STARTED, id, &m);
	gi_mark(34);
	return r;
}

struct ctr *ctr_new(struct state *st)
{
	for (size_t i = 1; i < MAX_CONTAINERS; i++)
		if (!st->ctrs[i].used) {
			memset(&st->ctrs[i], 0, sizeof(st->ctrs[i]));
			st->ctrs[i].used = true;
			return &st->ctrs[i];
		}
	return NULL;
}

void ctr_free(struct ctr *c)
{
	if (c->oom_fd > 0)
		close(c->oom_fd);
	proto_msg_free(&c->start);
	memset(c, 0, sizeof(*c));
}

bool ctr_running(const struct state *st, const struct ctr *c)
{
	if (!c->used || !c->init_pid)
		return false;
	return c == &st->ctrs[0] ? !st->init_done : !c->ended;
}

struct ctr *ctr_find(struct state *st, uint32_t pid)
{
	if (!pid)
		return ctr_running(st, &st->ctrs[0]) ? &st->ctrs[0] : NULL;
	for (size_t i = 0; i < MAX_CONTAINERS; i++)
		if ((uint32_t)st->ctrs[i].init_pid == pid && ctr_running(st, &st->ctrs[i]))
			return &st->ctrs[i];
	return NULL;
}

int ctr_mount_root(struct state *st, struct ctr *c)
{
	const struct proto_start *s = &c->start.u.start;
	int r;

	if (!s->root_device)
		return 0;
	err_clear();
	r = st->srv->mount_root ? st->srv->mount_root(s, c->rootfs) : gi_mount_root_disk(s, c->rootfs);
	if (r < 0)
		return r;
	c->root_mounted = true;
	return gi_mount_shares(s, GI_SHARES_DIR);
}

int ctr_cgroup_setup(const char *cg, const struct proto_start *s)
{
	int r;

	err_clear();
	r = gi_cgroup_apply(cg, s);
	gi_mark(5);
	if (r < 0 || !s->device_filter)
		return r;
	if (!cg)
		return err_set(-ENOTSUP, "linux.resources.devices: the container has no cgroup");
	return gi_devfilter_attach(cg, s);
}

/* A container of its own pid namespace: that namespace (the first's
 * holds a pod's members that share it: they go too). A pod member in
 * the first's: the processes of its mount namespace and of its cgroup. */
int ctr_signal_all(struct state *st, struct ctr *c, int signo)
{
	bool shared = c != &st->ctrs[0] && (c->start.flags & PROTO_START_F_SHARE_PID);

	if (!shared)
		return gi_kill_container(c->init_pid, signo);
	if (c->cgroup)
		gi_cgroup_signal(c->cgroup, signo);
	if (!c->mnt_ino)
		return kill(c->init_pid, signo) < 0 ? -errno : 0;
	return gi_kill_ns("mnt", c->mnt_dev, c->mnt_ino, signo);
}
