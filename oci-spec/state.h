/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Container state: what `state` and `list --format json` print (runc's
 * shapes, byte for byte), what hooks read on stdin (runtime-spec state), and
 * the on-disk <root>/<id>/state.json, which also carries a private
 * string -> string map under the "kvrun" key that is never printed.
 */
#ifndef KVRUN_OCI_SPEC_STATE_H
#define KVRUN_OCI_SPEC_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include "oci-spec/spec.h"

enum oci_status {
	OCI_STATUS_CREATING,
	OCI_STATUS_CREATED,
	OCI_STATUS_RUNNING,
	OCI_STATUS_PAUSED,
	OCI_STATUS_STOPPED,
	OCI_STATUS__MAX,
};

/* "creating", "created", "running", "paused", "stopped"; NULL out of range. */
const char *oci_status_name(enum oci_status st);
/* Inverse of oci_status_name(); -EINVAL for an unknown name. */
int oci_status_from_name(const char *name);

struct oci_state {
	char *oci_version;
	char *id;
	int pid; /* 0 when there is no process */
	enum oci_status status;
	char *bundle; /* absolute bundle path */
	char *rootfs; /* absolute rootfs path */
	char *created; /* RFC 3339 with nanoseconds, UTC: "2024-01-02T03:04:05.123456789Z" */
	char *owner; /* "" for root-owned (runc prints "") */
	struct oci_map annotations;
	struct oci_map private_data; /* the "kvrun" map of the on-disk file */
};

/* Release every member (not s itself); s may then be reused. */
void oci_state_clear(struct oci_state *s);
/* Clear and free a heap-allocated state; NULL is fine. */
void oci_state_free(struct oci_state *s);

/* Format now (CLOCK_REALTIME) as Go's time.RFC3339Nano in UTC ("...Z",
 * trailing zeros of the fraction dropped). *ret is malloc'd. */
int oci_time_now_rfc3339(char **ret);

/* `runc state <id>` output: ociVersion, id, pid, status, bundle, rootfs,
 * created, annotations (only when non-empty, keys sorted), owner; two-space
 * indentation, Go's escaping, no trailing newline (runc prints none). owner
 * is printed as given (runc's state prints "", its list the user name).
 * *ret is malloc'd, owned by the caller. */
int oci_state_to_runc_json(const struct oci_state *s, char **ret);

/* `runc list --format json` output: one compact line (with the trailing
 * newline Go's encoder writes) holding the array of states in the order
 * given, or "null\n" when n == 0, as runc prints. */
int oci_state_list_to_json(const struct oci_state *const *states, size_t n, char **ret);

/* The runtime-spec state that hooks read on stdin: ociVersion, id, status,
 * pid (omitted when 0), bundle, annotations (omitted when empty). Compact. */
int oci_state_to_hook_json(const struct oci_state *s, char **ret);

/* On-disk state.json: every field above plus "kvrun": { private_data }.
 * Compact, with a trailing newline. */
int oci_state_to_file_json(const struct oci_state *s, char **ret);

/* Parse an on-disk state.json written by oci_state_to_file_json(). name
 * prefixes error messages. Unknown fields are ignored. On success *ret is
 * heap-allocated and owned by the caller (oci_state_free()). */
int oci_state_from_file_json(const char *json, size_t len, const char *name, struct oci_state **ret);

#endif
