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

#include "common/clock.h"
#include "common/cleanup.h"
#include "common/error.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/protocol.h"
#include "common/unix-socket.h"
#include "runtime/host/cgroup.h"
#include "runtime/host/console.h"
#include "runtime/host/jail.h"
#include "runtime/monitor/guest-spec.h"
#include "runtime/monitor/monitor-int.h"
#include "vmm/vm-stats.h"
#include "runtime/monitor/monitor-relay.h"
#include "runtime/monitor/monitor.h"
#include "runtime/sandbox/sandbox.h"
#include "runtime/sandbox/template.h"
#include "runtime/store/hooks.h"

#define EXIT_MONITOR_FAILED 255
#define POWEROFF_WAIT_MS 3000
#define TTY_POLL_MS 250

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
	monitor_terminal_start_size(m, &msg.u.start.process);
	/* The guest's first disk mount and setup run at boot speed: under
	 * emulation on a loaded host that can take minutes, as the boot does. */
	r = guest_channel_request(&m->ch, &msg, guest_boot_timeout_ms(), &ans);
	proto_msg_free(&msg);
	if (r < 0)
		return err_prefix(r, "unable to start container process");
	log_debug("container created in the guest, pid %u", ans.u.started.pid);
	proto_msg_free(&ans);
	if (m->a->b->spec->process->terminal)
		return monitor_terminal_setup(m);
	for (int i = CHAN_STDIN; i < CHAN_NR; i++) {
		r = guest_channel_accept(&m->ch, i, GUEST_REPLY_TIMEOUT_MS, "the container's stdio streams");
		if (r < 0)
			return r;
	}
	m->relays[CHAN_STDIN] = relay_start(STDIN_FILENO, m->ch.stream_fds[CHAN_STDIN], true);
	m->relays[CHAN_STDOUT] = relay_start(m->ch.stream_fds[CHAN_STDOUT], STDOUT_FILENO, false);
	m->relays[CHAN_STDERR] = relay_start(m->ch.stream_fds[CHAN_STDERR], STDERR_FILENO, false);
	if (!m->relays[CHAN_STDIN] || !m->relays[CHAN_STDOUT] || !m->relays[CHAN_STDERR])
		return err_set(-ENOMEM, "cannot start the stdio relays");
	return 0;
}

/* A message from guest-init that answers no request (guest-channel.h). */
static void note(void *opaque, const struct proto_msg *msg)
{
	struct monitor *m = opaque;

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

	int r;

	if (!m->a->restore_dir) {
		r = template_launch(o, &m->sb);
	} else {
		if (asprintf(&snap, "%s/%s", m->a->restore_dir, MONITOR_CHECKPOINT_VM) < 0)
			return -ENOMEM;
		log_info("VM: restoring checkpoint %s", m->a->restore_dir);
		r = sandbox_restore(o, snap, 0, false, NULL, &m->sb);
	}
	m->ch.sb = m->sb;
	return r;
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

	r = guest_channel_accept(&m->ch, CHAN_CTL, guest_boot_timeout_ms(), "the guest to boot");
	if (r >= 0)
		r = guest_channel_hello(&m->ch, GUEST_REPLY_TIMEOUT_MS);
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
		r = guest_channel_listen(&m->ch, CHAN_NR);
	/* Hooks have run; the VM's threads start with nothing to inherit. */
	if (r >= 0 && jail_enabled())
		r = jail_drop_caps();
	if (r >= 0)
		r = start_vm(
		    m, &(struct sandbox_opts){.plan = a->plan,
		                              .disks = {{.path = disk,
		                                         .base = base,
		                                         .read_only = a->b->spec->root && a->b->spec->root->readonly,
		                                         .id = "rootfs"}},
		                              .ndisks = 1,
		                              .vsock_path = m->ch.base,
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
			r = monitor_terminal_host_side(m);
	} else if (r >= 0) {
		r = finish_boot(m);
	}
	if (r >= 0 && a->pid_file)
		r = write_pid_file(a->pid_file);
	if (r >= 0)
		m->control_fd = unix_listen(m->control_path, 16);
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

/* Until the container's init exits (or the VM ends). */
static int serve(struct monitor *m)
{
	enum { P_CONTROL, P_GUEST, P_DONE, P_SIGNAL, P_SUBS, P_EXECS = P_SUBS + MONITOR_MAX_SUBS };
	struct pollfd p[P_EXECS + MONITOR_MAX_EXECS];
	struct monitor_exec *who[MONITOR_MAX_EXECS];

	m->ch.stop_fd = -1; /* signals now go to the container */
	while (!m->exited) {
		nfds_t n = P_EXECS;

		for (int i = 0; i < MONITOR_MAX_SUBS; i++)
			p[P_SUBS + i] = (struct pollfd){.fd = m->subs[i], .events = POLLIN};

		p[P_CONTROL] = (struct pollfd){.fd = m->control_fd, .events = POLLIN};
		p[P_GUEST] = (struct pollfd){.fd = m->ch.stream_fds[CHAN_CTL], .events = POLLIN};
		p[P_DONE] = (struct pollfd){.fd = sandbox_done_fd(m->sb), .events = POLLIN};
		p[P_SIGNAL] = (struct pollfd){.fd = m->signal_fd, .events = POLLIN};
		for (int i = 0; i < MONITOR_MAX_EXECS; i++)
			if (m->execs[i].fd >= 0) {
				who[n - P_EXECS] = &m->execs[i];
				p[n++] = (struct pollfd){.fd = m->execs[i].fd, .events = POLLIN};
			}
		if (poll(p, n, m->tty_fd >= 0 ? TTY_POLL_MS : -1) < 0) {
			if (errno == EINTR)
				continue;
			return err_setsys(-errno, "poll");
		}
		if (p[P_GUEST].revents) {
			struct proto_msg msg = {0};
			int r = guest_channel_recv(&m->ch, GUEST_REPLY_TIMEOUT_MS, &msg);

			if (r < 0)
				return err_prefix(r, "guest-init's control stream");
			note(m, &msg);
			proto_msg_free(&msg);
			continue;
		}
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
	vm_stats_free(m->vm_stats);
	m->vm_stats = NULL;
	sandbox_free(m->sb, NULL);
	m->sb = m->ch.sb = NULL;
}

static void shut_down(struct monitor *m)
{
	struct pollfd p;

	/* A checkpointed VM is paused for good: its end is the streams' EOF. */
	if (m->checkpointed) {
		vm_stats_free(m->vm_stats);
		m->vm_stats = NULL;
		sandbox_free(m->sb, NULL);
		m->sb = m->ch.sb = NULL;
	}
	/* Output relays end at the guest's EOF, which comes before EXIT. */
	relay_join(m->relays[CHAN_STDOUT]);
	relay_join(m->relays[CHAN_STDERR]);
	/* Closing the control stream lets guest-init sync and power off. */
	if (m->ch.stream_fds[CHAN_CTL] >= 0 && m->sb) {
		shutdown(m->ch.stream_fds[CHAN_CTL], SHUT_WR);
		p = (struct pollfd){.fd = sandbox_done_fd(m->sb), .events = POLLIN};
		poll(&p, 1, POWEROFF_WAIT_MS);
	}
	vm_stats_free(m->vm_stats);
	m->vm_stats = NULL;
	sandbox_free(m->sb, NULL);
	m->sb = m->ch.sb = NULL;
	/* Exec'd processes died with the VM: their proxies see EOF. */
	for (int i = 0; i < MONITOR_MAX_EXECS; i++)
		if (m->execs[i].fd >= 0) {
			close(m->execs[i].fd);
			m->execs[i].fd = -1;
		}
	for (int i = 0; i < MONITOR_MAX_SUBS; i++)
		if (m->subs[i] >= 0)
			monitor_sub_gone(m, i);
	guest_channel_close(&m->ch);
	if (m->control_fd >= 0) {
		close(m->control_fd);
		m->control_fd = -1;
		unlink(m->control_path);
	}
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

/* The boot did not finish: a signal that stopped it ends us as it would
 * have ended the container's process (the caller sees 128+N). */
static _Noreturn void exit_boot_failed(struct monitor *m)
{
	if (m->ch.stop_signal)
		monitor_exit_like((uint32_t)m->ch.stop_signal);
	_exit(EXIT_MONITOR_FAILED);
}

_Noreturn void monitor_main(struct monitor_args *a)
{
	struct monitor m = {.a = a, .control_fd = -1, .signal_fd = -1, .tty_fd = -1};
	int r;

	for (int i = 0; i < MONITOR_MAX_EXECS; i++)
		m.execs[i].fd = -1;
	for (int i = 0; i < MONITOR_MAX_SUBS; i++)
		m.subs[i] = -1;
	m.tty_fd = -1;
	signal(SIGPIPE, SIG_IGN);
	m.signal_fd = watch_signals();
	if (guest_channel_init(&m.ch, a->c->dir, MONITOR_VSOCK_SOCK) < 0 ||
	    asprintf(&m.control_path, "%s/%s", a->c->dir, MONITOR_CONTROL_SOCK) < 0)
		_exit(EXIT_MONITOR_FAILED);
	/* Until the container runs, a signal to us ends the boot. */
	m.ch.stop_fd = m.signal_fd;
	m.ch.on_note = note;
	m.ch.opaque = &m;
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
	if (r < 0)
		log_error("%s", err_msg());
	shut_down(&m);
	if (r < 0 || !m.exited)
		_exit(EXIT_MONITOR_FAILED);
	monitor_exit_like(m.exit_status);
}
