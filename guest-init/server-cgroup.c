/* SPDX-License-Identifier: Apache-2.0 */
/* What the container's cgroup says and is told (server-int.h). */
#include <fcntl.h>
#include <string.h>

#include "common/error.h"
#include "common/log.h"
#include "common/protocol.h"
#include "guest-init/server-int.h"

static int read_u64(const char *dir, const char *file, const char *key, uint64_t *ret)
{
	char path[512], line[256];
	_cleanup_fclose_ FILE *f = NULL;
	size_t klen = key ? strlen(key) : 0;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (key && (strncmp(line, key, klen) != 0 || line[klen] != ' '))
			continue;
		*ret = strtoull(line + (key ? klen + 1 : 0), NULL, 10); /* "max" reads as 0 */
		return 0;
	}
	return -ENOENT;
}

int gi_handle_stats(struct state *st, uint64_t id)
{
	struct proto_msg m = {0};
	struct proto_stats *s = &m.u.stats;
	const char *cg = st->srv->cgroup_dir;

	if (cg) {
		read_u64(cg, "cpu.stat", "usage_usec", &s->cpu_usage_usec);
		read_u64(cg, "cpu.stat", "user_usec", &s->cpu_user_usec);
		read_u64(cg, "cpu.stat", "system_usec", &s->cpu_system_usec);
		read_u64(cg, "memory.current", NULL, &s->memory_current);
		read_u64(cg, "memory.max", NULL, &s->memory_max);
		read_u64(cg, "pids.current", NULL, &s->pids_current);
	}
	if (read_u64("/proc", "meminfo", "MemTotal:", &s->memory_total) == 0)
		s->memory_total *= 1024;
	return gi_reply(st, PROTO_MSG_STATS, id, &m);
}

/* UPDATE: write the limits that can change at run time into the
 * container's cgroup (0 is "max"). */
static int write_limit(const char *dir, const char *file, uint64_t v)
{
	char path[512], val[32];
	int fd, n, r = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	n = v ? snprintf(val, sizeof(val), "%llu", (unsigned long long)v) : snprintf(val, sizeof(val), "max");
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, val, (size_t)n) < 0)
		r = -errno;
	if (fd >= 0)
		close(fd);
	return r;
}

int gi_handle_update(struct state *st, const struct proto_msg *m)
{
	const struct proto_update *u = &m->u.update;
	const char *cg = st->srv->cgroup_dir;
	int r = 0;

	if (!cg)
		return gi_reply_error(st, m->id, -ENOTSUP, "the container has no cgroup");
	if (u->has_pids_max && (r = write_limit(cg, "pids.max", u->pids_max)) < 0)
		return gi_reply_error(st, m->id, r, "set pids.max");
	if (u->has_memory_max && (r = write_limit(cg, "memory.max", u->memory_max)) < 0)
		return gi_reply_error(st, m->id, r, "set memory.max");
	return gi_reply_error(st, m->id, 0, "");
}

/* memory.events: "oom N" and "oom_kill N" among other lines. */
static int read_oom(int fd, struct proto_oom *ret)
{
	char buf[512], *p;
	ssize_t n;

	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	*ret = (struct proto_oom){0};
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, "oom ", 4) == 0)
			ret->oom = strtoull(p + 4, NULL, 10);
		else if (strncmp(p, "oom_kill ", 9) == 0)
			ret->oom_kill = strtoull(p + 9, NULL, 10);
	}
	return 0;
}

/* The kernel flags memory.events (POLLPRI) whenever a counter moves. */
void gi_oom_watch(struct state *st)
{
	char path[512];

	st->oom_fd = -1;
	if (!st->srv->cgroup_dir)
		return;
	snprintf(path, sizeof(path), "%s/memory.events", st->srv->cgroup_dir);
	st->oom_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (st->oom_fd >= 0 && read_oom(st->oom_fd, &st->oom) < 0) {
		close(st->oom_fd);
		st->oom_fd = -1;
	}
}

/* An OOM kill (or a failed reclaim at the limit) since the last look:
 * tell the host, whose `kvrun events` reports it. */
void gi_oom_check(struct state *st)
{
	struct proto_msg m = {0};
	struct proto_oom now;

	if (read_oom(st->oom_fd, &now) < 0)
		return;
	if (now.oom_kill == st->oom.oom_kill && now.oom == st->oom.oom)
		return;
	st->oom = now;
	m.u.oom = now;
	if (!st->host_gone && gi_reply(st, PROTO_MSG_OOM, 0, &m) < 0)
		st->host_gone = true;
}
