/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun kill <id> [signal]`: send a signal to the container's process. */
#include <errno.h>
#include <signal.h>

#include "common/error.h"
#include "oci-spec/spec.h"
#include "runtime/cli/cli-args.h"
#include "runtime/cli/launch-ctl.h"
#include "runtime/store/state.h"

static int run_kill(struct cli_context *ctx, int argc, char **argv)
{
	bool all = false;
	const struct cli_flag flags[] = {
	    {"all", "a", CLI_BOOL, &all, "send the specified signal to all processes inside the container"},
	    CLI_FLAG_END,
	};
	_cleanup_container_ struct container *c = NULL;
	int r, i, sig = SIGTERM;

	r = cli_parse_args(&cli_cmd_kill, flags, argc, argv, CLI_ARGS_MIN, 1, &i);
	if (r != 0)
		return r < 0 ? r : 0;
	r = cli_check_nargs(&cli_cmd_kill, argc - i, CLI_ARGS_MAX, 2);
	if (r < 0)
		return r;
	/* runc's order: the container first (a missing one is reported as
	 * such whatever the signal), then the signal, "" meaning SIGTERM. */
	r = container_load(ctx->root, argv[i], false, &c);
	if (r < 0)
		return r;
	container_free(TAKE_PTR(c));
	if (argc - i == 2 && argv[i + 1][0]) {
		sig = oci_signal_from_name(argv[i + 1]);
		if (sig == -EINVAL)
			return err_set(-EINVAL, "unknown signal \"%s\"", argv[i + 1]);
	}
	return launch_kill(ctx, argv[i], sig, all);
}

const struct cli_command cli_cmd_kill = {
    .name = "kill",
    .summary = "kill sends the specified signal (default: SIGTERM) to the container's init process",
    .args = "<container-id> [signal]",
    .text = "Where \"<container-id>\" is the name for the instance of the container and\n"
	    "\"[signal]\" is the signal to be sent to the init process.\n\n"
	    "EXAMPLE:\n"
	    "For example, if the container id is \"ubuntu01\" the following will send a \"KILL\"\n"
	    "signal to the init process of the \"ubuntu01\" container:\n\n"
	    "       # kvrun kill ubuntu01 KILL",
    .run = run_kill,
};
