/* SPDX-License-Identifier: Apache-2.0 */
/*
 * docker's daemon configuration (/etc/docker/daemon.json) as far as the
 * runtimes go: `kvrun check` reads which runtime names point at which
 * binary and which is the default, and `kvrun check --fix` adds one. The
 * file is JSON, and this layer is the one that reads JSON.
 *
 *   {"runtimes": {"kvrun": {"path": "/usr/bin/kvrun", "runtimeArgs": []}},
 *    "default-runtime": "runc"}
 */
#ifndef KVRUN_OCI_SPEC_DOCKER_CONFIG_H
#define KVRUN_OCI_SPEC_DOCKER_CONFIG_H

#include <stddef.h>

struct docker_runtime {
	char *name;
	char *path; /* NULL when the entry has no string "path" */
};

struct docker_config {
	struct docker_runtime *runtimes;
	size_t nruntimes;
	char *default_runtime; /* NULL when not set */
};

/* Parse len bytes of daemon.json (len 0: an empty file, no runtimes).
 * -EINVAL with a message naming name when it is not a JSON object or
 * "runtimes" is not an object. */
int docker_config_parse(const char *json, size_t len, const char *name, struct docker_config *ret);
void docker_config_clear(struct docker_config *c);

/* daemon.json (len bytes, 0 for none yet) with the runtime name -> path
 * added or replaced, keeping every other key; malloc'd, indented text. */
int docker_config_add_runtime(const char *json, size_t len, const char *name, const char *path, char **ret);

#endif
