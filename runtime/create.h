/* SPDX-License-Identifier: Apache-2.0 */
/* Creating a container: the checks shared by create, run and restore. */
#ifndef KVRUN_RUNTIME_CREATE_H
#define KVRUN_RUNTIME_CREATE_H

#include <stdbool.h>

#include "runtime/bundle.h"
#include "runtime/commands.h"

/* The flags of create, run and restore (each verb uses a subset). */
struct create_opts {
	const char *bundle;
	const char *console_socket;
	const char *pid_file;
	const char *pidfd_socket;
	bool no_pivot;
	bool no_new_keyring;
	bool no_subreaper;
	bool detach;
	bool keep;
	unsigned long long preserve_fds;
	const char *image_path; /* restore: the checkpoint directory */
};

/* Check that id is valid and unused, load and validate the bundle, and check
 * the terminal / console-socket combination as runc does (detached is true
 * for create). On success *ret is owned by the caller. Nothing is written. */
int create_prepare(struct cli_context *ctx, const char *id, const struct create_opts *o, bool detached,
                   struct bundle **ret);

#endif
