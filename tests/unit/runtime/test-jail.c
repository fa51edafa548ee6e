/* SPDX-License-Identifier: Apache-2.0 */
/* The monitor's sandbox (runtime/jail.c), applied in a forked child: what
 * /proc says of it, what it still allows, and that what it refuses fails
 * with EPERM instead of killing. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/jail.h"
#include "tap.h"

/* A /proc/self/status field, as text ("" when missing). */
static void status_field(const char *key, char *buf, size_t size)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	size_t n = strlen(key);

	buf[0] = 0;
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, key, n) == 0 && line[n] == ':') {
			snprintf(buf, size, "%s", line + n + 1 + strspn(line + n + 1, " \t"));
			buf[strcspn(buf, "\n")] = 0;
		}
	if (f)
		fclose(f);
}

static void *thread_fn(void *arg)
{
	return arg;
}

/* Runs in the jailed child: one "name=value" line per check. */
static void report(FILE *out, enum jail_profile p)
{
	char v[128];
	int fd, r;
	pthread_t t;
	void *res = NULL;

	r = jail_enter(p);
	fprintf(out, "enter=%d\n", r);
	status_field("Seccomp", v, sizeof(v));
	fprintf(out, "seccomp=%s\n", v);
	status_field("NoNewPrivs", v, sizeof(v));
	fprintf(out, "nnp=%s\n", v);
	status_field("CapEff", v, sizeof(v));
	fprintf(out, "capeff=%s\n", v);
	status_field("CapBnd", v, sizeof(v));
	fprintf(out, "capbnd=%s\n", v);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	fprintf(out, "unix=%d\n", fd >= 0 ? 0 : -errno);
	if (fd >= 0)
		close(fd);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	fprintf(out, "inet=%d\n", fd >= 0 ? 0 : -errno);
	fd = open("/tmp/kvrun-jail-test-write", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	fprintf(out, "create=%d\n", fd >= 0 ? 0 : -errno);
	r = pthread_create(&t, NULL, thread_fn, (void *)1);
	if (r == 0)
		pthread_join(t, &res);
	fprintf(out, "thread=%d\n", r == 0 && res == (void *)1 ? 0 : -r);
	r = (int)fork();
	if (r == 0)
		_exit(0);
	fprintf(out, "fork=%d\n", r > 0 ? 0 : -errno);
	fprintf(out, "exec=%d\n", execl("/bin/true", "true", (char *)NULL) < 0 ? -errno : 0);
	res = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	fprintf(out, "mmap_exec=%d\n", res != MAP_FAILED ? 0 : -errno);
	fflush(out);
}

static char *run_child(enum jail_profile p, int *ret_status)
{
	static char buf[4096];
	int pfd[2];
	size_t len = 0;
	ssize_t n;
	pid_t pid;

	if (pipe(pfd) < 0)
		return NULL;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		FILE *out = fdopen(pfd[1], "w");

		close(pfd[0]);
		report(out, p);
		_exit(0);
	}
	close(pfd[1]);
	while (len < sizeof(buf) - 1 && (n = read(pfd[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = 0;
	close(pfd[0]);
	waitpid(pid, ret_status, 0);
	return buf;
}

static const char *value(const char *out, const char *key)
{
	static char v[128];
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "%s=", key);
	for (p = out; (p = strstr(p, pat)); p++)
		if (p == out || p[-1] == '\n') {
			p += strlen(pat);
			snprintf(v, sizeof(v), "%.*s", (int)strcspn(p, "\n"), p);
			return v;
		}
	return "(missing)";
}

static void check_profile(enum jail_profile p, const char *name)
{
	int status = -1;
	char *out = run_child(p, &status);

	ok(out && WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: the jailed child ran to its end (status 0x%x)",
	   name, status);
	if (!out)
		return;
	is_str(value(out, "enter"), "0");
	is_str(value(out, "seccomp"), "2");
	is_str(value(out, "nnp"), "1");
	is_str(value(out, "capeff"), "0000000000000000");
	if (geteuid() == 0)
		is_str(value(out, "capbnd"), "0000000000000000");
	is_str(value(out, "unix"), "0");
	is_str(value(out, "thread"), "0");
	is_str(value(out, "inet"), "-1"); /* -EPERM */
	is_str(value(out, "create"), "-1");
	is_str(value(out, "fork"), "-1");
	is_str(value(out, "exec"), "-1");
	is_str(value(out, "mmap_exec"), "-1");
}

TEST(proxy_profile)
{
	check_profile(JAIL_PROXY, "proxy");
}

TEST(monitor_profile)
{
	check_profile(JAIL_MONITOR, "monitor");
}

TEST(switch)
{
	unsetenv("KVRUN_JAIL");
	ok(jail_enabled(), "on by default");
	setenv("KVRUN_JAIL", "0", 1);
	ok(!jail_enabled(), "KVRUN_JAIL=0 turns it off");
	setenv("KVRUN_JAIL", "off", 1);
	ok(!jail_enabled(), "KVRUN_JAIL=off turns it off");
	setenv("KVRUN_JAIL", "1", 1);
	ok(jail_enabled(), "KVRUN_JAIL=1 keeps it on");
	unsetenv("KVRUN_JAIL");
}

TAP_MAIN()
