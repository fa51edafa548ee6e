/* SPDX-License-Identifier: Apache-2.0 */
/* Help texts laid out as runc's (urfave/cli v1): NAME, USAGE, the text,
 * OPTIONS. */
#ifndef KVRUN_RUNTIME_CLI_HELP_H
#define KVRUN_RUNTIME_CLI_HELP_H

#include <stdio.h>

#include "runtime/cli/cli.h"

struct cli_doc;

enum cli_help_format {
	CLI_HELP_TEXT, /* what --help prints */
	CLI_HELP_MAN, /* manual pages (cli-doc.h) */
	CLI_HELP_COLLECT, /* nothing printed: commands and flags kept in a struct cli_doc */
};

/* From now on, cli_print_help() and cli_print_main_help() write fmt (on
 * their FILE, or into doc for CLI_HELP_COLLECT): `kvrun help --man` and
 * `--completion` run the verbs' --help this way, so that the manual pages
 * and completion scripts come from the same tables. */
void cli_help_set_format(enum cli_help_format fmt, struct cli_doc *doc);
enum cli_help_format cli_help_get_format(void);

/* Print cmd's help (NAME, USAGE, text, OPTIONS from flags) on f. */
void cli_print_help(const struct cli_command *cmd, const struct cli_flag *flags, FILE *f);

/* Print the OPTIONS lines of flags, aligned in two columns. */
void cli_print_flags(const struct cli_flag *flags, FILE *f);

/* `kvrun --help`: description, usage, the commands of table and the
 * global flags (cli-help.c). */
void cli_print_main_help(const struct cli_command *const *table, const struct cli_flag *global_flags, FILE *f);

#endif
