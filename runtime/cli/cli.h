/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The command line's types: a verb (struct cli_command), its flags (struct
 * cli_flag), the global options every verb gets (struct cli_context), and
 * the verbs themselves, each defined in runtime/cli/cmd-<verb>.c. Parsing
 * is in cli-args.h, help texts in cli-help.h, the dispatch table in
 * commands.h. A header of types only, so that the files of the CLI can
 * share it without depending on each other.
 */
#ifndef KVRUN_RUNTIME_CLI_CLI_H
#define KVRUN_RUNTIME_CLI_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/cli/log-sink.h"

enum cli_flag_type {
	CLI_BOOL, /* bool * */
	CLI_STRING, /* const char ** (points into argv) */
	CLI_INT, /* long long *, Go strconv.ParseInt(s, 0, 64) syntax */
	CLI_UINT, /* unsigned long long *, Go strconv.ParseUint(s, 0, 64) */
	CLI_STRV, /* struct cli_strv *, repeated flag appends */
	CLI_OPTSTRING, /* const char **: `--name=value`, or `--name` alone for "" (never the next word) */
};

/* A growable list of strings pointing into argv; free with cli_strv_free(). */
struct cli_strv {
	const char **v;
	size_t n;
};

struct cli_flag {
	const char *name; /* long name without dashes */
	const char *alias; /* a second name (usually one letter), or NULL */
	enum cli_flag_type type;
	void *ptr; /* where the value goes, see cli_flag_type */
	const char *help; /* one line for the OPTIONS section */
};

/* Terminates a struct cli_flag array. */
#define CLI_FLAG_END                             \
	{                                        \
		NULL, NULL, CLI_BOOL, NULL, NULL \
	}

struct cli_context;

/* One verb of the command line. The help text is assembled from these. */
struct cli_command {
	const char *name;
	const char *alias; /* e.g. "h" for help, or NULL */
	const char *summary; /* one line for `kvrun --help` */
	const char *args; /* usage after "kvrun <name> [command options] " */
	const char *text; /* free text after USAGE (may be NULL) */
	/* Runs the verb; argv[0] is the verb's name. Returns an exit status
	 * (>= 0) or a negative errno with err_msg() set, which the caller
	 * reports and turns into exit status 1. */
	int (*run)(struct cli_context *ctx, int argc, char **argv);
};

/* Returned by cli_parse() when --help was given and help was printed. */
#define CLI_HELP_SHOWN 1

enum cli_nargs {
	CLI_ARGS_EXACT,
	CLI_ARGS_MIN,
	CLI_ARGS_MAX,
};

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

/* The verbs, in runtime/cli/cmd-<verb>.c. */
extern const struct cli_command cli_cmd_checkpoint, cli_cmd_create, cli_cmd_delete, cli_cmd_events, cli_cmd_exec,
    cli_cmd_kill, cli_cmd_list, cli_cmd_pause, cli_cmd_ps, cli_cmd_restore, cli_cmd_resume, cli_cmd_run, cli_cmd_spec,
    cli_cmd_start, cli_cmd_state, cli_cmd_update, cli_cmd_features, cli_cmd_check, cli_cmd_boot, cli_cmd_template,
    cli_cmd_help;

#endif
