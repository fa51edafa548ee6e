/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun state <id>`: the container's state as runc prints it. */
#include <stdio.h>

#include "runtime/cli/cli-args.h"
#include "runtime/store/state.h"

static int run_state(struct cli_context *ctx, int argc, char **argv)
{
	const struct cli_flag flags[] = {CLI_FLAG_END};
	_cleanup_container_ struct container *c = NULL;
	_cleanup_free_ char *json = NULL;
	int r, i;

	r = cli_parse_args(&cli_cmd_state, flags, argc, argv, CLI_ARGS_EXACT, 1, &i);
	if (r != 0)
		return r < 0 ? r : 0;
	r = container_load(ctx->root, argv[i], false, &c);
	if (r < 0)
		return r;
	/* runc reports no pid for a container whose process has gone. */
	if (c->state->status == OCI_STATUS_STOPPED)
		c->state->pid = 0;
	r = oci_state_to_runc_json(c->state, &json);
	if (r < 0)
		return r;
	printf("%s\n", json);
	return 0;
}

const struct cli_command cli_cmd_state = {
    .name = "state",
    .summary = "output the state of a container",
    .args = "<container-id>",
    .text = "Where \"<container-id>\" is your name for the instance of the container.\n\n"
	    "DESCRIPTION:\n"
	    "   The state command outputs current state information for the\n"
	    "instance of a container.",
    .run = run_state,
};
