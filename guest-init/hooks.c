/* SPDX-License-Identifier: Apache-2.0 */
/*
 * createContainer and startContainer hooks. In a VM the runtime namespace
 * (the host) has no way to run a program in the guest, so both kinds run
 * inside the container: after its mounts (createContainer) and just before
 * the exec (startContainer), with the OCI state on stdin, as runc gives it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "guest-init/guest-init.h"

static int wait_hook(pid_t pid, const struct proto_hook *h, int *ret_status)
{
	struct timespec tick = {0, 10 * 1000 * 1000};
	long left = h->has_timeout ? (long)h->timeout * 100 : -1;

	for (;;) {
		pid_t r = waitpid(pid, ret_status, h->has_timeout ? WNOHANG : 0);

		if (r == pid)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r == 0 && left-- == 0) {
			kill(pid, SIGKILL);
			waitpid(pid, ret_status, 0);
			return -ETIMEDOUT;
		}
		if (r == 0)
			nanosleep(&tick, NULL);
	}
}

static int run_hook(const struct proto_hook *h, const char *state)
{
	char *const empty[] = {NULL};
	int pfd[2], status = 0, r;
	pid_t pid;

	if (!h->path)
		return -EINVAL;
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		r = -errno;
		close(pfd[0]);
		close(pfd[1]);
		return r;
	}
	if (pid == 0) {
		char *const *argv = h->args && h->args[0] ? h->args : (char *const[]){h->path, NULL};

		dup2(pfd[0], 0);
		execve(h->path, argv, h->env ? h->env : empty);
		_exit(127);
	}
	close(pfd[0]);
	/* A hook that does not read its stdin must not block us. */
	signal(SIGPIPE, SIG_IGN);
	write_all(pfd[1], state ? state : "", state ? strlen(state) : 0);
	signal(SIGPIPE, SIG_DFL);
	close(pfd[1]);
	r = wait_hook(pid, h, &status);
	if (r < 0)
		return r;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return err_set(-EIO, "exit status %d",
		               WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	return 0;
}

int gi_run_hooks(const struct proto_hook *hooks, size_t n, const char *kind, const char *state)
{
	for (size_t i = 0; i < n; i++) {
		int r;

		err_clear();
		r = run_hook(&hooks[i], state);
		if (r < 0)
			return err_prefix(r, "error running %s hook #%zu", kind, i);
	}
	return 0;
}
