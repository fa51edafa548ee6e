/* SPDX-License-Identifier: Apache-2.0 */
/* The streams of a container's processes: stdio (connected to the host's
 * ports with their token, relayed through pipes or a pty, opened again
 * after a restore), preserved fds (handed to the process as they are). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "common/log.h"
#include "guest-init/server-int.h"

void proc_extra_close(struct proc *p)
{
	for (size_t i = 0; i < p->n_extra; i++)
		if (p->extra[i] >= 0)
			close(p->extra[i]);
	p->n_extra = 0;
}

/* Every fd made non-blocking here is new (a vsock stream, a pipe, the
 * pty master): it has no other status flag (O_APPEND, O_ASYNC...) that an
 * F_GETFL first would keep. */
static int nonblock(int fd)
{
	return fcntl(fd, F_SETFL, O_NONBLOCK) < 0 ? -errno : 0;
}

/* The stream to host port (none for 0), opened with token (when not
 * NULL): the host takes only streams that begin with it. */
static int open_port(struct state *st, uint32_t port, const uint8_t *token, int *ret)
{
	int fd, r;

	if (!port) {
		*ret = -1;
		return 0;
	}
	fd = st->srv->connect_port(port, st->srv->opaque);
	if (fd < 0)
		return err_setsys(fd, "connect stdio port %u", port);
	if (token && (r = write_all(fd, token, PROTO_TOKEN_BYTES)) < 0) {
		close(fd);
		return err_setsys(r, "stdio port %u", port);
	}
	*ret = fd;
	return nonblock(fd);
}

/* What process pp's streams open with: its own token (EXEC), else the
 * host's from HELLO (the init's). */
static const uint8_t *stream_token(const struct state *st, const struct proto_process *pp)
{
	if (pp && pp->has_token)
		return pp->token;
	return st->srv->has_host_token ? st->srv->host_token : NULL;
}

/* The preserved fds' streams, closed in the direction the host fd does
 * not go: the process holds the stream itself (no relay here). */
int proc_extra_connect(struct state *st, struct proc *p, const struct proto_process *pp)
{
	int r;

	if (pp->n_extra_fds > PROTO_MAX_EXTRA_FDS)
		return err_set(-E2BIG, "%zu preserved fds: at most %d", pp->n_extra_fds, PROTO_MAX_EXTRA_FDS);
	for (size_t i = 0; i < pp->n_extra_fds; i++) {
		const struct proto_extra_fd *e = &pp->extra_fds[i];
		const uint8_t *token = stream_token(st, pp);
		int fd = st->srv->connect_port(e->port, st->srv->opaque);

		if (fd < 0)
			return err_setsys(fd, "connect preserved fd %zu's port %u", 3 + i, e->port);
		p->extra[p->n_extra++] = fd;
		if (token && (r = write_all(fd, token, PROTO_TOKEN_BYTES)) < 0)
			return err_setsys(r, "preserved fd %zu's stream", 3 + i);
		r = 0;
		if (!(e->mode & PROTO_EXTRA_FD_WRITE))
			r = shutdown(fd, SHUT_WR);
		else if (!(e->mode & PROTO_EXTRA_FD_READ))
			r = shutdown(fd, SHUT_RD);
		if (r < 0)
			return err_setsys(-errno, "preserved fd %zu", 3 + i);
	}
	return 0;
}

/* Connect the stdio streams and make the pipes the child gets. Slots:
 * fds[0..2] = host streams, fds[3..5] = our pipe ends. */
int proc_stdio_connect(struct state *st, struct proc *p, const struct proto_process *pp, int child_fds[3])
{
	int r, pfd[2];

	child_fds[0] = child_fds[1] = child_fds[2] = -1;
	if (pp->terminal)
		return open_port(st, pp->stdin_port, stream_token(st, pp), &p->fds[0]);
	const uint32_t ports[3] = {pp->stdin_port, pp->stdout_port, pp->stderr_port};
	for (int i = 0; i < 3; i++) {
		r = open_port(st, ports[i], stream_token(st, pp), &p->fds[i]);
		if (r < 0)
			return r;
		if (p->fds[i] < 0)
			continue;
		if (pipe2(pfd, O_CLOEXEC) < 0)
			return err_setsys(-errno, "pipe");
		/* stdin: we write pfd[1], the child reads pfd[0]; outputs reverse. */
		p->fds[3 + i] = i == 0 ? pfd[1] : pfd[0];
		child_fds[i] = i == 0 ? pfd[0] : pfd[1];
		nonblock(p->fds[3 + i]);
	}
	relay_init(&p->in, p->fds[0], p->fds[3], true);
	relay_init(&p->out, p->fds[4], p->fds[1], true);
	relay_init(&p->err, p->fds[5], p->fds[2], true);
	return 0;
}

void proc_terminal_relays(struct proc *p)
{
	p->fds[3] = p->child.pty_master;
	p->child.pty_master = -1;
	if (p->fds[3] < 0)
		return;
	nonblock(p->fds[3]);
	relay_init(&p->in, p->fds[0], p->fds[3], false);
	relay_init(&p->out, p->fds[3], p->fds[0], false);
}

void proc_relay_events(struct proc *p, struct pollfd *pfd, size_t *n, struct relay **who)
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

void proc_relay_done(struct proc *p, struct relay *r)
{
	if (r == &p->in && p->fds[3] >= 0 && !isatty(p->fds[3])) {
		close(p->fds[3]); /* stdin EOF reaches the process */
		p->fds[3] = -1;
	} else if (r != &p->in && r->dst >= 0) {
		shutdown(r->dst, SHUT_WR); /* EOF for the host's reader */
	}
}

/* The init's stdio streams broke with the control stream (a restored
 * checkpoint): open them again from START's ports, on which the restoring
 * monitor listens. Exec'd processes and pod members lost their host side
 * (their proxies were processes of the saved monitor): they are killed. */
void server_reopen_streams(struct state *st)
{
	const struct proto_process *pp = &st->ctrs[0].start.u.start.process;

	for (size_t i = 0; i < MAX_PROCS; i++) {
		struct proc *p = &st->procs[i];
		const uint32_t ports[3] = {pp->stdin_port, pp->stdout_port, pp->stderr_port};
		bool tty = pp->terminal;

		if (!p->used || p->exited)
			continue;
		if (!p->init || p->ctr != &st->ctrs[0]) {
			kill(p->pid, SIGKILL);
			continue;
		}
		for (int j = 0; j < (tty ? 1 : 3); j++) {
			int fd = -1;

			if (p->fds[j] < 0 || (j == 0 && !tty && p->fds[3] < 0))
				continue; /* stdin already at EOF */
			if (open_port(st, ports[j], stream_token(st, NULL), &fd) < 0) {
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
