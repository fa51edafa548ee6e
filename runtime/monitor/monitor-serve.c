/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The monitor's control socket: one request line per connection, one
 * answer line (monitor-client.h), except `exec`, whose connection stays
 * open as the exec proxy's link to its process in the guest.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/protocol.h"
#include "common/stop-point.h"
#include "runtime/host/console.h"
#include "runtime/monitor/monitor-int.h"
#include "runtime/sandbox/sandbox.h"
#include "vmm/vm-stats.h"

#define CLIENT_WAIT_MS 5000

static void answer(int fd, int r, const char *detail)
{
	char buf[4096];
	int n;

	if (r >= 0)
		n = snprintf(buf, sizeof(buf), "ok%s%s\n", detail && *detail ? " " : "", detail ? detail : "");
	else
		n = snprintf(buf, sizeof(buf), "error %s\n", err_msg()[0] ? err_msg() : strerror(-r));
	(void)write_all(fd, buf, n < (int)sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* Descriptors that came with a request (SCM_RIGHTS): only "checkpoint"
 * (the files it writes, which the jailed monitor cannot create) and
 * "member" (an app container's directories) take any; the rest are closed
 * unused. */
#define REQ_MAX_FDS GUEST_SHARES_MAX

struct req_fds {
	int fd[REQ_MAX_FDS];
	int n;
	bool truncated; /* more came than fit: the kernel closed them */
};

static void req_fds_close(struct req_fds *f)
{
	for (int i = 0; i < f->n; i++)
		close(f->fd[i]);
	f->n = 0;
}

static void take_fds(struct msghdr *msg, struct req_fds *f)
{
	if (msg->msg_flags & MSG_CTRUNC)
		f->truncated = true;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(msg); cm; cm = CMSG_NXTHDR(msg, cm)) {
		size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (f->n < REQ_MAX_FDS) {
				f->fd[f->n++] = fd;
			} else {
				close(fd);
				f->truncated = true;
			}
		}
	}
}

/* The request line, read a byte at a time so that what follows it (the
 * EXEC frame) stays in the socket; descriptors sent with it go to *fds. */
static int read_line(int fd, char *line, size_t size, struct req_fds *fds)
{
	struct timespec t0, t;
	size_t len = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (len + 1 < size) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		union {
			char buf[CMSG_SPACE(REQ_MAX_FDS * sizeof(int))];
			struct cmsghdr align;
		} u;
		struct iovec iov = {.iov_base = line + len, .iov_len = 1};
		struct msghdr msg = {
		    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
		ssize_t n;
		long left;

		/* A client that connects and says nothing, or a byte at a
		 * time, must not stall us: the whole line within the wait. */
		clock_gettime(CLOCK_MONOTONIC, &t);
		left = CLIENT_WAIT_MS - ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return -ETIMEDOUT;
		n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -ECONNRESET;
		take_fds(&msg, fds);
		if (line[len] == '\n')
			break;
		len++;
	}
	line[len] = 0;
	return 0;
}

static int do_start(struct monitor *m, char *detail, size_t size)
{
	struct proto_msg msg = {.type = PROTO_MSG_GO}, ans = {0};
	int r;

	stop_point("monitor:start");
	r = guest_channel_request(&m->ch, &msg, guest_boot_timeout_ms(), &ans);
	if (r < 0)
		return r;
	snprintf(detail, size, "%u", ans.u.started.pid);
	log_debug("container process started, guest pid %u", ans.u.started.pid);
	proto_msg_free(&ans);
	return 0;
}

/* How long a SIGKILL of the container's process waits for the guest to
 * confirm it before the VM is ended instead. Long enough for a busy guest
 * whose kernel code is emulated; a guest that answers lets guest-init
 * flush the container's writes (shared directories among them) first. */
#define KILL_CONFIRM_MS (20 * 1000)

int monitor_signal(struct monitor *m, uint32_t pid, int signo, bool all)
{
	struct proto_msg msg = {.type = PROTO_MSG_SIGNAL}, ans = {0};
	/* pid 0 is the VM's container (all: every process of it); another
	 * pid an exec'd process or a pod's app container, whose end is not
	 * the VM's. */
	bool kill_init = signo == SIGKILL && pid == 0;
	int r;

	if (m->exited)
		return err_set(-ESRCH, "container not running");
	msg.u.signal = (struct proto_signal){.pid = pid, .signo = (uint32_t)signo, .all = all};
	if (m->paused && signo == SIGKILL) {
		/* A frozen container still dies by SIGKILL (as a frozen cgroup's
		 * tasks do): let the guest run to deliver it. */
		vm_resume(m->sb->vm);
		m->paused = false;
	} else if (m->paused) {
		/* Delivered when the container is resumed; the answer is
		 * dropped then. */
		return guest_channel_send(&m->ch, &msg, GUEST_REPLY_TIMEOUT_MS);
	}
	r = guest_channel_request(&m->ch, &msg, kill_init ? KILL_CONFIRM_MS : GUEST_REPLY_TIMEOUT_MS, &ans);
	proto_msg_free(&ans);
	if (r == -ETIMEDOUT && kill_init && !m->exited) {
		/* A guest that cannot even take SIGKILL in time (hung, halted,
		 * guest-init silent) still loses its container: the VM ends,
		 * as the process would have. An answer, an error among them
		 * (the process may be exiting: its EXIT follows), is left to
		 * the guest as before. */
		log_warn("the guest did not confirm SIGKILL of the container's process (%s): ending its VM", err_msg());
		err_clear();
		m->exited = true;
		m->exit_status = SIGKILL;
		m->vm_first = true;
		return 0;
	}
	return r;
}

int monitor_resize(struct monitor *m, uint32_t pid, unsigned rows, unsigned cols)
{
	struct proto_msg msg = {.type = PROTO_MSG_RESIZE}, ans = {0};
	int r;

	if (m->paused)
		return err_set(-EBUSY, "container is paused");
	msg.u.resize = (struct proto_resize){.pid = pid, .rows = (uint16_t)rows, .cols = (uint16_t)cols};
	r = guest_channel_request(&m->ch, &msg, GUEST_REPLY_TIMEOUT_MS, &ans);
	proto_msg_free(&ans);
	return r;
}

static int do_pause(struct monitor *m, bool pause)
{
	int r;

	/* A pod's sandbox: runc's pause freezes the pause container only,
	 * and the VM is the pod's (docs/runtime.md, "Pods"). */
	if (monitor_is_pod_sandbox(m))
		return monitor_pod_freeze(m, 0, pause);

	if (m->paused == pause)
		return 0;
	r = pause ? vm_pause(m->sb->vm) : vm_resume(m->sb->vm);
	if (r < 0)
		return err_setsys(r, "%s the VM", pause ? "pausing" : "resuming");
	m->paused = pause;
	log_debug("vCPUs %s", pause ? "paused" : "resumed");
	return 0;
}

/* Host pids that belong to the container: ours, then the exec proxies'. */
static int do_ps(struct monitor *m, char *detail, size_t size)
{
	size_t len = (size_t)snprintf(detail, size, "%d", (int)getpid());

	for (int i = 0; i < MONITOR_MAX_EXECS && len < size; i++)
		if (m->execs[i].fd >= 0 && m->execs[i].proxy_pid > 0)
			len += (size_t)snprintf(detail + len, size - len, " %d", (int)m->execs[i].proxy_pid);
	return len < size ? 0 : err_set(-ENOBUFS, "too many processes");
}

/* `procs`: the container's processes from the guest (PS), passed on as
 * the PS frame after the "ok" line; *answered then. */
static int do_procs(struct monitor *m, int fd, uint32_t container, bool *answered)
{
	struct proto_msg msg = {.type = PROTO_MSG_PS, .u.ps = {.container = container}}, ans = {0};
	int r;

	if (m->exited)
		return err_set(-ESRCH, "container not running");
	if (m->paused)
		return err_set(-EBUSY, "container is paused: its processes cannot be listed");
	r = guest_channel_request(&m->ch, &msg, GUEST_REPLY_TIMEOUT_MS, &ans);
	if (r >= 0 && ans.type != PROTO_MSG_PS)
		r = err_set(-EPROTO, "expected PS, got %s", proto_type_name(ans.type));
	if (r >= 0) {
		/* A client that does not read must not stall us. */
		struct timeval tv = {.tv_sec = CLIENT_WAIT_MS / 1000};

		(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		*answered = true;
		r = write_all(fd, "ok\n", 3);
		if (r >= 0)
			r = proto_send(fd, &ans);
	}
	proto_msg_free(&ans);
	return r;
}

static int do_stats(struct monitor *m, uint32_t container, char *detail, size_t size)
{
	struct proto_msg msg = {.type = PROTO_MSG_STATS, .u.stats = {.container = container}}, ans = {0};
	struct proto_stats *s = &ans.u.stats;
	int r;

	if (m->paused)
		return err_set(-EBUSY, "container is paused");
	r = guest_channel_request(&m->ch, &msg, GUEST_REPLY_TIMEOUT_MS, &ans);
	if (r < 0)
		return r;
	snprintf(detail, size,
	         "cpu_usage_usec=%llu cpu_user_usec=%llu cpu_system_usec=%llu memory_current=%llu "
	         "memory_max=%llu memory_total=%llu pids_current=%llu",
	         (unsigned long long)s->cpu_usage_usec, (unsigned long long)s->cpu_user_usec,
	         (unsigned long long)s->cpu_system_usec, (unsigned long long)s->memory_current,
	         (unsigned long long)s->memory_max, (unsigned long long)s->memory_total,
	         (unsigned long long)s->pids_current);
	proto_msg_free(&ans);
	return 0;
}

/* "vmstats": the VM's exit and device counters since it was made (KVM's
 * statistics of this VM, kvrun's counters of this monitor), as JSON with
 * the counters that are not zero. */
static int do_vmstats(struct monitor *m, char *detail, size_t size)
{
	struct vm_stats_sample now;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int r;

	/* Opened before the vCPUs ran (bring_up()): never here. */
	if (!m->sb || !m->vm_stats)
		return err_set(-ESRCH, "the VM has ended");
	r = vm_stats_sample(m->vm_stats, &now);
	if (r < 0)
		return err_setsys(r, "reading VM statistics");
	f = open_memstream(&buf, &len);
	if (!f) {
		vm_stats_sample_free(&now);
		return -ENOMEM;
	}
	vm_stats_write_delta(m->vm_stats, NULL, &now, true, f);
	fclose(f);
	vm_stats_sample_free(&now);
	if (!buf || len >= size) {
		free(buf);
		return err_set(-ENOSPC, "VM statistics: %zu bytes", len);
	}
	memcpy(detail, buf, len + 1);
	free(buf);
	return 0;
}

/* `exec`: an EXEC frame follows the line. On success the connection is
 * kept (*keep) and answered "ok <guest pid>"; "exit <wait status>" follows
 * when the process ends. */
static int do_exec(struct monitor *m, int fd, bool *keep, char *detail, size_t size)
{
	struct proto_msg msg = {0}, ans = {0};
	struct monitor_exec *e = NULL;
	struct ucred cred = {0};
	socklen_t len = sizeof(cred);
	int r;

	if (m->exited)
		return err_set(-ESRCH, "container not running");
	if (m->paused)
		return err_set(-EBUSY, "cannot exec in a paused container");
	for (int i = 0; i < MONITOR_MAX_EXECS && !e; i++)
		if (m->execs[i].fd < 0)
			e = &m->execs[i];
	if (!e)
		return err_set(-EAGAIN, "too many exec'd processes (at most %d)", MONITOR_MAX_EXECS);
	/* The whole frame within the wait: a client that stops half-way is
	 * dropped, not waited for. */
	r = proto_recv_timeout(fd, CLIENT_WAIT_MS, &msg);
	if (r == -ETIMEDOUT)
		return err_set(r, "no process to exec (no whole EXEC within %d s)", CLIENT_WAIT_MS / 1000);
	if (r < 0)
		return err_setsys(r, "reading the process to exec");
	if (msg.type != PROTO_MSG_EXEC) {
		proto_msg_free(&msg);
		return err_set(-EINVAL, "expected EXEC, got %s", proto_type_name(msg.type));
	}
	stop_point("monitor:exec");
	r = guest_channel_request(&m->ch, &msg, guest_boot_timeout_ms(), &ans);
	if (r >= 0) {
		getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len);
		*e = (struct monitor_exec){
		    .fd = fd, .id = msg.id, .guest_pid = ans.u.started.pid, .proxy_pid = cred.pid};
		*keep = true;
		snprintf(detail, size, "%u", ans.u.started.pid);
		log_debug("exec: guest pid %u for proxy %d", e->guest_pid, (int)e->proxy_pid);
	}
	proto_msg_free(&msg);
	proto_msg_free(&ans);
	return r;
}

/* New limits for the guest's container cgroup (0 = max). */
static int do_update(struct monitor *m, int has_pids, unsigned long long pids, int has_mem, unsigned long long mem,
                     uint32_t container)
{
	struct proto_msg msg = {.type = PROTO_MSG_UPDATE}, ans = {0};
	int r;

	if (m->exited)
		return err_set(-ESRCH, "container not running");
	if (m->paused)
		return err_set(-EBUSY, "container is paused");
	msg.u.update = (struct proto_update){has_pids != 0, pids, has_mem != 0, mem, container};
	r = guest_channel_request(&m->ch, &msg, GUEST_REPLY_TIMEOUT_MS, &ans);
	proto_msg_free(&ans);
	return r;
}

/* "cpu <guest pid> <has quota> <quota> <period> <weight> <cpus|->". */
static int do_cpu(struct monitor *m, const char *args)
{
	struct proto_update u = {0};
	unsigned long long quota, period, weight;
	char cpus[256];
	int has_quota;
	unsigned pid;

	if (sscanf(args, "%u %d %llu %llu %llu %255s", &pid, &has_quota, &quota, &period, &weight, cpus) != 6)
		return err_set(-EINVAL, "cpu: <guest pid> <has quota> <quota> <period> <weight> <cpus|-> expected");
	u = (struct proto_update){.has_cpu_quota = has_quota != 0,
	                          .cpu_quota = quota,
	                          .has_cpu_period = period != 0,
	                          .cpu_period = period,
	                          .has_cpu_weight = weight != 0,
	                          .cpu_weight = weight,
	                          .cpuset_cpus = strcmp(cpus, "-") ? cpus : NULL};
	return monitor_pod_cpu(m, pid, &u);
}

static void member_ended(struct monitor *m, struct monitor_exec *e)
{
	/* Its `kvrun events` end with it, as a container's do. */
	for (int i = 0; i < MONITOR_MAX_SUBS; i++)
		if (m->subs[i] >= 0 && m->sub_pid[i] == e->guest_pid)
			monitor_sub_gone(m, i);
	monitor_member_ended(m, e);
}

void monitor_exec_exited(struct monitor *m, uint64_t id, uint32_t status)
{
	char line[32];
	int n = snprintf(line, sizeof(line), "exit %u\n", status);

	for (int i = 0; i < MONITOR_MAX_EXECS; i++) {
		struct monitor_exec *e = &m->execs[i];

		if (e->fd < 0 || e->id != id)
			continue;
		(void)write_all(e->fd, line, (size_t)n);
		close(e->fd);
		e->fd = -1;
		if (e->slots)
			member_ended(m, e);
	}
}

void monitor_exec_gone(struct monitor *m, struct monitor_exec *e)
{
	uint32_t pid = e->guest_pid;

	close(e->fd);
	e->fd = -1;
	/* The proxy stood for the process (its pid is what callers kill):
	 * with it gone, nobody could wait for the process any more. */
	log_debug("exec proxy %d went away: killing guest pid %u", (int)e->proxy_pid, pid);
	if (!m->exited && monitor_signal(m, pid, SIGKILL, false) < 0)
		log_debug("killing guest pid %u: %s", pid, err_msg());
	if (e->slots)
		member_ended(m, e);
}

/* The session of a live app container of the pod whose init is guest
 * pid, or NULL. */
static struct monitor_exec *member_session(struct monitor *m, uint32_t pid)
{
	for (int i = 0; i < MONITOR_MAX_EXECS; i++)
		if (m->execs[i].fd >= 0 && m->execs[i].slots && m->execs[i].guest_pid == pid)
			return &m->execs[i];
	return NULL;
}

void monitor_oom(struct monitor *m, const struct proto_oom *oom)
{
	uint64_t *seen = &m->oom_kill;

	/* A pod's app container's: its own subscribers hear of it. */
	if (oom->container) {
		struct monitor_exec *e = member_session(m, oom->container);

		if (!e) {
			log_debug("guest: OOM of guest pid %u, no app container's", oom->container);
			return;
		}
		seen = &e->oom_kill;
	}
	log_debug("guest: %llu OOM kill(s) in the container (guest pid %u)", (unsigned long long)oom->oom_kill,
	          oom->container);
	for (; *seen < oom->oom_kill; (*seen)++)
		for (int i = 0; i < MONITOR_MAX_SUBS; i++)
			/* A subscriber that does not read loses events, never stalls us. */
			if (m->subs[i] >= 0 && m->sub_pid[i] == oom->container &&
			    send(m->subs[i], "oom\n", 4, MSG_DONTWAIT | MSG_NOSIGNAL) != 4)
				log_debug("events subscriber %d: an OOM event dropped", i);
}

void monitor_sub_gone(struct monitor *m, int i)
{
	close(m->subs[i]);
	m->subs[i] = -1;
	m->sub_pid[i] = 0;
}

/* `events` (pid 0), or `events <guest pid>` of a pod's app container: the
 * connection is kept and hears of each event; it ends with the container. */
static int do_subscribe(struct monitor *m, int fd, uint32_t pid, bool *keep)
{
	if (m->exited)
		return err_set(-ESRCH, "container not running");
	if (pid && !member_session(m, pid))
		return err_set(-ESRCH, "no app container with guest pid %u runs in the pod's VM", pid);
	for (int i = 0; i < MONITOR_MAX_SUBS; i++)
		if (m->subs[i] < 0) {
			m->subs[i] = fd;
			m->sub_pid[i] = pid;
			*keep = true;
			return 0;
		}
	return err_set(-EAGAIN, "too many events subscribers (at most %d)", MONITOR_MAX_SUBS);
}

/* "checkpoint <leave 0|1> <dir>" with the files for the VM and its disk. */
static int do_checkpoint(struct monitor *m, bool leave_running, const char *dir, const struct req_fds *fds)
{
	if (fds->n != 2 || fds->truncated)
		return err_set(-EINVAL, "checkpoint needs 2 files to write (the VM's and the disk's), got %d%s", fds->n,
		               fds->truncated ? " and more" : "");
	return monitor_checkpoint(m, leave_running, dir, fds->fd[0], fds->fd[1]);
}

void monitor_serve_client(struct monitor *m)
{
	_cleanup_(req_fds_close) struct req_fds fds = {.n = 0};
	bool checkpoint;
	_cleanup_close_ int fd = accept4(m->control_fd, NULL, NULL, SOCK_CLOEXEC);
	char line[4200], detail[3072] = "";
	unsigned pid, rows, cols;
	unsigned long long pids, mem;
	int signo, all, r, n, has_pids, has_mem;
	bool keep = false, answered = false, member;

	if (fd < 0 || read_line(fd, line, sizeof(line), &fds) < 0)
		return;
	err_clear();
	checkpoint = sscanf(line, "checkpoint %d %n", &all, &signo) == 1 && line[signo];
	member = strncmp(line, "member ", 7) == 0;
	if ((fds.n > 0 || fds.truncated) && !checkpoint && !member)
		r = err_set(-EINVAL, "request \"%s\" takes no file descriptors", line);
	else if (checkpoint)
		r = do_checkpoint(m, all != 0, line + signo, &fds);
	else if (member && fds.truncated)
		r = err_set(-EINVAL, "member: more than %d directory descriptors", REQ_MAX_FDS);
	else if (member)
		r = monitor_member(m, fd, line + 7, fds.fd, (unsigned int)fds.n, &keep, detail, sizeof(detail));
	else if (sscanf(line, "go %u", &pid) == 1)
		r = monitor_member_go(m, pid, detail, sizeof(detail));
	else if (strcmp(line, "start") == 0)
		r = do_start(m, detail, sizeof(detail));
	else if (sscanf(line, "kill %d %d", &signo, &all) == 2)
		r = monitor_signal(m, 0, signo, all != 0);
	else if ((n = sscanf(line, "signal %u %d %d", &pid, &signo, &all)) >= 2)
		r = monitor_signal(m, pid, signo, n == 3 && all != 0);
	else if (sscanf(line, "resize %u %u %u", &pid, &rows, &cols) == 3)
		r = monitor_resize(m, pid, rows, cols);
	else if (strcmp(line, "exec") == 0)
		r = do_exec(m, fd, &keep, detail, sizeof(detail));
	else if (strcmp(line, "pause") == 0 || strcmp(line, "resume") == 0)
		r = do_pause(m, line[0] == 'p');
	else if (strncmp(line, "cpu ", 4) == 0)
		r = do_cpu(m, line + 4);
	else if (sscanf(line, "pause %u", &pid) == 1 || sscanf(line, "resume %u", &pid) == 1)
		r = monitor_pod_freeze(m, pid, line[0] == 'p');
	else if (strcmp(line, "ps") == 0)
		r = do_ps(m, detail, sizeof(detail));
	else if (strcmp(line, "stats") == 0)
		r = do_stats(m, 0, detail, sizeof(detail));
	else if (sscanf(line, "stats %u", &pid) == 1)
		r = do_stats(m, pid, detail, sizeof(detail));
	else if (strcmp(line, "procs") == 0)
		r = do_procs(m, fd, 0, &answered);
	else if (sscanf(line, "procs %u", &pid) == 1)
		r = do_procs(m, fd, pid, &answered);
	else if (strcmp(line, "vmstats") == 0)
		r = do_vmstats(m, detail, sizeof(detail));
	else if ((n = sscanf(line, "update %d %llu %d %llu %u", &has_pids, &pids, &has_mem, &mem, &pid)) >= 4)
		r = do_update(m, has_pids, pids, has_mem, mem, n == 5 ? pid : 0);
	else if (strcmp(line, "events") == 0)
		r = do_subscribe(m, fd, 0, &keep);
	else if (sscanf(line, "events %u", &pid) == 1)
		r = do_subscribe(m, fd, pid, &keep);
	else if (strcmp(line, "ping") == 0)
		r = 0;
	else
		r = err_set(-EINVAL, "unknown request \"%s\"", line);
	if (r < 0)
		log_debug("request \"%s\": %s", line, err_msg());
	if (!answered)
		answer(fd, r, detail);
	if (keep)
		fd = -1; /* now the exec's or the subscriber's */
}

int monitor_watch_signals(void)
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
void monitor_forward_signals(struct monitor *m)
{
	struct signalfd_siginfo si;

	while (read(m->signal_fd, &si, sizeof(si)) == sizeof(si))
		if (!m->exited && si.ssi_signo != SIGWINCH && monitor_signal(m, 0, (int)si.ssi_signo, false) < 0)
			log_debug("forwarding signal %u: %s", si.ssi_signo, err_msg());
}

/* The guest's pty follows the size of ours (no SIGWINCH reaches a monitor
 * in its own session: the size is looked at when idle). A paused guest
 * cannot take a new size: it is passed on after the resume. */
void monitor_follow_size(struct monitor *m)
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
