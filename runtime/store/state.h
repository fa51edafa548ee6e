/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The container state store: one directory per container under the state
 * root, `<root>/<id>/state.json` in runc's state format (oci-spec/state.h)
 * plus a `lock` file. Every kvrun process finds a container again through
 * this store; each one holds flock() on the lock file while it reads or
 * changes the state, and state.json is always replaced atomically.
 *
 * Status is "live": a recorded process that has died (or whose pid now
 * belongs to another process) reads as stopped, as runc does.
 *
 * Error messages are runc's ("container does not exist", "container with id
 * exists: X", "cannot start a container that has stopped", ...), recorded with
 * err_set(); functions return 0 or a negative errno.
 */
#ifndef KVRUN_RUNTIME_STATE_H
#define KVRUN_RUNTIME_STATE_H

#include <stdbool.h>
#include <sys/types.h>

#include "oci-spec/state.h"
#include "runtime/store/state-rules.h"

/* Keys of kvrun's private map in state.json. */
#define STATE_KEY_PID_START "pid-start-time" /* /proc start time of pid */
#define STATE_KEY_CREATOR_PID "creator-pid" /* the `create` process */
#define STATE_KEY_CREATOR_START "creator-start-time" /* its /proc start time */

/* An open, locked container. */
struct container {
	char *root; /* the state root, as given */
	char *dir; /* <root>/<id> */
	int lock_fd; /* flock()ed LOCK_EX when exclusive, else -1 */
	bool exclusive;
	struct oci_state *state; /* with the live status */
};

/* Store options: the /proc root (tests point it at a fake one). */
extern const char *container_proc_root;

/* Claim state->id under root (root is created 0700 if missing): build
 * <root>/<id> with its lock taken exclusively and state written, and move it
 * into place atomically (status must be
 * CREATING; the creator's pid and start time are added to the private map).
 * Takes ownership of state (heap-allocated), also on failure.
 * -EEXIST: "container with id exists: <id>". On success *ret is owned by the
 * caller (container_free()) and (*ret)->state is state. */
int container_create(const char *root, struct oci_state *state, struct container **ret);

/* Fill a zeroed s for a new container: ociVersion, id, bundle, rootfs
 * (copied), created (now), owner ("" for root, as runc), status CREATING.
 * 0 or -ENOMEM. */
int container_state_init(struct oci_state *s, const char *id, const char *bundle, const char *rootfs);

/* How long a writer waits for a container's lock: $KVRUN_LOCK_TIMEOUT
 * seconds (1..3600), 30 by default. */
int container_lock_timeout_ms(void);

/* Open id under root, read state.json and compute the live status. With
 * exclusive, lock it first, waiting at most container_lock_timeout_ms()
 * (-EBUSY with a message naming the creating process when a create holds
 * it); without, take no lock (a snapshot that may be stale as soon as it is
 * read; it cannot be saved). -ENOENT: "container does not exist". */
int container_load(const char *root, const char *id, bool exclusive, struct container **ret);

/* container_load() without the lock, then container_check() that op is
 * allowed in its live status: for verbs that change nothing in the store
 * (kill, events). */
int container_peek_for(const char *root, const char *id, enum container_op op, struct container **ret);

/* container_peek_for() (so that an op the state forbids fails at once,
 * even while a create holds the lock), then container_load() locked
 * exclusively and container_check() again on what it read. On success
 * *ret is owned by the caller. */
int container_load_for(const char *root, const char *id, enum container_op op, struct container **ret);

/* Fail with "container with id exists: <id>" unless id is valid and no
 * container under root has it. */
int container_check_new_id(const char *root, const char *id);

/* Read c's state.json again (another process that shares the lock, the
 * monitor during create, may have written it), with the live status. On
 * failure c->state is left as it was. */
int container_reload(struct container *c);

/* Change the status (checked with container_status_change_ok()), and for
 * pid > 0 also record pid and its start time; then save. Needs the
 * exclusive lock. */
int container_set_status(struct container *c, enum oci_status status, pid_t pid);

/* Record pid (and its start time) without changing the status, and save.
 * Needs the exclusive lock. */
int container_record_pid(struct container *c, pid_t pid);

/* Read state.json again into c->state (what another process holding a
 * copy of c's lock wrote: the monitor, for create). */
int container_reload(struct container *c);

/* Write c->state to state.json atomically. Needs the exclusive lock. */
int container_save(struct container *c);

/* Remove the container's directory (state, lock and all) and free c. Needs
 * the exclusive lock. c is freed even on failure. */
int container_destroy(struct container *c);

/* The uid of the container's jail (STATE_KEY_JAIL_UID, recorded by its
 * monitor), which its exec and member proxies take too: 1 with *ret set,
 * 0 with *ret 0 when its monitor runs without one, -EINVAL naming a
 * malformed value. */
int container_jail_uid(const struct container *c, uid_t *ret);

/* Remove <root>/<id> when it is a directory without state.json that nobody
 * holds locked (what a crash half-way through a removal leaves), as runc's
 * delete does. 0 when there was nothing to remove. */
int container_remove_leftover(const char *root, const char *id);

/* Unlock and free; NULL is fine. */
void container_free(struct container *c);
static inline void container_freep(struct container **c)
{
	container_free(*c);
}
#define _cleanup_container_ _cleanup_(container_freep)

/* Ids of the entries of root that are directories with a valid id, sorted.
 * A missing root gives an empty list. *ret_ids is a NULL-terminated malloc'd
 * array of malloc'd strings (free with container_ids_free()). */
int container_list_ids(const char *root, char ***ret_ids);
void container_ids_free(char **ids);

/* The live status of s: its recorded status, unless the process it names
 * has gone (then stopped). Reads /proc; does not write anything. */
enum oci_status container_live_status(const struct oci_state *s);

#endif
