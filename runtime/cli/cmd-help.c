/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun help [command]`. */
#include <errno.h>
#include <stdio.h>

#include "common/error.h"
#include "runtime/cli/cli-global.h"
#include "runtime/cli/cli-args.h"

static int run_help(struct cli_context *ctx, int argc, char **argv)
{
	const struct cli_flag flags[] = {CLI_FLAG_END};
	const struct cli_command *cmd;
	char help_flag[] = "--help";
	char *sub_argv[3];
	int r, i;

	r = cli_parse_args(&cli_cmd_help, flags, argc, argv, CLI_ARGS_MAX, 1, &i);
	if (r != 0)
		return r < 0 ? r : 0;
	if (i == argc) {
		cli_global_print_help(ctx->commands, stdout);
		return 0;
	}
	cmd = cli_command_find(ctx->commands, argv[i]);
	if (!cmd)
		return err_set(-EINVAL, "No help topic for '%s'", argv[i]);
	/* Each verb prints its own help, flags included. */
	sub_argv[0] = argv[i];
	sub_argv[1] = help_flag;
	sub_argv[2] = NULL;
	return cmd->run(ctx, 2, sub_argv);
}

const struct cli_command cli_cmd_help = {
    .name = "help",
    .alias = "h",
    .summary = "Shows a list of commands or help for one command",
    .args = "[command]",
    .run = run_help,
};
