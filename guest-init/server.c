/* SPDX-License-Identifier: Apache-2.0 */
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "common/error.h"
#include "common/log.h"
#include "common/protocol.h"
#include "config.h"
#include "guest-init/guest-init.h"
#include "guest-init/relay.h"
#include "guest-init/server-int.h"
#include "guest-init/server.h"

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
		return gi_reply_error(st, m->id, -EOPNOTSUPP, "no network configuration here");
	err_clear();
	r = st->srv->net_reapply(n->net);
	if (r < 0)
		return gi_reply_error(st, m->id, r, err_msg());
	return gi_reply_error(st, m->id, 0, "");
}

static int handle_msg(struct state *st, struct proto_msg *m)
{
	switch (m->type) {
	case PROTO_MSG_START:
		return gi_handle_start(st, m);
	case PROTO_MSG_GO:
		return gi_handle_go(st, m);
	case PROTO_MSG_EXEC:
		return gi_handle_exec(st, m);
	case PROTO_MSG_SIGNAL:
		return gi_handle_signal(st, m);
	case PROTO_MSG_RESIZE:
		return gi_handle_resize(st, m);
	case PROTO_MSG_STATS:
		return gi_handle_stats(st, m->id);
	case PROTO_MSG_UPDATE:
		return gi_handle_update(st, m);
	case PROTO_MSG_NETWORK:
		return handle_network(st, m);
	default:
		return gi_reply_error(st, m->id, -EOPNOTSUPP, proto_type_name(m->type));
	}
}

static void reap(struct state *st)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		struct proc *p = gi_proc_find(st, pid);

		if (p) {
			p->exited = true;
			p->status = status;
		}
	}
}

/* Report every exited process whose output is drained. */
static int report_exits(struct state *st)
{
	for (size_t i = 0; i < MAX_PROCS; i++) {
		struct proc *p = &st->procs[i];
		struct proto_msg m;

		if (!p->used || !p->exited || p->out.active || p->err.active)
			continue;
		m = (struct proto_msg){.u.exit = {(uint32_t)p->pid, (uint32_t)p->status, p->init}};
		if (!st->host_gone && gi_reply(st, PROTO_MSG_EXIT, p->id, &m) < 0)
			st->host_gone = true;
		if (p->init) {
			st->init_done = true;
			st->init_status = p->status;
			/* The kernel has already killed the rest of its pid namespace. */
		}
		gi_proc_close(p);
	}
	return 0;
}

static void relay_events(struct proc *p, struct pollfd *pfd, size_t *n, struct relay **who)
{
	struct relay *rs[3] = {&p->in, &p->out, &p->err};

	for (int i = 0; i < 3; i++) {
		short ev;
		int fd = relay_poll(rs[i], &ev);

		if (fd < 0)
			continue;
		pfd[*n] = (struct pollfd){.fd = fd, .events = ev};
		who[(*n)++] = rs[i];
	}
}

static void relay_done(struct proc *p, struct relay *r)
{
	if (r == &p->in && p->fds[3] >= 0 && !isatty(p->fds[3])) {
		close(p->fds[3]); /* stdin EOF reaches the process */
		p->fds[3] = -1;
	} else if (r != &p->in && r->dst >= 0) {
		shutdown(r->dst, SHUT_WR); /* EOF for the host's reader */
	}
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

/* The init's stdio streams broke with the control stream (a restored
 * checkpoint): open them again from START's ports, on which the restoring
 * monitor listens. Exec'd processes lost their host side (their proxies
 * were processes of the saved monitor): they are killed. */
static void reopen_streams(struct state *st)
{
	const struct proto_process *pp = &st->start.u.start.process;

	for (size_t i = 0; i < MAX_PROCS; i++) {
		struct proc *p = &st->procs[i];
		const uint32_t ports[3] = {pp->stdin_port, pp->stdout_port, pp->stderr_port};
		bool tty = pp->terminal;

		if (!p->used || p->exited)
			continue;
		if (!p->init) {
			kill(p->pid, SIGKILL);
			continue;
		}
		for (int j = 0; j < (tty ? 1 : 3); j++) {
			int fd = -1;

			if (p->fds[j] < 0 || (j == 0 && !tty && p->fds[3] < 0))
				continue; /* stdin already at EOF */
			if (gi_open_port(st, ports[j], &fd) < 0) {
				log_error("%s", err_msg());
				continue;
			}
			close(p->fds[j]);
			p->fds[j] = fd;
		}
		if (tty) {
			relay_init(&p->in, p->fds[0], p->fds[3], false);
			relay_init(&p->out, p->fds[3], p->fds[0], false);
			continue;
		}
		if (p->in.active || p->fds[3] >= 0)
			relay_init(&p->in, p->fds[0], p->fds[3], true);
		relay_init(&p->out, p->fds[4], p->fds[1], true);
		relay_init(&p->err, p->fds[5], p->fds[2], true);
	}
}

/* A control stream that broke while the container is not done: the VM
 * was restored (see struct gi_server); connect again. True when there is
 * a new stream. */
static bool reconnect(struct state *st)
{
	int fd;

	if (st->init_done || !st->srv->reconnect)
		return false;
	close(st->srv->ctl);
	st->srv->ctl = -1;
	fd = st->srv->reconnect(st->srv->opaque);
	if (fd < 0) {
		log_error("reconnecting to the host: %s", err_msg());
		return false;
	}
	st->srv->ctl = fd;
	if (st->started)
		reopen_streams(st);
	return true;
}

static int poll_once(struct state *st, int sfd)
{
	struct pollfd pfd[3 + MAX_PROCS * 3];
	struct relay *who[3 + MAX_PROCS * 3];
	struct proto_msg m;
	size_t n = 0;
	int r;

	pfd[n++] = (struct pollfd){.fd = sfd, .events = POLLIN};
	pfd[n++] = (struct pollfd){.fd = st->host_gone ? -1 : st->srv->ctl, .events = POLLIN};
	pfd[n++] = (struct pollfd){.fd = st->oom_fd, .events = POLLPRI};
	for (size_t i = 0; i < MAX_PROCS; i++)
		if (st->procs[i].used)
			relay_events(&st->procs[i], pfd, &n, who);
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
		if (r < 0 && reconnect(st))
			return 0;
		if (r < 0) {
			/* The monitor is gone or speaks nonsense: end the VM. */
			st->host_gone = true;
			if (st->init_pid && !st->init_done)
				kill(st->init_pid, SIGKILL); /* takes its pid namespace along */
		} else {
			handle_msg(st, &m);
			proto_msg_free(&m);
		}
	}
	if (pfd[2].revents)
		gi_oom_check(st);
	for (size_t i = 3; i < n; i++) {
		if (!pfd[i].revents)
			continue;
		for (size_t j = 0; j < MAX_PROCS; j++) {
			struct proc *p = &st->procs[j];

			if (p->used && (who[i] == &p->in || who[i] == &p->out || who[i] == &p->err)) {
				if (relay_step(who[i]) == 1)
					relay_done(p, who[i]);
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
	gi_oom_watch(&st);
	while (r >= 0 && busy(&st) && !(st.host_gone && !st.init_pid))
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
			gi_proc_close(&st.procs[i]);
	proto_msg_free(&st.start);
	if (st.oom_fd >= 0)
		close(st.oom_fd);
	if (r < 0)
		return r;
	return st.init_status;
}

int gi_hello(int ctl)
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
	proto_msg_free(&m);
	return r;
}
