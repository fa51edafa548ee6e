/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/protocol.h"
#include "runtime/cgroup.h"
#include "runtime/console.h"
#include "runtime/guest-spec.h"
#include "runtime/hooks.h"
#include "runtime/jail.h"
#include "runtime/monitor-client.h"
#include "runtime/monitor-relay.h"
#include "runtime/monitor-int.h"
#include "runtime/monitor.h"
#include "runtime/sandbox.h"

#define EXIT_MONITOR_FAILED 255
/* Under CPU emulation a Linux guest needs about two minutes to boot. */
#define BOOT_TIMEOUT_S_DEFAULT 600
#define POWEROFF_WAIT_MS 3000
#define TTY_POLL_MS 250

static const uint32_t ports[NR_PORTS] = {KVRUN_PROTO_CONTROL_PORT, GUEST_PORT_STDIN, GUEST_PORT_STDOUT,
                                         GUEST_PORT_STDERR};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int listen_unix(const char *path)
{
	_cleanup_close_ int dirfd = -1;
	struct sockaddr_un sa;
	int fd, r;

	r = monitor_sockaddr(path, &sa, &dirfd);
	if (r < 0)
		return r;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return err_setsys(-errno, "socket");
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0) {
		r = err_setsys(-errno, "listen on %s", path);
		close(fd);
		return r;
	}
	return fd;
}

static void port_path(const struct monitor *m, int i, char *buf, size_t size)
{
	snprintf(buf, size, "%s_%u", m->vsock_path, ports[i]);
}

static int open_listeners(struct monitor *m)
{
	char path[256];

	for (int i = 0; i < NR_PORTS; i++) {
		port_path(m, i, path, sizeof(path));
		m->listen_fds[i] = listen_unix(path);
		if (m->listen_fds[i] < 0)
			return m->listen_fds[i];
	}
	return 0;
}

static void remove_sockets(struct monitor *m)
{
	char path[256];

	for (int i = 0; i < NR_PORTS; i++) {
		if (m->listen_fds[i] >= 0) {
			close(m->listen_fds[i]);
			m->listen_fds[i] = -1;
		}
		port_path(m, i, path, sizeof(path));
		unlink(path);
	}
	if (m->control_fd >= 0) {
		close(m->control_fd);
		m->control_fd = -1;
		unlink(m->control_path);
	}
}

/* A signal that asks us to end, read while the guest still boots (there
 * is no container process yet to forward it to): 0 when none came. */
static int boot_stop_signal(struct monitor *m)
{
	struct signalfd_siginfo si;

	while (read(m->signal_fd, &si, sizeof(si)) == sizeof(si))
		if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT || si.ssi_signo == SIGHUP ||
		    si.ssi_signo == SIGQUIT)
			return (int)si.ssi_signo;
	return 0;
}

/* Wait until fd is readable, or the VM ended, or timeout_ms passed, or,
 * before serve(), a signal asked us to stop. */
static int wait_readable(struct monitor *m, int fd, int timeout_ms, const char *what)
{
	struct pollfd p[3] = {{.fd = fd, .events = POLLIN},
	                      {.fd = sandbox_done_fd(m->sb), .events = POLLIN},
	                      {.fd = m->serving ? -1 : m->signal_fd, .events = POLLIN}};
	int64_t deadline = now_ms() + timeout_ms;

	for (;;) {
		int64_t left = deadline - now_ms();
		int n;

		if (left <= 0)
			return err_set(-ETIMEDOUT, "timed out after %d s waiting for %s", timeout_ms / 1000, what);
		n = poll(p, 3, (int)left);
		if (n < 0 && errno != EINTR)
			return err_setsys(-errno, "poll");
		if (n > 0 && p[0].revents)
			return 0;
		if (n > 0 && p[1].revents) {
			struct vm_result res = m->sb->vm->result;

			return err_set(-ECONNRESET, "the VM ended (%s%s%s) while waiting for %s",
			               vm_exit_reason_name(res.reason), res.detail[0] ? ": " : "", res.detail, what);
		}
		if (n > 0 && p[2].revents && (m->stop_signal = boot_stop_signal(m)))
			return err_set(-EINTR, "stopped by %s while waiting for %s", strsignal(m->stop_signal), what);
	}
}

int monitor_accept_stream(struct monitor *m, int i, int timeout_ms, const char *what)
{
	int r, fd;

	r = wait_readable(m, m->listen_fds[i], timeout_ms, what);
	if (r < 0)
		return r;
	fd = accept4(m->listen_fds[i], NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return err_setsys(-errno, "accept %s", what);
	m->stream_fds[i] = fd;
	return 0;
}

/* Receive one message on the control stream, the whole frame within the
 * deadline (the serve loop may have read part of it already). */
static int recv_msg(struct monitor *m, int timeout_ms, struct proto_msg *ret)
{
	int64_t deadline = now_ms() + timeout_ms;
	int r;

	for (;;) {
		r = wait_readable(m, m->stream_fds[PORT_CTL], (int)(deadline - now_ms()), "guest-init");
		if (r == -ETIMEDOUT)
			return err_set(r, "timed out after %d s waiting for guest-init%s", timeout_ms / 1000,
			               proto_reader_partial(&m->ctl_reader) ? " (in the middle of a frame)" : "");
		if (r < 0)
			return r;
		r = proto_reader_feed(&m->ctl_reader, m->stream_fds[PORT_CTL], ret);
		if (r < 0)
			return err_setsys(r, "reading from guest-init");
		if (r > 0)
			return 0;
	}
}

void monitor_note(struct monitor *m, const struct proto_msg *msg)
{
	if (msg->type == PROTO_MSG_OOM)
		monitor_oom(m, &msg->u.oom);
	if (msg->type != PROTO_MSG_EXIT)
		return;
	if (msg->u.exit.init) {
		m->exited = true;
		m->exit_status = msg->u.exit.status;
		log_debug("container process exited, wait status 0x%x", m->exit_status);
		return;
	}
	monitor_exec_exited(m, msg->id, msg->u.exit.status);
}

/* Send msg and wait for the answer to it (READY/STARTED/ERROR with its id);
 * an EXIT of the init on the way is recorded. ERROR with err 0 is success. */
int monitor_request(struct monitor *m, struct proto_msg *msg, int timeout_ms, struct proto_msg *ret)
{
	int64_t deadline = now_ms() + timeout_ms;
	int r;

	msg->id = ++m->next_id;
	r = proto_send_timeout(m->stream_fds[PORT_CTL], msg, timeout_ms);
	if (r < 0)
		return err_setsys(r, "sending %s to guest-init", proto_type_name(msg->type));
	for (;;) {
		struct proto_msg a = {0};

		r = recv_msg(m, (int)(deadline - now_ms()), &a);
		if (r < 0)
			return r;
		monitor_note(m, &a);
		if (a.id == msg->id && a.type != PROTO_MSG_EXIT) {
			if (a.type == PROTO_MSG_ERROR && a.u.error.err) {
				r = err_set(-(int)a.u.error.err, "%s",
				            a.u.error.message ? a.u.error.message : "guest error");
				proto_msg_free(&a);
				return r;
			}
			*ret = a;
			return 0;
		}
		/* An EXIT of the init for START means the container died in setup. */
		if (a.type == PROTO_MSG_EXIT && a.id == msg->id && msg->type == PROTO_MSG_START) {
			proto_msg_free(&a);
			return err_set(-ECHILD, "the container process exited during setup");
		}
		proto_msg_free(&a);
	}
}

static int hello(struct monitor *m)
{
	struct proto_msg msg = {0};
	int r;

	r = recv_msg(m, REPLY_TIMEOUT_MS, &msg);
	if (r < 0)
		return r;
	if (msg.type != PROTO_MSG_HELLO || msg.u.hello.version_min > KVRUN_PROTO_VERSION ||
	    msg.u.hello.version_max < KVRUN_PROTO_VERSION) {
		proto_msg_free(&msg);
		return err_set(-EPROTONOSUPPORT, "guest-init does not speak protocol version %d", KVRUN_PROTO_VERSION);
	}
	log_debug("guest says hello: %s", msg.u.hello.agent ? msg.u.hello.agent : "?");
	proto_msg_free(&msg);
	msg = (struct proto_msg){.type = PROTO_MSG_HELLO};
	msg.u.hello = (struct proto_hello){KVRUN_PROTO_VERSION, KVRUN_PROTO_VERSION, (char *)"kvrun"};
	r = proto_send_timeout(m->stream_fds[PORT_CTL], &msg, REPLY_TIMEOUT_MS);
	return r < 0 ? err_setsys(r, "sending HELLO") : 0;
}

int monitor_boot_timeout_ms(void)
{
	const char *s = getenv("KVRUN_BOOT_TIMEOUT");
	long v = s ? strtol(s, NULL, 10) : 0;

	return (int)((v > 0 && v < 86400 ? v : BOOT_TIMEOUT_S_DEFAULT) * 1000);
}

static void null_stdio(void)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return;
	for (int i = 0; i < 3; i++)
		dup2(fd, i);
	if (fd > 2)
		close(fd);
}

/* A terminal: one pty stream from the guest (on the stdin port), relayed
 * to a new host pty whose master goes to the console socket, or to our
 * own stdin/stdout (the caller's tty, made raw: the guest's pty does the
 * line discipline, ^C included). */
static int terminal_host_side(struct monitor *m)
{
	int master, r;
	char name[128];

	if (m->tty_fd >= 0 || !m->a->b->spec->process->terminal)
		return 0;
	if (m->a->console_socket) {
		const struct oci_console_size *cs = &m->a->b->spec->process->console_size;

		r = console_open_pty(&master, &m->tty_fd, name, sizeof(name));
		if (r < 0)
			return r;
		/* As runc's pty: the size the engine asked for, which is also
		 * the one the guest's pty starts with when nothing else is known. */
		(void)console_set_size(master, cs->height, cs->width);
		r = console_send_fd(m->a->console_socket, master, name);
		close(master);
		if (r < 0)
			return r;
		/* The caller's stdio is not the container's: holding it would
		 * keep create's stdout/stderr pipes from reaching EOF. */
		null_stdio();
	} else if (isatty(STDIN_FILENO) && console_make_raw(STDIN_FILENO, &m->tty_saved) == 0) {
		m->tty_raw = true;
		m->tty_fd = STDIN_FILENO;
	}
	return 0;
}

int monitor_setup_terminal(struct monitor *m)
{
	int in = STDIN_FILENO, out = STDOUT_FILENO, r;

	r = terminal_host_side(m);
	if (r >= 0)
		r = monitor_accept_stream(m, PORT_STDIN, REPLY_TIMEOUT_MS, "the container's terminal stream");
	if (r < 0)
		return r;
	if (m->tty_fd >= 0)
		in = out = m->tty_fd;
	m->relays[PORT_STDIN] = relay_start(in, m->stream_fds[PORT_STDIN], true);
	m->relays[PORT_STDOUT] = relay_start(m->stream_fds[PORT_STDIN], out, false);
	if (!m->relays[PORT_STDIN] || !m->relays[PORT_STDOUT])
		return err_set(-ENOMEM, "cannot start the terminal relays");
	return 0;
}

/* The guest's pty follows the size of ours (no SIGWINCH reaches a monitor
 * in its own session: the size is looked at when idle). A paused guest
 * cannot take a new size: it is passed on after the resume. */
static void follow_size(struct monitor *m)
{
	unsigned rows, cols;

	if (m->tty_fd < 0 || m->paused || console_get_size(m->tty_fd, &rows, &cols) < 0 ||
	    (rows == m->rows && cols == m->cols))
		return;
	m->rows = rows;
	m->cols = cols;
	if (monitor_resize(m, 0, rows, cols) < 0)
		log_debug("resize: %s", err_msg());
}

/* The size the guest's pty starts with: that of our end of the terminal
 * when it has one already (early_create: the engine may have sized the
 * master while the guest booted), else process.consoleSize. What the
 * guest got is what follow_size() passes changes against. */
static void start_size(struct monitor *m, struct proto_process *p)
{
	unsigned rows, cols;

	if (m->tty_fd >= 0 && console_get_size(m->tty_fd, &rows, &cols) == 0 && rows && cols) {
		p->rows = (uint16_t)rows;
		p->cols = (uint16_t)cols;
	}
	/* The guest sizes its pty only when both are known. */
	m->rows = p->terminal && p->rows && p->cols ? p->rows : 0;
	m->cols = p->terminal && p->rows && p->cols ? p->cols : 0;
}

/* START with WAIT: the guest builds the container and answers READY. */
static int create_container(struct monitor *m)
{
	struct proto_msg msg = {.type = PROTO_MSG_START, .flags = PROTO_START_F_WAIT}, ans = {0};
	int r = 0;

	if (m->a->plan->early_create) {
		msg.u.start = m->early_start.u.start; /* built by bring_up */
		m->early_start = (struct proto_msg){0};
	} else {
		r = guest_spec_from_oci(m->a->b->spec, m->a->c->state, &msg.u.start);
		if (r >= 0)
			r = guest_spec_set_net(&msg.u.start, m->a->net ? &m->a->net->cfg : NULL);
	}
	if (r >= 0)
		r = guest_spec_set_identity(&msg.u.start);
	if (r < 0) {
		proto_start_free(&msg.u.start);
		return r;
	}
	start_size(m, &msg.u.start.process);
	/* The guest's first disk mount and setup run at boot speed: under
	 * emulation on a loaded host that can take minutes, as the boot does. */
	r = monitor_request(m, &msg, monitor_boot_timeout_ms(), &ans);
	proto_msg_free(&msg);
	if (r < 0)
		return err_prefix(r, "unable to start container process");
	log_debug("container created in the guest, pid %u", ans.u.started.pid);
	proto_msg_free(&ans);
	if (m->a->b->spec->process->terminal)
		return monitor_setup_terminal(m);
	for (int i = PORT_STDIN; i < NR_PORTS; i++) {
		r = monitor_accept_stream(m, i, REPLY_TIMEOUT_MS, "the container's stdio streams");
		if (r < 0)
			return r;
	}
	m->relays[PORT_STDIN] = relay_start(STDIN_FILENO, m->stream_fds[PORT_STDIN], true);
	m->relays[PORT_STDOUT] = relay_start(m->stream_fds[PORT_STDOUT], STDOUT_FILENO, false);
	m->relays[PORT_STDERR] = relay_start(m->stream_fds[PORT_STDERR], STDERR_FILENO, false);
	if (!m->relays[PORT_STDIN] || !m->relays[PORT_STDOUT] || !m->relays[PORT_STDERR])
		return err_set(-ENOMEM, "cannot start the stdio relays");
	return 0;
}

static int write_pid_file(const char *path)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%d", (int)getpid());
	int r = write_file_atomic(path, buf, (size_t)n, 0644);

	return r < 0 ? err_setsys(r, "write pid file %s", path) : 0;
}

/* Tell the creator how it went. Fails when the creator is gone (killed
 * while the guest booted): nobody would then know of this container. */
static int report_ready(struct monitor *m, int r)
{
	char *line = NULL;
	int q = 0;

	if (m->a->ready_fd < 0)
		return 0;
	if (r >= 0)
		line = strdup("ok\n");
	else if (asprintf(&line, "error %s\n", err_msg()[0] ? err_msg() : strerror(-r)) < 0)
		line = NULL;
	if (line)
		q = write_all(m->a->ready_fd, line, strlen(line));
	free(line);
	close(m->a->ready_fd);
	m->a->ready_fd = -1;
	return q;
}

/* Before the VM exists, as runc does before the container's process runs:
 * the cgroup (with the host-side limits), then prestart and createRuntime
 * hooks, which see the state "creating" with our pid. */
static int host_setup(struct monitor *m)
{
	struct monitor_args *a = m->a;
	const struct oci_spec *spec = a->b->spec;
	const char *cg = spec->linux_spec ? spec->linux_spec->cgroups_path : NULL;
	int r;

	a->c->state->pid = getpid();
	if (a->new_netns && unshare(CLONE_NEWNET) < 0) {
		/* Without CAP_SYS_ADMIN (rootless): no hook can give us
		 * interfaces either, and the guest has loopback only. */
		if (errno != EPERM)
			return err_setsys(-errno, "new network namespace");
		log_debug("no network namespace of our own: %s", strerror(errno));
		a->new_netns = false;
	}
	if (cg && *cg) {
		r = cgroup_join(cg, a->systemd_cgroup, spec->linux_spec->resources, getpid(), &m->cgroup_path,
		                &m->cgroup_unit);
		if (r < 0)
			return r;
		r = oci_map_set(&a->c->state->private_data, STATE_KEY_CGROUP, m->cgroup_path);
		if (r >= 0 && m->cgroup_unit)
			r = oci_map_set(&a->c->state->private_data, STATE_KEY_CGROUP_UNIT, m->cgroup_unit);
		if (r < 0)
			return r;
	}
	r = hooks_run(spec, OCI_HOOK_PRESTART, a->c->state);
	if (r >= 0)
		r = hooks_run(spec, OCI_HOOK_CREATE_RUNTIME, a->c->state);
	return r;
}

/* A checkpoint's VM, or a new one (from a template or booted). */
static int start_vm(struct monitor *m, const struct sandbox_opts *o)
{
	_cleanup_free_ char *snap = NULL;

	if (!m->a->restore_dir)
		return sandbox_launch(o, &m->sb);
	if (asprintf(&snap, "%s/%s", m->a->restore_dir, MONITOR_CHECKPOINT_VM) < 0)
		return -ENOMEM;
	log_info("VM: restoring checkpoint %s", m->a->restore_dir);
	return sandbox_restore(o, snap, 0, false, &m->sb);
}

/* With new_netns, the hooks have now put the engine's interfaces (if any)
 * into our namespace: pair them with TAPs as launch does for a named one.
 * The namespace is ours alone and dies with us, so nothing needs undoing. */
static int serve_own_netns(struct monitor *m)
{
	int r;

	if (!m->a->new_netns)
		return 0;
	r = netns_setup("/proc/self/ns/net", m->a->c->state->id, m->a->queue_pairs, &m->own_net);
	if (r < 0)
		return err_prefix(r, "network");
	for (unsigned int i = 0; i < m->own_net.cfg.nr_ifaces; i++)
		log_debug("network: %s -> TAP %s", m->own_net.links[i].iface, m->own_net.links[i].tap);
	m->a->net = &m->own_net;
	return 0;
}

/* The guest's part of create: its boot, HELLO, and the container built in
 * it. Within create, or after it with early_create. */
static int finish_boot(struct monitor *m)
{
	int r;

	r = monitor_accept_stream(m, PORT_CTL, monitor_boot_timeout_ms(), "the guest to boot");
	if (r >= 0)
		r = hello(m);
	if (r >= 0)
		r = m->a->restore_dir ? monitor_resume_restored(m) : create_container(m);
	return r;
}

static int bring_up(struct monitor *m)
{
	struct monitor_args *a = m->a;
	_cleanup_free_ char *disk = NULL, *base = NULL;
	int r;

	if (asprintf(&disk, "%s/%s", a->c->dir, MONITOR_DISK) < 0 ||
	    asprintf(&base, "%s/%s", a->c->dir, MONITOR_DISK_BASE) < 0)
		return -ENOMEM;
	if (access(base, F_OK) < 0)
		free(TAKE_PTR(base));
	r = host_setup(m);
	if (r >= 0)
		r = serve_own_netns(m);
	if (r >= 0)
		r = open_listeners(m);
	/* Hooks have run; the VM's threads start with nothing to inherit. */
	if (r >= 0 && jail_enabled())
		r = jail_drop_caps();
	if (r >= 0)
		r = start_vm(m, &(struct sandbox_opts){.plan = a->plan,
		                                       .disk = disk,
		                                       .disk_base = base,
		                                       .disk_read_only = a->b->spec->root && a->b->spec->root->readonly,
		                                       .vsock_path = m->vsock_path,
		                                       .console_path = a->console_path,
		                                       .net = a->net});
	/* The host's whole part of create, up to the guest's own work. */
	if (r >= 0)
		log_info("VM: running: host_us=%llu disk_us=%llu",
		         (unsigned long long)((vm_now_ns() - a->t_start_ns) / 1000), (unsigned long long)a->disk_us);
	if (r >= 0 && a->plan->early_create) {
		/* Everything the guest does is left to finish_boot(), after create
		 * has returned: the spec it needs is built now, while the state
		 * is still ours. */
		r = guest_spec_from_oci(a->b->spec, a->c->state, &m->early_start.u.start);
		if (r >= 0)
			r = guest_spec_set_net(&m->early_start.u.start, a->net ? &a->net->cfg : NULL);
		if (r >= 0)
			r = terminal_host_side(m);
	} else if (r >= 0) {
		r = finish_boot(m);
	}
	if (r >= 0 && a->pid_file)
		r = write_pid_file(a->pid_file);
	if (r >= 0)
		m->control_fd = listen_unix(m->control_path);
	if (m->control_fd < 0 && r >= 0)
		r = m->control_fd;
	if (r >= 0)
		r = container_set_status(a->c, OCI_STATUS_CREATED, getpid());
	/* A restored container's process is already running: created, then
	 * running, as the state machine has it. */
	if (r >= 0 && a->restore_dir)
		r = container_set_status(a->c, OCI_STATUS_RUNNING, getpid());
	return r;
}

static int watch_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGWINCH);
	sigprocmask(SIG_BLOCK, &set, NULL);
	return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* Signals sent to the monitor go to the container's process, as runc's
 * foreground forwarding does. */
static void forward_signal(struct monitor *m)
{
	struct signalfd_siginfo si;

	while (read(m->signal_fd, &si, sizeof(si)) == sizeof(si))
		if (!m->exited && si.ssi_signo != SIGWINCH && monitor_signal(m, 0, (int)si.ssi_signo, false) < 0)
			log_debug("forwarding signal %u: %s", si.ssi_signo, err_msg());
}

/* A frame from guest-init that stopped mid-way is given a deadline; the
 * loop serves everything else meanwhile. A paused guest cannot send: its
 * clock restarts. */
static bool guest_stalled(struct monitor *m)
{
	if (m->paused)
		proto_reader_touch(&m->ctl_reader);
	return proto_reader_timeout(&m->ctl_reader, GUEST_FRAME_STALL_MS) == 0;
}

static int serve_timeout(struct monitor *m)
{
	int t = proto_reader_timeout(&m->ctl_reader, GUEST_FRAME_STALL_MS);

	if (m->tty_fd >= 0 && (t < 0 || t > TTY_POLL_MS))
		t = TTY_POLL_MS;
	return t;
}

/* Until the container's init exits (or the VM ends). */
static int serve(struct monitor *m)
{
	enum { P_CONTROL, P_GUEST, P_DONE, P_SIGNAL, P_SUBS, P_EXECS = P_SUBS + MONITOR_MAX_SUBS };
	struct pollfd p[P_EXECS + MONITOR_MAX_EXECS];
	struct monitor_exec *who[MONITOR_MAX_EXECS];

	m->serving = true;
	while (!m->exited) {
		nfds_t n = P_EXECS;

		for (int i = 0; i < MONITOR_MAX_SUBS; i++)
			p[P_SUBS + i] = (struct pollfd){.fd = m->subs[i], .events = POLLIN};

		p[P_CONTROL] = (struct pollfd){.fd = m->control_fd, .events = POLLIN};
		p[P_GUEST] = (struct pollfd){.fd = m->stream_fds[PORT_CTL], .events = POLLIN};
		p[P_DONE] = (struct pollfd){.fd = sandbox_done_fd(m->sb), .events = POLLIN};
		p[P_SIGNAL] = (struct pollfd){.fd = m->signal_fd, .events = POLLIN};
		for (int i = 0; i < MONITOR_MAX_EXECS; i++)
			if (m->execs[i].fd >= 0) {
				who[n - P_EXECS] = &m->execs[i];
				p[n++] = (struct pollfd){.fd = m->execs[i].fd, .events = POLLIN};
			}
		if (poll(p, n, serve_timeout(m)) < 0) {
			if (errno == EINTR)
				continue;
			return err_setsys(-errno, "poll");
		}
		if (p[P_GUEST].revents) {
			struct proto_msg msg = {0};
			int r = proto_reader_feed(&m->ctl_reader, m->stream_fds[PORT_CTL], &msg);

			if (r < 0)
				return err_setsys(r, "%s",
				                  r == -ECONNRESET ? "guest-init closed the control stream"
				                                   : "reading from guest-init");
			if (r > 0) {
				monitor_note(m, &msg);
				proto_msg_free(&msg);
				/* Clients are served in the same turn: a guest
				 * that sends without a pause cannot starve them. */
				if (m->exited)
					continue;
			}
		}
		if (guest_stalled(m))
			return err_set(-ETIMEDOUT, "guest-init sent part of a frame and nothing for %d s: %s",
			               GUEST_FRAME_STALL_MS / 1000, "dropping its control stream");
		if (p[P_DONE].revents) {
			struct vm_result res = m->sb->vm->result;

			return err_set(-ECONNRESET, "the VM ended (%s%s%s) before the container's process exited",
			               vm_exit_reason_name(res.reason), res.detail[0] ? ": " : "", res.detail);
		}
		follow_size(m);
		if (p[P_CONTROL].revents)
			monitor_serve_client(m);
		if (p[P_SIGNAL].revents)
			forward_signal(m);
		for (int i = 0; i < MONITOR_MAX_SUBS; i++)
			if (p[P_SUBS + i].revents && m->subs[i] == p[P_SUBS + i].fd)
				monitor_sub_gone(m, i);
		for (nfds_t i = P_EXECS; i < n; i++)
			if (p[i].revents && who[i - P_EXECS]->fd == p[i].fd)
				monitor_exec_gone(m, who[i - P_EXECS]);
	}
	return 0;
}

/* ---- the end ----------------------------------------------------------- */

/* A create that failed or was abandoned: the VM goes at once, so that
 * the container's output streams end (their relays are joined next)
 * instead of waiting for a process that nobody will start. */
static void end_vm(struct monitor *m)
{
	sandbox_free(m->sb, NULL);
	m->sb = NULL;
}

static void shut_down(struct monitor *m)
{
	struct pollfd p;

	/* A checkpointed VM is paused for good: its end is the streams' EOF. */
	if (m->checkpointed) {
		sandbox_free(m->sb, NULL);
		m->sb = NULL;
	}
	/* Output relays end at the guest's EOF, which comes before EXIT. */
	relay_join(m->relays[PORT_STDOUT]);
	relay_join(m->relays[PORT_STDERR]);
	/* Closing the control stream lets guest-init sync and power off. */
	if (m->stream_fds[PORT_CTL] >= 0 && m->sb) {
		shutdown(m->stream_fds[PORT_CTL], SHUT_WR);
		p = (struct pollfd){.fd = sandbox_done_fd(m->sb), .events = POLLIN};
		poll(&p, 1, POWEROFF_WAIT_MS);
	}
	sandbox_free(m->sb, NULL);
	m->sb = NULL;
	for (int i = 0; i < NR_PORTS; i++)
		if (m->stream_fds[i] >= 0) {
			close(m->stream_fds[i]);
			m->stream_fds[i] = -1;
		}
	proto_reader_reset(&m->ctl_reader);
	/* Exec'd processes died with the VM: their proxies see EOF. */
	for (int i = 0; i < MONITOR_MAX_EXECS; i++)
		if (m->execs[i].fd >= 0) {
			close(m->execs[i].fd);
			m->execs[i].fd = -1;
		}
	for (int i = 0; i < MONITOR_MAX_SUBS; i++)
		if (m->subs[i] >= 0)
			monitor_sub_gone(m, i);
	remove_sockets(m);
	if (m->tty_raw)
		console_restore(STDIN_FILENO, &m->tty_saved);
	m->tty_raw = false;
}

/* Die the way the container's process died, so that our reaper sees it. */
_Noreturn void monitor_exit_like(uint32_t status)
{
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		struct rlimit nocore = {0, 0};
		sigset_t set;

		setrlimit(RLIMIT_CORE, &nocore);
		signal(sig, SIG_DFL);
		sigemptyset(&set);
		sigaddset(&set, sig);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(sig);
		/* Signals whose default is to be ignored cannot kill us. */
		_exit(128 + sig);
	}
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) : EXIT_MONITOR_FAILED);
}

/* Everything privileged is done: the seccomp allowlist for the rest. */
static void enter_jail(void)
{
	if (!jail_enabled()) {
		log_warn("monitor sandbox off ($KVRUN_JAIL=%s)", getenv("KVRUN_JAIL"));
		return;
	}
	if (jail_seccomp(JAIL_MONITOR) < 0)
		log_warn("monitor sandbox: %s: serving without a seccomp filter", err_msg());
	else
		log_debug("monitor sandbox on: no capabilities, no_new_privs, seccomp allowlist");
}

/* The vsock device connects to "<base>_<port>" for each port: when the
 * container's directory makes that too long for sun_path, the base goes
 * through a descriptor of the directory that we hold until we exit. */
static int vsock_base(struct monitor *m)
{
	const char *dir = m->a->c->dir;
	int fd;

	if (strlen(dir) + sizeof("/" MONITOR_VSOCK_SOCK "_4294967295") <= sizeof(((struct sockaddr_un *)0)->sun_path))
		return asprintf(&m->vsock_path, "%s/%s", dir, MONITOR_VSOCK_SOCK) < 0 ? -ENOMEM : 0;
	fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return asprintf(&m->vsock_path, "/proc/self/fd/%d/%s", fd, MONITOR_VSOCK_SOCK) < 0 ? -ENOMEM : 0;
}

/* The boot did not finish: a signal that stopped it ends us as it would
 * have ended the container's process (the caller sees 128+N). */
static _Noreturn void exit_boot_failed(struct monitor *m)
{
	if (m->stop_signal)
		monitor_exit_like((uint32_t)m->stop_signal);
	_exit(EXIT_MONITOR_FAILED);
}

_Noreturn void monitor_main(struct monitor_args *a)
{
	struct monitor m = {.a = a, .control_fd = -1, .signal_fd = -1, .tty_fd = -1};
	int r;

	for (int i = 0; i < NR_PORTS; i++)
		m.listen_fds[i] = m.stream_fds[i] = -1;
	for (int i = 0; i < MONITOR_MAX_EXECS; i++)
		m.execs[i].fd = -1;
	for (int i = 0; i < MONITOR_MAX_SUBS; i++)
		m.subs[i] = -1;
	m.tty_fd = -1;
	signal(SIGPIPE, SIG_IGN);
	m.signal_fd = watch_signals();
	if (vsock_base(&m) < 0 || asprintf(&m.control_path, "%s/%s", a->c->dir, MONITOR_CONTROL_SOCK) < 0)
		_exit(EXIT_MONITOR_FAILED);
	r = bring_up(&m);
	/* On failure our cgroup goes before create hears of it (create then
	 * kills us and removes the state, which names the cgroup). */
	if (r < 0 && m.cgroup_path)
		cgroup_leave(m.cgroup_path, m.cgroup_unit);
	if (report_ready(&m, r) < 0 && r >= 0) {
		/* Still holding the creator's lock: remove what it would have. */
		log_error("the creating process went away: removing container %s", a->c->state->id);
		end_vm(&m);
		shut_down(&m);
		if (m.cgroup_path)
			cgroup_leave(m.cgroup_path, m.cgroup_unit);
		rm_rf(a->c->dir);
		_exit(EXIT_MONITOR_FAILED);
	}
	/* The lock was create's: release it whether or not we made it. */
	container_free(a->c);
	a->c = NULL;
	if (r < 0) {
		log_debug("monitor: %s", err_msg());
		end_vm(&m);
		shut_down(&m);
		exit_boot_failed(&m);
	}
	netns_setup_close(&m.own_net);
	if (a->plan->early_create) {
		/* start, exec and kill wait on control.sock until we serve it. */
		r = finish_boot(&m);
		if (r < 0) {
			log_error("after create: %s", err_msg());
			shut_down(&m);
			exit_boot_failed(&m);
		}
	}
	enter_jail();
	r = serve(&m);
	if (r < 0) {
		log_error("%s", err_msg());
		/* guest-init may be alive and silent (a dropped stream), its
		 * output streams open: the relays end with the VM. */
		end_vm(&m);
	}
	shut_down(&m);
	if (r < 0 || !m.exited)
		_exit(EXIT_MONITOR_FAILED);
	monitor_exit_like(m.exit_status);
}
