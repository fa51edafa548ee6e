/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "runtime/store/proc-stat.h"
#include "runtime/store/state.h"
#include "tap.h"

static char root[64];

static void fresh_root(void)
{
	if (root[0])
		rm_rf(root);
	strcpy(root, "/tmp/kvrun-state-XXXXXX");
	if (!mkdtemp(root))
		tap_skip_all("cannot create a temporary directory");
	/* The store creates the root itself. */
	rmdir(root);
}

static int new_container(const char *id, struct container **ret)
{
	struct oci_state *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	r = container_state_init(s, id, "/bundle", "/bundle/rootfs");
	if (r < 0) {
		oci_state_free(s);
		return r;
	}
	return container_create(root, s, ret);
}

TEST(id_validation)
{
	static const struct {
		const char *id;
		int ok;
		const char *msg;
	} table[] = {
	    {"abc", 1, NULL},
	    {"A_b-c.d+e,f", 1, NULL},
	    {"0123456789", 1, NULL},
	    {"a..b", 1, NULL},
	    {"", 0, "container id cannot be empty"},
	    {".", 0, "invalid container ID format"},
	    {"..", 0, "invalid container ID format"},
	    {"../x", 0, "invalid container ID format"},
	    {"a/b", 0, "invalid container ID format"},
	    {"a b", 0, "invalid container ID format"},
	    {"a:b", 0, "invalid container ID format"},
	    {"\xc3\xa9", 0, "invalid container ID format"},
	    {"a\nb", 0, "invalid container ID format"},
	};
	char longid[CONTAINER_ID_MAX + 2];

	for (size_t i = 0; i < ARRAY_SIZE(table); i++) {
		int r = container_id_validate(table[i].id);

		ok(table[i].ok ? r == 0 : r == -EINVAL, "id #%zu %s", i, table[i].ok ? "valid" : "invalid");
		if (!table[i].ok)
			is_str(err_msg(), table[i].msg);
	}
	memset(longid, 'a', sizeof(longid) - 1);
	longid[CONTAINER_ID_MAX] = '\0';
	is_int(container_id_validate(longid), 0);
	longid[CONTAINER_ID_MAX] = 'a';
	longid[CONTAINER_ID_MAX + 1] = '\0';
	is_int(container_id_validate(longid), -EINVAL);
}

TEST(op_checks)
{
	is_int(container_check(CONTAINER_OP_START, OCI_STATUS_CREATED, "x"), 0);
	is_int(container_check(CONTAINER_OP_START, OCI_STATUS_STOPPED, "x"), -EINVAL);
	is_str(err_msg(), "cannot start a container that has stopped");
	is_int(container_check(CONTAINER_OP_START, OCI_STATUS_RUNNING, "x"), -EINVAL);
	is_str(err_msg(), "cannot start an already running container");
	is_int(container_check(CONTAINER_OP_START, OCI_STATUS_PAUSED, "x"), -EINVAL);
	is_str(err_msg(), "cannot start a container in the paused state");
	is_int(container_check(CONTAINER_OP_DELETE, OCI_STATUS_RUNNING, "c1"), -EBUSY);
	is_str(err_msg(), "cannot delete container c1 that is not stopped: running");
	is_int(container_check(CONTAINER_OP_DELETE, OCI_STATUS_STOPPED, "c1"), 0);
	is_int(container_check(CONTAINER_OP_DELETE, OCI_STATUS_CREATED, "c1"), 0);
	is_int(container_check(CONTAINER_OP_DELETE_FORCE, OCI_STATUS_RUNNING, "c1"), 0);
	is_int(container_check(CONTAINER_OP_KILL, OCI_STATUS_STOPPED, "x"), -ESRCH);
	is_str(err_msg(), "container not running");
	is_int(container_check(CONTAINER_OP_KILL, OCI_STATUS_CREATED, "x"), 0);
	is_int(container_check(CONTAINER_OP_PAUSE, OCI_STATUS_STOPPED, "x"), -ESRCH);
	is_str(err_msg(), "container not running");
	is_int(container_check(CONTAINER_OP_PAUSE, OCI_STATUS_RUNNING, "x"), 0);
	is_int(container_check(CONTAINER_OP_RESUME, OCI_STATUS_RUNNING, "x"), -EINVAL);
	is_str(err_msg(), "container not paused");
	is_int(container_check(CONTAINER_OP_RESUME, OCI_STATUS_PAUSED, "x"), 0);
	is_int(container_check(CONTAINER_OP_EXEC, OCI_STATUS_PAUSED, "x"), -EINVAL);
	is_str(err_msg(), "cannot exec in a paused container (use --ignore-paused to override)");
	is_int(container_check(CONTAINER_OP_EXEC_IGNORE_PAUSED, OCI_STATUS_PAUSED, "x"), 0);
	is_int(container_check(CONTAINER_OP_EXEC, OCI_STATUS_STOPPED, "x"), -ESRCH);
	is_str(err_msg(), "cannot exec in a stopped container");
	is_int(container_check(CONTAINER_OP_CHECKPOINT, OCI_STATUS_CREATED, "x"), -EINVAL);
	is_str(err_msg(), "Container cannot be checkpointed in created state");
	is_int(container_check(CONTAINER_OP_EVENTS, OCI_STATUS_STOPPED, "x"), -ESRCH);
	is_str(err_msg(), "container with id x is not running");
	is_int(container_check(CONTAINER_OP_UPDATE, OCI_STATUS_STOPPED, "x"), -ESRCH);
}

TEST(status_changes)
{
	is_int(container_status_change_ok(OCI_STATUS_CREATING, OCI_STATUS_CREATED), 0);
	is_int(container_status_change_ok(OCI_STATUS_CREATED, OCI_STATUS_RUNNING), 0);
	is_int(container_status_change_ok(OCI_STATUS_RUNNING, OCI_STATUS_PAUSED), 0);
	is_int(container_status_change_ok(OCI_STATUS_PAUSED, OCI_STATUS_RUNNING), 0);
	is_int(container_status_change_ok(OCI_STATUS_RUNNING, OCI_STATUS_STOPPED), 0);
	is_int(container_status_change_ok(OCI_STATUS_CREATING, OCI_STATUS_STOPPED), 0);
	is_int(container_status_change_ok(OCI_STATUS_STOPPED, OCI_STATUS_RUNNING), -EINVAL);
	is_str(err_msg(), "invalid state transition from stopped to running");
	is_int(container_status_change_ok(OCI_STATUS_CREATING, OCI_STATUS_RUNNING), -EINVAL);
	is_int(container_status_change_ok(OCI_STATUS_PAUSED, OCI_STATUS_CREATED), -EINVAL);
	is_int(container_status_change_ok(OCI_STATUS_RUNNING, OCI_STATUS_CREATED), -EINVAL);
}

TEST(create_load_list_destroy)
{
	struct container *c = NULL;
	char **ids = NULL;

	fresh_root();
	is_int(container_list_ids(root, &ids), 0);
	ok(ids && !ids[0], "missing root lists nothing");
	container_ids_free(ids);
	is_int(new_container("b", &c), 0);
	is_str(c->state->id, "b");
	is_int(c->state->status, OCI_STATUS_CREATING);
	/* Our own process is the creator: alive, so still creating. */
	is_int(container_live_status(c->state), OCI_STATUS_CREATING);
	container_free(c);
	is_int(new_container("b", &c), -EEXIST);
	is_str(err_msg(), "container with id exists: b");
	is_int(new_container("a", &c), 0);
	container_free(c);
	is_int(container_list_ids(root, &ids), 0);
	ok(ids && ids[0] && ids[1] && !ids[2], "two ids");
	if (ids && ids[0] && ids[1]) {
		is_str(ids[0], "a");
		is_str(ids[1], "b");
	}
	container_ids_free(ids);
	is_int(container_load(root, "nope", false, &c), -ENOENT);
	is_str(err_msg(), "container does not exist");
	is_int(container_load(root, "../b", false, &c), -EINVAL);
	is_int(container_load(root, "b", true, &c), 0);
	is_str(c->state->bundle, "/bundle");
	is_str(c->state->rootfs, "/bundle/rootfs");
	is_int(container_destroy(c), 0);
	is_int(container_load(root, "b", false, &c), -ENOENT);
}

TEST(transitions_persist)
{
	struct container *c = NULL;

	fresh_root();
	is_int(new_container("t", &c), 0);
	is_int(container_set_status(c, OCI_STATUS_CREATED, getpid()), 0);
	container_free(c);
	is_int(container_load(root, "t", true, &c), 0);
	is_int(c->state->status, OCI_STATUS_CREATED);
	is_int(c->state->pid, getpid());
	ok(oci_map_get(&c->state->private_data, STATE_KEY_PID_START) != NULL, "start time recorded");
	is_int(container_set_status(c, OCI_STATUS_RUNNING, 0), 0);
	is_int(container_set_status(c, OCI_STATUS_PAUSED, 0), 0);
	is_int(container_set_status(c, OCI_STATUS_CREATED, 0), -EINVAL);
	container_free(c);
	is_int(container_load(root, "t", false, &c), 0);
	is_int(c->state->status, OCI_STATUS_PAUSED);
	is_int(container_save(c), -EPERM); /* shared lock: read only */
	container_free(c);
}

TEST(atomic_write_leaves_no_temporaries)
{
	struct container *c = NULL;
	char dir[128];
	DIR *d;
	struct dirent *de;
	int others = 0;

	fresh_root();
	is_int(new_container("w", &c), 0);
	for (int i = 0; i < 5; i++)
		is_int(container_save(c), 0);
	container_free(c);
	snprintf(dir, sizeof(dir), "%s/w", root);
	d = opendir(dir);
	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && strcmp(de->d_name, "state.json") &&
		    strcmp(de->d_name, "lock"))
			others++;
	if (d)
		closedir(d);
	is_int(others, 0);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

TEST(lock_excludes_writers)
{
	struct container *c = NULL;
	char path[128];
	pid_t child;
	int status;

	fresh_root();
	is_int(new_container("l", &c), 0);
	snprintf(path, sizeof(path), "%s/l/lock", root);
	/* flock is per open file: a fresh open in a child must not get it. */
	child = fork();
	if (child == 0) {
		int fd = open(path, O_RDWR);

		_exit(fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK ? 0 : 1);
	}
	waitpid(child, &status, 0);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the writer's lock is exclusive");
	container_free(c);
}

/* A create holds the lock through the guest's boot (minutes where the
 * guest is emulated): readers must not wait for it at all, and writers
 * only as long as $KVRUN_LOCK_TIMEOUT says, then fail saying why. */
TEST(readers_never_wait_writers_wait_bounded)
{
	struct container *c = NULL, *r = NULL;
	double t0, took;

	fresh_root();
	is_int(new_container("busy", &c), 0); /* creating, locked, by us */
	setenv("KVRUN_LOCK_TIMEOUT", "1", 1);
	t0 = now_s();
	is_int(container_load(root, "busy", false, &r), 0);
	ok(now_s() - t0 < 0.5, "a reader gets the state of a locked container at once");
	ok(r && r->state->status == OCI_STATUS_CREATING, "it reads creating");
	ok(r && r->lock_fd < 0, "and holds no lock");
	container_free(r);
	r = NULL;
	t0 = now_s();
	is_int(container_load_for(root, "busy", CONTAINER_OP_START, &r), -EINVAL);
	ok(now_s() - t0 < 0.5, "what the state forbids fails at once, without waiting for the lock");
	is_str(err_msg(), "cannot start a container in the creating state");
	t0 = now_s();
	is_int(container_load(root, "busy", true, &r), -EBUSY);
	took = now_s() - t0;
	ok(took >= 0.9 && took < 5, "a writer gives up after $KVRUN_LOCK_TIMEOUT (took %.2f s)", took);
	ok(strstr(err_msg(), "container busy is still being created (by process ") != NULL,
	   "the error says a create holds it: %s", err_msg());
	container_free(c);
	t0 = now_s();
	is_int(container_load(root, "busy", true, &r), 0);
	ok(now_s() - t0 < 0.5, "the lock is taken at once once free");
	container_free(r);
	unsetenv("KVRUN_LOCK_TIMEOUT");
	is_int(container_lock_timeout_ms(), 30000);
	setenv("KVRUN_LOCK_TIMEOUT", "junk", 1);
	is_int(container_lock_timeout_ms(), 30000);
	unsetenv("KVRUN_LOCK_TIMEOUT");
}

TEST(dead_pid_reads_as_stopped)
{
	struct container *c = NULL;
	pid_t child;

	fresh_root();
	child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	is_int(new_container("d", &c), 0);
	is_int(container_set_status(c, OCI_STATUS_CREATED, child), 0);
	is_int(container_set_status(c, OCI_STATUS_RUNNING, 0), 0);
	container_free(c);
	is_int(container_load(root, "d", false, &c), 0);
	is_int(c->state->status, OCI_STATUS_RUNNING);
	container_free(c);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	is_int(container_load(root, "d", true, &c), 0);
	is_int(c->state->status, OCI_STATUS_STOPPED);
	is_int(container_check(CONTAINER_OP_START, c->state->status, "d"), -EINVAL);
	is_str(err_msg(), "cannot start a container that has stopped");
	is_int(container_destroy(c), 0);
}

TEST(reused_pid_reads_as_stopped)
{
	struct container *c = NULL;

	fresh_root();
	is_int(new_container("r", &c), 0);
	is_int(container_set_status(c, OCI_STATUS_CREATED, getpid()), 0);
	/* Same pid, another start time: the pid was reused. */
	oci_map_set(&c->state->private_data, STATE_KEY_PID_START, "1");
	is_int(container_save(c), 0);
	container_free(c);
	is_int(container_load(root, "r", false, &c), 0);
	is_int(c->state->status, OCI_STATUS_STOPPED);
	container_free(c);
}

TEST(abandoned_create_reads_as_stopped)
{
	struct container *c = NULL;
	pid_t child;
	int status;

	fresh_root();
	child = fork();
	if (child == 0) {
		struct container *cc;

		_exit(new_container("gone", &cc) == 0 ? 0 : 1);
	}
	waitpid(child, &status, 0);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child created the container");
	is_int(container_load(root, "gone", false, &c), 0);
	is_int(c->state->status, OCI_STATUS_STOPPED);
	container_free(c);
}

TEST(create_is_atomic_and_exclusive)
{
	struct container *c = NULL;
	char path[128], **ids = NULL;
	DIR *d;
	struct dirent *de;
	int entries = 0;

	fresh_root();
	is_int(mkdir_p(root, 0700), 0);
	/* An empty directory in the way is not replaced. */
	snprintf(path, sizeof(path), "%s/taken", root);
	is_int(mkdir(path, 0700), 0);
	is_int(new_container("taken", &c), -EEXIST);
	is_str(err_msg(), "container with id exists: taken");
	/* A failed create leaves nothing behind but what was there. */
	d = opendir(root);
	while (d && (de = readdir(d)))
		entries += de->d_name[0] != '.';
	if (d)
		closedir(d);
	is_int(entries, 1);
	/* Temporary names are never listed. */
	snprintf(path, sizeof(path), "%s/~new-1-2", root);
	is_int(mkdir(path, 0700), 0);
	is_int(container_list_ids(root, &ids), 0);
	ok(ids && ids[0] && !strcmp(ids[0], "taken") && !ids[1], "only the id directory is listed");
	container_ids_free(ids);
}

TEST(leftover_removal)
{
	struct container *c = NULL;
	char path[128];

	fresh_root();
	is_int(new_container("half", &c), 0);
	snprintf(path, sizeof(path), "%s/half/state.json", root);
	is_int(unlink(path), 0);
	/* Locked by its owner: kept. */
	is_int(container_remove_leftover(root, "half"), 0);
	snprintf(path, sizeof(path), "%s/half", root);
	is_int(access(path, F_OK), 0);
	container_free(c);
	is_int(container_load(root, "half", false, &c), -ENOENT);
	is_int(container_remove_leftover(root, "half"), 0);
	ok(access(path, F_OK) < 0, "unlocked leftover removed");
	/* A complete container is never a leftover. */
	is_int(new_container("whole", &c), 0);
	container_free(c);
	is_int(container_remove_leftover(root, "whole"), 0);
	is_int(container_load(root, "whole", false, &c), 0);
	container_free(c);
	is_int(container_remove_leftover(root, "../x"), -EINVAL);
}

TEST(cleanup)
{
	rm_rf(root);
	ok(access(root, F_OK) < 0, "temporary root removed");
}

TAP_MAIN()
