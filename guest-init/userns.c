/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The container's user namespace (linux.uidMappings/gidMappings): the
 * container's process is cloned into a new user namespace with its other
 * namespaces, which that namespace then owns; PID 1 writes its maps as
 * newuidmap would (it is root in the VM: setgroups stays allowed), and
 * does for it what needs privilege over the VM (rlimits above the current
 * hard limit, a lower oom_score_adj, the staging directory for copied-in
 * files) before letting it go on. The root filesystem is used as it is:
 * runc expects it to be owned by the mapped ids already, and so does
 * kvrun (the root disk keeps the bundle's ownership).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "common/rlimit.h"
#include "guest-init/guest-init.h"

/* Longest map the kernel takes: 340 lines of three numbers. */
#define MAP_MAX (340 * 36)

static int write_map(pid_t pid, const char *file, const struct proto_id_map *m, size_t n)
{
	char path[64], buf[MAP_MAX];
	size_t len = 0;
	int fd, r = 0;

	if (!n)
		return err_set(-EINVAL, "a user namespace needs %s",
		               strcmp(file, "uid_map") ? "gidMappings" : "uidMappings");
	if (n > 340)
		return err_set(-E2BIG, "too many %s entries (%zu; the kernel takes 340)", file, n);
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%u %u %u\n", m[i].container_id, m[i].host_id,
		                        m[i].size);
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, buf, len) != (ssize_t)len)
		r = -errno;
	if (fd >= 0)
		close(fd);
	return r < 0 ? err_setsys(r, "write %s of the container's user namespace", file) : 0;
}

/* The VM's id that container id `id` maps to, or -1. */
static int64_t mapped(const struct proto_id_map *m, size_t n, uint32_t id)
{
	for (size_t i = 0; i < n; i++)
		if (id >= m[i].container_id && id - m[i].container_id < m[i].size)
			return (int64_t)m[i].host_id + (id - m[i].container_id);
	return -1;
}

static int set_limits(pid_t pid, const struct proto_process *p)
{
	char path[64], v[16];
	int fd, r = 0;

	for (size_t i = 0; i < p->n_rlimits; i++) {
		struct rlimit rl = {p->rlimits[i].soft, p->rlimits[i].hard};
		int res = rlimit_from_name(p->rlimits[i].type);

		if (res < 0)
			return err_set(res, "unknown rlimit type %s", p->rlimits[i].type ? p->rlimits[i].type : "");
		if (prlimit(pid, res, &rl, NULL) < 0)
			return err_setsys(-errno, "setrlimit %s", p->rlimits[i].type);
	}
	if (!p->has_oom_score_adj)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/oom_score_adj", (int)pid);
	snprintf(v, sizeof(v), "%d", p->oom_score_adj);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, v, strlen(v)) < 0)
		r = -errno;
	if (fd >= 0)
		close(fd);
	return r < 0 ? err_setsys(r, "write oom_score_adj %s", v) : 0;
}

int gi_userns_parent(const struct gi_spawn *sp, pid_t pid)
{
	const struct proto_start *c = sp->container;
	int64_t uid, gid;
	int r;

	if (!c || !c->user_ns)
		return 0;
	if (sp->start) {
		r = write_map(pid, "uid_map", c->uid_mappings, c->n_uid_mappings);
		if (r >= 0)
			r = write_map(pid, "gid_map", c->gid_mappings, c->n_gid_mappings);
		if (r < 0)
			return r;
		/* Copied-in files are staged by the process itself, as the
		 * namespace's root: that root must own the directory. */
		uid = mapped(c->uid_mappings, c->n_uid_mappings, 0);
		gid = mapped(c->gid_mappings, c->n_gid_mappings, 0);
		if (sp->files_dir && uid >= 0 && gid >= 0) {
			r = mkdir_p(sp->files_dir, 0700);
			if (r >= 0 && chown(sp->files_dir, (uid_t)uid, (gid_t)gid) < 0)
				r = -errno;
			if (r < 0)
				return err_setsys(r, "prepare %s for the user namespace", sp->files_dir);
		}
	}
	return set_limits(pid, sp->process);
}

int gi_userns_become_root(void)
{
	/* Root of the new namespace, which the maps must include. */
	if (setresgid(0, 0, 0) < 0)
		return err_setsys(-errno, "setresgid 0 in the user namespace (is container gid 0 mapped?)");
	if (setresuid(0, 0, 0) < 0)
		return err_setsys(-errno, "setresuid 0 in the user namespace (is container uid 0 mapped?)");
	return 0;
}
