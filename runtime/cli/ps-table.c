/* SPDX-License-Identifier: Apache-2.0 */
/* The container's processes as procps prints them (ps-table.h). */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "runtime/cli/ps-table.h"

#define MAX_COLS 64

enum field {
	F_PID,
	F_PPID,
	F_PGID,
	F_SID,
	F_UID,
	F_USER,
	F_UIDHACK,
	F_GID,
	F_GROUP,
	F_COMM,
	F_ARGS,
	F_STAT,
	F_STATE,
	F_TTY,
	F_TIME,
	F_BSDTIME,
	F_ETIME,
	F_STIME,
	F_START,
	F_BSDSTART,
	F_PCPU,
	F_C,
	F_PMEM,
	F_VSZ,
	F_RSS,
	F_NLWP,
	F_NI,
};

/* procps's keyword, header and width (its output.c), right-aligned or not. */
struct keyword {
	const char *key, *header;
	int width;
	bool left;
	enum field field;
};

static const struct keyword keywords[] = {
    {"pid", "PID", 5, false, F_PID},
    {"ppid", "PPID", 5, false, F_PPID},
    {"pgid", "PGID", 5, false, F_PGID},
    {"pgrp", "PGRP", 5, false, F_PGID},
    {"sid", "SID", 5, false, F_SID},
    {"sess", "SESS", 5, false, F_SID},
    {"session", "SESS", 5, false, F_SID},
    {"uid", "UID", 5, false, F_UID},
    {"euid", "EUID", 5, false, F_UID},
    {"user", "USER", 8, true, F_USER},
    {"euser", "EUSER", 8, true, F_USER},
    {"uname", "USER", 8, true, F_USER},
    {"gid", "GID", 5, false, F_GID},
    {"egid", "EGID", 5, false, F_GID},
    {"group", "GROUP", 8, true, F_GROUP},
    {"egroup", "EGROUP", 8, true, F_GROUP},
    {"comm", "COMMAND", 15, true, F_COMM},
    {"ucomm", "COMMAND", 15, true, F_COMM},
    {"ucmd", "CMD", 15, true, F_COMM},
    {"args", "COMMAND", 27, true, F_ARGS},
    {"cmd", "CMD", 27, true, F_ARGS},
    {"command", "COMMAND", 27, true, F_ARGS},
    {"stat", "STAT", 4, true, F_STAT},
    {"s", "S", 1, true, F_STATE},
    {"state", "S", 1, true, F_STATE},
    {"tty", "TT", 8, true, F_TTY},
    {"tt", "TT", 8, true, F_TTY},
    {"tname", "TTY", 8, true, F_TTY},
    {"time", "TIME", 8, false, F_TIME},
    {"cputime", "TIME", 8, false, F_TIME},
    {"bsdtime", "TIME", 6, false, F_BSDTIME},
    {"etime", "ELAPSED", 11, false, F_ETIME},
    {"stime", "STIME", 5, false, F_STIME},
    {"start_time", "START", 5, false, F_STIME},
    {"start", "STARTED", 8, false, F_START},
    {"bsdstart", "START", 6, false, F_BSDSTART},
    {"pcpu", "%CPU", 4, false, F_PCPU},
    {"%cpu", "%CPU", 4, false, F_PCPU},
    {"c", "C", 2, false, F_C},
    {"pmem", "%MEM", 4, false, F_PMEM},
    {"%mem", "%MEM", 4, false, F_PMEM},
    {"vsz", "VSZ", 6, false, F_VSZ},
    {"vsize", "VSZ", 6, false, F_VSZ},
    {"rss", "RSS", 5, false, F_RSS},
    {"rssize", "RSS", 5, false, F_RSS},
    {"rsz", "RSZ", 5, false, F_RSS},
    {"nlwp", "NLWP", 4, false, F_NLWP},
    {"thcount", "THCNT", 5, false, F_NLWP},
    {"ni", "NI", 3, false, F_NI},
    {"nice", "NI", 3, false, F_NI},
    /* Not -o keywords: -f's user column (a long name as its number). */
    {"(uid_hack)", "UID", 8, true, F_UIDHACK},
};

struct column {
	const struct keyword *k;
	char *header; /* "key=header", or NULL for the keyword's */
};

struct ps_format {
	struct column cols[MAX_COLS];
	int n;
	bool no_header;
	bool env; /* BSD e: the environment after the command line */
};

static const char *const formats[] = {
    /* What procps prints for each kind of option (its "default" formats). */
    [0] = "pid,tname,time,ucmd", /* -e */
    [1] = "(uid_hack),pid,ppid,c,stime,tname,time,cmd", /* -f */
    [2] = "pid,pgid,sid,tname,time,ucmd", /* -j */
    [3] = "pid,tname,stat,bsdtime,args", /* BSD: x, a */
    [4] = "user,pid,pcpu,pmem,vsz,rss,tname,stat,start_time,bsdtime,args", /* BSD u */
};

const char *const *ps_table_keywords(void)
{
	static const char *names[ARRAY_SIZE(keywords)];

	for (size_t i = 0, n = 0; i < ARRAY_SIZE(keywords); i++)
		if (keywords[i].key[0] != '(')
			names[n++] = keywords[i].key;
	return names;
}

/* Append the columns of a comma- or space-separated list. */
static int add_columns(struct ps_format *f, const char *list)
{
	_cleanup_free_ char *copy = strdup(list);
	char *save = NULL;

	if (!copy)
		return -ENOMEM;
	for (char *tok = strtok_r(copy, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		char *eq = strchr(tok, '=');
		const struct keyword *k = NULL;

		if (eq)
			*eq = '\0';
		for (size_t i = 0; i < ARRAY_SIZE(keywords) && !k; i++)
			if (strcmp(keywords[i].key, tok) == 0)
				k = &keywords[i];
		if (!k)
			return err_set(-EINVAL,
			               "ps format keyword \"%s\" is not supported (kvrun ps knows: pid, ppid, "
			               "pgid, sid, uid, user, gid, group, comm, args, cmd, stat, s, tty, "
			               "time, etime, stime, start, pcpu, c, pmem, vsz, rss, nlwp, ni and "
			               "their procps aliases)",
			               tok);
		if (f->n == MAX_COLS)
			return err_set(-EINVAL, "too many ps columns (at most %d)", MAX_COLS);
		f->cols[f->n].k = k;
		if (eq && !(f->cols[f->n].header = strdup(eq + 1)))
			return -ENOMEM;
		f->n++;
	}
	return 0;
}

void ps_format_free(struct ps_format *f)
{
	for (int i = 0; f && i < f->n; i++)
		free(f->cols[i].header);
	free(f);
}

/* What the options asked for, before the format is built. */
struct ps_opts {
	bool full, jobs, bsd, user, env;
	const char *custom[16];
	int n_custom;
};

static int refuse(const char *opt, char c)
{
	return err_set(-EINVAL,
	               "ps option %s%c is not supported: kvrun ps shows every process of the container, in the "
	               "formats -f, -j, u or -o (docs/runtime.md)",
	               opt, c);
}

/* One option letter; *ret_arg says it takes the rest of the token or the
 * next argument (-o, o). */
static int option_letter(struct ps_opts *o, bool bsd, char c, bool *ret_arg)
{
	static const char unix_select[] = "eAadN", bsd_select[] = "axg", ignored[] = "w";

	*ret_arg = false;
	if (strchr(ignored, c) || strchr(bsd ? bsd_select : unix_select, c)) {
		o->bsd |= bsd;
		return 0;
	}
	if (bsd && c == 'e') {
		o->env = true;
		return 0;
	}
	if (c == 'o') {
		*ret_arg = true;
		return 0;
	}
	if (!bsd && c == 'f')
		o->full = true;
	else if (!bsd && c == 'j')
		o->jobs = true;
	else if (bsd && c == 'u')
		o->user = o->bsd = true;
	else
		return refuse(bsd ? "" : "-", c);
	return 0;
}

/* procps reads a command line with a "-x" as BSD options throughout
 * ("-e -x" is e and x: the environment, every process of the user). */
static bool bsd_throughout(char *const *args, int nargs)
{
	for (int i = 0; i < nargs; i++)
		if (args[i][0] == '-' && args[i][1] != '-' && strchr(args[i], 'x'))
			return true;
	return false;
}

static int parse_args(char *const *args, int nargs, struct ps_opts *o, bool *ret_no_header)
{
	bool all_bsd = bsd_throughout(args, nargs);

	for (int i = 0; i < nargs; i++) {
		const char *a = args[i];
		bool bsd = a[0] != '-' || (all_bsd && a[1] != '-'), takes = false;

		if (strcmp(a, "--no-headers") == 0 || strcmp(a, "--no-heading") == 0) {
			*ret_no_header = true;
			continue;
		}
		if (strncmp(a, "--format", 8) == 0 && (a[8] == '=' || a[8] == '\0')) {
			const char *v = a[8] == '=' ? a + 9 : (i + 1 < nargs ? args[++i] : NULL);

			if (!v || o->n_custom == (int)ARRAY_SIZE(o->custom))
				return err_set(-EINVAL, "ps option --format needs a format list");
			o->custom[o->n_custom++] = v;
			continue;
		}
		if (a[0] == '-' && a[1] == '-')
			return err_set(-EINVAL, "ps option %s is not supported (docs/runtime.md)", a);
		if (!*a || (a[0] == '-' && !a[1]))
			return err_set(-EINVAL, "ps option \"%s\" is not one", a);
		for (const char *c = a + (a[0] == '-'); *c; c++) {
			int r = bsd && *c == 'h' ? 0 : option_letter(o, bsd, *c, &takes);

			if (bsd && *c == 'h')
				*ret_no_header = true;
			if (r < 0)
				return r;
			if (!takes)
				continue;
			if (o->n_custom == (int)ARRAY_SIZE(o->custom))
				return err_set(-EINVAL, "too many ps format lists");
			o->custom[o->n_custom] = c[1] ? c + 1 : (i + 1 < nargs ? args[++i] : NULL);
			if (!o->custom[o->n_custom++])
				return err_set(-EINVAL, "ps option %so needs a format list", bsd ? "" : "-");
			break;
		}
	}
	return 0;
}

int ps_format_parse(char *const *args, int nargs, struct ps_format **ret)
{
	static char *const dflt[] = {"-ef"};
	struct ps_format *f = calloc(1, sizeof(*f));
	struct ps_opts o = {0};
	int r;

	if (!f)
		return -ENOMEM;
	if (nargs == 0)
		args = dflt, nargs = 1;
	r = parse_args(args, nargs, &o, &f->no_header);
	f->env = o.env;
	for (int i = 0; r >= 0 && i < o.n_custom; i++)
		r = add_columns(f, o.custom[i]);
	if (r >= 0 && !o.n_custom)
		r = add_columns(f, formats[o.user ? 4 : o.full ? 1 : o.jobs ? 2 : o.bsd ? 3 : 0]);
	/* runc finds the container's rows by the PID column of ps's header:
	 * without one its ps fails, and so does this. */
	for (int i = 0; r >= 0; i++) {
		if (i == f->n || f->no_header) {
			r = err_set(-EINVAL, "couldn't find PID field in ps output");
			break;
		}
		if (strcmp(f->cols[i].header ? f->cols[i].header : f->cols[i].k->header, "PID") == 0)
			break;
	}
	if (r < 0) {
		ps_format_free(f);
		return r;
	}
	*ret = f;
	return 0;
}

/* ---- the table ------------------------------------------------------ */

/* What the figures are measured against. */
struct clock {
	time_t now;
	uint64_t hz, uptime_cs, boot_time, mem_kb;
};

static const char *tty_name(uint32_t tty, char *buf, size_t size)
{
	unsigned maj = major(tty), min = minor(tty);

	if (!tty)
		return "?";
	if (maj >= 136 && maj <= 143)
		snprintf(buf, size, "pts/%u", min + (maj - 136) * 256);
	else if (maj == 4 && min < 64)
		snprintf(buf, size, "tty%u", min);
	else if (maj == 4)
		snprintf(buf, size, "ttyS%u", min - 64);
	else if (maj == 5 && min == 1)
		snprintf(buf, size, "console");
	else
		snprintf(buf, size, "?");
	return buf;
}

/* A name wider than the column ends in '+', as procps cuts it. */
static const char *cut_name(const char *name, int width, char *buf, size_t size)
{
	if ((int)strlen(name) <= width)
		return name;
	snprintf(buf, size, "%.*s+", width - 1, name);
	return buf;
}

static const char *user_name(uint32_t uid, int width, bool numeric_if_long, char *buf, size_t size)
{
	struct passwd *pw = getpwuid(uid);

	if (!pw || (numeric_if_long && (int)strlen(pw->pw_name) > width)) {
		snprintf(buf, size, "%u", uid);
		return buf;
	}
	return cut_name(pw->pw_name, width, buf, size);
}

static const char *group_name(uint32_t gid, int width, char *buf, size_t size)
{
	struct group *gr = getgrgid(gid);

	if (!gr) {
		snprintf(buf, size, "%u", gid);
		return buf;
	}
	return cut_name(gr->gr_name, width, buf, size);
}

/* args joined by spaces; "[comm]" when there are none (a kernel thread,
 * a zombie's), with " <defunct>" for a zombie. */
static void args_text(const struct proto_ps_proc *p, bool env, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; p->args && p->args[i] && n + 1 < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? " " : "", p->args[i]);
	for (size_t i = 0; env && p->args && p->args[0] && p->env && p->env[i] && n + 1 < size; i++)
		n += (size_t)snprintf(buf + n, size - n, " %s", p->env[i]);
	if (!p->args || !p->args[0])
		snprintf(buf, size, "[%s]%s", p->comm ? p->comm : "", p->stat && p->stat[0] == 'Z' ? " <defunct>" : "");
}

static void cpu_time(uint64_t secs, bool bsd, char *buf, size_t size)
{
	if (bsd)
		snprintf(buf, size, "%llu:%02llu", (unsigned long long)(secs / 60), (unsigned long long)(secs % 60));
	else if (secs >= 86400)
		snprintf(buf, size, "%llu-%02llu:%02llu:%02llu", (unsigned long long)(secs / 86400),
		         (unsigned long long)(secs / 3600 % 24), (unsigned long long)(secs / 60 % 60),
		         (unsigned long long)(secs % 60));
	else
		snprintf(buf, size, "%02llu:%02llu:%02llu", (unsigned long long)(secs / 3600),
		         (unsigned long long)(secs / 60 % 60), (unsigned long long)(secs % 60));
}

static void elapsed(uint64_t secs, char *buf, size_t size)
{
	unsigned long long d = secs / 86400, h = secs / 3600 % 24, m = secs / 60 % 60, s = secs % 60;

	if (d)
		snprintf(buf, size, "%llu-%02llu:%02llu:%02llu", d, h, m, s);
	else if (h)
		snprintf(buf, size, "%02llu:%02llu:%02llu", h, m, s);
	else
		snprintf(buf, size, "%02llu:%02llu", m, s);
}

/* Start times as procps shows them: the time of day for today's, else
 * the date (start_time: "Dec01", or the year if another one). */
static void start_text(time_t start, const struct clock *c, enum field f, char *buf, size_t size)
{
	struct tm them, us;
	bool recent = c->now - start < 24 * 3600;

	localtime_r(&start, &them);
	localtime_r(&c->now, &us);
	if (f == F_STIME && them.tm_year != us.tm_year)
		strftime(buf, size, "%Y", &them);
	else if (f == F_STIME && them.tm_yday != us.tm_yday)
		strftime(buf, size, "%b%d", &them);
	else if (f == F_STIME)
		strftime(buf, size, "%H:%M", &them);
	else if (f == F_START)
		strftime(buf, size, recent ? "%H:%M:%S" : "%b %d", &them);
	else
		strftime(buf, size, recent ? " %H:%M" : "%b%d", &them);
}

/* The process's cpu share in tenths of a percent, or its memory's. */
static unsigned long long pcpu_tenths(const struct proto_ps_proc *p, const struct clock *c)
{
	unsigned long long up = c->uptime_cs / 100, started = c->hz ? p->start_ticks / c->hz : 0;
	unsigned long long secs = up > started ? up - started : 0, v;

	if (!secs || !c->hz)
		return 0;
	v = p->cpu_ticks * 1000 / c->hz / secs;
	return v > 999 ? 999 : v;
}

static void value(const struct ps_format *f, const struct proto_ps_proc *p, const struct keyword *k,
                  const struct clock *c, char *buf, size_t size)
{
	char tmp[64];
	unsigned long long v, start = c->boot_time + (c->hz ? p->start_ticks / c->hz : 0);
	unsigned long long up = c->uptime_cs / 100, started = c->hz ? p->start_ticks / c->hz : 0;

	switch (k->field) {
	case F_PID:
		snprintf(buf, size, "%u", p->pid);
		break;
	case F_PPID:
		snprintf(buf, size, "%u", p->ppid);
		break;
	case F_PGID:
		snprintf(buf, size, "%u", p->pgid);
		break;
	case F_SID:
		snprintf(buf, size, "%u", p->sid);
		break;
	case F_UID:
		snprintf(buf, size, "%u", p->uid);
		break;
	case F_GID:
		snprintf(buf, size, "%u", p->gid);
		break;
	case F_USER:
		snprintf(buf, size, "%s", user_name(p->uid, k->width, false, tmp, sizeof(tmp)));
		break;
	case F_UIDHACK:
		snprintf(buf, size, "%s", user_name(p->uid, k->width, true, tmp, sizeof(tmp)));
		break;
	case F_GROUP:
		snprintf(buf, size, "%s", group_name(p->gid, k->width, tmp, sizeof(tmp)));
		break;
	case F_COMM:
		snprintf(buf, size, "%s", p->comm ? p->comm : "");
		break;
	case F_ARGS:
		args_text(p, f->env, buf, size);
		break;
	case F_STAT:
		snprintf(buf, size, "%s", p->stat ? p->stat : "?");
		break;
	case F_STATE:
		snprintf(buf, size, "%c", p->stat && p->stat[0] ? p->stat[0] : '?');
		break;
	case F_TTY:
		snprintf(buf, size, "%s", tty_name(p->tty, tmp, sizeof(tmp)));
		break;
	case F_TIME:
		cpu_time(c->hz ? p->cpu_ticks / c->hz : 0, false, buf, size);
		break;
	case F_BSDTIME:
		cpu_time(c->hz ? p->cpu_ticks / c->hz : 0, true, buf, size);
		break;
	case F_ETIME:
		elapsed(up > started ? up - started : 0, buf, size);
		break;
	case F_STIME:
	case F_START:
	case F_BSDSTART:
		start_text((time_t)start, c, k->field, buf, size);
		break;
	case F_PCPU:
		v = pcpu_tenths(p, c), snprintf(buf, size, "%llu.%llu", v / 10, v % 10);
		break;
	case F_C:
		v = pcpu_tenths(p, c) / 10, snprintf(buf, size, "%llu", v > 99 ? 99 : v);
		break;
	case F_PMEM:
		v = c->mem_kb ? p->rss_kb * 1000 / c->mem_kb : 0;
		v = v > 999 ? 999 : v;
		snprintf(buf, size, "%llu.%llu", v / 10, v % 10);
		break;
	case F_VSZ:
		snprintf(buf, size, "%llu", (unsigned long long)p->vsize_kb);
		break;
	case F_RSS:
		snprintf(buf, size, "%llu", (unsigned long long)p->rss_kb);
		break;
	case F_NLWP:
		snprintf(buf, size, "%u", p->threads);
		break;
	case F_NI:
		snprintf(buf, size, "%d", p->nice);
		break;
	}
}

/* One line: each column in its width (a text column that is not the last
 * cut to it, as procps cuts), separated by a space; the last unpadded. */
static void print_line(const struct ps_format *f, char cells[][PROTO_PS_ARGS_MAX + 64], FILE *out)
{
	for (int i = 0; i < f->n; i++) {
		const struct keyword *k = f->cols[i].k;
		bool last = i == f->n - 1;

		if (i)
			fputc(' ', out);
		if (k->left && last)
			fputs(cells[i], out);
		else if (k->left)
			fprintf(out, "%-*.*s", k->width,
			        k->field == F_ARGS || k->field == F_COMM ? k->width : INT32_MAX, cells[i]);
		else
			fprintf(out, "%*s", k->width, cells[i]);
	}
	fputc('\n', out);
}

static int by_pid(const void *a, const void *b)
{
	uint32_t x = (*(const struct proto_ps_proc *const *)a)->pid, y = (*(const struct proto_ps_proc *const *)b)->pid;

	return x < y ? -1 : x > y;
}

int ps_table_print(const struct ps_format *f, const struct proto_ps *ps, time_t now, FILE *out)
{
	const struct clock c = {now, ps->hz, ps->uptime_cs, ps->boot_time, ps->mem_total_kb};
	_cleanup_free_ const struct proto_ps_proc **order = calloc(ps->n_procs + 1, sizeof(*order));
	_cleanup_free_ char(*cells)[PROTO_PS_ARGS_MAX + 64] = calloc((size_t)f->n + 1, sizeof(*cells));

	if (!order || !cells)
		return -ENOMEM;
	for (int i = 0; i < f->n; i++)
		snprintf(cells[i], sizeof(cells[i]), "%s",
		         f->cols[i].header ? f->cols[i].header : f->cols[i].k->header);
	print_line(f, cells, out);
	for (size_t i = 0; i < ps->n_procs; i++)
		order[i] = &ps->procs[i];
	qsort(order, ps->n_procs, sizeof(*order), by_pid);
	for (size_t i = 0; i < ps->n_procs; i++) {
		for (int j = 0; j < f->n; j++)
			value(f, order[i], f->cols[j].k, &c, cells[j], sizeof(cells[j]));
		print_line(f, cells, out);
	}
	return fflush(out) == 0 ? 0 : err_setsys(-errno, "write");
}
