/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What kvrun applies of the runtime spec, in one place for both sides:
 * guest-init applies these (its mount flags, its seccomp filter, the
 * namespaces it creates), the host's config.json checks accept them, and
 * `kvrun features` lists them. A name missing here is one nothing honours.
 */
#ifndef KVRUN_COMMON_SPEC_SUPPORT_H
#define KVRUN_COMMON_SPEC_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>

/* A mount option that is a mount(2) flag: set (or, with clear, cleared),
 * or a propagation change (propagation). Others go to the filesystem as
 * its data ("mode=755", "size=64m"). */
struct spec_mount_option {
	const char *name;
	unsigned long flag;
	bool clear;
	bool propagation;
};

extern const struct spec_mount_option spec_mount_options[];
extern const size_t spec_mount_options_count;

/* The option called name, or NULL. */
const struct spec_mount_option *spec_mount_option_find(const char *name);

/* Their names, sorted as runc prints them (NULL-terminated, static). */
const char *const *spec_mount_option_names(void);

/* A namespace the container gets: clone_flag is what guest-init unshares
 * for it (0: the VM has it as a whole, as its own network stack). */
struct spec_namespace {
	const char *name;
	int clone_flag;
};

extern const struct spec_namespace spec_namespaces[];
extern const size_t spec_namespaces_count;

/* Their names (NULL-terminated, static). */
const char *const *spec_namespace_names(void);

/* Seccomp: the actions, operators, architectures and flags guest-init
 * turns into its libseccomp filter (NULL-terminated). */
extern const char *const spec_seccomp_actions[];
extern const char *const spec_seccomp_operators[];
extern const char *const spec_seccomp_archs[];
extern const char *const spec_seccomp_flags[];

#endif
