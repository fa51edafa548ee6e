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

#include "config.h"
#include "common/clock.h"
#include "common/cleanup.h"
#include "common/error.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/protocol.h"
#include "common/unix-socket.h"
#include "common/stop-point.h"
#include "runtime/host/cgroup.h"
#include "runtime/host/console.h"
#include "runtime/host/jail.h"
#include "runtime/monitor/guest-spec.h"
#include "runtime/monitor/monitor-int.h"
#include "vmm/serial.h"
#include "vmm/vm-stats.h"
#include "runtime/monitor/monitor-relay.h"
#include "runtime/monitor/monitor.h"
#include "runtime/monitor/teardown.h"
#include "runtime/sandbox/sandbox.h"
#include "runtime/sandbox/template.h"
#include "runtime/store/hooks.h"

#define EXIT_MONITOR_FAILED 255
#define POWEROFF_WAIT_MS 3000
#define TTY_POLL_MS 250

/* Without a terminal: one stream and relay per stdio fd; the other
 * stdio ports take no stream, none stays open. */
static int start_stdio(struct monitor *m)
{
	int r;

	for (int i = CHAN_STDIN; i < CHAN_NR; i++) {
		r = guest_channel_accept(&m->ch, i, GUEST_REPLY_TIMEOUT_MS, "the container's stdio streams");
		if (r < 0)
			return r;
	}
	guest_channel_unlisten(&m->ch);
	m->relays[CHAN_STDIN] = relay_start(STDIN_FILENO, m->ch.stream_fds[CHAN_STDIN], true);
	m->relays[CHAN_STDOUT] = relay_start(m->ch.stream_fds[CHAN_STDOUT], STDOUT_FILENO, false);
	m->relays[CHAN_STDERR] = relay_start(m->ch.stream_fds[CHAN_STDERR], STDERR_FILENO, false);
	if (!m->relays[CHAN_STDIN] || !m->relays[CHAN_STDOUT] || !m->relays[CHAN_STDERR])
		return err_set(-ENOMEM, "cannot start the stdio relays");
	return 0;
}

/* START with WAIT: the guest builds the container and answers READY. */
static int create_container(struct monitor *m)
{
	struct proto_msg msg = {.type = PROTO_MSG_START, .flags = PROTO_START_F_WAIT}, ans = {0};
	int r;

	msg.u.start = m->start.u.start; /* built by build_start() */
	m->start = (struct proto_msg){0};
	/* The interfaces now: a template's restore set each one's dev_mac. */
	r = guest_spec_set_net(&msg.u.start, m->a->net ? &m->a->net->cfg : NULL);
	if (r >= 0)
		r = guest_spec_set_identity(&msg.u.start);
	if (r >= 0)
		r = monitor_fds_start(m, &msg.u.start.process);
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
	/* The preserved fds' streams first: taking the stdio streams closes
	 * every listener left. */
	r = monitor_fds_accept(m);
	if (r < 0)
		return r;
	return m->a->b->spec->process->terminal ? monitor_terminal_setup(m) : start_stdio(m);
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
	m->a->ready_fd = m->ch.abandon_fd = -1;
	return q;
}

/* Out of our cgroup after a failure, its message kept: without our
 * capabilities a cgroup at the top of a hierarchy stays, for create. */
static void leave_cgroup(struct monitor *m)
{
	char msg[1024];

	snprintf(msg, sizeof(msg), "%s", err_msg());
	if (cgroup_leave(m->cgroup.path, m->cgroup.base, m->cgroup.unit) < 0)
		log_debug("leaving the container's cgroup: %s", err_msg());
	err_set(-EIO, "%s", msg);
}

/* linux.cgroupsPath, or runc's place for a container without one; the
 * place goes into the state for update and delete. */
static int join_cgroup(struct monitor *m, const char *cg)
{
	struct monitor_args *a = m->a;
	const struct oci_linux *lx = a->b->spec->linux_spec;
	struct oci_map *priv = &a->c->state->private_data;
	int r;

	r = cgroup_join(cg, a->c->state->id, a->systemd_cgroup, lx ? lx->resources : NULL, getpid(), &m->cgroup);
	if (r < 0 && !(cg && *cg) && (r == -EACCES || r == -EPERM || r == -EROFS)) {
		/* As runc without root: no cgroup of its own when none was
		 * asked for and the hierarchies are not ours to write. */
		log_debug("no cgroup for the container: %s", err_msg());
		err_clear();
		return 0;
	}
	if (r < 0)
		return r;
	r = oci_map_set(priv, STATE_KEY_CGROUP, m->cgroup.path);
	if (r >= 0 && m->cgroup.base)
		r = oci_map_set(priv, STATE_KEY_CGROUP_BASE, m->cgroup.base);
	if (r >= 0 && m->cgroup.unit)
		r = oci_map_set(priv, STATE_KEY_CGROUP_UNIT, m->cgroup.unit);
	return r;
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
	r = join_cgroup(m, cg);
	if (r < 0)
		return r;
	/* Our pid and cgroup in the state at once: whoever removes the
	 * container if we die during create finds them there. */
	r = container_set_status(a->c, OCI_STATUS_CREATING, getpid());
	if (r < 0)
		return r;
	r = hooks_run(spec, OCI_HOOK_PRESTART, a->c->state);
	if (r >= 0)
		r = hooks_run(spec, OCI_HOOK_CREATE_RUNTIME, a->c->state);
	return r;
}

/* A checkpoint's VM, or a new one (from a template or booted), with its
 * vCPUs stopped: the jail is finished before they run. */
static int build_vm(struct monitor *m)
{
	struct monitor_args *a = m->a;
	_cleanup_free_ char *disk = NULL;
	struct sandbox_opts o = {
	    .plan = a->plan,
	    .ndisks = 1,
	    .vsock_path = m->ch.base,
	    .vsock_guest_only = true,
	    .console_fd = m->console_fd > 0 ? m->console_fd : 0,
	    .net = a->net,
	    .stopped = true,
	};
	char tags[GUEST_SHARES_MAX][GUEST_SHARE_TAG_SIZE];
	int r;

	if (asprintf(&disk, "%s/%s", m->dir, MONITOR_DISK) < 0)
		return -ENOMEM;
	/* A shared root: the disk stays without media, as a template's. */
	o.disks[0] = (struct sandbox_disk){.path = a->plan->rootfs_virtiofs ? NULL : disk,
	                                   .base = a->plan->rootfs_virtiofs ? NULL : m->disk_base,
	                                   .read_only = a->b->spec->root && a->b->spec->root->readonly,
	                                   .id = "rootfs"};
	o.nshares = guest_shares_to_sandbox(&m->shares, m->proc_fd, tags, o.shares);
	/* A pod's VM: slots for its app containers' directories. */
	if (monitor_is_pod_sandbox(m) && o.nshares < SANDBOX_TEMPLATE_SHARES)
		o.spare_shares = SANDBOX_TEMPLATE_SHARES - o.nshares;
	/* The file server's threads alone keep its capabilities (jail.h). */
	for (unsigned int i = 0; m->jail && i < o.nshares; i++) {
		o.shares[i].thread_init = jail_fs_thread;
		o.shares[i].thread_opaque = m->jail;
	}
	if (a->restore_dir)
		r = sandbox_restore(&o, m->snapshot, 0, false, NULL, &m->sb);
	else
		r = template_launch(&o, m->snapshot, &m->sb);
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

	r = guest_channel_open_control(&m->ch, guest_boot_timeout_ms(), "the guest to boot");
	if (r >= 0)
		r = m->a->restore_dir ? monitor_resume_restored(m) : create_container(m);
	return r;
}

/* The START of the container's process: from the spec (what the host has
 * to say of it read now: the jail sees none of it) and the shares its
 * bind mounts became (monitor_vm_files()). Its interfaces are added when
 * it is sent. */
static int build_start(struct monitor *m)
{
	struct monitor_args *a = m->a;

	int r;

	if (a->restore_dir)
		return 0;
	r = guest_spec_from_oci(a->b->spec, a->c->state, &m->shares, &m->start.u.start);
	/* A pod's sandbox: its /dev/shm (the engine's shm directory) is the
	 * pod's, which its app containers bind (docs/runtime.md, "Pods"). */
	if (r >= 0 && monitor_is_pod_sandbox(m) && guest_spec_pod_shm(&m->start.u.start))
		log_debug("pod: the sandbox's /dev/shm is the pod's");
	return r;
}

/* Our pid (its start time with it), cgroup and jail uid in state.json now:
 * create records the rest once we report, and cleans up after us when we
 * fail (a jailed monitor can do neither). */
static int record_state(struct monitor *m)
{
	struct monitor_args *a = m->a;
	char uid[16];
	int r = 0;

	if (jail_enabled()) {
		uid_t u;
		gid_t g;

		jail_ids_for(a->plan->jail_uid_base, getpid(), &u, &g);
		snprintf(uid, sizeof(uid), "%u", (unsigned)u);
		r = oci_map_set(&a->c->state->private_data, STATE_KEY_JAIL_UID, uid);
	}
	return r < 0 ? r : container_record_pid(a->c, getpid());
}

/* What needs the host's view and privilege, before the jail. */
static int host_part(struct monitor *m)
{
	int r;

	/* First, while privileged and in no cgroup of the container's: the
	 * guard that removes the container (the network namespace's changes
	 * need privilege) if our creator dies before create ends
	 * (create-guard.h). */
	r = create_guard_start(m->a->c, &m->a->ready_fd, 1, &m->guard);
	stop_point("monitor:guard");
	if (r >= 0)
		r = host_setup(m);
	if (r >= 0)
		r = serve_own_netns(m);
	stop_point("monitor:setup");
	if (r >= 0)
		r = record_state(m);
	/* The pty's master goes to the console socket, which the jail cannot
	 * reach. (Our own stdin is made raw later, as before: a ^C during the
	 * boot still interrupts run.) */
	if (r >= 0 && m->a->console_socket)
		r = monitor_terminal_host_side(m);
	if (r >= 0)
		r = monitor_vm_files(m);
	if (r >= 0)
		r = build_start(m);
	/* Log lines carry local time: the zone is read while it can be. */
	tzset();
	return r;
}

static int bring_up(struct monitor *m)
{
	struct monitor_args *a = m->a;
	uint64_t t0, jail_ns;
	int r;

	r = host_part(m);
	t0 = vm_now_ns();
	if (r >= 0)
		r = monitor_jail_mount(m);
	if (r >= 0)
		r = monitor_open_sockets(m);
	if (r >= 0)
		r = monitor_jail_begin(m);
	jail_ns = vm_now_ns() - t0;
	if (r >= 0)
		r = build_vm(m);
	/* A pod's VM: its free slots' workers now, with the file server's
	 * capabilities, which no thread made once the jail is finished can
	 * have: an app container's directory gets them (monitor-pod.c). */
	if (r >= 0 && m->jail && monitor_is_pod_sandbox(m))
		r = sandbox_shares_prestart(m->sb, MONITOR_POD_SLOT_WORKERS, jail_fs_thread, m->jail);
	/* The statistics' descriptors now, while no vCPU runs: KVM_GET_STATS_FD
	 * on a vCPU waits for its KVM_RUN to return, and a halted vCPU may be
	 * waiting for this very thread ("vmstats" froze the monitor). */
	if (r >= 0)
		r = vm_stats_open(m->sb->vm, &m->vm_stats);
	if (r >= 0 && KVRUN_PHASE_MARKS && m->sb->serial) {
		m->sb->serial->mark_opaque = m->vm_stats;
		m->sb->serial->on_mark = vm_stats_log_mark;
	}
	t0 = vm_now_ns();
	if (r >= 0)
		r = monitor_jail_finish(m);
	jail_ns += vm_now_ns() - t0;
	if (r >= 0)
		r = vm_start(m->sb->vm);
	stop_point("monitor:vm");
	/* The host's whole part of create, up to the guest's own work, and
	 * what of it the jail took. */
	if (r >= 0)
		log_info("VM: running: host_us=%llu disk_us=%llu jail_us=%llu",
		         (unsigned long long)((vm_now_ns() - a->t_start_ns) / 1000), (unsigned long long)a->disk_us,
		         (unsigned long long)(jail_ns / 1000));
	/* With early_create, everything the guest does is left to
	 * finish_boot(), after create has returned. */
	if (r >= 0 && a->plan->early_create)
		r = monitor_terminal_host_side(m);
	else if (r >= 0)
		r = finish_boot(m);
	return r;
}

/* A frame from guest-init that stopped mid-way is given a deadline
 * (guest_channel_stalled()); the loop serves everything else meanwhile. */
static int serve_timeout(struct monitor *m)
{
	int t = guest_channel_poll_ms(&m->ch);

	if (m->tty_fd >= 0 && (t < 0 || t > TTY_POLL_MS))
		t = TTY_POLL_MS;
	return t;
}

/* Until the container's init exits (or the VM ends). */
static int serve(struct monitor *m)
{
	enum { P_CONTROL, P_GUEST, P_DONE, P_SIGNAL, P_SLOTS, P_SUBS, P_EXECS = P_SUBS + MONITOR_MAX_SUBS };
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
		/* A pod's slots of ended app containers: freed as the guest
		 * unmounts them. */
		p[P_SLOTS] =
		    (struct pollfd){.fd = m->slots_ending ? sandbox_shares_event_fd(m->sb) : -1, .events = POLLIN};
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
			int r = guest_channel_feed(&m->ch, &msg);

			if (r < 0)
				return r;
			if (r > 0) {
				note(m, &msg);
				proto_msg_free(&msg);
				/* Clients are served in the same turn: a guest
				 * that sends without a pause cannot starve them. */
				if (m->exited)
					continue;
			}
		}
		if (guest_channel_stalled(&m->ch, m->paused))
			return err_set(-ETIMEDOUT, "guest-init sent part of a frame and nothing for %d s: %s",
			               GUEST_FRAME_STALL_MS / 1000, "dropping its control stream");
		if (p[P_DONE].revents) {
			struct vm_result res = m->sb->vm->result;

			return err_set(-ECONNRESET, "the VM ended (%s%s%s) before the container's process exited",
			               vm_exit_reason_name(res.reason), res.detail[0] ? ": " : "", res.detail);
		}
		monitor_follow_size(m);
		if (p[P_CONTROL].revents)
			monitor_serve_client(m);
		if (p[P_SIGNAL].revents)
			monitor_forward_signals(m);
		if (p[P_SLOTS].revents)
			monitor_pod_release(m);
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

	/* A VM not heard any more (vm_first): its end is the streams' EOF. */
	if (m->vm_first) {
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
	/* The VM's end ended the preserved fds' streams. */
	monitor_fds_join(m);
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
	/* The servers hold their own descriptors (gone with the VM). */
	guest_shares_done(&m->shares);
	if (m->proc_fd >= 0)
		close(m->proc_fd);
	m->proc_fd = -1;
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

/* The boot did not finish: a signal that stopped it ends us as it would
 * have ended the container's process (the caller sees 128+N). */
static _Noreturn void exit_boot_failed(struct monitor *m)
{
	if (m->ch.stop_signal)
		monitor_exit_like((uint32_t)m->ch.stop_signal);
	_exit(EXIT_MONITOR_FAILED);
}

/* Whether the process that ran create (and reads ready_fd) is gone. */
static bool creator_gone(struct monitor *m)
{
	struct pollfd p = {.fd = m->a->ready_fd, .events = 0};

	return m->a->ready_fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLERR | POLLHUP));
}

/* Nobody waits for create's outcome: remove the container ourselves (the
 * VM, our cgroup), then have the guard, privileged, remove the rest (the
 * network namespace's changes, the state directory); without one (we
 * failed before forking it, privileged still) do it here. */
static _Noreturn void abandoned(struct monitor *m)
{
	struct container *c = m->a->c;

	log_error("the process that ran create went away: removing container %s", c->state->id);
	end_vm(m);
	shut_down(m);
	/* Jailed, the cgroup is beyond us: the guard's teardown removes it. */
	if (m->cgroup.path && !m->jail && cgroup_leave(m->cgroup.path, m->cgroup.base, m->cgroup.unit) < 0)
		log_warn("%s", err_msg());
	m->a->c = NULL;
	if (m->guard.pid > 0) {
		container_free(c); /* the lock: the guard takes it */
		create_guard_end(&m->guard, true);
	} else if (teardown_container(c, false) < 0) {
		log_error("%s", err_msg());
	}
	_exit(EXIT_MONITOR_FAILED);
}

_Noreturn void monitor_main(struct monitor_args *a)
{
	struct monitor m = {.a = a,
	                    .control_fd = -1,
	                    .signal_fd = -1,
	                    .tty_fd = -1,
	                    .console_fd = -1,
	                    .guard = {.fd = -1},
	                    .proc_fd = -1,
	                    .shares = {.root = -1}};
	int r;

	for (int i = 0; i < MONITOR_MAX_EXECS; i++)
		m.execs[i].fd = -1;
	for (int i = 0; i < MONITOR_MAX_SUBS; i++)
		m.subs[i] = -1;
	m.tty_fd = -1;
	signal(SIGPIPE, SIG_IGN);
	m.signal_fd = monitor_watch_signals();
	/* Without listeners until monitor_open_sockets(). Until the container
	 * runs, a signal to us ends the boot, and so does the end of our
	 * creator. */
	m.ch = (struct guest_channel){
	    .base_dirfd = -1, .stop_fd = m.signal_fd, .abandon_fd = a->ready_fd, .on_note = note, .opaque = &m};
	for (int i = 0; i < CHAN_NR; i++)
		m.ch.listen_fds[i] = m.ch.stream_fds[i] = -1;
	for (int i = 0; i < PROTO_MAX_EXTRA_FDS; i++)
		m.ch.extra_listen[i] = m.ch.extra_stream[i] = -1;
	r = bring_up(&m);
	/* On failure our cgroup goes before create hears of it (create then
	 * kills us, removes the state and what we could not remove). In the
	 * jail we cannot: create does it once we are gone. */
	if (r < 0 && m.cgroup.path && !m.jail)
		leave_cgroup(&m);
	stop_point("monitor:ready");
	if (r == -ECANCELED || creator_gone(&m))
		abandoned(&m);
	create_guard_end(&m.guard, false);
	if (report_ready(&m, r) < 0 && r >= 0) {
		/* Gone after the guard was let go: what the network namespace
		 * took needs privileges we no longer have. The state (stopped
		 * once we exit) keeps it for `delete`. */
		log_error("the creating process went away: container %s is left for delete", a->c->state->id);
		end_vm(&m);
		shut_down(&m);
		if (m.cgroup.path && !m.jail)
			leave_cgroup(&m);
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
