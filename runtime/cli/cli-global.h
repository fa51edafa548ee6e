/* SPDX-License-Identifier: Apache-2.0 */
/* The global flags that come before the verb (`kvrun --root DIR state x`). */
#ifndef KVRUN_RUNTIME_CLI_GLOBAL_H
#define KVRUN_RUNTIME_CLI_GLOBAL_H

#include "runtime/cli/cli.h"

/* What the global flags asked for besides filling the context. */
enum cli_global_action {
	CLI_GLOBAL_RUN, /* run the verb at *ret_index */
	CLI_GLOBAL_HELP, /* --help, or no verb at all */
	CLI_GLOBAL_VERSION, /* --version */
};

/* Fill ctx from argv's global flags (defaults for the rest). On success
 * returns an enum cli_global_action and *ret_index is the index of the verb;
 * -EINVAL with err_msg() set on a bad flag or value. */
int cli_global_parse(struct cli_context *ctx, int argc, char **argv, int *ret_index);

/* `kvrun --help`. */
void cli_global_print_help(const struct cli_command *const *commands, FILE *f);

/* `kvrun --version`: "kvrun version X.Y.Z", "commit: ...", "spec: ...". */
void cli_global_print_version(FILE *f);

#endif
