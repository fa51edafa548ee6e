/* SPDX-License-Identifier: Apache-2.0 */
/* The verbs that reach a created container's monitor (start, kill) and the
 * waits on it (launch-ctl.h); launch.c brings the container up. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/stop-point.h"
#include "runtime/cli/launch-ctl.h"
#include "runtime/cli/launch-member.h"
#include "runtime/sandbox/guest-channel.h"
#include "runtime/store/monitor-client.h"
#include "runtime/store/proc-stat.h"
#include "runtime/store/state.h"

#define REQUEST_TIMEOUT_MS (150 * 1000)

int launch_start(struct cli_context *ctx, const char *id)
{
	_cleanup_container_ struct container *c = NULL;
	_cleanup_free_ char *sandbox_dir = NULL, *req = NULL;
	uint32_t guest_pid;
	int r;

	r = container_load_for(ctx->root, id, CONTAINER_OP_START, &c);
	if (r < 0)
		return r;
	stop_point("start:locked");
	r = launch_member_sandbox(c, ctx->root, &sandbox_dir, &guest_pid);
	if (r > 0 && asprintf(&req, "go %u", guest_pid) < 0)
		r = -ENOMEM;
	if (r < 0)
		return r;
	/* The monitor waits for the guest as long as a boot may take. */
	r = monitor_call(sandbox_dir ? sandbox_dir : c->dir, req ? req : "start",
	                 guest_boot_timeout_ms() + REQUEST_TIMEOUT_MS, NULL);
	if (r < 0)
		return r;
	stop_point("start:done");
	return container_set_status(c, OCI_STATUS_RUNNING, 0);
}

static int pidfd_open_pid(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

int launch_kill_monitor(pid_t pid, int timeout_ms)
{
	_cleanup_close_ int fd = pidfd_open_pid(pid);
	struct pollfd p = {.fd = fd, .events = POLLIN};

	if (fd < 0)
		return errno == ESRCH ? 0 : err_setsys(-errno, "pidfd_open %d", (int)pid);
	if (syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0) < 0 && errno != ESRCH)
		return err_setsys(-errno, "kill monitor %d", (int)pid);
	if (poll(&p, 1, timeout_ms) <= 0)
		return err_set(-ETIMEDOUT, "monitor %d did not exit after SIGKILL", (int)pid);
	/* Our own child (run): reap it; otherwise its parent does. */
	waitpid(pid, NULL, WNOHANG);
	return 0;
}

int launch_wait_exited(const struct oci_state *s, int timeout_ms)
{
	const char *start = oci_map_get(&s->private_data, STATE_KEY_PID_START);
	_cleanup_close_ int fd = -1;
	struct pollfd p;
	struct proc_stat st;

	/* Only the process the state names: the pid may be another's now. */
	if (s->pid <= 0 || !start || proc_stat_read(container_proc_root, s->pid, &st) < 0 ||
	    st.start_time != strtoull(start, NULL, 10))
		return 0;
	fd = pidfd_open_pid(s->pid);
	if (fd < 0)
		return 0;
	p = (struct pollfd){.fd = fd, .events = POLLIN};
	if (poll(&p, 1, timeout_ms) <= 0)
		return err_set(-ETIMEDOUT, "monitor %d did not finish exiting within %d s", (int)s->pid,
		               timeout_ms / 1000);
	return 0;
}

int launch_kill(struct cli_context *ctx, const char *id, int signo, bool all)
{
	_cleanup_container_ struct container *c = NULL;
	_cleanup_free_ char *req = NULL, *sandbox_dir = NULL;
	uint32_t guest_pid;
	int r;

	/* No lock: the monitor serializes requests, and a kill must get
	 * through while a create or a start holds the lock. */
	r = container_load(ctx->root, id, false, &c);
	if (r < 0)
		return r;
	/* As runc's Signal(): --all of a stopped container has nothing to
	 * signal and succeeds; otherwise the state comes before the signal. */
	if (c->state->status == OCI_STATUS_STOPPED)
		return all ? 0 : err_set(-ESRCH, "container not running");
	if (signo < 0 || signo >= _NSIG)
		return err_set(-EINVAL, "unable to signal init: invalid argument");
	if (c->state->status == OCI_STATUS_CREATING) {
		/* Its monitor serves requests once create is done; SIGKILL ends
		 * the create (its monitor; the creator then removes it all). */
		if (signo != SIGKILL || c->state->pid <= 0)
			return err_set(-EBUSY,
			               "container %s is still being created: only SIGKILL, which ends the create, "
			               "can be sent to it now",
			               id);
		return launch_kill_monitor(c->state->pid, 10000);
	}
	/* An app container of a pod: its init in the sandbox's VM. */
	r = launch_member_sandbox(c, ctx->root, &sandbox_dir, &guest_pid);
	if (r < 0 && signo == SIGKILL) {
		log_debug("%s: killing the app container's host process", err_msg());
		err_clear();
		return launch_kill_monitor(c->state->pid, 10000);
	}
	if (r < 0)
		return r;
	if ((r > 0 ? asprintf(&req, "signal %u %d %d", guest_pid, signo, all ? 1 : 0)
	           : asprintf(&req, "kill %d %d", signo, all ? 1 : 0)) < 0)
		return -ENOMEM;
	r = monitor_call(sandbox_dir ? sandbox_dir : c->dir, req, signo == SIGKILL ? 10000 : REQUEST_TIMEOUT_MS, NULL);
	if (r >= 0 || signo != SIGKILL || r == -EIO)
		return r;
	log_debug("monitor unresponsive (%s): killing it", err_msg());
	err_clear();
	return launch_kill_monitor(c->state->pid, 10000);
}

static int wait_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 255;
}

int launch_wait(struct cli_context *ctx, const char *id, pid_t pid)
{
	static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD};
	_cleanup_close_ int sfd = -1;
	sigset_t set;
	int status;

	sigemptyset(&set);
	for (size_t i = 0; i < ARRAY_SIZE(forwarded); i++)
		sigaddset(&set, forwarded[i]);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	for (;;) {
		struct signalfd_siginfo si;
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			return wait_status(status);
		if (w < 0 && errno != EINTR)
			return err_setsys(-errno, "waitpid");
		if (sfd < 0 || read(sfd, &si, sizeof(si)) != sizeof(si) || si.ssi_signo == SIGCHLD)
			continue;
		if (launch_kill(ctx, id, (int)si.ssi_signo, false) < 0)
			log_debug("forwarding signal %u: %s", si.ssi_signo, err_msg());
	}
}
