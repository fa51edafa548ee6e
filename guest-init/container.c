/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Forking the container process. The child runs the whole setup (its pty
 * master sent first when it has a terminal), reports "ready" over a
 * SOCK_SEQPACKET pair, waits for "go", closes the pair and then runs the
 * startContainer hooks and execs, as runc's init does after its exec fifo
 * was opened. And signalling every process of the container (kill --all).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "common/spec-support.h"
#include "guest-init/guest-init.h"

enum sync_type {
	SYNC_READY = 1,
	SYNC_GO,
	SYNC_ERROR,
	SYNC_PTY, /* the pty master, sent before the process's own setup */
	SYNC_CONTINUE, /* PID 1 placed the child (cgroup, user namespace maps) */
};

struct sync_msg {
	int32_t type;
	int32_t err; /* negative errno */
	int32_t code; /* exit code the child will use */
	char msg[1024];
};

/* With an fd, sendmsg; without one a plain write, which the process's own
 * seccomp filter (loaded before "ready", as runc loads it before its exec
 * fifo) is likelier to allow. */
static int sync_send(int fd, const struct sync_msg *m, int pass_fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {0};
	struct iovec iov = {(void *)m, sizeof(*m)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *c;

	if (pass_fd < 0) {
		while (write(fd, m, sizeof(*m)) < 0)
			if (errno != EINTR)
				return -errno;
		return 0;
	}
	mh.msg_control = cbuf;
	mh.msg_controllen = sizeof(cbuf);
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
	while (sendmsg(fd, &mh, MSG_NOSIGNAL) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

/* Returns 1 with a message, 0 on EOF. */
static int sync_recv(int fd, struct sync_msg *m, int *ret_fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {m, sizeof(*m)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	ssize_t n;

	do
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return 0;
	if (n != sizeof(*m))
		return -EBADMSG;
	m->msg[sizeof(m->msg) - 1] = '\0';
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && ret_fd)
			memcpy(ret_fd, CMSG_DATA(c), sizeof(int));
	return 1;
}

static _Noreturn void child_fail(int fd, int err, int code)
{
	struct sync_msg m = {.type = SYNC_ERROR, .err = err, .code = code};

	snprintf(m.msg, sizeof(m.msg), "%s", err_msg()[0] ? err_msg() : strerror(-err));
	sync_send(fd, &m, -1);
	_exit(code);
}

/* Open a pty inside the container (its devpts), make the slave our
 * controlling terminal and stdio; *ret_master goes to the parent. */
static int child_terminal(const struct proto_process *p, int *ret_master)
{
	_cleanup_close_ int master = -1, slave = -1;
	struct winsize ws = {.ws_row = p->rows, .ws_col = p->cols};
	char name[64];

	master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0)
		return err_setsys(-errno, "open /dev/ptmx");
	if (unlockpt(master) < 0 || ptsname_r(master, name, sizeof(name)) != 0)
		return err_setsys(-errno, "unlockpt");
	slave = open(name, O_RDWR | O_NOCTTY);
	if (slave < 0)
		return err_setsys(-errno, "open %s", name);
	if (ws.ws_row && ws.ws_col)
		ioctl(slave, TIOCSWINSZ, &ws);
	for (int i = 0; i < 3; i++)
		if (dup2(slave, i) < 0)
			return err_setsys(-errno, "dup2 pty");
	if (ioctl(0, TIOCSCTTY, 0) < 0)
		return err_setsys(-errno, "TIOCSCTTY");
	*ret_master = TAKE_FD(master);
	return 0;
}

/* Put the given fds on 0, 1, 2 (missing ones on /dev/null). */
static int child_stdio(const int stdio[3])
{
	int tmp[3];

	/* None of them on 0, 1 or 2 (as PID 1 hands them over): each goes
	 * straight into place. */
	if (stdio[0] > 2 && stdio[1] > 2 && stdio[2] > 2) {
		for (int i = 0; i < 3; i++)
			if (dup2(stdio[i], i) < 0)
				return err_setsys(-errno, "dup2 stdio");
		return 0;
	}

	for (int i = 0; i < 3; i++) {
		tmp[i] = stdio[i] >= 0 ? fcntl(stdio[i], F_DUPFD_CLOEXEC, 3) : open("/dev/null", O_RDWR | O_CLOEXEC);
		if (tmp[i] < 0)
			return err_setsys(-errno, "stdio %d", i);
	}
	for (int i = 0; i < 3; i++) {
		if (dup2(tmp[i], i) < 0)
			return err_setsys(-errno, "dup2 stdio");
		close(tmp[i]);
	}
	return 0;
}

/* fd moved to min or above (closing the old one), for the fds the child
 * still needs once the preserved fds take 3, 4, ... */
static int fd_above(int fd, int min)
{
	int nfd;

	if (fd < 0 || fd >= min)
		return fd;
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, min);
	close(fd);
	return nfd;
}

/* The preserved fds on 3, 4, ...: first out of the way (above the range),
 * then into place, the only fds above 2 that survive exec. */
static int child_extra_fds(const int *extra, size_t n)
{
	int tmp[PROTO_MAX_EXTRA_FDS];

	if (n > PROTO_MAX_EXTRA_FDS)
		return err_set(-E2BIG, "too many preserved fds");
	for (size_t i = 0; i < n; i++)
		if ((tmp[i] = fcntl(extra[i], F_DUPFD_CLOEXEC, 3 + (int)n)) < 0)
			return err_setsys(-errno, "preserved fd %zu", 3 + i);
	for (size_t i = 0; i < n; i++) {
		if (dup2(tmp[i], 3 + (int)i) < 0)
			return err_setsys(-errno, "dup2 preserved fd %zu", 3 + i);
		close(tmp[i]);
	}
	return 0;
}

/* EXEC: a pidfd of the process whose namespaces the child joins, opened
 * by PID 1 before the clone (the child's pid namespace numbers it
 * otherwise); -1: none (a kernel without pidfd_open). */
static int join_pidfd = -1;

/* The namespaces of pid that types names (CLONE_NEW* bits; the user and
 * cgroup ones only when the container c has them). With join_pidfd, all
 * at once (setns with a pidfd, Linux 5.8: the user namespace first, as
 * it owns the others); else, or where the kernel refuses that, one by
 * one, the user namespace first, every one opened before any is joined:
 * once in the container's mount namespace, /proc is the container's,
 * where pid is not pid. */
static int join_namespaces(pid_t pid, const struct proto_start *c, int types)
{
	static const struct {
		const char *name;
		int type;
	} nss[] = {{"user", CLONE_NEWUSER},
	           {"ipc", CLONE_NEWIPC},
	           {"uts", CLONE_NEWUTS},
	           {"mnt", CLONE_NEWNS},
	           {"cgroup", CLONE_NEWCGROUP}};
	int fds[ARRAY_SIZE(nss)];
	char path[64];
	int r = 0, all = 0;

	for (size_t i = 0; i < ARRAY_SIZE(nss); i++)
		if ((nss[i].type & types) && (nss[i].type != CLONE_NEWUSER || (c && c->user_ns)) &&
		    (nss[i].type != CLONE_NEWCGROUP || (c && c->cgroup_ns)))
			all |= nss[i].type;
	if (join_pidfd >= 0) {
		if (setns(join_pidfd, all) == 0) {
			close(join_pidfd);
			join_pidfd = -1;
			return 0;
		}
		if (errno != EINVAL)
			return err_setsys(-errno, "join the namespaces of process %d", (int)pid);
	}
	for (size_t i = 0; i < ARRAY_SIZE(nss); i++) {
		fds[i] = -1;
		if (!(nss[i].type & types) || (nss[i].type == CLONE_NEWUSER && !(c && c->user_ns)) ||
		    (nss[i].type == CLONE_NEWCGROUP && !(c && c->cgroup_ns)) || r < 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, nss[i].name);
		fds[i] = open(path, O_RDONLY | O_CLOEXEC);
		if (fds[i] < 0)
			r = err_setsys(-errno, "join %s", path);
	}
	for (size_t i = 0; i < ARRAY_SIZE(nss) && r >= 0; i++)
		if (fds[i] >= 0 && setns(fds[i], nss[i].type) < 0)
			r = err_setsys(-errno, "join /proc/%d/ns/%s", (int)pid, nss[i].name);
	for (size_t i = 0; i < ARRAY_SIZE(nss); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return r;
}

/* The child's wait for "go", by read() for the same reason as sync_send. */
static bool child_wait_go(int fd)
{
	struct sync_msg m;
	ssize_t n;

	do
		n = read(fd, &m, sizeof(m));
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof(m) && m.type == SYNC_GO;
}

/* After "go" nobody waits for an answer any more (start has returned, as
 * runc's does once its init opened the exec fifo): a failing
 * startContainer hook or execve is told on the process's stderr, and the
 * process exits 1, as runc's init does. */
static _Noreturn void child_after_go(const struct gi_spawn *sp, struct gi_exec *e)
{
	if (sp->start) {
		int r = gi_run_hooks(sp->start->start_container_hooks, sp->start->n_start_container_hooks,
		                     "startContainer", sp->start->state_json);

		if (r < 0) {
			dprintf(STDERR_FILENO, "%s\n", err_msg()[0] ? err_msg() : strerror(-r));
			_exit(1);
		}
	}
	gi_mark(32);
	gi_child_exec(sp->process, e);
}

/* START: the namespaces' identities (a pod member's IPC and UTS those
 * of the pod's first container), the root filesystem and the
 * createContainer hooks; EXEC: the container's namespaces joined. */
static int child_setup(const struct gi_spawn *sp)
{
	const struct proto_start *c = sp->container ? sp->container : sp->start;
	int all = CLONE_NEWUSER | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNS | CLONE_NEWCGROUP;
	int r = 0;

	if (sp->start && sp->start->user_ns)
		r = gi_userns_become_root();
	/* After joining the cgroup: the namespace's root is the container's. */
	if (r >= 0 && sp->start && sp->start->cgroup_ns && unshare(CLONE_NEWCGROUP) < 0)
		r = err_setsys(-errno, "unshare the cgroup namespace");
	if (r >= 0 && sp->start && sp->pod_pid)
		r = join_namespaces(sp->pod_pid, NULL, CLONE_NEWIPC | CLONE_NEWUTS);
	if (r >= 0 && sp->start)
		r = gi_rootfs_setup(sp->start, sp->rootfs, sp->files_dir ? sp->files_dir : GI_FILES_DIR);
	else if (r >= 0)
		r = join_namespaces(sp->join_pid, sp->container, all);
	/* linux.personality: the container's init and exec'd processes (runc). */
	if (r >= 0 && c && c->has_personality && personality(c->personality) < 0)
		r = err_setsys(-errno, "set personality %#x", c->personality);
	if (r >= 0 && sp->start)
		r = gi_run_hooks(sp->start->create_container_hooks, sp->start->n_create_container_hooks,
		                 "createContainer", sp->start->state_json);
	return r;
}

static _Noreturn void child_main(const struct gi_spawn *sp, int fd)
{
	const struct proto_start *c = sp->container ? sp->container : sp->start;
	const struct proto_process *p = sp->process;
	struct sync_msg m = {.type = SYNC_PTY};
	struct gi_exec e;
	int master = -1, r;
	sigset_t all;

	/* PID 1 blocks SIGCHLD for its signalfd; the container starts clean. */
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	signal(SIGPIPE, SIG_DFL);
	err_clear();
	if (setsid() < 0)
		child_fail(fd, err_setsys(-errno, "setsid"), 1);
	/* First, while it has every capability: the container (its hooks
	 * too) opens no vsock stream to the host's ports. */
	if (!sp->allow_vsock && (r = gi_deny_vsock()) < 0)
		child_fail(fd, r, 1);
	/* Nothing before PID 1 has placed us: the cgroup (its limits and
	 * device filter apply from the first step), the maps. */
	gi_mark(17);
	if (sync_recv(fd, &m, NULL) <= 0 || m.type != SYNC_CONTINUE)
		_exit(1);
	gi_mark(18);
	m.type = SYNC_PTY;
	r = child_setup(sp);
	gi_mark(19);
	if (r >= 0)
		r = p->terminal ? child_terminal(p, &master) : child_stdio(sp->stdio);
	if (r >= 0 && sp->n_extra) {
		/* The sync socket and the pty master must not be in the way. */
		fd = fd_above(fd, 3 + (int)sp->n_extra);
		master = fd_above(master, 3 + (int)sp->n_extra);
		if (fd < 0 || (p->terminal && master < 0))
			_exit(1);
		r = child_extra_fds(sp->extra, sp->n_extra);
	}
	if (r < 0)
		child_fail(fd, r, 1);
	/* The master travels before the setup, whose seccomp filter could
	 * refuse sendmsg. */
	if (master >= 0) {
		if (sync_send(fd, &m, master) < 0)
			_exit(1);
		close(master);
	}
	/* As runc: everything up to the lookup of the executable fails
	 * create (or exec), not start. */
	gi_mark(20);
	r = gi_child_prepare(p, sp->seccomp, c && c->user_ns, &e);
	gi_mark(21);
	if (r < 0)
		child_fail(fd, r, e.code);
	m.type = SYNC_READY;
	if (sync_send(fd, &m, -1) < 0 || !child_wait_go(fd))
		_exit(1);
	gi_mark(31);
	close(fd);
	child_after_go(sp, &e);
}

static int enter_cgroup(const char *dir, pid_t pid)
{
	char path[512], buf[16];
	_cleanup_close_ int fd = -1;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	snprintf(buf, sizeof(buf), "%d", (int)pid);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return write_all(fd, buf, strlen(buf));
}

/* Between clone and the child's first step: its cgroup, and what its
 * user namespace needs from PID 1. */
static int place_child(const struct gi_spawn *sp, pid_t pid)
{
	int r;

	if (sp->cgroup_dir) {
		r = enter_cgroup(sp->cgroup_dir, pid);
		if (r < 0 && sp->cgroup_required)
			return err_setsys(r, "put the container's process in its cgroup %s", sp->cgroup_dir);
	}
	return gi_userns_parent(sp, pid);
}

/* EXEC (and a pod member sharing the first container's): children of
 * the caller land in the container's pid namespace while *saved holds the
 * caller's own, to be restored after the fork. */
static int enter_pidns(pid_t pid, int *saved)
{
	_cleanup_close_ int fd = -1;
	char path[64];

	*saved = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*saved < 0 || fd < 0 || setns(fd, CLONE_NEWPID) < 0)
		return err_setsys(-errno, "join %s", path);
	return 0;
}

int gi_spawn(const struct gi_spawn *sp, struct gi_child *ret)
{
	_cleanup_close_ int saved_pidns = -1;
	pid_t pidns_of = sp->start ? (sp->new_pidns ? 0 : sp->pod_pid) : sp->join_pid;
	unsigned long flags = SIGCHLD;
	struct sync_msg m;
	int sv[2], r, master = -1;
	pid_t pid;

	ret->pid = 0;
	ret->sync_fd = ret->pty_master = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return err_setsys(-errno, "socketpair");
	/* The namespaces kvrun features lists (common/spec-support.c): the
	 * user namespace when the config has one; the cgroup namespace is the
	 * child's own step, once PID 1 has placed it in its cgroup. A pod
	 * member joins the IPC and UTS namespaces of the first container. */
	for (size_t i = 0; sp->start && i < spec_namespaces_count; i++) {
		unsigned long f = (unsigned long)spec_namespaces[i].clone_flag;

		if (f == CLONE_NEWCGROUP || (f == CLONE_NEWUSER && !sp->start->user_ns))
			continue;
		if (sp->pod_pid && (f == CLONE_NEWIPC || f == CLONE_NEWUTS))
			continue;
		if (f != CLONE_NEWPID || sp->new_pidns)
			flags |= f;
	}
	if (pidns_of > 0 && (r = enter_pidns(pidns_of, &saved_pidns)) < 0)
		goto fail;
	if (!sp->start && sp->join_pid > 0)
		join_pidfd = (int)syscall(SYS_pidfd_open, sp->join_pid, 0);
	/* A raw clone behaves as fork() and takes namespace flags. */
	pid = (pid_t)syscall(SYS_clone, flags, NULL, NULL, NULL, NULL);
	if (pid == 0) {
		close(sv[0]);
		child_main(sp, sv[1]);
	}
	gi_mark(16);
	r = pid < 0 ? -errno : 0;
	if (join_pidfd >= 0) {
		close(join_pidfd);
		join_pidfd = -1;
	}
	if (saved_pidns >= 0 && setns(saved_pidns, CLONE_NEWPID) < 0 && r == 0)
		r = -errno;
	if (pid < 0) {
		err_setsys(r, "clone");
		goto fail;
	}
	close(sv[1]);
	ret->pid = pid;
	ret->sync_fd = sv[0];
	r = place_child(sp, pid);
	if (r >= 0)
		r = sync_send(sv[0], &(struct sync_msg){.type = SYNC_CONTINUE}, -1);
	if (r < 0) {
		close(sv[0]); /* the child ends at EOF */
		ret->sync_fd = -1;
		return r;
	}
	r = sync_recv(sv[0], &m, &master);
	if (r == 1 && m.type == SYNC_PTY)
		r = sync_recv(sv[0], &m, NULL);
	if (r == 1 && m.type == SYNC_READY) {
		gi_mark(22);
		ret->pty_master = master;
		return 0;
	}
	if (master >= 0)
		close(master);
	close(sv[0]);
	ret->sync_fd = -1;
	if (r == 1 && m.type == SYNC_ERROR)
		return err_set(m.err < 0 ? m.err : -EIO, "%s", m.msg);
	return err_set(r < 0 ? r : -EPIPE, "container process died during setup");
fail:
	close(sv[0]);
	close(sv[1]);
	return r;
}

int gi_go(struct gi_child *c)
{
	struct sync_msg m = {.type = SYNC_GO};
	int r;

	if (c->sync_fd < 0)
		return -EBADF;
	r = sync_send(c->sync_fd, &m, -1);
	if (r >= 0)
		r = sync_recv(c->sync_fd, &m, NULL);
	close(c->sync_fd);
	c->sync_fd = -1;
	if (r == 0)
		return 0; /* closed on exec */
	if (r == 1 && m.type == SYNC_ERROR)
		return err_set(m.err < 0 ? m.err : -EIO, "%s", m.msg);
	return err_set(r < 0 ? r : -EPROTO, "container process sync failed");
}

/* Never kill(-1): the same code runs on the host in tests. */
int gi_kill_ns(const char *ns, dev_t dev, ino_t ino, int signo)
{
	_cleanup_closedir_ DIR *d = opendir("/proc");
	struct stat pns;
	char path[64];
	struct dirent *de;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		int pid = atoi(de->d_name);

		if (pid <= 0 || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%d/ns/%s", pid, ns);
		if (stat(path, &pns) == 0 && pns.st_ino == ino && pns.st_dev == dev)
			kill(pid, signo);
	}
	return 0;
}

int gi_kill_container(pid_t init, int signo)
{
	struct stat ns;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)init);
	if (stat(path, &ns) < 0)
		return -errno;
	return gi_kill_ns("pid", ns.st_dev, ns.st_ino, signo);
}
