/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verbs of the kvrun command line and the options they share. Each verb
 * lives in runtime/cli/cmd-<verb>.c and exports one `struct cli_command`;
 * the dispatch table in commands.c lists them in `kvrun --help` order.
 * Nothing in the library refers to that table: main() hands it over in
 * struct cli_context, so the verbs below it do not depend on each other.
 */
#ifndef KVRUN_RUNTIME_COMMANDS_H
#define KVRUN_RUNTIME_COMMANDS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "runtime/cli/cli-args.h"
#include "runtime/cli/log-sink.h"

#define KVRUN_DEFAULT_ROOT "/run/kvrun"

enum rootless_mode {
	ROOTLESS_AUTO,
	ROOTLESS_FALSE,
	ROOTLESS_TRUE,
};

/* Global options, parsed before the verb. */
struct cli_context {
	const char *root; /* state directory, KVRUN_DEFAULT_ROOT by default */
	const char *log_path;
	enum log_format log_format;
	bool debug;
	bool systemd_cgroup;
	enum rootless_mode rootless;
	const char *criu; /* accepted for runc compatibility, unused */
	const char *kernel; /* --kernel: the guest kernel for new containers (vm-config.h), or NULL */
	int fail_status; /* exit status when the verb fails (0: 1); exec's is 255, as runc's */
	uint64_t t_start_ns; /* CLOCK_MONOTONIC when main() began */
	const struct cli_command *const *commands; /* every verb (cli_commands), for help */
};

extern const struct cli_command cli_cmd_checkpoint, cli_cmd_create, cli_cmd_delete, cli_cmd_events, cli_cmd_exec,
    cli_cmd_kill, cli_cmd_list, cli_cmd_pause, cli_cmd_ps, cli_cmd_restore, cli_cmd_resume, cli_cmd_run, cli_cmd_spec,
    cli_cmd_start, cli_cmd_state, cli_cmd_update, cli_cmd_features, cli_cmd_boot, cli_cmd_template, cli_cmd_help;

/* NULL-terminated, in help order. */
extern const struct cli_command *const cli_commands[];

#endif
