/* SPDX-License-Identifier: Apache-2.0 */
/*
 * createContainer and startContainer hooks. In a VM the runtime namespace
 * (the host) has no way to run a program in the guest, so both kinds run
 * inside the container: after its mounts (createContainer) and just before
 * the exec (startContainer), with the OCI state on stdin, as runc gives it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "guest-init/guest-init.h"

/* Output kept for the error message, per stream (as the host's hooks). */
#define HOOK_OUTPUT_MAX 1024
#define HOOK_TICK_MS 10

struct hook_out {
	int fd;
	char buf[HOOK_OUTPUT_MAX + 1];
	size_t len;
};

/* Read what is there into o (beyond HOOK_OUTPUT_MAX it is dropped). */
static void drain(struct hook_out *o)
{
	char tmp[4096];
	ssize_t n;

	while (o->fd >= 0 && (n = read(o->fd, tmp, sizeof(tmp))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				o->fd = -1;
			return;
		}
		for (ssize_t i = 0; i < n && o->len < HOOK_OUTPUT_MAX; i++)
			o->buf[o->len++] = tmp[i];
	}
	o->fd = -1; /* EOF */
}

/* Until the hook exits (its output read meanwhile; a background child
 * that keeps the pipes open is not waited for) or its timeout passes. */
static int wait_hook(pid_t pid, const struct proto_hook *h, struct hook_out out[2], int *ret_status)
{
	long left = h->has_timeout ? (long)h->timeout * (1000 / HOOK_TICK_MS) : -1;

	for (;;) {
		struct pollfd pf[2] = {{.fd = out[0].fd, .events = POLLIN}, {.fd = out[1].fd, .events = POLLIN}};
		pid_t r;

		(void)poll(pf, 2, HOOK_TICK_MS);
		for (int i = 0; i < 2; i++)
			if (pf[i].revents)
				drain(&out[i]);
		r = waitpid(pid, ret_status, WNOHANG);
		if (r == pid) {
			drain(&out[0]);
			drain(&out[1]);
			return 0;
		}
		if (r < 0 && errno != EINTR)
			return -errno;
		if (left >= 0 && left-- == 0) {
			kill(pid, SIGKILL);
			waitpid(pid, ret_status, 0);
			return -ETIMEDOUT;
		}
	}
}

static void trim(struct hook_out *o)
{
	while (o->len && (o->buf[o->len - 1] == '\n' || o->buf[o->len - 1] == '\r'))
		o->len--;
	o->buf[o->len] = '\0';
}

static pid_t fork_hook(const struct proto_hook *h, int in, int out, int err)
{
	char *const empty[] = {NULL};
	pid_t pid = fork();

	if (pid == 0) {
		char *const *argv = h->args && h->args[0] ? h->args : (char *const[]){h->path, NULL};

		if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
			_exit(127);
		execve(h->path, argv, h->env ? h->env : empty);
		dprintf(2, "exec %s: %s", h->path, strerror(errno));
		_exit(127);
	}
	return pid;
}

/* One hook, its output captured for the message, as the host runs its
 * own (runtime/store/hooks.c) and runc reports them: "exit status 1,
 * stdout: ..., stderr: cat: can't open '/x': No such file or directory". */
static int run_hook(const struct proto_hook *h, const char *state)
{
	struct hook_out out[2] = {{.fd = -1}, {.fd = -1}};
	int in[2] = {-1, -1}, o[2] = {-1, -1}, e[2] = {-1, -1}, status = 0, r = 0;
	pid_t pid;

	if (!h->path)
		return -EINVAL;
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(o, O_CLOEXEC | O_NONBLOCK) < 0 || pipe2(e, O_CLOEXEC | O_NONBLOCK) < 0) {
		r = -errno;
		goto out;
	}
	pid = fork_hook(h, in[0], o[1], e[1]);
	if (pid < 0) {
		r = -errno;
		goto out;
	}
	close(in[0]);
	close(o[1]);
	close(e[1]);
	in[0] = o[1] = e[1] = -1;
	/* A hook that does not read its stdin must not block us. */
	signal(SIGPIPE, SIG_IGN);
	write_all(in[1], state ? state : "", state ? strlen(state) : 0);
	signal(SIGPIPE, SIG_DFL);
	close(in[1]);
	in[1] = -1;
	out[0].fd = o[0];
	out[1].fd = e[0];
	r = wait_hook(pid, h, out, &status);
	trim(&out[0]);
	trim(&out[1]);
	if (r == -ETIMEDOUT)
		r = err_set(r, "timeout after %u seconds", h->timeout);
	else if (r >= 0 && WIFSIGNALED(status))
		r = err_set(-EIO, "signal: %s, stdout: %s, stderr: %s", strsignal(WTERMSIG(status)), out[0].buf,
		            out[1].buf);
	else if (r >= 0 && WEXITSTATUS(status))
		r = err_set(-EIO, "exit status %d, stdout: %s, stderr: %s", WEXITSTATUS(status), out[0].buf,
		            out[1].buf);
out:
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (o[i] >= 0)
			close(o[i]);
		if (e[i] >= 0)
			close(e[i]);
	}
	return r;
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
