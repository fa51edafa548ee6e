/* SPDX-License-Identifier: Apache-2.0 */
/* The container's processes (server-int.h). */
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "common/error.h"
#include "common/log.h"
#include "common/protocol.h"
#include "guest-init/server-int.h"

void gi_proc_close(struct proc *p)
{
	for (size_t i = 0; i < ARRAY_SIZE(p->fds); i++)
		if (p->fds[i] >= 0)
			close(p->fds[i]);
	if (p->child.sync_fd >= 0)
		close(p->child.sync_fd);
	memset(p, 0, sizeof(*p));
}

static struct proc *proc_new(struct state *st)
{
	for (size_t i = 0; i < MAX_PROCS; i++)
		if (!st->procs[i].used) {
			struct proc *p = &st->procs[i];

			memset(p, 0, sizeof(*p));
			p->used = true;
			p->child.sync_fd = p->child.pty_master = -1;
			for (size_t j = 0; j < ARRAY_SIZE(p->fds); j++)
				p->fds[j] = -1;
			return p;
		}
	return NULL;
}

struct proc *gi_proc_find(struct state *st, pid_t pid)
{
	if (pid == 0)
		pid = st->init_pid;
	for (size_t i = 0; i < MAX_PROCS; i++)
		if (st->procs[i].used && st->procs[i].pid == pid)
			return &st->procs[i];
	return NULL;
}

static int nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -errno : 0;
}

int gi_open_port(struct state *st, uint32_t port, int *ret)
{
	int fd;

	if (!port) {
		*ret = -1;
		return 0;
	}
	fd = st->srv->connect_port(port, st->srv->opaque);
	if (fd < 0)
		return err_setsys(fd, "connect stdio port %u", port);
	*ret = fd;
	return nonblock(fd);
}

/* Connect the stdio streams and make the pipes the child gets. Slots:
 * fds[0..2] = host streams, fds[3..5] = our pipe ends. */
static int proc_stdio(struct state *st, struct proc *p, const struct proto_process *pp, int child_fds[3])
{
	int r, pfd[2];

	child_fds[0] = child_fds[1] = child_fds[2] = -1;
	if (pp->terminal)
		return gi_open_port(st, pp->stdin_port, &p->fds[0]);
	const uint32_t ports[3] = {pp->stdin_port, pp->stdout_port, pp->stderr_port};
	for (int i = 0; i < 3; i++) {
		r = gi_open_port(st, ports[i], &p->fds[i]);
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

static void proc_terminal(struct proc *p)
{
	p->fds[3] = p->child.pty_master;
	p->child.pty_master = -1;
	if (p->fds[3] < 0)
		return;
	nonblock(p->fds[3]);
	relay_init(&p->in, p->fds[0], p->fds[3], false);
	relay_init(&p->out, p->fds[3], p->fds[0], false);
}

/* Spawn for START (join == 0) or EXEC; on failure the ERROR is sent and
 * the proc stays to report the child's exit. */
static int proc_spawn(struct state *st, const struct proto_msg *m, pid_t join, struct proc **ret)
{
	const struct proto_process *pp = join ? &m->u.exec : &m->u.start.process;
	struct proc *p = proc_new(st);
	int child_fds[3], r;

	if (!p)
		return gi_reply_error(st, m->id, -EAGAIN, "too many processes");
	p->id = m->id;
	p->init = !join;
	r = proc_stdio(st, p, pp, child_fds);
	if (r >= 0) {
		struct gi_spawn sp = {
		    .start = join ? NULL : &m->u.start,
		    .process = pp,
		    .seccomp = st->start.u.start.seccomp,
		    .rootfs = st->srv->rootfs_dir,
		    .files_dir = st->srv->files_dir,
		    .join_pid = join,
		    .cgroup_dir = st->srv->cgroup_dir,
		    .new_pidns = true,
		    .stdio = {child_fds[0], child_fds[1], child_fds[2]},
		};
		r = gi_spawn(&sp, &p->child);
		p->pid = p->child.pid;
	}
	for (int i = 0; i < 3; i++)
		if (child_fds[i] >= 0)
			close(child_fds[i]);
	if (r >= 0 && pp->terminal)
		proc_terminal(p);
	if (p->init)
		st->init_pid = p->pid;
	*ret = p;
	if (r < 0) {
		gi_reply_error(st, m->id, r, err_msg());
		if (!p->pid) {
			p->exited = true;
			p->status = 1 << 8;
		}
		return r;
	}
	return 0;
}

static int proc_go(struct state *st, struct proc *p, uint64_t id)
{
	struct proto_msg m = {.u.started = {(uint32_t)p->pid}};
	int r = gi_go(&p->child);

	if (r < 0)
		return gi_reply_error(st, id, r, err_msg());
	return gi_reply(st, PROTO_MSG_STARTED, id, &m);
}

/* START failed before there was a process: the ERROR, then the EXIT of
 * an init that never ran, so the host ends the VM. */
static int start_failed(struct state *st, int r)
{
	struct proto_msg em = {.u.exit = {0, 1 << 8, true}};

	st->init_done = true;
	st->init_status = 1 << 8;
	gi_reply_error(st, st->start.id, r, err_msg());
	return gi_reply(st, PROTO_MSG_EXIT, st->start.id, &em);
}

int gi_handle_start(struct state *st, struct proto_msg *m)
{
	struct proto_start *s = &m->u.start;
	struct proc *p;
	int r;

	if (st->started)
		return gi_reply_error(st, m->id, -EBUSY, "container already started");
	st->started = true;
	st->start = *m; /* take ownership */
	memset(m, 0, sizeof(*m));
	s = &st->start.u.start;
	if (st->srv->apply_identity && st->srv->apply_identity(s) < 0)
		log_warn("%s", err_msg()); /* a clock or seed problem must not stop the container */
	if (s->root_device) {
		err_clear();
		r = gi_mount_root_disk(s, st->srv->rootfs_dir);
		if (r < 0)
			return start_failed(st, r);
	}
	if (st->srv->net_apply) {
		err_clear();
		r = st->srv->net_apply(s->net);
		if (r < 0)
			return start_failed(st, err_prefix(r, "network setup"));
	}
	r = proc_spawn(st, &st->start, 0, &p);
	if (r < 0)
		return 0;
	if (st->start.flags & PROTO_START_F_WAIT) {
		struct proto_msg rm = {.u.started = {(uint32_t)p->pid}};

		return gi_reply(st, PROTO_MSG_READY, st->start.id, &rm);
	}
	return proc_go(st, p, st->start.id);
}

int gi_handle_go(struct state *st, const struct proto_msg *m)
{
	struct proc *p = gi_proc_find(st, 0);

	if (!p || p->child.sync_fd < 0)
		return gi_reply_error(st, m->id, -ESRCH, "no created container to start");
	return proc_go(st, p, m->id);
}

int gi_handle_exec(struct state *st, struct proto_msg *m)
{
	struct proc *p;

	if (!st->init_pid || st->init_done)
		return gi_reply_error(st, m->id, -ESRCH, "container is not running");
	if (proc_spawn(st, m, st->init_pid, &p) < 0)
		return 0;
	return proc_go(st, p, m->id);
}

/* Signal every process in the container's pid namespace (kill --all).
 * Never kill(-1): the same code runs on the host in tests. */
static int kill_container(pid_t init, int signo)
{
	_cleanup_closedir_ DIR *d = opendir("/proc");
	struct stat ns, pns;
	char path[64];
	struct dirent *de;

	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)init);
	if (!d || stat(path, &ns) < 0)
		return -errno;
	while ((de = readdir(d))) {
		int pid = atoi(de->d_name);

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/ns/pid", pid);
		if (stat(path, &pns) == 0 && pns.st_ino == ns.st_ino && pns.st_dev == ns.st_dev)
			kill(pid, signo);
	}
	return 0;
}

int gi_handle_signal(struct state *st, const struct proto_msg *m)
{
	const struct proto_signal *s = &m->u.signal;
	struct proc *p = gi_proc_find(st, (pid_t)s->pid);
	int r = 0;

	if (s->signo == 0 || s->signo >= 65)
		return gi_reply_error(st, m->id, -EINVAL, "invalid signal");
	if (!p || p->exited)
		return gi_reply_error(st, m->id, -ESRCH, "process not found");
	if (s->all && st->init_pid && !st->init_done)
		r = kill_container(st->init_pid, (int)s->signo);
	else if (p->pid <= 0 || kill(p->pid, (int)s->signo) < 0)
		r = -errno;
	if (r < 0)
		return gi_reply_error(st, m->id, r, "kill");
	return gi_reply_error(st, m->id, 0, "");
}

int gi_handle_resize(struct state *st, const struct proto_msg *m)
{
	struct proc *p = gi_proc_find(st, (pid_t)m->u.resize.pid);
	struct winsize ws = {.ws_row = m->u.resize.rows, .ws_col = m->u.resize.cols};

	if (!p || p->in.dst < 0 || !isatty(p->fds[3]))
		return gi_reply_error(st, m->id, -ENOTTY, "process has no terminal");
	if (ioctl(p->fds[3], TIOCSWINSZ, &ws) < 0)
		return gi_reply_error(st, m->id, -errno, "resize");
	return gi_reply_error(st, m->id, 0, "");
}
