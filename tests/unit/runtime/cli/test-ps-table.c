/* SPDX-License-Identifier: Apache-2.0 */
/* kvrun ps's table: procps's columns for the guest's process list. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "common/error.h"
#include "runtime/cli/ps-table.h"
#include "tap.h"

/* 2024-01-02T03:04:05Z; the guest booted an hour before. */
#define T0 ((time_t)1704164645)

static char *strv[3][4] = {{"sleep", "1000", NULL}, {"/bin/sh", "-c", "sleep 5", NULL}, {"HOME=/", "A=b", NULL}};

static struct proto_ps_proc procs[] = {
    /* Listed out of order: the table is sorted by pid. */
    {.pid = 7,
     .ppid = 1,
     .pgid = 7,
     .sid = 1,
     .uid = 12345,
     .gid = 12345,
     .stat = "S+",
     .comm = "sh",
     .args = strv[1],
     .start_ticks = 100 * 3000,
     .vsize_kb = 2268,
     .rss_kb = 1024,
     .threads = 1},
    {.pid = 1,
     .ppid = 0,
     .pgid = 1,
     .sid = 1,
     .uid = 0,
     .gid = 0,
     .stat = "Ss",
     .comm = "sleep",
     .args = strv[0],
     .cpu_ticks = 100 * 354,
     .start_ticks = 100 * 60,
     .vsize_kb = 1200,
     .rss_kb = 600,
     .threads = 1,
     .env = strv[2]},
    {.pid = 9,
     .ppid = 1,
     .pgid = 1,
     .sid = 1,
     .uid = 0,
     .gid = 0,
     .stat = "Z",
     .comm = "true",
     .start_ticks = 100 * 60,
     .threads = 1},
};

static struct proto_ps ps = {
    .procs = procs,
    .n_procs = 3,
    .hz = 100,
    .boot_time = T0 - 3600,
    .uptime_cs = 3600 * 100,
    .mem_total_kb = 262144,
};

/* ps's output for the options in args (a space-separated line), or the
 * error message. */
static const char *table(const char *line)
{
	static char out[4096];
	char copy[256], *args[16], *save = NULL, *buf = NULL;
	struct ps_format *f = NULL;
	size_t len = 0;
	int n = 0, r;
	FILE *mem;

	snprintf(copy, sizeof(copy), "%s", line);
	for (char *t = strtok_r(copy, " ", &save); t && n < 16; t = strtok_r(NULL, " ", &save))
		args[n++] = t;
	err_clear();
	r = ps_format_parse(args, n, &f);
	if (r < 0) {
		snprintf(out, sizeof(out), "error: %s", err_msg());
		return out;
	}
	mem = open_memstream(&buf, &len);
	r = ps_table_print(f, &ps, T0, mem);
	fclose(mem);
	snprintf(out, sizeof(out), "%s", r < 0 ? "print failed" : buf);
	free(buf);
	ps_format_free(f);
	return out;
}

TEST(default_is_ef)
{
	static const char want[] = "UID        PID  PPID  C STIME TTY          TIME CMD\n"
				   "root         1     0 10 02:05 ?        00:05:54 sleep 1000\n"
				   "12345        7     1  0 02:54 pts/0    00:00:00 /bin/sh -c sleep 5\n"
				   "root         9     1  0 02:05 ?        00:00:00 [true] <defunct>\n";

	setenv("TZ", "UTC", 1);
	tzset();
	procs[0].tty = makedev(136, 0);
	is_str(table(""), want);
	is_str(table("-ef"), want);
	is_str(table("-e -f"), want);
}

TEST(bsd_formats)
{
	is_str(table("aux"), "USER       PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND\n"
	                     "root         1 10.0  0.2   1200   600 ?        Ss   02:05   5:54 sleep 1000\n"
	                     "12345        7  0.0  0.3   2268  1024 pts/0    S+   02:54   0:00 /bin/sh -c sleep 5\n"
	                     "root         9  0.0  0.0      0     0 ?        Z    02:05   0:00 [true] <defunct>\n");
	/* procps reads a line with -x as BSD options: e is the environment. */
	is_str(table("-e -x"), "  PID TTY      STAT   TIME COMMAND\n"
	                       "    1 ?        Ss     5:54 sleep 1000 HOME=/ A=b\n"
	                       "    7 pts/0    S+     0:00 /bin/sh -c sleep 5\n"
	                       "    9 ?        Z      0:00 [true] <defunct>\n");
	is_str(table("ax"), "  PID TTY      STAT   TIME COMMAND\n"
	                    "    1 ?        Ss     5:54 sleep 1000\n"
	                    "    7 pts/0    S+     0:00 /bin/sh -c sleep 5\n"
	                    "    9 ?        Z      0:00 [true] <defunct>\n");
	is_str(table("-e"), "  PID TTY          TIME CMD\n"
	                    "    1 ?        00:05:54 sleep\n"
	                    "    7 pts/0    00:00:00 sh\n"
	                    "    9 ?        00:00:00 true\n");
	is_str(table("-j"), "  PID  PGID   SID TTY          TIME CMD\n"
	                    "    1     1     1 ?        00:05:54 sleep\n"
	                    "    7     7     1 pts/0    00:00:00 sh\n"
	                    "    9     1     1 ?        00:00:00 true\n");
}

TEST(custom_formats)
{
	is_str(table("-o pid,comm"), "  PID COMMAND\n    1 sleep\n    7 sh\n    9 true\n");
	is_str(table("-eo pid,stat,cmd"), "  PID STAT CMD\n    1 Ss   sleep 1000\n    7 S+   /bin/sh -c sleep 5\n"
	                                  "    9 Z    [true] <defunct>\n");
	is_str(table("-o pid,ppid,user,args"), "  PID  PPID USER     COMMAND\n"
	                                       "    1     0 root     sleep 1000\n"
	                                       "    7     1 12345    /bin/sh -c sleep 5\n"
	                                       "    9     1 root     [true] <defunct>\n");
	/* Text that is not the last column is cut to its width; several -o
	 * add up; key=header renames. */
	is_str(table("-o args -o pid=PID,etime"), "COMMAND                       PID     ELAPSED\n"
	                                          "sleep 1000                      1       59:00\n"
	                                          "/bin/sh -c sleep 5              7       10:00\n"
	                                          "[true] <defunct>                9       59:00\n");
	is_str(table("--format=pid,vsz,rss,nlwp,ni,uid,gid"), "  PID    VSZ   RSS NLWP  NI   UID   GID\n"
	                                                      "    1   1200   600    1   0     0     0\n"
	                                                      "    7   2268  1024    1   0 12345 12345\n"
	                                                      "    9      0     0    1   0     0     0\n");
}

TEST(refused)
{
	/* runc finds the container's lines by ps's PID column. */
	is_str(table("-o comm"), "error: couldn't find PID field in ps output");
	is_str(table("-o pid=PROC"), "error: couldn't find PID field in ps output");
	is_str(table("-e --no-headers"), "error: couldn't find PID field in ps output");
	is_str(table("aux h"), "error: couldn't find PID field in ps output");
	ok(strstr(table("-p 1"), "ps option -p is not supported") != NULL, "-p refused: %s", table("-p 1"));
	ok(strstr(table("-eL"), "ps option -L is not supported") != NULL, "-L refused");
	ok(strstr(table("axjf"), "ps option j is not supported") != NULL, "BSD j refused");
	ok(strstr(table("--forest"), "ps option --forest is not supported") != NULL, "--forest refused");
	ok(strstr(table("-o pid,wchan"), "keyword \"wchan\" is not supported") != NULL, "unknown keyword named");
	ok(strstr(table("-o"), "needs a format list") != NULL, "-o without a list");
}

TEST(start_dates)
{
	struct proto_ps old = ps;

	/* Booted three days before, in the year before. */
	old.boot_time = T0 - 3 * 86400;
	old.uptime_cs = 3 * 86400 * 100;
	ok(strstr(table("-ef"), " 2023 ") == NULL, "today's processes show the time of day");
	ps = old;
	ok(strstr(table("-o pid,stime,etime"), "    1  2023  2-23:59:00\n") != NULL,
	   "another year: the year; "
	   "elapsed days: %s",
	   table("-o pid,stime,etime"));
	ps.boot_time = T0 - 3600;
	ps.uptime_cs = 3600 * 100;
}

TEST(keywords_listed)
{
	const char *const *k = ps_table_keywords();
	bool pid = false, uid_hack = false;

	for (; *k; k++) {
		pid |= strcmp(*k, "pid") == 0;
		uid_hack |= (*k)[0] == '(';
	}
	ok(pid && !uid_hack, "the keywords: pid among them, the internal -f column not");
}

TAP_MAIN()
