/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The container engines on this host (docker, podman, containerd, CRI-O)
 * and whether each is configured to run kvrun: a runtime entry in its
 * configuration whose binary is kvrun. For `kvrun check`, which prints the
 * lines to add where one is missing, and `kvrun check --fix`, which adds
 * them (docs/engines.md has the same snippets).
 *
 * Like host-probe.h, everything is read below a root directory ("" for
 * this host): binaries in its /usr/bin, /usr/sbin, /usr/local/bin, ...;
 * configuration in its /etc.
 */
#ifndef KVRUN_RUNTIME_HOST_ENGINE_PROBE_H
#define KVRUN_RUNTIME_HOST_ENGINE_PROBE_H

#include <stdbool.h>

enum engine_id {
	ENGINE_DOCKER,
	ENGINE_PODMAN,
	ENGINE_CONTAINERD,
	ENGINE_CRIO,
	ENGINE_COUNT,
};

struct engine_status {
	enum engine_id id;
	const char *name; /* "docker" */
	char *binary; /* the engine's binary found, or NULL: not installed */
	char *config; /* the file that holds (or would hold) the runtime entry */
	char *runtime; /* the name of the runtime entry that runs kvrun, or NULL */
	char *runtime_path; /* the binary that entry names */
	bool other_kvrun; /* that binary is a kvrun, but not this one */
	bool is_default; /* the engine runs that runtime by default */
	char *error; /* the configuration could not be read, or NULL */
	int config_version; /* containerd's config.toml "version": 0 no file, 1 file without one, 2, 3 (containerd 2) */
};

/* Probe engine id below root for a kvrun at kvrun_path (this binary).
 * Never fails but for -ENOMEM: what could not be read is in ret->error. */
int engine_probe(const char *root, enum engine_id id, const char *kvrun_path, struct engine_status *ret);
void engine_status_done(struct engine_status *s);

/* The lines that register kvrun_path as runtime "kvrun" with engine id, as
 * they go into ret->config (malloc'd, ending with a newline). containerd:
 * for the config file's version (2, or 3 for containerd 2). */
int engine_snippet(const struct engine_status *s, const char *kvrun_path, char **ret);

/* Add the runtime "kvrun" to the engine's configuration under root: a copy
 * of the file as it was goes to "<file>.kvrun-backup" first (when there was
 * one); docker's daemon.json is rewritten with the entry added, podman and
 * CRI-O get a drop-in file of their own, containerd's config.toml gets the
 * tables appended. *ret_backup (malloc'd, NULL when there was no file) is
 * the backup. -EEXIST with a message when a runtime named kvrun exists but
 * names another binary (nothing is changed then). */
int engine_fix(const char *root, const struct engine_status *s, const char *kvrun_path, char **ret_backup);

#endif
