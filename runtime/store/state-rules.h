/* SPDX-License-Identifier: Apache-2.0 */
/* The state store's rules, without I/O (state-rules.c): valid ids, what
 * each status allows, which status changes are allowed. Messages are
 * runc's, recorded with err_set(). */
#ifndef KVRUN_RUNTIME_STATE_RULES_H
#define KVRUN_RUNTIME_STATE_RULES_H

#include "oci-spec/state.h"

/* Longest id accepted: it names a directory. */
#define CONTAINER_ID_MAX 255

/* runc's id rule: ^[\w+-\.]+$ (word characters and + , - .), not "." or
 * "..", at most CONTAINER_ID_MAX bytes. -EINVAL with runc's messages:
 * "container id cannot be empty", "invalid container ID format". */
int container_id_validate(const char *id);

/* What a verb wants to do to a container; see container_check(). */
enum container_op {
	CONTAINER_OP_START,
	CONTAINER_OP_KILL,
	CONTAINER_OP_DELETE,
	CONTAINER_OP_DELETE_FORCE,
	CONTAINER_OP_PAUSE,
	CONTAINER_OP_RESUME,
	CONTAINER_OP_EXEC,
	CONTAINER_OP_EXEC_IGNORE_PAUSED,
	CONTAINER_OP_UPDATE,
	CONTAINER_OP_CHECKPOINT,
	CONTAINER_OP_EVENTS,
};

/* Whether op is allowed in status; -EINVAL (or -ESRCH for "container not
 * running") with runc's message naming id otherwise. Pure: no I/O. */
int container_check(enum container_op op, enum oci_status status, const char *id);

/* Whether the state machine allows from -> to: creating -> created,
 * created -> running, running <-> paused, created -> paused, and any state
 * -> stopped. -EINVAL with a message otherwise. */
int container_status_change_ok(enum oci_status from, enum oci_status to);

#endif
