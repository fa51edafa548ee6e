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
#include <stdio.h>

#include "common/cleanup.h"
#include "runtime/cli/cli.h"

/* Parse the flags of argv[1..argc-1] into flags[] (argv[0] is the command
 * name). On success *ret_index is the index of the first positional argument
 * (argc when none) and 0 is returned; CLI_HELP_SHOWN after printing the help
 * of cmd on stdout; -EINVAL with err_msg() set on a bad flag or value. */
int cli_parse(const struct cli_command *cmd, const struct cli_flag *flags, int argc, char **argv, int *ret_index);

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

/* The command in the NULL-terminated table called name (or by its alias),
 * or NULL. */
const struct cli_command *cli_command_find(const struct cli_command *const *table, const char *name);

#endif
