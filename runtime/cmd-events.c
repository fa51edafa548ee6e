/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun events <id>`: container statistics and events. */
#include <errno.h>

#include "common/error.h"
#include "runtime/commands.h"
#include "runtime/state.h"

static int run_events(struct cli_context *ctx, int argc, char **argv)
{
	const char *interval = "5s";
	bool stats = false;
	const struct cli_flag flags[] = {
	    {"interval", NULL, CLI_STRING, &interval, "set the stats collection interval (default: 5s)"},
	    {"stats", NULL, CLI_BOOL, &stats, "display the container's stats then exit"},
	    CLI_FLAG_END,
	};
	_cleanup_container_ struct container *c = NULL;
	long long ns;
	int r, i;

	r = cli_parse_args(&cli_cmd_events, flags, argc, argv, CLI_ARGS_EXACT, 1, &i);
	if (r != 0)
		return r < 0 ? r : 0;
	if (cli_parse_duration(interval, &ns) < 0)
		return err_set(-EINVAL, "invalid value \"%s\" for flag -interval: parse error", interval);
	if (ns <= 0)
		return err_set(-EINVAL, "duration interval must be greater than 0");
	r = cli_load_container(ctx, argv[i], CONTAINER_OP_EVENTS, &c);
	if (r < 0)
		return r;
	return cli_not_implemented("events", "collecting container statistics");
}

const struct cli_command cli_cmd_events = {
    .name = "events",
    .summary = "display container events such as OOM notifications, cpu, memory, and IO usage statistics",
    .args = "<container-id>",
    .text = "Where \"<container-id>\" is the name for the instance of the container.\n\n"
	    "DESCRIPTION:\n"
	    "   The events command displays information about the container. By default the\n"
	    "information is displayed once every 5 seconds.",
    .run = run_events,
};
