/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/cleanup.h"
#include "common/error.h"
#include "common/fileio.h"
#include "common/log.h"
#include "runtime/store/hooks.h"
#include "runtime/store/state.h"

/* Output kept for the error message, per stream. */
#define HOOK_OUTPUT_MAX 1024

struct capture {
	int fd;
	char buf[HOOK_OUTPUT_MAX + 1];
	size_t len;
};

static _Noreturn void hook_child(const struct oci_hook *h, int in, int out, int err)
{
	char *argv0[] = {h->path, NULL};
	char *noenv[] = {NULL};
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		_exit(127);
	execve(h->path, h->args && h->args[0] ? h->args : argv0, h->env ? h->env : noenv);
	dprintf(2, "exec %s: %s", h->path, strerror(errno));
	_exit(127);
}

/* Read what is there; false at EOF. */
static bool drain(struct capture *c)
{
	char tmp[4096];
	ssize_t n = read(c->fd, tmp, sizeof(tmp));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0)
		return false;
	if (c->len < HOOK_OUTPUT_MAX) {
		size_t k = (size_t)n < HOOK_OUTPUT_MAX - c->len ? (size_t)n : HOOK_OUTPUT_MAX - c->len;

		memcpy(c->buf + c->len, tmp, k);
		c->len += k;
	}
	return true;
}

/* Collect output until both streams end or the deadline (-1: none). */
static int collect(struct capture cap[2], int64_t deadline)
{
	bool open[2] = {true, true};

	while (open[0] || open[1]) {
		struct pollfd p[2] = {{.fd = open[0] ? cap[0].fd : -1, .events = POLLIN},
		                      {.fd = open[1] ? cap[1].fd : -1, .events = POLLIN}};
		int64_t left = deadline < 0 ? -1 : deadline - clock_now_ms();

		if (deadline >= 0 && left <= 0)
			return -ETIMEDOUT;
		if (poll(p, 2, (int)left) < 0 && errno != EINTR)
			return -errno;
		for (int i = 0; i < 2; i++)
			if (open[i] && p[i].revents && !drain(&cap[i]))
				open[i] = false;
	}
	return 0;
}

/* Write the state to the hook's stdin. A hook may exit without reading
 * it: the write then fails with EPIPE, and the SIGPIPE it raises must not
 * end the caller (kvrun's CLI keeps SIGPIPE's default action). The signal
 * is blocked in this thread for the write and a pending one taken. */
static void write_state(int fd, const char *json)
{
	sigset_t pipe_only, old;

	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
	if (write_all(fd, json, strlen(json)) == -EPIPE && !sigismember(&old, SIGPIPE)) {
		struct timespec none = {0, 0};

		sigtimedwait(&pipe_only, NULL, &none);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static int run_one(const struct oci_hook *h, const char *kind, size_t idx, const char *json)
{
	struct capture cap[2] = {{.fd = -1}, {.fd = -1}};
	int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
	int64_t deadline = h->has_timeout && h->timeout > 0 ? clock_now_ms() + h->timeout * 1000 : -1;
	int status = 0, r = 0;
	pid_t pid;

	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
		r = err_setsys(-errno, "pipe");
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		r = err_setsys(-errno, "fork");
		goto out;
	}
	if (pid == 0)
		hook_child(h, in[0], out[1], err[1]);
	close(in[0]);
	close(out[1]);
	close(err[1]);
	in[0] = out[1] = err[1] = -1;
	/* A hook that does not read the state must not make us fail. */
	write_state(in[1], json);
	close(in[1]);
	in[1] = -1;
	cap[0].fd = out[0];
	cap[1].fd = err[0];
	r = collect(cap, deadline);
	/* One line in the log: trailing newlines go. */
	for (int i = 0; i < 2; i++)
		while (cap[i].len && (cap[i].buf[cap[i].len - 1] == '\n' || cap[i].buf[cap[i].len - 1] == '\r'))
			cap[i].buf[--cap[i].len] = 0;
	if (r == -ETIMEDOUT)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (r == -ETIMEDOUT) {
		r = err_set(-ETIMEDOUT, "error running %s hook #%zu: timeout after %lld seconds", kind, idx,
		            (long long)h->timeout);
	} else if (WIFSIGNALED(status)) {
		r = err_set(-EIO, "error running %s hook #%zu: signal: %s, stdout: %s, stderr: %s", kind, idx,
		            strsignal(WTERMSIG(status)), cap[0].buf, cap[1].buf);
	} else if (WEXITSTATUS(status)) {
		r = err_set(-EIO, "error running %s hook #%zu: exit status %d, stdout: %s, stderr: %s", kind, idx,
		            WEXITSTATUS(status), cap[0].buf, cap[1].buf);
	} else if (r < 0) {
		r = err_setsys(r, "error running %s hook #%zu", kind, idx);
	}
out:
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
		if (err[i] >= 0)
			close(err[i]);
	}
	return r;
}

int hooks_run(const struct oci_spec *spec, enum oci_hook_kind kind, const struct oci_state *state)
{
	const struct oci_hook_list *l = &spec->hooks.list[kind];
	_cleanup_free_ char *json = NULL;
	int r;

	if (!l->n)
		return 0;
	r = oci_state_to_hook_json(state, &json);
	if (r < 0)
		return err_set(r, "cannot build the state for %s hooks", oci_hook_kind_name(kind));
	for (size_t i = 0; i < l->n; i++) {
		log_debug("running %s hook #%zu: %s", oci_hook_kind_name(kind), i, l->hooks[i].path);
		r = run_one(&l->hooks[i], oci_hook_kind_name(kind), i, json);
		if (r < 0)
			return r;
	}
	return 0;
}

int hooks_run_bundle(const char *bundle, enum oci_hook_kind kind, const struct oci_state *state)
{
	_cleanup_free_ char *config = NULL;
	struct oci_spec *spec = NULL;
	int r;

	if (asprintf(&config, "%s/config.json", bundle) < 0)
		return -ENOMEM;
	r = oci_spec_load(config, &spec);
	if (r >= 0)
		r = hooks_run(spec, kind, state);
	oci_spec_free(spec);
	return r;
}

int hooks_after_start(const char *root, const char *id)
{
	_cleanup_container_ struct container *c = NULL;
	int r;

	r = container_load(root, id, false, &c);
	if (r < 0)
		return r;
	return hooks_run_bundle(c->state->bundle, OCI_HOOK_POSTSTART, c->state);
}
