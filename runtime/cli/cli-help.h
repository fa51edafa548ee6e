/* SPDX-License-Identifier: Apache-2.0 */
/* Help texts laid out as runc's (urfave/cli v1): NAME, USAGE, the text,
 * OPTIONS. */
#ifndef KVRUN_RUNTIME_CLI_HELP_H
#define KVRUN_RUNTIME_CLI_HELP_H

#include <stdio.h>

#include "runtime/cli/cli.h"

/* Print cmd's help (NAME, USAGE, text, OPTIONS from flags) on f. */
void cli_print_help(const struct cli_command *cmd, const struct cli_flag *flags, FILE *f);

/* Print the OPTIONS lines of flags, aligned in two columns. */
void cli_print_flags(const struct cli_flag *flags, FILE *f);

/* `kvrun --help`: description, usage, the commands of table and the
 * global flags (cli-help.c). */
void cli_print_main_help(const struct cli_command *const *table, const struct cli_flag *global_flags, FILE *f);

#endif
