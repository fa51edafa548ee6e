/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>

#include "common/clock.h"
#include "common/error.h"
#include "common/fileio.h"
#include "config.h"
#include "runtime/store/proc-stat.h"
#include "runtime/store/layout.h"
#include "runtime/store/state.h"

/* state.json is small; anything bigger is not ours. */
#define STATE_MAX_SIZE (1u << 20)
/* How long a writer waits for a container's lock, by default. */
#define LOCK_TIMEOUT_S_DEFAULT 30
/* The longest pause between two tries of a busy lock. */
#define LOCK_RETRY_MAX_MS 50

const char *container_proc_root = "/proc";

/* "<a>/<b>" into buf (PATH_MAX bytes); -ENAMETOOLONG when it does not fit. */
static int path_join(char *buf, const char *a, const char *b)
{
	int n = snprintf(buf, PATH_MAX, "%s/%s", a, b);

	return n < 0 || n >= PATH_MAX ? err_set(-ENAMETOOLONG, "path too long: %s/%s", a, b) : 0;
}

static unsigned long long map_get_ull(const struct oci_map *m, const char *key)
{
	const char *v = oci_map_get(m, key);

	return v ? strtoull(v, NULL, 10) : 0;
}

static int map_set_ull(struct oci_map *m, const char *key, unsigned long long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu", v);
	return oci_map_set(m, key, buf);
}

enum oci_status container_live_status(const struct oci_state *s)
{
	if (s->status == OCI_STATUS_STOPPED)
		return s->status;
	if (s->pid > 0) {
		if (!proc_is_alive(container_proc_root, s->pid, map_get_ull(&s->private_data, STATE_KEY_PID_START)))
			return OCI_STATUS_STOPPED;
		return s->status;
	}
	if (s->status == OCI_STATUS_CREATING) {
		/* A `create` that died before recording a process left this. */
		pid_t creator = (pid_t)map_get_ull(&s->private_data, STATE_KEY_CREATOR_PID);
		unsigned long long start = map_get_ull(&s->private_data, STATE_KEY_CREATOR_START);

		if (creator <= 0 || !proc_is_alive(container_proc_root, creator, start))
			return OCI_STATUS_STOPPED;
	}
	return s->status;
}

int container_lock_timeout_ms(void)
{
	const char *s = getenv("KVRUN_LOCK_TIMEOUT");
	long v = s ? strtol(s, NULL, 10) : 0;

	return (int)((v > 0 && v <= 3600 ? v : LOCK_TIMEOUT_S_DEFAULT) * 1000);
}

/* flock(fd, op) within timeout_ms: tried again and again (flock() itself
 * cannot time out), each pause longer, up to LOCK_RETRY_MAX_MS. -EWOULDBLOCK
 * when the lock stayed taken. */
static int lock_wait(int fd, int op, int timeout_ms)
{
	int64_t deadline = clock_now_ms() + timeout_ms;
	long pause_ms = 1;

	for (;;) {
		struct timespec ts;
		int left;

		if (flock(fd, op | LOCK_NB) == 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno != EWOULDBLOCK)
			return -errno;
		left = clock_left_ms(deadline);
		if (left <= 0)
			return -EWOULDBLOCK;
		if (pause_ms > left)
			pause_ms = left;
		ts = (struct timespec){pause_ms / 1000, (pause_ms % 1000) * 1000000};
		nanosleep(&ts, NULL);
		if (pause_ms < LOCK_RETRY_MAX_MS)
			pause_ms *= 2;
	}
}

static int lock_open(const char *dir, bool create, int op, int timeout_ms, int *ret_fd)
{
	char path[PATH_MAX];
	int fd, r;

	if (path_join(path, dir, "lock") < 0)
		return -ENAMETOOLONG;
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0600);
	if (fd < 0)
		return -errno;
	r = lock_wait(fd, op, timeout_ms);
	if (r < 0) {
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

static struct container *container_new(const char *root, const char *id)
{
	struct container *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->lock_fd = -1;
	c->root = strdup(root);
	if (asprintf(&c->dir, "%s/%s", root, id) < 0)
		c->dir = NULL;
	if (!c->root || !c->dir) {
		container_free(c);
		return NULL;
	}
	return c;
}

void container_free(struct container *c)
{
	if (!c)
		return;
	if (c->lock_fd >= 0)
		close(c->lock_fd); /* drops the flock */
	oci_state_free(c->state);
	free(c->root);
	free(c->dir);
	free(c);
}

int container_save(struct container *c)
{
	_cleanup_free_ char *json = NULL;
	char path[PATH_MAX];
	int r;

	if (!c->exclusive)
		return err_set(-EPERM, "container %s is not locked for writing", c->state->id);
	r = oci_state_to_file_json(c->state, &json);
	if (r < 0)
		return r;
	r = path_join(path, c->dir, "state.json");
	if (r < 0)
		return r;
	r = write_file_atomic(path, json, strlen(json), 0600);
	if (r < 0)
		return err_setsys(r, "write %s", path);
	return 0;
}

/* Record the calling process as the creator, so that a create that dies
 * half-way reads as stopped (and can be deleted) rather than creating. */
static int record_creator(struct oci_state *s)
{
	struct proc_stat st;
	int r;

	r = proc_stat_read(container_proc_root, getpid(), &st);
	if (r < 0)
		return r;
	r = map_set_ull(&s->private_data, STATE_KEY_CREATOR_PID, (unsigned long long)getpid());
	if (r < 0)
		return r;
	return map_set_ull(&s->private_data, STATE_KEY_CREATOR_START, st.start_time);
}

/* Build the container's directory under a name no id can have, then move
 * it into place with RENAME_NOREPLACE: <root>/<id> appears complete, with
 * its lock held and state.json written, or not at all. */
static int publish_new(const char *root, const char *tmpdir, const char *id)
{
	char path[PATH_MAX];

	if (path_join(path, root, id) < 0)
		return -ENAMETOOLONG;
	if (renameat2(AT_FDCWD, tmpdir, AT_FDCWD, path, RENAME_NOREPLACE) < 0) {
		if (errno == EEXIST)
			return err_set(-EEXIST, "container with id exists: %s", id);
		return err_setsys(-errno, "rename %s to %s", tmpdir, path);
	}
	return 0;
}

/* The locked, saved, not yet published directory of a new container. */
static int prepare_new(struct container *c, const char *tmpdir)
{
	int r;

	if (mkdir(tmpdir, 0711) < 0)
		return err_setsys(-errno, "create %s", tmpdir);
	free(c->dir);
	c->dir = strdup(tmpdir);
	if (!c->dir)
		return -ENOMEM;
	r = lock_open(c->dir, true, LOCK_EX, 0, &c->lock_fd);
	if (r < 0)
		return err_setsys(r, "lock %s", c->dir);
	r = record_creator(c->state);
	if (r < 0)
		return r;
	return container_save(c);
}

int container_create(const char *root, struct oci_state *state, struct container **ret)
{
	_cleanup_container_ struct container *c = NULL;
	char tmpdir[PATH_MAX];
	int r;

	r = container_id_validate(state->id);
	if (r < 0)
		goto fail;
	if (state->status != OCI_STATUS_CREATING) {
		r = err_set(-EINVAL, "a new container must start in the creating state");
		goto fail;
	}
	r = mkdir_p(root, 0700);
	if (r < 0) {
		r = err_setsys(r, "create state directory %s", root);
		goto fail;
	}
	c = container_new(root, state->id);
	if (!c) {
		r = -ENOMEM;
		goto fail;
	}
	c->state = state;
	c->exclusive = true;
	/* '~' is not allowed in ids: list and load never see this name. */
	snprintf(tmpdir, sizeof(tmpdir), "%s/~new-%d-%lx", root, (int)getpid(), (unsigned long)random());
	r = prepare_new(c, tmpdir);
	if (r >= 0)
		r = publish_new(root, tmpdir, state->id);
	if (r < 0) {
		rm_rf(tmpdir);
		return r;
	}
	free(c->dir);
	if (asprintf(&c->dir, "%s/%s", root, state->id) < 0) {
		c->dir = NULL;
		return -ENOMEM;
	}
	*ret = TAKE_PTR(c);
	return 0;
fail:
	oci_state_free(state);
	return r;
}

int container_jail_uid(const struct container *c, uid_t *ret)
{
	const char *s = oci_map_get(&c->state->private_data, STATE_KEY_JAIL_UID);
	unsigned long v;
	char *end;

	*ret = 0;
	if (!s)
		return 0;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < 65536 || v > 0x7fffffff)
		return err_set(-EINVAL, "state of %s: bad %s '%s'", c->state->id, STATE_KEY_JAIL_UID, s);
	*ret = (uid_t)v;
	return 1;
}

int container_remove_leftover(const char *root, const char *id)
{
	_cleanup_close_ int fd = -1;
	char dir[PATH_MAX], path[PATH_MAX];
	int r;

	r = container_id_validate(id);
	if (r < 0)
		return r;
	r = path_join(dir, root, id);
	if (r >= 0)
		r = path_join(path, dir, "state.json");
	if (r < 0)
		return r;
	if (access(dir, F_OK) < 0 || access(path, F_OK) == 0)
		return 0;
	/* Someone holding the lock is still working on it: leave it be. */
	r = lock_open(dir, false, LOCK_EX, 0, &fd);
	if (r == -EWOULDBLOCK)
		return 0;
	r = rm_rf(dir);
	return r < 0 ? err_setsys(r, "remove %s", dir) : 0;
}

/* runc shows the owner's user name, and "" for root. */
static char *owner_name(uid_t uid)
{
	struct passwd *pw;
	char *s;

	if (uid == 0)
		return strdup("");
	pw = getpwuid(uid);
	if (pw)
		return strdup(pw->pw_name);
	return asprintf(&s, "%u", (unsigned)uid) < 0 ? NULL : s;
}

int container_state_init(struct oci_state *s, const char *id, const char *bundle, const char *rootfs)
{
	int r;

	s->status = OCI_STATUS_CREATING;
	s->oci_version = strdup(KVRUN_OCI_VERSION);
	s->id = strdup(id);
	s->bundle = strdup(bundle);
	s->rootfs = strdup(rootfs);
	s->owner = owner_name(geteuid());
	if (!s->oci_version || !s->id || !s->bundle || !s->rootfs || !s->owner)
		return -ENOMEM;
	r = oci_time_now_rfc3339(&s->created);
	return r < 0 ? r : 0;
}

static int read_state(struct container *c)
{
	_cleanup_free_ char *json = NULL;
	char path[PATH_MAX];
	size_t len;
	int r;

	r = path_join(path, c->dir, "state.json");
	if (r < 0)
		return r;
	r = read_file_all(path, STATE_MAX_SIZE, &json, &len);
	if (r == -ENOENT)
		return err_set(-ENOENT, "container does not exist");
	if (r < 0)
		return err_setsys(r, "read %s", path);
	r = oci_state_from_file_json(json, len, path, &c->state);
	if (r < 0)
		return r;
	c->state->status = container_live_status(c->state);
	return 0;
}

/* The lock of c stayed taken for timeout_ms: say by whom, as far as the
 * state (read without the lock) tells. */
static int lock_busy(struct container *c, const char *id, int timeout_ms)
{
	int waited = timeout_ms / 1000;

	if (read_state(c) >= 0 && c->state->status == OCI_STATUS_CREATING) {
		pid_t pid = c->state->pid > 0 ? c->state->pid
		                              : (pid_t)map_get_ull(&c->state->private_data, STATE_KEY_CREATOR_PID);

		return err_set(-EBUSY,
		               "container %s is still being created (by process %d): gave up waiting for its lock "
		               "after %d s",
		               id, (int)pid, waited);
	}
	err_clear();
	return err_set(-EBUSY,
	               "container %s is busy: another kvrun command holds its lock; "
	               "gave up waiting after %d s ($KVRUN_LOCK_TIMEOUT)",
	               id, waited);
}

int container_load(const char *root, const char *id, bool exclusive, struct container **ret)
{
	_cleanup_container_ struct container *c = NULL;
	int r, timeout_ms = container_lock_timeout_ms();

	r = container_id_validate(id);
	if (r < 0)
		return r;
	c = container_new(root, id);
	if (!c)
		return -ENOMEM;
	c->exclusive = exclusive;
	/* Readers take no lock: state.json is replaced atomically, so they
	 * see one whole version, and a create in progress (which holds the
	 * lock through the guest's boot) does not hold them up. */
	r = exclusive ? lock_open(c->dir, false, LOCK_EX, timeout_ms, &c->lock_fd) : 0;
	if (r == -ENOENT || r == -ENOTDIR)
		return err_set(-ENOENT, "container does not exist");
	if (r == -EWOULDBLOCK)
		return lock_busy(c, id, timeout_ms);
	if (r < 0)
		return err_setsys(r, "lock %s", c->dir);
	/* Re-read after the lock: a delete may have run while we waited. */
	r = read_state(c);
	if (r < 0)
		return r;
	if (strcmp(c->state->id, id))
		return err_set(-EINVAL, "%s/state.json belongs to container %s", c->dir, c->state->id);
	*ret = TAKE_PTR(c);
	return 0;
}

int container_reload(struct container *c)
{
	struct oci_state *old = c->state;
	int r;

	c->state = NULL;
	r = read_state(c);
	if (r < 0) {
		oci_state_free(c->state);
		c->state = old;
		return r;
	}
	oci_state_free(old);
	return 0;
}

/* pid and its start time (which tells it from a later process with its
 * number) into c's state. */
static int record_pid(struct container *c, pid_t pid)
{
	struct proc_stat st;
	int r;

	r = proc_stat_read(container_proc_root, pid, &st);
	if (r < 0)
		return r == -ESRCH ? err_set(r, "process %d has exited", (int)pid) : r;
	r = map_set_ull(&c->state->private_data, STATE_KEY_PID_START, st.start_time);
	if (r < 0)
		return r;
	c->state->pid = pid;
	return 0;
}

int container_record_pid(struct container *c, pid_t pid)
{
	int r = record_pid(c, pid);

	return r < 0 ? r : container_save(c);
}

int container_set_status(struct container *c, enum oci_status status, pid_t pid)
{
	int r;

	r = container_status_change_ok(c->state->status, status);
	if (r < 0)
		return r;
	if (pid > 0) {
		r = record_pid(c, pid);
		if (r < 0)
			return r;
	}
	c->state->status = status;
	return container_save(c);
}

int container_destroy(struct container *c)
{
	int r;

	if (!c->exclusive) {
		container_free(c);
		return err_set(-EPERM, "container is not locked for writing");
	}
	r = rm_rf(c->dir);
	if (r < 0)
		r = err_setsys(r, "remove %s", c->dir);
	container_free(c);
	return r;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void container_ids_free(char **ids)
{
	for (size_t i = 0; ids && ids[i]; i++)
		free(ids[i]);
	free(ids);
}

int container_list_ids(const char *root, char ***ret_ids)
{
	_cleanup_closedir_ DIR *d = NULL;
	char **ids = NULL;
	size_t n = 0;
	struct dirent *de;

	d = opendir(root);
	if (!d && errno != ENOENT)
		return err_setsys(-errno, "open %s", root);
	while (d && (de = readdir(d))) {
		struct stat st;
		char **nids;

		if (container_id_validate(de->d_name) < 0) {
			err_clear();
			continue;
		}
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		nids = realloc(ids, (n + 2) * sizeof(*ids));
		if (!nids)
			goto oom;
		ids = nids;
		ids[n] = strdup(de->d_name);
		if (!ids[n])
			goto oom;
		ids[++n] = NULL;
	}
	if (!ids) {
		ids = calloc(1, sizeof(*ids));
		if (!ids)
			return -ENOMEM;
	}
	qsort(ids, n, sizeof(*ids), cmp_str);
	*ret_ids = ids;
	return 0;
oom:
	if (ids)
		ids[n] = NULL;
	container_ids_free(ids);
	return -ENOMEM;
}

/* Load id (locked or not) and check that the state allows op. */
static int load_checked(const char *root, const char *id, bool lock, enum container_op op, struct container **ret)
{
	_cleanup_container_ struct container *c = NULL;
	int r;

	r = container_load(root, id, lock, &c);
	if (r < 0)
		return r;
	r = container_check(op, c->state->status, id);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(c);
	return 0;
}

int container_peek_for(const char *root, const char *id, enum container_op op, struct container **ret)
{
	return load_checked(root, id, false, op, ret);
}

/* What an app container of a pod, which runs in its sandbox's VM, does not
 * have: a VM of its own to save (docs/runtime.md, "Pods"). */
static int check_member(const struct container *c, enum container_op op)
{
	static const char *const verbs[] = {
	    [CONTAINER_OP_CHECKPOINT] = "checkpoint",
	};

	if (!oci_map_get(&c->state->private_data, STATE_KEY_POD_MEMBER_PID) || (size_t)op >= ARRAY_SIZE(verbs) ||
	    !verbs[op])
		return 0;
	return err_set(-ENOTSUP,
	               "%s: container %s is an app container of the pod whose sandbox is %s, run in its VM: "
	               "kvrun does not %s such a container yet",
	               verbs[op], c->state->id, oci_map_get(&c->state->private_data, STATE_KEY_POD_SANDBOX), verbs[op]);
}

int container_load_for(const char *root, const char *id, enum container_op op, struct container **ret)
{
	struct container *c = NULL;
	int r;

	/* What the state forbids is said at once, without waiting for the
	 * lock (a create in progress holds it for as long as the boot takes). */
	r = load_checked(root, id, false, op, &c);
	if (r >= 0)
		r = check_member(c, op);
	if (r < 0) {
		container_free(c);
		return r;
	}
	container_free(c);
	return load_checked(root, id, true, op, ret);
}

int container_check_new_id(const char *root, const char *id)
{
	struct container *c;
	int r;

	r = container_id_validate(id);
	if (r < 0)
		return r;
	r = container_load(root, id, false, &c);
	if (r == -ENOENT) {
		err_clear();
		return 0;
	}
	if (r < 0)
		return r;
	container_free(c);
	return err_set(-EEXIST, "container with id exists: %s", id);
}
