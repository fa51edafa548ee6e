/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kvrun's own configuration file (/etc/kvrun/config.json), parsed here
 * because this layer is the only one that sees JSON. Every key is optional:
 *
 *   {"kernel": "/path/vmlinux", "initrd": "/path/initramfs.cpio",
 *    "cmdline_extra": "loglevel=4", "memory": 268435456, "cpus": 1,
 *    "template_dir": "/var/lib/kvrun/templates", "templates": true}
 *
 * "memory" is bytes (a number) or a string with a K/M/G suffix ("512M").
 */
#ifndef KVRUN_OCI_SPEC_KVRUN_CONFIG_H
#define KVRUN_OCI_SPEC_KVRUN_CONFIG_H

#include <stdint.h>

struct kvrun_config {
	char *kernel; /* NULL when absent */
	char *initrd;
	char *cmdline_extra;
	uint64_t memory; /* 0 when absent */
	unsigned int cpus; /* 0 when absent */
	char *template_dir; /* where VM templates are kept; NULL when absent */
	int templates; /* start containers from templates: 1, 0, or -1 when absent */
};

/* Parse len bytes of JSON; name prefixes messages ("<name>: memory: ...").
 * Unknown keys are an error (a typo must not be silently ignored). On
 * success *ret is filled and owned by the caller (kvrun_config_clear()). */
int kvrun_config_parse(const char *json, size_t len, const char *name, struct kvrun_config *ret);

/* Read and parse path; -ENOENT (no message) when it does not exist. */
int kvrun_config_load(const char *path, struct kvrun_config *ret);

void kvrun_config_clear(struct kvrun_config *c);

#endif
