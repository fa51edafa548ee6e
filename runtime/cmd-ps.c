/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun ps <id> [ps options]`: the host processes of a container. */
#include <errno.h>
#include <string.h>

#include "common/error.h"
#include "runtime/commands.h"
#include "runtime/state.h"

static int run_ps(struct cli_context *ctx, int argc, char **argv)
{
	const char *format = "table";
	const struct cli_flag flags[] = {
	    {"format", "f", CLI_STRING, &format, "select one of: table or json (default: \"table\")"},
	    CLI_FLAG_END,
	};
	_cleanup_container_ struct container *c = NULL;
	int r, i;

	r = cli_parse_args(&cli_cmd_ps, flags, argc, argv, CLI_ARGS_MIN, 1, &i);
	if (r != 0)
		return r < 0 ? r : 0;
	if (strcmp(format, "table") && strcmp(format, "json"))
		return err_set(-EINVAL, "invalid format option");
	r = container_load(ctx->root, argv[i], false, &c);
	if (r < 0)
		return r;
	return cli_not_implemented("ps", "listing the processes of a container");
}

const struct cli_command cli_cmd_ps = {
    .name = "ps",
    .summary = "ps displays the processes running inside a container",
    .args = "<container-id> [ps options]",
    .run = run_ps,
};
