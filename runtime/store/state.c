/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "common/error.h"
#include "common/fileio.h"
#include "config.h"
#include "runtime/store/proc-stat.h"
#include "runtime/store/state.h"

/* state.json is small; anything bigger is not ours. */
#define STATE_MAX_SIZE (1u << 20)

const char *container_proc_root = "/proc";

/* "<a>/<b>" into buf (PATH_MAX bytes); -ENAMETOOLONG when it does not fit. */
static int path_join(char *buf, const char *a, const char *b)
{
	int n = snprintf(buf, PATH_MAX, "%s/%s", a, b);

	return n < 0 || n >= PATH_MAX ? err_set(-ENAMETOOLONG, "path too long: %s/%s", a, b) : 0;
}

static bool id_char_ok(unsigned char c)
{
	/* \w is [0-9A-Za-z_]; "+-\." in runc's class is the range '+'..'.',
	 * which also lets ',' through. */
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       (c >= '+' && c <= '.');
}

int container_id_validate(const char *id)
{
	size_t n = strlen(id);

	if (n == 0)
		return err_set(-EINVAL, "container id cannot be empty");
	if (n > CONTAINER_ID_MAX)
		return err_set(-EINVAL, "invalid container ID format: longer than %d characters", CONTAINER_ID_MAX);
	if (!strcmp(id, ".") || !strcmp(id, ".."))
		return err_set(-EINVAL, "invalid container ID format");
	for (size_t i = 0; i < n; i++)
		if (!id_char_ok((unsigned char)id[i]))
			return err_set(-EINVAL, "invalid container ID format");
	return 0;
}

int container_check(enum container_op op, enum oci_status st, const char *id)
{
	const char *name = oci_status_name(st);

	switch (op) {
	case CONTAINER_OP_START:
		if (st == OCI_STATUS_CREATED)
			return 0;
		if (st == OCI_STATUS_STOPPED)
			return err_set(-EINVAL, "cannot start a container that has stopped");
		if (st == OCI_STATUS_RUNNING)
			return err_set(-EINVAL, "cannot start an already running container");
		return err_set(-EINVAL, "cannot start a container in the %s state", name);
	case CONTAINER_OP_KILL:
	case CONTAINER_OP_UPDATE:
		if (st == OCI_STATUS_STOPPED)
			return err_set(-ESRCH, "container not running");
		return 0;
	case CONTAINER_OP_DELETE:
		if (st == OCI_STATUS_STOPPED || st == OCI_STATUS_CREATED)
			return 0;
		return err_set(-EBUSY, "cannot delete container %s that is not stopped: %s", id, name);
	case CONTAINER_OP_DELETE_FORCE:
		return 0;
	case CONTAINER_OP_PAUSE:
		if (st == OCI_STATUS_RUNNING || st == OCI_STATUS_CREATED)
			return 0;
		return err_set(-ESRCH, "container not running");
	case CONTAINER_OP_RESUME:
		if (st == OCI_STATUS_PAUSED)
			return 0;
		return err_set(-EINVAL, "container not paused");
	case CONTAINER_OP_EXEC:
	case CONTAINER_OP_EXEC_IGNORE_PAUSED:
		if (st == OCI_STATUS_STOPPED)
			return err_set(-ESRCH, "cannot exec in a stopped container");
		if (st == OCI_STATUS_PAUSED && op == CONTAINER_OP_EXEC)
			return err_set(-EINVAL, "cannot exec in a paused container (use --ignore-paused to override)");
		if (st == OCI_STATUS_CREATING)
			return err_set(-EINVAL, "cannot exec in a container in the %s state", name);
		return 0;
	case CONTAINER_OP_CHECKPOINT:
		if (st == OCI_STATUS_RUNNING || st == OCI_STATUS_PAUSED)
			return 0;
		return err_set(-EINVAL, "Container cannot be checkpointed in %s state", name);
	case CONTAINER_OP_EVENTS:
		if (st == OCI_STATUS_STOPPED)
			return err_set(-ESRCH, "container with id %s is not running", id);
		return 0;
	}
	return err_set(-EINVAL, "unknown operation");
}

int container_status_change_ok(enum oci_status from, enum oci_status to)
{
	static const unsigned allowed[OCI_STATUS__MAX] = {
	    [OCI_STATUS_CREATING] = 1u << OCI_STATUS_CREATED,
	    [OCI_STATUS_CREATED] = 1u << OCI_STATUS_RUNNING | 1u << OCI_STATUS_PAUSED,
	    [OCI_STATUS_RUNNING] = 1u << OCI_STATUS_PAUSED,
	    [OCI_STATUS_PAUSED] = 1u << OCI_STATUS_RUNNING,
	    [OCI_STATUS_STOPPED] = 0,
	};

	if ((unsigned)from >= OCI_STATUS__MAX || (unsigned)to >= OCI_STATUS__MAX)
		return err_set(-EINVAL, "invalid container status");
	if (from == to || to == OCI_STATUS_STOPPED || (allowed[from] & (1u << to)))
		return 0;
	return err_set(-EINVAL, "invalid state transition from %s to %s", oci_status_name(from), oci_status_name(to));
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

static int lock_open(const char *dir, bool create, int op, int *ret_fd)
{
	char path[PATH_MAX];
	int fd;

	if (path_join(path, dir, "lock") < 0)
		return -ENAMETOOLONG;
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0600);
	if (fd < 0)
		return -errno;
	while (flock(fd, op) < 0) {
		if (errno != EINTR) {
			int r = -errno;

			close(fd);
			return r;
		}
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
	r = lock_open(c->dir, true, LOCK_EX, &c->lock_fd);
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
	r = lock_open(dir, false, LOCK_EX | LOCK_NB, &fd);
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

int container_load(const char *root, const char *id, bool exclusive, struct container **ret)
{
	_cleanup_container_ struct container *c = NULL;
	int r;

	r = container_id_validate(id);
	if (r < 0)
		return r;
	c = container_new(root, id);
	if (!c)
		return -ENOMEM;
	c->exclusive = exclusive;
	r = lock_open(c->dir, false, exclusive ? LOCK_EX : LOCK_SH, &c->lock_fd);
	if (r == -ENOENT || r == -ENOTDIR)
		return err_set(-ENOENT, "container does not exist");
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

int container_load_for(const char *root, const char *id, enum container_op op, struct container **ret)
{
	_cleanup_container_ struct container *c = NULL;
	int r;

	r = container_load(root, id, true, &c);
	if (r < 0)
		return r;
	r = container_check(op, c->state->status, id);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(c);
	return 0;
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
