/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The container's processes for `kvrun ps`, read from the guest's /proc
 * (whatever the image holds: no ps program is needed): each process in
 * the pid namespace of the container's init, with what procps's ps -ef,
 * aux and -o show. The host formats them (runtime/cli/ps-table.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/fileio.h"
#include "guest-init/guest-init.h"

/* What /proc/PID/stat and status say of one process, in the guest's
 * root pid namespace numbering (ns_*: the container's). */
struct raw {
	pid_t pid, ppid, pgrp, session, tpgid;
	uint32_t ns_pid, ns_pgid, ns_sid;
	char state;
	long nice, threads;
	unsigned long long utime, stime, start, vsize, rss_pages;
	unsigned tty;
	bool locked;
};

static int read_small(int dir, const char *name, char *buf, size_t size, size_t *ret_len)
{
	_cleanup_close_ int fd = openat(dir, name, O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	ssize_t n;

	if (fd < 0)
		return -errno;
	while (len + 1 < size && (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	if (ret_len)
		*ret_len = len;
	return 0;
}

/* The last number of a "Key:\tn\tn..." line of status (the innermost
 * pid namespace's), 0 when absent. */
static uint32_t status_last(const char *status, const char *key)
{
	const char *p = strstr(status, key), *end;
	unsigned long v = 0;

	if (!p)
		return 0;
	end = strchr(p, '\n');
	for (p += strlen(key); *p && (!end || p < end);) {
		char *e;
		unsigned long x = strtoul(p, &e, 10);

		if (e == p)
			break;
		v = x;
		p = e;
	}
	return (uint32_t)v;
}

static int parse_stat(const char *buf, struct raw *r, char *comm, size_t comm_size)
{
	const char *open = strchr(buf, '('), *close = strrchr(buf, ')');
	int n;

	if (!open || !close || close < open)
		return -EBADMSG;
	snprintf(comm, comm_size, "%.*s", (int)(close - open - 1), open + 1);
	/* After the name: state ppid pgrp session tty_nr tpgid flags minflt
	 * cminflt majflt cmajflt utime stime cutime cstime priority nice
	 * num_threads itrealvalue starttime vsize rss. */
	n = sscanf(close + 2, "%c %d %d %d %u %d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %ld %ld %*d %llu %llu %llu",
	           &r->state, &r->ppid, &r->pgrp, &r->session, &r->tty, &r->tpgid, &r->utime, &r->stime, &r->nice,
	           &r->threads, &r->start, &r->vsize, &r->rss_pages);
	return n == 13 ? 0 : -EBADMSG;
}

/* procps's STAT: the state, then < or N (nice), L (locked pages), s
 * (session leader), l (threads), + (in the terminal's foreground). */
static char *stat_text(const struct raw *r)
{
	char s[8];
	size_t n = 0;

	s[n++] = r->state;
	if (r->nice < 0)
		s[n++] = '<';
	else if (r->nice > 0)
		s[n++] = 'N';
	if (r->locked)
		s[n++] = 'L';
	if (r->session == r->pid)
		s[n++] = 's';
	if (r->threads > 1)
		s[n++] = 'l';
	if (r->tpgid > 0 && r->pgrp == r->tpgid)
		s[n++] = '+';
	s[n] = '\0';
	return strdup(s);
}

/* The command line or environment (file), its NULs as separators, cut
 * at PROTO_PS_ARGS_MAX. */
static char **read_strings(int dir, const char *file)
{
	char buf[PROTO_PS_ARGS_MAX + 1];
	size_t len = 0, n = 0;
	char **v;

	if (read_small(dir, file, buf, sizeof(buf), &len) < 0 || len == 0)
		return NULL;
	for (size_t i = 0; i < len; i++)
		n += buf[i] == '\0';
	v = calloc(n + 2, sizeof(char *));
	if (!v)
		return NULL;
	n = 0;
	for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
		if (!(v[n++] = strdup(buf + i)))
			break;
	return v;
}

/* One process, when it is in the pid namespace whose inode is ns. */
static int read_proc(int proc, const char *name, const struct stat *ns, struct raw *r, struct proto_ps_proc *out)
{
	_cleanup_close_ int dir = openat(proc, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char stat[1024], status[4096], comm[64];
	struct stat st;

	if (dir < 0 || fstatat(dir, "ns/pid", &st, 0) < 0 || st.st_ino != ns->st_ino || st.st_dev != ns->st_dev)
		return -ESRCH;
	if (read_small(dir, "stat", stat, sizeof(stat), NULL) < 0 || parse_stat(stat, r, comm, sizeof(comm)) < 0 ||
	    read_small(dir, "status", status, sizeof(status), NULL) < 0)
		return -ESRCH; /* gone meanwhile */
	r->pid = (pid_t)atoi(name);
	r->ns_pid = status_last(status, "NSpid:");
	r->ns_pgid = status_last(status, "NSpgid:");
	r->ns_sid = status_last(status, "NSsid:");
	r->locked = status_last(status, "VmLck:") > 0;
	*out = (struct proto_ps_proc){
	    .pid = r->ns_pid,
	    .pgid = r->ns_pgid,
	    .sid = r->ns_sid,
	    .tty = r->tty,
	    .nice = (int32_t)r->nice,
	    .threads = (uint32_t)r->threads,
	    .cpu_ticks = r->utime + r->stime,
	    .start_ticks = r->start,
	    .vsize_kb = r->vsize / 1024,
	    .rss_kb = r->rss_pages * (unsigned long long)sysconf(_SC_PAGESIZE) / 1024,
	};
	/* Uid: real effective saved fs: the second is the one ps shows. */
	if (sscanf(strstr(status, "Uid:") ? strstr(status, "Uid:") : "", "Uid: %*u %u", &out->uid) != 1 ||
	    sscanf(strstr(status, "Gid:") ? strstr(status, "Gid:") : "", "Gid: %*u %u", &out->gid) != 1)
		return -EBADMSG;
	out->stat = stat_text(r);
	out->comm = strdup(comm);
	out->args = read_strings(dir, "cmdline");
	out->env = read_strings(dir, "environ");
	if (out->stat && out->comm)
		return 0;
	free(out->stat);
	free(out->comm);
	for (size_t i = 0; out->args && out->args[i]; i++)
		free(out->args[i]);
	for (size_t i = 0; out->env && out->env[i]; i++)
		free(out->env[i]);
	free(out->args);
	free(out->env);
	*out = (struct proto_ps_proc){0};
	return -ENOMEM;
}

/* Parents in the container's numbering: the parent's, when it is one of
 * the container's processes, else 0. */
static void map_parents(const struct raw *raw, struct proto_ps_proc *procs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			if (raw[j].pid == raw[i].ppid)
				procs[i].ppid = raw[j].ns_pid;
}

static void read_clock(struct proto_ps *ps)
{
	char buf[4096], *p;
	unsigned long long sec = 0, cs = 0;

	ps->hz = (uint64_t)sysconf(_SC_CLK_TCK);
	if (read_small(AT_FDCWD, "/proc/stat", buf, sizeof(buf), NULL) == 0 && (p = strstr(buf, "\nbtime ")))
		ps->boot_time = strtoull(p + 7, NULL, 10);
	if (read_small(AT_FDCWD, "/proc/uptime", buf, sizeof(buf), NULL) == 0 &&
	    sscanf(buf, "%llu.%2llu", &sec, &cs) >= 1)
		ps->uptime_cs = sec * 100 + cs;
	if (read_small(AT_FDCWD, "/proc/meminfo", buf, sizeof(buf), NULL) == 0 && (p = strstr(buf, "MemTotal:")))
		ps->mem_total_kb = strtoull(p + 9, NULL, 10);
}

int gi_ps_collect(const char *proc_dir, pid_t init, struct proto_ps *ret)
{
	_cleanup_closedir_ DIR *d = opendir(proc_dir);
	_cleanup_free_ struct raw *raw = calloc(PROTO_PS_MAX_PROCS, sizeof(*raw));
	struct dirent *de;
	struct stat ns;
	char path[64];

	memset(ret, 0, sizeof(*ret));
	snprintf(path, sizeof(path), "%s/%d/ns/pid", proc_dir, (int)init);
	if (!d || !raw)
		return err_setsys(d ? -ENOMEM : -errno, "open %s", proc_dir);
	if (stat(path, &ns) < 0)
		return err_setsys(-errno, "the container's pid namespace (%s)", path);
	ret->procs = calloc(PROTO_PS_MAX_PROCS, sizeof(*ret->procs));
	if (!ret->procs)
		return -ENOMEM;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		if (ret->n_procs == PROTO_PS_MAX_PROCS) {
			ret->truncated = true;
			break;
		}
		if (read_proc(dirfd(d), de->d_name, &ns, &raw[ret->n_procs], &ret->procs[ret->n_procs]) == 0)
			ret->n_procs++;
	}
	map_parents(raw, ret->procs, ret->n_procs);
	read_clock(ret);
	return 0;
}
