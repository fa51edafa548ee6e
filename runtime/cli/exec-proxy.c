/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/cleanup.h"
#include "common/error.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/unix-socket.h"
#include "common/stop-point.h"
#include "runtime/cli/exec-proxy.h"
#include "runtime/cli/log-sink.h"
#include "runtime/host/console.h"
#include "runtime/host/jail.h"
#include "runtime/monitor/guest-shares.h"
#include "runtime/monitor/monitor-relay.h"
#include "runtime/monitor/monitor.h"
#include "runtime/sandbox/guest-channel.h"
#include "runtime/store/monitor-client.h"

/* Beyond the monitor's own wait for the guest. */
#define EXEC_REPLY_MARGIN_MS (10 * 1000)
#define STREAM_TIMEOUT_MS (30 * 1000)
/* Connections a stdio listener queues: a few that fail the token check may
 * come before guest-init's. */
#define STREAM_BACKLOG 4
#define CALL_TIMEOUT_MS (130 * 1000)
/* How often a terminal's size is looked at when no SIGWINCH can come (a
 * pty whose master is someone else's). */
#define WINSIZE_POLL_MS 250

enum { S_IN, S_OUT, S_ERR, NR_STREAMS };

struct proxy {
	const struct exec_proxy_opts *o;
	const char *dir; /* the state directory as the proxy sees it (in the jail: JAIL_STATE_DIR) */
	struct jail *jail;
	int ready_fd;
	int sfd; /* signalfd */
	int listen_fds[NR_STREAMS];
	char *listen_paths[NR_STREAMS];
	uint32_t ports[NR_STREAMS];
	int streams[NR_STREAMS];
	int ctl; /* the monitor connection that carries our EXIT */
	int in_fd, out_fd, err_fd; /* host side */
	int tty_fd; /* whose size the guest's pty follows, or -1 */
	bool raw;
	struct termios saved;
	unsigned rows, cols;
	uint32_t guest_pid;
	struct relay *relays[NR_STREAMS];
};

/* Our stdio ports: random, from 2^31 up (below are the fixed ports of
 * guest-init and the vsock device's own range from 2^30), so that no
 * process in the guest can know them; the listener of one in use by
 * another proxy is never replaced. */
static int listen_port(struct proxy *p, int i)
{
	for (int tries = 0; tries < 16; tries++) {
		uint32_t port;
		struct stat st;

		if (getrandom(&port, sizeof(port), 0) != sizeof(port))
			return err_setsys(-errno, "getrandom");
		port = (port | (1u << 31)) & ~1u; /* never 0xffffffff, VMADDR_PORT_ANY */
		free(p->listen_paths[i]);
		if (asprintf(&p->listen_paths[i], "%s/%s_%u", p->o->dir, MONITOR_VSOCK_SOCK, port) < 0) {
			p->listen_paths[i] = NULL;
			return -ENOMEM;
		}
		if (lstat(p->listen_paths[i], &st) == 0)
			continue;
		p->listen_fds[i] = unix_listen(p->listen_paths[i], STREAM_BACKLOG);
		if (p->listen_fds[i] < 0)
			return p->listen_fds[i];
		p->ports[i] = port;
		return 0;
	}
	return err_set(-EADDRINUSE, "no free vsock port for the process's stdio");
}

static int listen_streams(struct proxy *p, int n)
{
	int r = guest_stream_token(p->o->proc->token);

	p->o->proc->has_token = true;
	for (int i = 0; r >= 0 && i < n; i++) {
		r = listen_port(p, i);
		/* The jailed monitor's vsock device connects to it. */
		if (r >= 0 && p->o->jail_uid && jail_own_path(p->listen_paths[i], p->o->jail_uid, p->o->jail_uid) < 0)
			r = -errno;
	}
	return r;
}

static void unlisten(struct proxy *p)
{
	for (int i = 0; i < NR_STREAMS; i++) {
		if (p->listen_fds[i] >= 0)
			close(p->listen_fds[i]);
		p->listen_fds[i] = -1;
		if (p->listen_paths[i])
			unlink(p->listen_paths[i]);
		free(p->listen_paths[i]);
		p->listen_paths[i] = NULL;
	}
}

/* The stream guest-init opened for port i: the first that opens with the
 * process's token (a process in the guest may have connected first). */
static int accept_stream(struct proxy *p, int i, int64_t deadline)
{
	for (;;) {
		struct pollfd pf = {.fd = p->listen_fds[i], .events = POLLIN};
		int left = clock_left_ms(deadline), r, fd;

		if (left <= 0 || poll(&pf, 1, left) <= 0)
			return err_set(-ETIMEDOUT, "the process's stdio streams did not connect");
		fd = accept4(p->listen_fds[i], NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			return err_setsys(-errno, "accept stdio stream");
		left = clock_left_ms(deadline);
		r = guest_stream_check_token(fd, p->o->proc->token,
		                             left < GUEST_TOKEN_WAIT_MS ? left : GUEST_TOKEN_WAIT_MS);
		if (r == 0) {
			p->streams[i] = fd;
			return 0;
		}
		close(fd);
		log_warn("exec: a stream to vsock port %u did not open with the process's token (%s): closed",
		         p->ports[i], strerror(-r));
	}
}

static int accept_streams(struct proxy *p, int n)
{
	int64_t deadline = clock_now_ms() + STREAM_TIMEOUT_MS;

	for (int i = 0; i < n; i++) {
		int r = accept_stream(p, i, deadline);

		if (r < 0)
			return r;
	}
	unlisten(p);
	return 0;
}

static int read_line(int fd, int timeout_ms, char *buf, size_t size)
{
	int64_t deadline = clock_now_ms() + timeout_ms;
	size_t len = 0;

	while (len + 1 < size) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		int64_t left = deadline - clock_now_ms();
		ssize_t n;

		if (timeout_ms >= 0 && left <= 0)
			return -ETIMEDOUT;
		if (poll(&pf, 1, timeout_ms >= 0 ? (int)left : -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		n = read(fd, buf + len, 1);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return -ECONNRESET;
		if (buf[len] == '\n')
			break;
		len++;
	}
	buf[len] = 0;
	return 0;
}

/* The request line with the app container's directories. */
static int send_member_line(struct proxy *p)
{
	_cleanup_free_ char *line = NULL;
	size_t n = (size_t)p->o->n_share_fds;
	char cbuf[CMSG_SPACE(GUEST_SHARES_MAX * sizeof(int))] = {0};
	struct iovec iov;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *c;
	ssize_t w;

	if (n > GUEST_SHARES_MAX)
		return err_set(-E2BIG, "%zu shared directories (at most %d)", n, GUEST_SHARES_MAX);
	if (asprintf(&line, "%s\n", p->o->member_line) < 0)
		return -ENOMEM;
	iov = (struct iovec){line, strlen(line)};
	if (n) {
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(n * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(n * sizeof(int));
		memcpy(CMSG_DATA(c), p->o->share_fds, n * sizeof(int));
	}
	do
		w = sendmsg(p->ctl, &mh, MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	if (w < 0)
		return -errno;
	/* The rest of the line (the descriptors went with its first bytes). */
	return (size_t)w < iov.iov_len ? write_all(p->ctl, line + w, iov.iov_len - (size_t)w) : 0;
}

/* Ask the monitor to exec the process (or create the app container); the
 * connection stays ours. */
static int send_exec(struct proxy *p)
{
	struct proto_msg msg = {.type = PROTO_MSG_EXEC};
	_cleanup_free_ char *path = NULL;
	char line[4096];
	int r;

	if (asprintf(&path, "%s/%s", p->o->dir, MONITOR_CONTROL_SOCK) < 0)
		return -ENOMEM;
	p->ctl = unix_connect(path, 0, p->o->start ? "the pod sandbox's monitor" : "the container's monitor");
	if (p->ctl < 0)
		return p->ctl;
	if (p->o->start) {
		r = send_member_line(p);
		if (r >= 0)
			r = proto_send_timeout(p->ctl, p->o->start, CALL_TIMEOUT_MS);
		if (r < 0)
			return err_setsys(r, "send the app container to the pod sandbox's monitor");
		r = read_line(p->ctl, guest_boot_timeout_ms() + EXEC_REPLY_MARGIN_MS, line, sizeof(line));
		if (r < 0)
			return err_setsys(r, "no answer from the pod sandbox's monitor");
		if (strncmp(line, "error ", 6) == 0)
			return err_set(-EIO, "%s", line + 6);
		if (sscanf(line, "ok %u", &p->guest_pid) != 1)
			return err_set(-EIO, "unexpected answer from the pod sandbox's monitor: %s", line);
		return 0;
	}
	r = write_all(p->ctl, "exec\n", 5);
	msg.u.exec = *p->o->proc;
	if (r >= 0)
		r = proto_send_timeout(p->ctl, &msg, CALL_TIMEOUT_MS);
	if (r < 0)
		return err_setsys(r, "send the process to the container's monitor");
	r = read_line(p->ctl, guest_boot_timeout_ms() + EXEC_REPLY_MARGIN_MS, line, sizeof(line));
	if (r < 0)
		return err_setsys(r, "no answer from the container's monitor");
	if (strncmp(line, "error ", 6) == 0)
		return err_set(-EIO, "unable to start container process: %s", line + 6);
	if (sscanf(line, "ok %u", &p->guest_pid) != 1)
		return err_set(-EIO, "unexpected answer from the container's monitor: %s", line);
	return 0;
}

/* The host end of the terminal: a new pty (its master to the console
 * socket), or our own tty in raw mode, or plain stdio. */
static int setup_terminal(struct proxy *p)
{
	struct proto_process *pp = p->o->proc;
	char name[128];
	int master, slave, r;

	if (p->o->console_socket) {
		r = console_open_pty(&master, &slave, name, sizeof(name));
		if (r < 0)
			return r;
		(void)console_set_size(master, pp->rows, pp->cols);
		r = console_send_fd(p->o->console_socket, master, name);
		close(master);
		if (r < 0) {
			close(slave);
			return r;
		}
		p->in_fd = p->out_fd = p->tty_fd = slave;
	} else if (isatty(STDIN_FILENO)) {
		if (console_make_raw(STDIN_FILENO, &p->saved) == 0)
			p->raw = true;
		p->tty_fd = STDIN_FILENO;
	}
	if (p->tty_fd >= 0 && console_get_size(p->tty_fd, &p->rows, &p->cols) == 0 && p->rows && p->cols &&
	    !(pp->rows && pp->cols)) {
		pp->rows = (uint16_t)p->rows;
		pp->cols = (uint16_t)p->cols;
	}
	return 0;
}

static void start_relays(struct proxy *p)
{
	if (p->o->proc->terminal) {
		p->relays[S_IN] = relay_start(p->in_fd, p->streams[S_IN], true);
		p->relays[S_OUT] = relay_start(p->streams[S_IN], p->out_fd, false);
		return;
	}
	p->relays[S_IN] = relay_start(p->in_fd, p->streams[S_IN], true);
	p->relays[S_OUT] = relay_start(p->streams[S_OUT], p->out_fd, false);
	p->relays[S_ERR] = relay_start(p->streams[S_ERR], p->err_fd, false);
}

static int block_signals(void)
{
	sigset_t set;

	sigfillset(&set);
	/* Faults are ours, not the process's. */
	sigdelset(&set, SIGSEGV);
	sigdelset(&set, SIGBUS);
	sigdelset(&set, SIGFPE);
	sigdelset(&set, SIGILL);
	sigdelset(&set, SIGTRAP);
	sigdelset(&set, SIGSYS);
	sigprocmask(SIG_BLOCK, &set, NULL);
	return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

static int call(struct proxy *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int call(struct proxy *p, const char *fmt, ...)
{
	char req[128];
	va_list ap;
	int r;

	va_start(ap, fmt);
	vsnprintf(req, sizeof(req), fmt, ap);
	va_end(ap);
	r = monitor_call(p->dir, req, CALL_TIMEOUT_MS, NULL);
	if (r < 0)
		log_debug("exec proxy: %s: %s", req, err_msg());
	return r;
}

/* A size the monitor refused (a paused container) is tried again at the
 * next look: only a size passed on is recorded. */
static void check_size(struct proxy *p)
{
	unsigned rows, cols;

	if (p->tty_fd < 0 || console_get_size(p->tty_fd, &rows, &cols) < 0 || (rows == p->rows && cols == p->cols))
		return;
	if (call(p, "resize %u %u %u", p->guest_pid, rows, cols) < 0)
		return;
	p->rows = rows;
	p->cols = cols;
}

static void on_signals(struct proxy *p, int sfd)
{
	struct signalfd_siginfo si;

	while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGWINCH:
			check_size(p);
			break;
		case SIGCHLD:
		case SIGPIPE:
		case SIGURG:
			break; /* ours, as runc's forwarding leaves them */
		default:
			call(p, "signal %u %u", p->guest_pid, si.ssi_signo);
		}
	}
}

static _Noreturn void finish(struct proxy *p, uint32_t status)
{
	relay_join(p->relays[S_OUT]);
	relay_join(p->relays[S_ERR]);
	if (p->raw)
		console_restore(STDIN_FILENO, &p->saved);
	/* In the foreground we are `exec` itself, which under runc exits
	 * 128+N for a process killed by signal N; a detached proxy stands for
	 * the process (its pid is the pid file's) and dies the same way. */
	if (!p->o->detach && WIFSIGNALED(status))
		_exit(128 + WTERMSIG(status));
	monitor_exit_like(status);
}

/* Until the monitor passes on the process's EXIT. */
static _Noreturn void serve(struct proxy *p, int sfd)
{
	for (;;) {
		struct pollfd pf[2] = {{.fd = p->ctl, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
		char line[64];
		unsigned status;

		if (poll(pf, 2, p->tty_fd >= 0 ? WINSIZE_POLL_MS : -1) < 0 && errno != EINTR)
			break;
		if (pf[1].revents)
			on_signals(p, sfd);
		if (pf[0].revents) {
			if (read_line(p->ctl, 1000, line, sizeof(line)) == 0 && sscanf(line, "exit %u", &status) == 1)
				finish(p, status);
			break;
		}
		check_size(p);
	}
	/* The monitor went away: so did the VM, and the process with it. */
	finish(p, SIGKILL);
}

/* The proxy keeps its streams, its control connection, its stdio or pty,
 * its signals, the ready pipe and the log; the rest goes. */
static int close_others(struct proxy *p)
{
	int keep[] = {STDIN_FILENO,      STDOUT_FILENO, STDERR_FILENO, p->ctl,      p->streams[S_IN], p->streams[S_OUT],
	              p->streams[S_ERR], p->tty_fd,     p->sfd,        p->ready_fd, log_sink_fd()};
	int r = fd_close_all_except(keep, ARRAY_SIZE(keep));

	return r < 0 ? err_setsys(r, "close inherited descriptors") : 0;
}

/* The relays and everything after them run in the jail (exec-proxy.h),
 * which must be complete before they start: the jail's steps need a
 * process with one thread. */
static int enter_jail(struct proxy *p)
{
	struct jail_config c = {
	    .profile = JAIL_PROXY, .uid = p->o->jail_uid, .gid = p->o->jail_uid, .net = JAIL_NET_NEW};
	_cleanup_free_ char *dir = NULL;
	int r;

	if (!p->o->jail_uid)
		return 0;
	/* --root may be relative: the jail binds absolute paths. */
	dir = realpath(p->o->dir, NULL);
	if (!dir)
		return err_setsys(-errno, "%s", p->o->dir);
	c.state_dir = dir;
	tzset();
	r = jail_mount(&c, &p->jail);
	if (r >= 0)
		r = close_others(p);
	if (r >= 0)
		r = jail_begin(p->jail);
	if (r >= 0)
		r = jail_finish(p->jail);
	if (r < 0)
		return err_prefix(r, "exec proxy jail");
	p->dir = JAIL_STATE_DIR;
	return 0;
}

static int write_pid(const char *path, pid_t pid)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%d", (int)pid);
	int r = write_file_atomic(path, buf, (size_t)n, 0644);

	return r < 0 ? err_setsys(r, "write pid file %s", path) : 0;
}

/* The proxy's start: returns < 0 when the process could not be started,
 * else serves and never returns. ready_fd (or -1) hears "ok". */
static int proxy_main(const struct exec_proxy_opts *o, int ready_fd)
{
	struct proxy p = {
	    .o = o, .dir = o->dir, .ready_fd = ready_fd, .ctl = -1, .in_fd = 0, .out_fd = 1, .err_fd = 2, .tty_fd = -1};
	struct proto_process *pp = o->proc;
	int n = pp->terminal ? 1 : NR_STREAMS, r;

	for (int i = 0; i < NR_STREAMS; i++)
		p.listen_fds[i] = p.streams[i] = -1;
	/* Our pid stands for the process: of the caller's descriptors we
	 * keep stdio only, as runc's init does. */
	(void)fd_close_inherited(3);
	signal(SIGPIPE, SIG_IGN);
	p.sfd = block_signals();
	r = pp->terminal ? setup_terminal(&p) : 0;
	if (r >= 0)
		r = listen_streams(&p, n);
	pp->stdin_port = p.ports[S_IN];
	pp->stdout_port = pp->terminal ? 0 : p.ports[S_OUT];
	pp->stderr_port = pp->terminal ? 0 : p.ports[S_ERR];
	stop_point("exec:listening");
	if (r >= 0)
		r = send_exec(&p);
	stop_point("exec:started");
	if (r >= 0)
		r = accept_streams(&p, n);
	stop_point("exec:streams");
	if (r >= 0 && !o->detach && o->pid_file)
		r = write_pid(o->pid_file, getpid());
	/* A jail that cannot be made fails the exec: the process started is
	 * killed when our control connection closes. */
	if (r >= 0)
		r = enter_jail(&p);
	if (r < 0) {
		unlisten(&p);
		if (p.raw)
			console_restore(STDIN_FILENO, &p.saved);
		return r;
	}
	start_relays(&p);
	if (ready_fd >= 0) {
		char ok[32];
		int len = snprintf(ok, sizeof(ok), "ok %u\n", p.guest_pid);

		(void)write_all(ready_fd, ok, (size_t)len);
		close(ready_fd);
	}
	serve(&p, p.sfd);
}

int exec_proxy_run(const struct exec_proxy_opts *o)
{
	char line[4096] = "";
	int pfd[2], r, status;
	unsigned guest_pid;
	pid_t pid;

	if (!o->detach)
		return proxy_main(o, -1);
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return err_setsys(-errno, "pipe");
	pid = fork();
	if (pid < 0)
		return err_setsys(-errno, "fork");
	if (pid == 0) {
		close(pfd[0]);
		if (o->close_fd > 0)
			close(o->close_fd);
		setsid();
		/* With a console socket the process's stdio is the pty: keep
		 * nothing of the caller's (its stdout/stderr pipes must reach
		 * EOF when it exits). */
		if (o->proc->terminal && o->console_socket)
			stdio_to_null();
		r = proxy_main(o, pfd[1]);
		{
			_cleanup_free_ char *msg = NULL;

			if (asprintf(&msg, "error %s\n", err_msg()[0] ? err_msg() : strerror(-r)) > 0)
				(void)write_all(pfd[1], msg, strlen(msg));
		}
		_exit(255);
	}
	close(pfd[1]);
	r = read_line(pfd[0], -1, line, sizeof(line));
	close(pfd[0]);
	if (r == 0 && sscanf(line, "ok %u", &guest_pid) == 1) {
		if (o->ret_pid)
			*o->ret_pid = pid;
		if (o->ret_guest_pid)
			*o->ret_guest_pid = guest_pid;
		r = o->pid_file ? write_pid(o->pid_file, pid) : 0;
		if (r < 0)
			kill(pid, SIGKILL); /* the monitor then kills the process */
		return r;
	}
	waitpid(pid, &status, 0);
	if (r == 0 && strncmp(line, "error ", 6) == 0)
		return err_set(-EIO, "%s", line + 6);
	return err_set(-EIO, "the exec proxy died before the process started");
}
