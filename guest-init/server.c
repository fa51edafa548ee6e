/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/protocol.h"
#include "config.h"
#include "guest-init/guest-init.h"
#include "guest-init/relay.h"
#include "guest-init/server-int.h"
#include "guest-init/server.h"

/* START failed before there was a process: the ERROR, then the EXIT of
 * an init that never ran, so the host ends the VM. */
static int start_failed(struct state *st, int r)
{
	struct proto_msg em = {.u.exit = {0, 1 << 8, true}};
	uint64_t id = st->ctrs[0].start.id;

	st->init_done = true;
	st->init_status = 1 << 8;
	server_reply_error(st, id, r, err_msg());
	return server_reply(st, PROTO_MSG_EXIT, id, &em);
}

/* The VM's first container: the only one, or a pod's sandbox. */
static int start_first(struct state *st, struct proto_msg *m)
{
	struct ctr *c = &st->ctrs[0];
	struct proto_start *s;
	struct proc *p;
	int r;

	if (c->used)
		return server_reply_error(st, m->id, -EBUSY, "container already started");
	c->used = true;
	c->start = *m; /* take ownership */
	memset(m, 0, sizeof(*m));
	c->rootfs = st->srv->rootfs_dir;
	c->files_dir = st->srv->files_dir;
	c->cgroup = st->srv->cgroup_dir;
	s = &c->start.u.start;
	gi_mark(10);
	if (st->srv->apply_identity && st->srv->apply_identity(s) < 0)
		log_warn("%s", err_msg()); /* a clock or seed problem must not stop the container */
	gi_mark(11);
	r = ctr_mount_root(st, c);
	gi_mark(12);
	if (r < 0)
		return start_failed(st, r);
	/* Loopback alone is up since boot (main.c): only interfaces need
	 * the netlink round trips. */
	if (st->srv->net_apply && s->net && s->net->nr_ifaces) {
		err_clear();
		r = st->srv->net_apply(s->net);
		if (r < 0)
			return start_failed(st, err_prefix(r, "network setup"));
	}
	gi_mark(13);
	r = ctr_cgroup_setup(c->cgroup, s);
	gi_mark(14);
	if (r < 0)
		return start_failed(st, r);
	/* A pod's sandbox: the pod's /dev/shm, which its members bind. */
	gi_pod_shm_setup(s);
	if (proc_spawn(st, &c->start, c, &p) < 0)
		return 0;
	return proc_created(st, p);
}

static int handle_go(struct state *st, const struct proto_msg *m)
{
	struct proc *p = proc_find(st, (pid_t)m->u.started.pid);

	gi_mark(30);
	if (!p || !p->init || p->child.sync_fd < 0)
		return server_reply_error(st, m->id, -ESRCH, "no created container to start");
	return proc_go(st, p, m->id);
}

static int handle_exec(struct state *st, struct proto_msg *m)
{
	struct ctr *c = ctr_find(st, m->u.exec.container);
	struct proc *p;

	gi_mark(40);
	if (!c)
		return server_reply_error(st, m->id, -ESRCH, "container is not running");
	/* A process joining a frozen cgroup would stop before it could say
	 * it started, and PID 1 would wait for it. */
	if (c->frozen)
		return server_reply_error(st, m->id, -EBUSY,
		                          "the container is paused (its cgroup frozen): resume it first");
	if (proc_spawn(st, m, c, &p) < 0)
		return 0;
	return proc_go(st, p, m->id);
}

/* The cgroup a STATS or UPDATE for container (0: the first, whose cgroup
 * is there before its START) reads or writes; NULL: none. -ESRCH when no
 * such pod member runs. */
static int request_cgroup(struct state *st, uint32_t container, const char **ret)
{
	struct ctr *c;

	if (!container) {
		*ret = st->srv->cgroup_dir;
		return 0;
	}
	c = ctr_find(st, container);
	if (!c)
		return -ESRCH;
	*ret = c->cgroup;
	return 0;
}

static int handle_stats(struct state *st, const struct proto_msg *req)
{
	struct proto_msg m = {0};
	const char *cg;

	if (request_cgroup(st, req->u.stats.container, &cg) < 0)
		return server_reply_error(st, req->id, -ESRCH, "no such pod member");
	gi_cgroup_stats(cg, &m.u.stats);
	return server_reply(st, PROTO_MSG_STATS, req->id, &m);
}

static int handle_ps(struct state *st, const struct proto_msg *req)
{
	struct proto_msg m = {.type = PROTO_MSG_PS};
	struct ctr *c = ctr_find(st, req->u.ps.container);
	uint64_t id = req->id;
	int r;

	if (!c)
		return server_reply_error(st, id, -ESRCH, "container is not running");
	err_clear();
	r = gi_ps_collect("/proc", c->init_pid, &m.u.ps);
	r = r < 0 ? server_reply_error(st, id, r, err_msg()) : server_reply(st, PROTO_MSG_PS, id, &m);
	proto_msg_free(&m);
	return r;
}

static int handle_signal(struct state *st, const struct proto_msg *m)
{
	const struct proto_signal *s = &m->u.signal;
	struct proc *p = proc_find(st, (pid_t)s->pid);
	int r = 0;

	/* 0 only asks whether the process is there (runc kill ID 0). */
	if (s->signo >= 65)
		return server_reply_error(st, m->id, -EINVAL, "invalid signal");
	if (!p || p->exited)
		return server_reply_error(st, m->id, -ESRCH, "process not found");
	if (s->all && ctr_running(st, p->ctr))
		r = ctr_signal_all(st, p->ctr, (int)s->signo);
	else if (p->pid <= 0 || kill(p->pid, (int)s->signo) < 0)
		r = -errno;
	if (r < 0)
		return server_reply_error(st, m->id, r, "kill");
	return server_reply_error(st, m->id, 0, "");
}

static int handle_resize(struct state *st, const struct proto_msg *m)
{
	struct proc *p = proc_find(st, (pid_t)m->u.resize.pid);
	struct winsize ws = {.ws_row = m->u.resize.rows, .ws_col = m->u.resize.cols};

	if (!p || p->in.dst < 0 || !isatty(p->fds[3]))
		return server_reply_error(st, m->id, -ENOTTY, "process has no terminal");
	if (ioctl(p->fds[3], TIOCSWINSZ, &ws) < 0)
		return server_reply_error(st, m->id, -errno, "resize");
	return server_reply_error(st, m->id, 0, "");
}

/* How long a pause waits for the cgroup to be frozen (runc: 10 s). */
#define FREEZE_TIMEOUT_MS 10000

/* UPDATE: the limits that can change at run time, and pause/resume (the
 * cgroup frozen or thawed). */
static int handle_update(struct state *st, const struct proto_msg *m)
{
	const struct proto_update *u = &m->u.update;
	const char *cg;
	int r = 0;

	if (request_cgroup(st, u->container, &cg) < 0)
		return server_reply_error(st, m->id, -ESRCH, "no such pod member");
	if (!cg)
		return server_reply_error(st, m->id, -ENOTSUP, "the container has no cgroup");
	if (u->has_pids_max && (r = gi_cgroup_set_limit(cg, "pids.max", u->pids_max)) < 0)
		return server_reply_error(st, m->id, r, "set pids.max");
	if (u->has_memory_max && (r = gi_cgroup_set_limit(cg, "memory.max", u->memory_max)) < 0)
		return server_reply_error(st, m->id, r, "set memory.max");
	err_clear();
	if ((u->has_cpu_quota || u->has_cpu_period || u->has_cpu_weight || u->cpuset_cpus) &&
	    (r = gi_cgroup_set_cpu(cg, u)) < 0)
		return server_reply_error(st, m->id, r, err_msg());
	if (u->has_frozen && (r = gi_cgroup_freeze(cg, u->frozen != 0, FREEZE_TIMEOUT_MS)) < 0)
		return server_reply_error(st, m->id, r, err_msg());
	if (u->has_frozen)
		(u->container ? ctr_find(st, u->container) : &st->ctrs[0])->frozen = u->frozen != 0;
	return server_reply_error(st, m->id, 0, "");
}

/* NETWORK: a checkpoint restored into another network namespace. The
 * clock first (it stood still while the VM was saved), then the
 * interfaces: new MACs, MTUs, addresses and routes. */
static int handle_network(struct state *st, const struct proto_msg *m)
{
	const struct proto_network *n = &m->u.network;
	int r;

	if (n->has_realtime && st->srv->apply_identity &&
	    st->srv->apply_identity(&(struct proto_start){.has_realtime = true, .realtime_ns = n->realtime_ns}) < 0)
		log_warn("%s", err_msg());
	if (!st->srv->net_reapply)
		return server_reply_error(st, m->id, -EOPNOTSUPP, "no network configuration here");
	err_clear();
	r = st->srv->net_reapply(n->net);
	if (r < 0)
		return server_reply_error(st, m->id, r, err_msg());
	return server_reply_error(st, m->id, 0, "");
}

/* The kernel flags memory.events (POLLPRI) whenever a counter moves. */
static void oom_watch(struct state *st)
{
	st->oom_fd = st->srv->cgroup_dir ? gi_oom_open(st->srv->cgroup_dir, &st->oom) : -1;
}

/* An OOM kill (or a failed reclaim at the limit) since the last look:
 * tell the host, whose `kvrun events` reports it. */
static void oom_check(struct state *st)
{
	struct proto_msg m = {0};
	struct proto_oom now;

	if (gi_oom_read(st->oom_fd, &now) < 0)
		return;
	if (now.oom_kill == st->oom.oom_kill && now.oom == st->oom.oom)
		return;
	st->oom = now;
	m.u.oom = now;
	if (!st->host_gone && server_reply(st, PROTO_MSG_OOM, 0, &m) < 0)
		st->host_gone = true;
}

static int handle_msg(struct state *st, struct proto_msg *m)
{
	switch (m->type) {
	case PROTO_MSG_START:
		if (m->flags & PROTO_START_F_MEMBER)
			return member_start(st, m);
		return start_first(st, m);
	case PROTO_MSG_GO:
		return handle_go(st, m);
	case PROTO_MSG_EXEC:
		return handle_exec(st, m);
	case PROTO_MSG_SIGNAL:
		return handle_signal(st, m);
	case PROTO_MSG_RESIZE:
		return handle_resize(st, m);
	case PROTO_MSG_STATS:
		return handle_stats(st, m);
	case PROTO_MSG_PS:
		return handle_ps(st, m);
	case PROTO_MSG_UPDATE:
		return handle_update(st, m);
	case PROTO_MSG_NETWORK:
		return handle_network(st, m);
	default:
		return server_reply_error(st, m->id, -EOPNOTSUPP, proto_type_name(m->type));
	}
}

static void reap(struct state *st)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		struct proc *p = proc_find(st, pid);

		if (!p)
			continue;
		p->exited = true;
		p->status = status;
		if (p->init && p->ctr != &st->ctrs[0])
			member_init_exited(st, p->ctr);
	}
}

/* Report every exited process whose output is drained. */
static int report_exits(struct state *st)
{
	for (size_t i = 0; i < MAX_PROCS; i++) {
		struct proc *p = &st->procs[i];
		struct proto_msg m;
		bool first;

		if (!p->used || !p->exited || p->out.active || p->err.active)
			continue;
		first = p->init && p->ctr == &st->ctrs[0];
		m = (struct proto_msg){.u.exit = {(uint32_t)p->pid, (uint32_t)p->status, first}};
		if (!st->host_gone && server_reply(st, PROTO_MSG_EXIT, p->id, &m) < 0)
			st->host_gone = true;
		if (first) {
			st->init_done = true;
			st->init_status = p->status;
			/* The kernel has already killed the rest of its pid
			 * namespace; pod members go with the VM. */
			members_kill(st);
		} else if (p->init) {
			member_ended(st, p->ctr);
		}
		proc_close(p);
	}
	return 0;
}

static bool busy(struct state *st)
{
	if (!st->init_done)
		return true;
	for (size_t i = 0; i < MAX_PROCS; i++)
		if (st->procs[i].used)
			return true;
	return false;
}

/* A control stream that broke while the container is not done: the VM
 * was restored (see struct gi_server); connect again. True when there is
 * a new stream. */
static bool reconnect(struct state *st, int why)
{
	int fd;

	if (st->init_done || !st->srv->reconnect)
		return false;
	log_warn("the control stream broke (%s): connecting again", strerror(-why));
	close(st->srv->ctl);
	st->srv->ctl = -1;
	fd = st->srv->reconnect(st->srv->opaque);
	if (fd < 0) {
		log_error("reconnecting to the host: %s", err_msg());
		return false;
	}
	st->srv->ctl = fd;
	if (st->ctrs[0].used)
		server_reopen_streams(st);
	return true;
}

static int poll_once(struct state *st, int sfd)
{
	struct pollfd pfd[3 + MAX_PROCS * 3 + MAX_CONTAINERS];
	struct relay *who[3 + MAX_PROCS * 3 + MAX_CONTAINERS];
	struct ctr *oom_of[MAX_CONTAINERS];
	struct proto_msg m;
	size_t n = 0, relays, n_oom = 0;
	int r;

	pfd[n++] = (struct pollfd){.fd = sfd, .events = POLLIN};
	pfd[n++] = (struct pollfd){.fd = st->host_gone ? -1 : st->srv->ctl, .events = POLLIN};
	pfd[n++] = (struct pollfd){.fd = st->oom_fd, .events = POLLPRI};
	for (size_t i = 0; i < MAX_PROCS; i++)
		if (st->procs[i].used)
			proc_relay_events(&st->procs[i], pfd, &n, who);
	relays = n;
	/* Members' memory.events, after the relays. */
	for (size_t i = 1; i < MAX_CONTAINERS; i++)
		if (st->ctrs[i].used && st->ctrs[i].oom_fd > 0) {
			oom_of[n_oom++] = &st->ctrs[i];
			pfd[n++] = (struct pollfd){.fd = st->ctrs[i].oom_fd, .events = POLLPRI};
		}
	if (poll(pfd, n, -1) < 0)
		return errno == EINTR ? 0 : -errno;
	if (pfd[0].revents) {
		struct signalfd_siginfo si;

		while (read(sfd, &si, sizeof(si)) > 0)
			;
		reap(st);
	}
	if (pfd[1].revents) {
		r = proto_recv(st->srv->ctl, &m);
		if (r < 0 && reconnect(st, r))
			return 0;
		if (r < 0) {
			/* The monitor is gone or speaks nonsense: end the VM. */
			st->host_gone = true;
			if (ctr_running(st, &st->ctrs[0]))
				kill(st->ctrs[0].init_pid, SIGKILL); /* takes its pid namespace along */
		} else {
			handle_msg(st, &m);
			proto_msg_free(&m);
		}
	}
	if (pfd[2].revents)
		oom_check(st);
	for (size_t i = 0; i < n_oom; i++)
		if (pfd[relays + i].revents && oom_of[i]->oom_fd == pfd[relays + i].fd)
			member_oom_check(st, oom_of[i]);
	for (size_t i = 3; i < relays; i++) {
		if (!pfd[i].revents)
			continue;
		for (size_t j = 0; j < MAX_PROCS; j++) {
			struct proc *p = &st->procs[j];

			if (p->used && (who[i] == &p->in || who[i] == &p->out || who[i] == &p->err)) {
				if (relay_step(who[i]) == 1)
					proc_relay_done(p, who[i]);
				break;
			}
		}
	}
	return report_exits(st);
}

int gi_serve(struct gi_server *srv)
{
	struct state st = {.srv = srv};
	_cleanup_close_ int sfd = -1;
	sigset_t mask;
	int r = 0;

	/* A peer that went away must not kill PID 1 (children reset it). */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		return err_setsys(-errno, "signalfd");
	oom_watch(&st);
	gi_pod_shm_dir = srv->pod_shm_dir;
	while (r >= 0 && busy(&st) && !(st.host_gone && !st.ctrs[0].init_pid))
		r = poll_once(&st, sfd);
	/* Half-close and let the host read the last EXIT before power-off. */
	if (!st.host_gone) {
		struct pollfd pfd = {.fd = srv->ctl, .events = POLLIN};
		char buf[256];

		shutdown(srv->ctl, SHUT_WR);
		while (poll(&pfd, 1, srv->linger_s * 1000) > 0 && read(srv->ctl, buf, sizeof(buf)) > 0)
			;
	}
	for (size_t i = 0; i < MAX_PROCS; i++)
		if (st.procs[i].used)
			proc_close(&st.procs[i]);
	for (size_t i = 0; i < MAX_CONTAINERS; i++)
		if (st.ctrs[i].used)
			ctr_free(&st.ctrs[i]);
	if (st.oom_fd >= 0)
		close(st.oom_fd);
	if (r < 0)
		return r;
	return st.init_status;
}

int gi_hello(int ctl, struct gi_server *srv)
{
	struct proto_msg m = {.type = PROTO_MSG_HELLO};
	int r;

	m.u.hello = (struct proto_hello){KVRUN_PROTO_VERSION, KVRUN_PROTO_VERSION, (char *)"kvrun-init " KVRUN_VERSION};
	r = proto_send(ctl, &m);
	if (r < 0)
		return err_setsys(r, "send HELLO");
	r = proto_recv(ctl, &m);
	if (r < 0)
		return err_setsys(r, "receive HELLO");
	if (m.type != PROTO_MSG_HELLO || m.u.hello.version_min > KVRUN_PROTO_VERSION ||
	    m.u.hello.version_max < KVRUN_PROTO_VERSION)
		r = err_set(-EPROTONOSUPPORT, "host does not speak protocol version %d", KVRUN_PROTO_VERSION);
	else if (srv) {
		srv->has_host_token = m.u.hello.has_token;
		memcpy(srv->host_token, m.u.hello.token, sizeof(srv->host_token));
	}
	proto_msg_free(&m);
	return r;
}
