/* SPDX-License-Identifier: Apache-2.0 */
/* The state store's rules, without I/O: which ids are valid, which verb
 * each status allows, which status changes are allowed. */
#include <errno.h>
#include <string.h>

#include "common/error.h"
#include "runtime/store/state-rules.h"

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
