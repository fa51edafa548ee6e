/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun start <id>`: executes the user defined process in a created container. */
#include "runtime/cli/cli-args.h"
#include "runtime/store/hooks.h"
#include "runtime/cli/launch-ctl.h"

static int run_start(struct cli_context *ctx, int argc, char **argv)
{
	const struct cli_flag flags[] = {CLI_FLAG_END};
	int r, i;

	r = cli_parse_args(&cli_cmd_start, flags, argc, argv, CLI_ARGS_EXACT, 1, &i);
	if (r != 0)
		return r < 0 ? r : 0;
	r = launch_start(ctx, argv[i]);
	return r < 0 ? r : hooks_after_start(ctx->root, argv[i]);
}

const struct cli_command cli_cmd_start = {
    .name = "start",
    .summary = "executes the user defined process in a created container",
    .args = "<container-id>",
    .text = "Where \"<container-id>\" is your name for the instance of the container that you\n"
	    "are starting. The name you provide for the container instance must be unique on\n"
	    "your host.\n\n"
	    "DESCRIPTION:\n"
	    "   The start command executes the user defined process in a created container.",
    .run = run_start,
};
