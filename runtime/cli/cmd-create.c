/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun create <id>`: create a container from a bundle, stopped before its
 * process starts. */
#include "runtime/cli/cli-args.h"
#include "runtime/cli/launch.h"

static int run_create(struct cli_context *ctx, int argc, char **argv)
{
	struct create_opts o = {0};
	const struct cli_flag flags[] = {
	    CREATE_FLAG_BUNDLE(o),       CREATE_FLAG_CONSOLE_SOCKET(o),
	    CREATE_FLAG_PIDFD_SOCKET(o), CREATE_FLAG_PID_FILE(o),
	    CREATE_FLAG_NO_PIVOT(o),     CREATE_FLAG_NO_NEW_KEYRING(o),
	    CREATE_FLAG_PRESERVE_FDS(o), CLI_FLAG_END,
	};
	_cleanup_bundle_ struct bundle *b = NULL;
	pid_t pid;
	int r, i;

	r = cli_parse_args(&cli_cmd_create, flags, argc, argv, CLI_ARGS_EXACT, 1, &i);
	if (r != 0)
		return r < 0 ? r : 0;
	r = create_prepare(ctx, argv[i], &o, true, &b);
	if (r < 0)
		return r;
	return launch_container(ctx, argv[i], &o, b, &pid);
}

const struct cli_command cli_cmd_create = {
    .name = "create",
    .summary = "create a container",
    .args = "<container-id>",
    .text = "Where \"<container-id>\" is your name for the instance of the container that you\n"
	    "are starting. The name you provide for the container instance must be unique on\n"
	    "your host.\n\n"
	    "DESCRIPTION:\n"
	    "   The create command creates an instance of a container for a bundle. The bundle\n"
	    "is a directory with a specification file named \"config.json\" and a root\n"
	    "filesystem.\n\n"
	    "The specification file includes an args parameter. The args parameter is used\n"
	    "to specify command(s) that get run when the container is started. To change the\n"
	    "command(s) that get executed on start, edit the args parameter of the spec. See\n"
	    "\"kvrun spec --help\" for more explanation.",
    .run = run_create,
};
