/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A pod's members: app containers made in the VM of the pod's first
 * container (its sandbox) by a START with PROTO_START_F_MEMBER. Each has
 * a root of its own (a virtio-fs tag) at <members_dir>/<n>/rootfs, its
 * own mount namespace, cgroup (<cgroup_dir>-<n>) and, unless it shares
 * the first's, pid namespace; it joins the first's IPC and UTS namespaces
 * and stays in the VM's network. When its init ends, what is left of it
 * is killed, its root and shares unmounted and its cgroup and directories
 * removed: once the last mount of a tag is gone, Linux's virtio-fs driver
 * sends DESTROY, and the host frees the slot for another member.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "common/log.h"
#include "guest-init/server-int.h"

/* What a member brings that is the pod's, or that it cannot have. */
static int member_check(struct state *st, const struct proto_start *s)
{
	if (!st->srv->members_dir)
		return err_set(-ENOTSUP, "pod members are not supported here");
	if (!ctr_running(st, &st->ctrs[0]))
		return err_set(-ESRCH, "pod member: the pod's first container is not running");
	if (s->net)
		return err_set(-EINVAL, "net: a pod member has the VM's network, the first container's");
	if (s->hostname && *s->hostname)
		return err_set(-EINVAL, "hostname: a pod member has the first container's UTS namespace");
	if (s->domainname && *s->domainname)
		return err_set(-EINVAL, "domainname: a pod member has the first container's UTS namespace");
	if (s->user_ns)
		return err_set(-EINVAL, "user_ns: a pod member cannot have a user namespace");
	if (!s->root_fstype || strcmp(s->root_fstype, "virtiofs") != 0)
		return err_set(-EINVAL, "root_fstype: a pod member's root is a virtio-fs share, not %s",
		               s->root_fstype ? s->root_fstype : "a disk");
	if (!s->root_device)
		return err_set(-EINVAL, "root_device: a pod member's root needs its virtio-fs tag");
	return 0;
}

/* The EXIT that ends every member START that did not start: the host's
 * side of the member waits for it, as for a member that ran. */
static int member_exit(struct state *st, uint64_t id)
{
	struct proto_msg em = {.u.exit = {0, 1 << 8, false}};

	return server_reply(st, PROTO_MSG_EXIT, id, &em);
}

static int member_refuse(struct state *st, uint64_t id, int r)
{
	server_reply_error(st, id, r, err_msg());
	return member_exit(st, id);
}

/* Member n's root, staging directory and cgroup. */
static int member_paths(struct state *st, struct ctr *c, unsigned int n)
{
	const char *dir = st->srv->members_dir, *cg = st->srv->cgroup_dir;
	size_t size = sizeof(c->paths[0]);

	if ((size_t)snprintf(c->paths[0], size, "%s/%u/rootfs", dir, n) >= size ||
	    (size_t)snprintf(c->paths[1], size, "%s/%u/files", dir, n) >= size ||
	    (cg && (size_t)snprintf(c->paths[2], size, "%s-%u", cg, n) >= size))
		return err_set(-ENAMETOOLONG, "pod member %u: its paths are too long", n);
	c->rootfs = c->paths[0];
	c->files_dir = c->paths[1];
	c->cgroup = cg ? c->paths[2] : NULL;
	return 0;
}

/* Everything before the spawn: its paths, root and cgroup. */
static int member_prepare(struct state *st, struct ctr *c)
{
	int r = member_paths(st, c, ++st->n_members);

	if (r >= 0)
		r = ctr_mount_root(st, c);
	if (r >= 0 && c->cgroup && mkdir(c->cgroup, 0755) < 0 && errno != EEXIST)
		r = err_setsys(-errno, "make the pod member's cgroup %s", c->cgroup);
	if (r >= 0)
		r = ctr_cgroup_setup(c->cgroup, &c->start.u.start);
	/* Its OOM kills, told apart from the pod's (member_oom_check()). */
	c->oom_fd = r >= 0 && c->cgroup ? gi_oom_open(c->cgroup, &c->oom) : -1;
	return r;
}

void member_oom_check(struct state *st, struct ctr *c)
{
	struct proto_msg m = {0};
	struct proto_oom now;

	if (c->oom_fd < 0 || gi_oom_read(c->oom_fd, &now) < 0)
		return;
	if (now.oom_kill == c->oom.oom_kill && now.oom == c->oom.oom)
		return;
	c->oom = now;
	m.u.oom = now;
	m.u.oom.container = (uint32_t)c->init_pid;
	if (c->init_pid > 0 && !st->host_gone && server_reply(st, PROTO_MSG_OOM, 0, &m) < 0)
		st->host_gone = true;
}

/* Whether a container of the VM other than c names share tag. */
static bool tag_elsewhere(const struct state *st, const struct ctr *c, const char *tag)
{
	for (size_t i = 0; i < MAX_CONTAINERS; i++) {
		const struct proto_start *s = &st->ctrs[i].start.u.start;

		if (&st->ctrs[i] == c || !st->ctrs[i].used)
			continue;
		for (size_t k = 0; k < s->n_mounts; k++)
			if (s->mounts[k].share && !strcmp(s->mounts[k].share, tag))
				return true;
	}
	return false;
}

/* The tags of c's bind mounts, mounted under GI_SHARES_DIR by
 * gi_mount_shares(): detached (the binds made from them in c's mount
 * namespace went with its last process), so that nothing holds them. */
static void member_unmount_shares(const struct state *st, const struct ctr *c)
{
	const struct proto_start *s = &c->start.u.start;
	char path[PATH_MAX];

	for (size_t i = 0; i < s->n_mounts; i++) {
		const char *tag = s->mounts[i].share;
		bool seen = false;

		for (size_t k = 0; tag && k < i && !seen; k++)
			seen = s->mounts[k].share && !strcmp(s->mounts[k].share, tag);
		if (!tag || seen || !*tag || strchr(tag, '/') || !strcmp(tag, ".") || !strcmp(tag, "..") ||
		    tag_elsewhere(st, c, tag))
			continue;
		snprintf(path, sizeof(path), "%s/%s", GI_SHARES_DIR, tag);
		if (umount2(path, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
			log_warn("unmount the pod member's share %s: %m", path);
		rmdir(path);
	}
}

/* Best effort: a long-lived pod must not keep what its members left. Its
 * processes are gone first (its cgroup empty), so that no open file or
 * working directory holds its mounts. */
static void member_cleanup(const struct state *st, struct ctr *c)
{
	char dir[sizeof(c->paths[0])], *slash;

	/* A removed cgroup's file would be readable for ever. */
	if (c->oom_fd > 0)
		close(c->oom_fd);
	c->oom_fd = -1;

	if (c->cgroup && gi_cgroup_remove(c->cgroup, 1000) < 0)
		log_warn("%s", err_msg());
	member_unmount_shares(st, c);
	if (c->root_mounted && umount2(c->rootfs, MNT_DETACH) < 0) {
		log_warn("unmount the pod member's root %s: %m", c->rootfs);
		return; /* nothing below it is removed */
	}
	c->root_mounted = false;
	if (!c->rootfs)
		return;
	rmdir(c->rootfs);
	rm_rf(c->files_dir);
	snprintf(dir, sizeof(dir), "%s", c->rootfs);
	slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		rmdir(dir);
	}
}

int member_start(struct state *st, struct proto_msg *m)
{
	uint64_t id = m->id;
	struct ctr *c;
	struct proc *p;
	int r;

	err_clear();
	r = member_check(st, &m->u.start);
	if (r < 0)
		return member_refuse(st, id, r);
	c = ctr_new(st);
	if (!c)
		return member_refuse(st, id, err_set(-EAGAIN, "too many containers in the VM (%d)", MAX_CONTAINERS));
	c->start = *m; /* take ownership */
	memset(m, 0, sizeof(*m));
	/* An empty name (a config's "") must not rename the pod's UTS
	 * namespace, which the member only joins. */
	free(c->start.u.start.hostname);
	free(c->start.u.start.domainname);
	c->start.u.start.hostname = c->start.u.start.domainname = NULL;
	r = member_prepare(st, c);
	if (r < 0) {
		member_refuse(st, id, r);
		member_cleanup(st, c);
		ctr_free(c);
		return 0;
	}
	r = proc_spawn(st, &c->start, c, &p);
	if (r < 0 && !p) {
		member_exit(st, id);
		member_cleanup(st, c);
		ctr_free(c);
		return 0;
	}
	if (r < 0)
		return 0; /* its process's EXIT follows, then member_ended() */
	return proc_created(st, p);
}

/* With a pid namespace of its own the kernel kills the rest; in the
 * first's, what it started lives on until killed here. */
void member_init_exited(struct state *st, struct ctr *c)
{
	if (c->start.flags & PROTO_START_F_SHARE_PID)
		ctr_signal_all(st, c, SIGKILL);
}

void member_ended(struct state *st, struct ctr *c)
{
	c->ended = true;
	/* Its exec'd processes (here) and what else is left (its cgroup,
	 * gi_cgroup_remove()) should be gone already: at worst they still
	 * die. */
	for (size_t i = 0; i < MAX_PROCS; i++)
		if (st->procs[i].used && st->procs[i].ctr == c && !st->procs[i].exited && st->procs[i].pid > 0)
			kill(st->procs[i].pid, SIGKILL);
	member_cleanup(st, c);
}

void members_kill(struct state *st)
{
	for (size_t i = 1; i < MAX_CONTAINERS; i++)
		if (ctr_running(st, &st->ctrs[i]))
			kill(st->ctrs[i].init_pid, SIGKILL);
}
