/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun run <id>`: create a container and start it; without --detach, wait
 * for its process and exit with its status. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "runtime/cli/cli-args.h"
#include "runtime/store/hooks.h"
#include "runtime/cli/launch.h"
#include "runtime/cli/launch-ctl.h"
#include "runtime/store/state.h"

/* The container is gone (or going): remove what is left of it. */
static void remove_container(struct cli_context *ctx, const char *id)
{
	struct container *c = NULL;

	if (container_load(ctx->root, id, true, &c) >= 0)
		launch_destroy(c);
}

static void start_failed(struct cli_context *ctx, const char *id, pid_t pid)
{
	_cleanup_free_ char *msg = strdup(err_msg());

	launch_kill_monitor(pid, 10000);
	remove_container(ctx, id);
	err_set(-EIO, "%s", msg ? msg : "start failed");
}

static int run_run(struct cli_context *ctx, int argc, char **argv)
{
	struct create_opts o = {0};
	const struct cli_flag flags[] = {
	    CREATE_FLAG_BUNDLE(o),
	    CREATE_FLAG_CONSOLE_SOCKET(o),
	    CREATE_FLAG_PIDFD_SOCKET(o),
	    CREATE_FLAG_DETACH(o),
	    {"keep", NULL, CLI_BOOL, &o.keep, "do not delete the container after it exits"},
	    CREATE_FLAG_PID_FILE(o),
	    CREATE_FLAG_NO_SUBREAPER(o),
	    CREATE_FLAG_NO_PIVOT(o),
	    CREATE_FLAG_NO_NEW_KEYRING(o),
	    CREATE_FLAG_PRESERVE_FDS(o),
	    CLI_FLAG_END,
	};
	_cleanup_bundle_ struct bundle *b = NULL;
	const char *id;
	pid_t pid;
	int r, i;

	r = cli_parse_args(&cli_cmd_run, flags, argc, argv, CLI_ARGS_EXACT, 1, &i);
	if (r != 0)
		return r < 0 ? r : 0;
	r = create_prepare(ctx, argv[i], &o, o.detach, &b);
	if (r < 0)
		return r;
	id = argv[i];
	r = launch_container(ctx, id, &o, b, &pid);
	if (r < 0)
		return r;
	r = launch_start(ctx, id);
	if (r >= 0)
		r = hooks_after_start(ctx->root, id);
	if (r < 0) {
		start_failed(ctx, id, pid);
		return r;
	}
	if (o.detach)
		return 0;
	r = launch_wait(ctx, id, pid);
	if (!o.keep)
		remove_container(ctx, id);
	return r;
}

const struct cli_command cli_cmd_run = {
    .name = "run",
    .summary = "create and run a container",
    .args = "<container-id>",
    .text = "Where \"<container-id>\" is your name for the instance of the container that you\n"
	    "are starting. The name you provide for the container instance must be unique on\n"
	    "your host.\n\n"
	    "DESCRIPTION:\n"
	    "   The run command creates an instance of a container for a bundle. The bundle\n"
	    "is a directory with a specification file named \"config.json\" and a root\n"
	    "filesystem.\n\n"
	    "The specification file includes an args parameter. The args parameter is used\n"
	    "to specify command(s) that get run when the container is started. To change the\n"
	    "command(s) that get executed on start, edit the args parameter of the spec. See\n"
	    "\"kvrun spec --help\" for more explanation.",
    .run = run_run,
};
