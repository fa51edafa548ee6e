/* SPDX-License-Identifier: Apache-2.0 */
/* The container's cgroup inside the VM: made at boot with every
 * controller the kernel has, given the limits of START before the
 * container's process enters it; STATS read it, UPDATE writes its run-time
 * limits, and its memory.events tells of OOM kills. A pod member's
 * cgroup, a sibling, is signalled and removed when the member ends. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/fileio.h"
#include "guest-init/guest-init.h"

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

/* cpu.stat's counters in one read: each read of the file flushes the
 * cgroup's statistics and prints every line. */
static void read_cpu_stat(const char *cg, struct proto_stats *s)
{
	const struct {
		const char *key;
		uint64_t *v;
	} keys[] = {
	    {"usage_usec", &s->cpu_usage_usec}, {"user_usec", &s->cpu_user_usec}, {"system_usec", &s->cpu_system_usec}};
	char path[512], line[256];
	_cleanup_fclose_ FILE *f = NULL;

	snprintf(path, sizeof(path), "%s/cpu.stat", cg);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
			size_t klen = strlen(keys[i].key);

			if (strncmp(line, keys[i].key, klen) == 0 && line[klen] == ' ')
				*keys[i].v = strtoull(line + klen + 1, NULL, 10);
		}
}

void gi_cgroup_stats(const char *cg, struct proto_stats *s)
{
	struct sysinfo si;

	if (cg) {
		read_cpu_stat(cg, s);
		read_u64(cg, "memory.current", NULL, &s->memory_current);
		read_u64(cg, "memory.max", NULL, &s->memory_max);
		read_u64(cg, "pids.current", NULL, &s->pids_current);
	}
	/* /proc/meminfo's MemTotal (totalram_pages in kB) without the fifty
	 * other lines that file computes and prints. */
	if (sysinfo(&si) == 0)
		s->memory_total = (uint64_t)si.totalram * si.mem_unit;
}

int gi_cgroup_set_limit(const char *cg, const char *file, uint64_t v)
{
	char path[512], val[32];
	int fd, n, r = 0;

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	n = v ? snprintf(val, sizeof(val), "%llu", (unsigned long long)v) : snprintf(val, sizeof(val), "max");
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, val, (size_t)n) < 0)
		r = -errno;
	if (fd >= 0)
		close(fd);
	return r;
}

static int write_word(const char *cg, const char *file, const char *v)
{
	char path[512];
	int fd, r = 0;

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, v, strlen(v)) < 0)
		r = -errno;
	if (fd >= 0)
		close(fd);
	return r;
}

int gi_cgroup_set_cpu(const char *cg, const struct proto_update *u)
{
	char path[512], q[32] = "max", v[64];
	unsigned long long period = 100000;
	_cleanup_free_ char *cur = NULL;
	int r;

	if (u->has_cpu_quota || u->has_cpu_period) {
		snprintf(path, sizeof(path), "%s/cpu.max", cg);
		if (read_file_all(path, 4096, &cur, NULL) == 0)
			sscanf(cur, "%31s %llu", q, &period);
		if (u->has_cpu_quota && u->cpu_quota)
			snprintf(q, sizeof(q), "%llu", (unsigned long long)u->cpu_quota);
		else if (u->has_cpu_quota)
			snprintf(q, sizeof(q), "max");
		if (u->has_cpu_period && u->cpu_period)
			period = u->cpu_period;
		snprintf(v, sizeof(v), "%s %llu", q, period);
		if ((r = write_word(cg, "cpu.max", v)) < 0)
			return err_setsys(r, "set cpu.max to \"%s\" in %s", v, cg);
	}
	if (u->has_cpu_weight && u->cpu_weight) {
		snprintf(v, sizeof(v), "%llu", (unsigned long long)u->cpu_weight);
		if ((r = write_word(cg, "cpu.weight", v)) < 0)
			return err_setsys(r, "set cpu.weight to %s in %s", v, cg);
	}
	if (u->cpuset_cpus && *u->cpuset_cpus && (r = write_word(cg, "cpuset.cpus", u->cpuset_cpus)) < 0)
		return err_setsys(r, "set cpuset.cpus to \"%s\" in %s", u->cpuset_cpus, cg);
	return 0;
}

/* cgroup.events' "frozen" value, or a negative errno. */
static int read_frozen(int fd)
{
	char buf[256], *p;
	ssize_t n;

	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, "frozen ", 7) == 0)
			return p[7] == '1';
	return -ENOENT;
}

int gi_cgroup_freeze(const char *cg, bool frozen, int timeout_ms)
{
	const char *verb = frozen ? "freeze" : "thaw";
	_cleanup_close_ int fd = -1;
	struct timespec t0, now;
	char path[512];
	int r, waited = 0;

	if (!cg)
		return err_set(-ENOTSUP, "%s: the container has no cgroup", verb);
	if (access(cg, F_OK) < 0)
		return err_setsys(-errno, "%s %s", verb, cg);
	r = write_word(cg, "cgroup.freeze", frozen ? "1" : "0");
	if (r == -ENOENT)
		return err_set(-ENOTSUP, "%s %s: the kernel has no cgroup.freeze (Linux 5.2 and later have)", verb, cg);
	if (r < 0)
		return err_setsys(r, "%s %s: write cgroup.freeze", verb, cg);
	snprintf(path, sizeof(path), "%s/cgroup.events", cg);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_setsys(-errno, "%s %s: open cgroup.events", verb, cg);
	/* The kernel flags cgroup.events (POLLPRI) when "frozen" changes;
	 * looked at every 10 ms too, as runc does. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((r = read_frozen(fd)) >= 0 && r != (int)frozen && waited < timeout_ms) {
		struct pollfd p = {.fd = fd, .events = POLLPRI};

		poll(&p, 1, 10);
		clock_gettime(CLOCK_MONOTONIC, &now);
		waited = (int)((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000);
	}
	if (r < 0)
		return err_setsys(r, "%s %s: read cgroup.events", verb, cg);
	if (r == (int)frozen)
		return 0;
	if (frozen)
		(void)write_word(cg, "cgroup.freeze", "0");
	return err_set(-ETIMEDOUT, "%s %s: cgroup.events did not say frozen %d within %d ms", verb, cg, frozen,
	               timeout_ms);
}

/* memory.events: "oom N" and "oom_kill N" among other lines. */
int gi_oom_read(int fd, struct proto_oom *ret)
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

int gi_oom_open(const char *cg, struct proto_oom *ret)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/memory.events", cg);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && gi_oom_read(fd, ret) < 0) {
		close(fd);
		fd = -1;
	}
	return fd < 0 ? -1 : fd;
}

void gi_cgroup_init(const char *root, const char *dir)
{
	_cleanup_free_ char *ctl = NULL;
	char path[512], word[64];
	int fd;

	snprintf(path, sizeof(path), "%s/cgroup.controllers", root);
	if (read_file_all(path, 4096, &ctl, NULL) < 0)
		return;
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", root);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	/* One at a time: one the kernel refuses must not stop the rest. */
	for (char *p = ctl, *save = NULL, *w; (w = strtok_r(p, " \n", &save)); p = NULL) {
		int n = snprintf(word, sizeof(word), "+%s", w);

		if (n > 0 && (size_t)n < sizeof(word))
			(void)!write(fd, word, (size_t)n);
	}
	close(fd);
	mkdir(dir, 0755);
}

int gi_cgroup_apply(const char *cg, const struct proto_start *s)
{
	for (size_t i = 0; i < s->n_cgroup; i++) {
		const struct proto_cgroup_set *c = &s->cgroup[i];
		const char *field = c->field ? c->field : "linux.resources";
		char path[512];
		int fd, r = 0;

		if (!c->file || !c->value || !*c->file || strchr(c->file, '/') || c->file[0] == '.')
			return err_set(-EINVAL, "%s: bad cgroup file name", field);
		if (!cg)
			return err_set(-ENOTSUP, "%s: the container has no cgroup", field);
		snprintf(path, sizeof(path), "%s/%s", cg, c->file);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, c->value, strlen(c->value)) < 0)
			r = -errno;
		if (fd >= 0)
			close(fd);
		if (r == -ENOENT && c->optional)
			continue;
		if (r < 0)
			return err_setsys(r, "%s: set %s to %s in the container's cgroup", field, c->file, c->value);
	}
	return 0;
}

int gi_cgroup_signal(const char *cg, int signo)
{
	_cleanup_fclose_ FILE *f = NULL;
	char path[512];
	int pid, n = 0;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fscanf(f, "%d", &pid) == 1)
		if (pid > 0 && kill(pid, signo) == 0)
			n++;
	return n;
}

/* cgroup.kill (Linux 5.14) kills at once what forks meanwhile too. */
static void cgroup_kill(const char *cg)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/cgroup.kill", cg);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0 && write(fd, "1", 1) == 1) {
		close(fd);
		return;
	}
	if (fd >= 0)
		close(fd);
	gi_cgroup_signal(cg, SIGKILL);
}

int gi_cgroup_remove(const char *cg, int timeout_ms)
{
	struct timespec ts = {0, 10 * 1000 * 1000};

	for (int waited = 0;; waited += 10) {
		if (rmdir(cg) == 0 || errno == ENOENT)
			return 0;
		if (errno != EBUSY || waited >= timeout_ms)
			return err_setsys(-errno, "remove the cgroup %s", cg);
		cgroup_kill(cg);
		nanosleep(&ts, NULL);
	}
}
