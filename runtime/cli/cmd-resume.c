/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun resume <id>`: resumes all processes that have been previously paused. */
#include <stdio.h>

#include "runtime/cli/cli-args.h"
#include "runtime/cli/launch-member.h"
#include "runtime/store/monitor-client.h"
#include "runtime/store/state.h"

#define PAUSE_TIMEOUT_MS 30000

static int run_resume(struct cli_context *ctx, int argc, char **argv)
{
	const struct cli_flag flags[] = {CLI_FLAG_END};
	_cleanup_container_ struct container *c = NULL;
	_cleanup_free_ char *sandbox_dir = NULL;
	uint32_t member = 0;
	char req[32];
	int r, i;

	r = cli_parse_args(&cli_cmd_resume, flags, argc, argv, CLI_ARGS_EXACT, 1, &i);
	if (r != 0)
		return r < 0 ? r : 0;
	r = container_load_for(ctx->root, argv[i], CONTAINER_OP_RESUME, &c);
	if (r < 0)
		return r;
	/* An app container of a pod: its guest cgroup, through the
	 * sandbox's monitor; the sandbox's own "resume" is its container's
	 * cgroup too (docs/runtime.md, "Pods"). */
	r = launch_member_sandbox(c, ctx->root, &sandbox_dir, &member);
	if (r < 0)
		return r;
	snprintf(req, sizeof(req), member ? "resume %u" : "resume", member);
	r = monitor_call(member ? sandbox_dir : c->dir, req, PAUSE_TIMEOUT_MS, NULL);
	if (r < 0)
		return r;
	return container_set_status(c, OCI_STATUS_RUNNING, 0);
}

const struct cli_command cli_cmd_resume = {
    .name = "resume",
    .summary = "resumes all processes that have been previously paused",
    .args = "<container-id>",
    .text = "Where \"<container-id>\" is the name for the instance of the container to be\n"
	    "resumed.\n\n"
	    "DESCRIPTION:\n"
	    "   The resume command resumes all processes in the instance of the container.\n\n"
	    "Use kvrun list to identify instances of containers and their current status.",
    .run = run_resume,
};
