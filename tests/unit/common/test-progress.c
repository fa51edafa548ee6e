/* SPDX-License-Identifier: Apache-2.0 */
/* The progress line: its text, drawn on a terminal (a pty here) only after
 * the work has taken a second and cleared at the end, and nothing at all
 * on a pipe or when turned off. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/progress.h"
#include "tap.h"

static uint64_t half(void *data)
{
	return *(uint64_t *)data / 2;
}

TEST(format)
{
	char buf[256];

	progress_format("root disk image of /r", 5ULL << 20, 10ULL << 20, 61500, buf, sizeof(buf));
	is_str(buf, "kvrun: root disk image of /r: 5 of ~10 MiB (50%), 1:01");
	progress_format("x", 30ULL << 20, 10ULL << 20, 0, buf, sizeof(buf));
	is_str(buf, "kvrun: x: 10 of ~10 MiB (100%), 0:00");
	progress_format("template build: booting the guest", 0, 0, 125000, buf, sizeof(buf));
	is_str(buf, "kvrun: template build: booting the guest, 2:05");
}

/* Run work_ms of "work" with stderr on fd's other end; what came out. */
static char *capture(int out_fd, int read_fd, int work_ms, bool on)
{
	static char got[4096];
	size_t len = 0;
	pid_t pid = fork();

	if (pid == 0) {
		uint64_t total = 10ULL << 20;
		struct progress *p;

		dup2(out_fd, STDERR_FILENO);
		progress_set_enabled(on);
		p = progress_start("work", total, half, &total);
		usleep((useconds_t)work_ms * 1000);
		progress_stop(p);
		_exit(0);
	}
	close(out_fd);
	for (;;) {
		struct pollfd pfd = {read_fd, POLLIN, 0};
		ssize_t n;

		if (poll(&pfd, 1, 5000) <= 0)
			break;
		n = read(read_fd, got + len, sizeof(got) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	waitpid(pid, NULL, 0);
	got[len] = 0;
	close(read_fd);
	return got;
}

TEST(on_a_terminal)
{
	int master, slave;
	char *got;

	if (openpty(&master, &slave, NULL, NULL, NULL) < 0) {
		ok(1, "# SKIP no pty here: %s", strerror(errno));
		return;
	}
	got = capture(slave, master, 1700, true);
	if (!ok(strstr(got, "\rkvrun: work: 5 of ~10 MiB (50%), 0:01\033[K") != NULL, "the line drawn"))
		printf("#   got %zu bytes\n", strlen(got));
	ok(strlen(got) >= 4 && !strcmp(got + strlen(got) - 4, "\r\033[K"), "and cleared at the end");
	if (openpty(&master, &slave, NULL, NULL, NULL) < 0)
		return;
	got = capture(slave, master, 300, true);
	is_str(got, "");
	if (openpty(&master, &slave, NULL, NULL, NULL) < 0)
		return;
	got = capture(slave, master, 1700, false);
	is_str(got, "");
}

TEST(on_a_pipe)
{
	int p[2];

	if (pipe(p) < 0)
		abort();
	is_str(capture(p[1], p[0], 1700, true), "");
}

TAP_MAIN()
