/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OCI hooks that run on the host: prestart and createRuntime (in the
 * monitor, before the VM boots; a failure fails create), poststart (after
 * start; a failure is start's error) and poststop (in delete; failures are
 * warnings). createContainer and startContainer run inside the container
 * (guest-init). Each hook gets the state JSON on stdin, its own args and
 * env (nothing else inherited), and is killed when its timeout passes.
 */
#ifndef KVRUN_RUNTIME_HOOKS_H
#define KVRUN_RUNTIME_HOOKS_H

#include "oci-spec/spec.h"
#include "oci-spec/state.h"

/* Run the hooks of kind in spec in order, each with state on stdin. Stops
 * at the first failure: -EIO (or -ETIMEDOUT) with runc's message
 * "error running <kind> hook #<n>: exit status <s>, stdout: ..., stderr:
 * ..." or "...: timeout after <t> seconds". 0 when all succeeded or there
 * are none. */
int hooks_run(const struct oci_spec *spec, enum oci_hook_kind kind, const struct oci_state *state);

/* As hooks_run() for the bundle's config.json at bundle (used by start and
 * delete, which have only the state): loads it, runs kind. A bundle that
 * cannot be read is an error. */
int hooks_run_bundle(const char *bundle, enum oci_hook_kind kind, const struct oci_state *state);

/* Poststart hooks of the started container id under root (start, run).
 * A failure is the caller's error; the container keeps running. */
int hooks_after_start(const char *root, const char *id);

#endif
