/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "common/log.h"
#include "runtime/monitor/create-guard.h"
#include "runtime/monitor/teardown.h"
#include "runtime/store/proc-stat.h"

#define VERDICT_KEEP 'k'
#define VERDICT_CLEAN 'c'

/* What the guard needs, copied before the fork. */
struct guard_job {
	char root[PATH_MAX];
	char id[CONTAINER_ID_MAX + 1];
	dev_t dev;
	ino_t ino;
	pid_t creator;
	unsigned long long creator_start;
};

static bool creator_alive(const struct guard_job *j)
{
	return j->creator > 0 && proc_is_alive(container_proc_root, j->creator, j->creator_start);
}

/* Until the creator has ended (exited: a zombie counts as ended), for up
 * to CREATOR_WAIT_MS: a creator alive after that removes the container
 * itself. False when it is still alive. */
#define CREATOR_WAIT_MS 30000
static bool wait_creator(const struct guard_job *j)
{
	int fd = j->creator > 0 ? (int)syscall(SYS_pidfd_open, j->creator, 0) : -1;
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int r;

	/* Opened, then checked: the pid is still the creator's. */
	if (fd < 0 || !creator_alive(j)) {
		if (fd >= 0)
			close(fd);
		return true;
	}
	do
		r = poll(&p, 1, CREATOR_WAIT_MS);
	while (r < 0 && errno == EINTR);
	close(fd);
	return r != 0;
}

/* Remove the container, if its directory is still the one we were forked
 * for. */
static int guard_clean(const struct guard_job *j)
{
	struct container *c = NULL;
	struct stat st;
	int r;

	r = container_load(j->root, j->id, true, &c);
	if (r == -ENOENT) {
		err_clear();
		return 0; /* removed by someone else */
	}
	if (r < 0)
		return r;
	if (stat(c->dir, &st) < 0 || st.st_dev != j->dev || st.st_ino != j->ino) {
		container_free(c);
		return 0; /* the id is another container's now */
	}
	log_warn("the process that ran create for %s went away: removing the container", j->id);
	return teardown_container(c, false);
}

static _Noreturn void guard_main(int fd, const struct guard_job *j)
{
	ssize_t n;
	char v = 0;

	(void)prctl(PR_SET_NAME, "kvrun-guard", 0, 0, 0);
	do
		n = read(fd, &v, 1);
	while (n < 0 && errno == EINTR);
	if (n == 1 && v == VERDICT_KEEP)
		_exit(0);
	/* No verdict: the monitor died. A living creator reads its end and
	 * removes the container itself; one that is dying (killed with the
	 * monitor) cannot: wait for it to end, then remove what is left. */
	if (n != 1 && !wait_creator(j))
		_exit(0);
	if (guard_clean(j) < 0) {
		log_error("removing container %s: %s", j->id, err_msg());
		_exit(1);
	}
	_exit(0);
}

static const char *map_get(const struct oci_state *s, const char *key)
{
	const char *v = oci_map_get(&s->private_data, key);

	return v ? v : "0";
}

int create_guard_start(const struct container *c, const int *close_fds, size_t n, struct create_guard *g)
{
	struct guard_job j = {0};
	struct stat st;
	int p[2];
	pid_t pid;

	*g = (struct create_guard){.fd = -1};
	if (stat(c->dir, &st) < 0)
		return err_setsys(-errno, "%s", c->dir);
	j.dev = st.st_dev;
	j.ino = st.st_ino;
	snprintf(j.root, sizeof(j.root), "%s", c->root);
	snprintf(j.id, sizeof(j.id), "%s", c->state->id);
	j.creator = (pid_t)strtol(map_get(c->state, STATE_KEY_CREATOR_PID), NULL, 10);
	j.creator_start = strtoull(map_get(c->state, STATE_KEY_CREATOR_START), NULL, 10);
	if (pipe2(p, O_CLOEXEC) < 0)
		return err_setsys(-errno, "pipe");
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return err_setsys(-errno, "fork the create guard");
	}
	if (pid == 0) {
		close(p[1]);
		/* The lock must be free once the monitor lets it go. */
		close(c->lock_fd);
		for (size_t i = 0; i < n; i++)
			if (close_fds[i] >= 0)
				close(close_fds[i]);
		stdio_to_null();
		guard_main(p[0], &j);
	}
	close(p[0]);
	g->pid = pid;
	g->fd = p[1];
	return 0;
}

void create_guard_end(struct create_guard *g, bool clean)
{
	char v = clean ? VERDICT_CLEAN : VERDICT_KEEP;

	if (g->pid <= 0)
		return;
	if (write(g->fd, &v, 1) != 1)
		log_debug("create guard: %s", strerror(errno));
	close(g->fd);
	g->fd = -1;
	while (waitpid(g->pid, NULL, 0) < 0 && errno == EINTR)
		;
	g->pid = 0;
}
