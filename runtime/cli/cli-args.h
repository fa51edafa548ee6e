/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Command-line parsing with runc's (urfave/cli v1 + Go flag) rules: flags
 * are `--name value`, `--name=value`, `-name value` or `-name=value`;
 * booleans are `--name` or `--name=true|false`; parsing stops at the first
 * positional argument or at `--`. Every command also accepts --help/-h,
 * which prints its help text.
 */
#ifndef KVRUN_RUNTIME_CLI_ARGS_H
#define KVRUN_RUNTIME_CLI_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/cleanup.h"

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

/* The command in the NULL-terminated table called name (or by its alias),
 * or NULL. */
const struct cli_command *cli_command_find(const struct cli_command *const *table, const char *name);

/* `kvrun --help`: description, usage, the commands of table and the
 * global flags (cli-help.c). */
void cli_print_main_help(const struct cli_command *const *table, const struct cli_flag *global_flags, FILE *f);

/* Returned by cli_parse() when --help was given and help was printed. */
#define CLI_HELP_SHOWN 1

/* Parse the flags of argv[1..argc-1] into flags[] (argv[0] is the command
 * name). On success *ret_index is the index of the first positional argument
 * (argc when none) and 0 is returned; CLI_HELP_SHOWN after printing the help
 * of cmd on stdout; -EINVAL with err_msg() set on a bad flag or value. */
int cli_parse(const struct cli_command *cmd, const struct cli_flag *flags, int argc, char **argv, int *ret_index);

/* Print cmd's help (NAME, USAGE, text, OPTIONS from flags) on f. */
void cli_print_help(const struct cli_command *cmd, const struct cli_flag *flags, FILE *f);

/* Print the OPTIONS lines of flags, aligned in two columns. */
void cli_print_flags(const struct cli_flag *flags, FILE *f);

enum cli_nargs {
	CLI_ARGS_EXACT,
	CLI_ARGS_MIN,
	CLI_ARGS_MAX,
};

/* Check the number of positional arguments nargs against want as runc does;
 * -EINVAL with `kvrun: "<cmd>" requires exactly N argument(s)` set. */
int cli_check_nargs(const struct cli_command *cmd, int nargs, enum cli_nargs how, int want);

/* cli_parse(), then cli_check_nargs() on the positional arguments. Returns
 * 0, CLI_HELP_SHOWN or a negative errno, as cli_parse(). */
int cli_parse_args(const struct cli_command *cmd, const struct cli_flag *flags, int argc, char **argv,
                   enum cli_nargs how, int want, int *ret_index);

/* Go strconv.ParseBool: 1 t T TRUE true True 0 f F FALSE false False. */
int cli_parse_bool(const char *s, bool *ret);

/* Go strconv.ParseInt(s, 0, 64): optional sign, 0x/0o/0b/0 prefixes, '_'
 * separators after a prefix are not accepted. -EINVAL or -ERANGE. */
int cli_parse_int(const char *s, long long *ret);

/* Go strconv.ParseUint(s, 0, 64). */
int cli_parse_uint(const char *s, unsigned long long *ret);

/* Go time.ParseDuration ("5s", "1m30s", "250ms", "1.5h"), in nanoseconds. */
int cli_parse_duration(const char *s, long long *ret_ns);

void cli_strv_free(struct cli_strv *l);
#define _cleanup_strv_ _cleanup_(cli_strv_free)

#endif
