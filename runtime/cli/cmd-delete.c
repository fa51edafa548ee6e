/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun delete <id>`: remove a container and everything it holds. */
#include <errno.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "common/stop-point.h"
#include "runtime/cli/cli-args.h"
#include "runtime/cli/launch-ctl.h"
#include "runtime/monitor/teardown.h"
#include "runtime/store/state.h"

/* A create in progress holds the lock until the guest has booted: with
 * --force, its monitor (once the state names it) is killed first, which
 * ends the create (its creator then removes the container). */
static void end_create(struct cli_context *ctx, const char *id)
{
	_cleanup_container_ struct container *c = NULL;

	if (container_load(ctx->root, id, false, &c) < 0) {
		err_clear();
		return;
	}
	if (c->state->status == OCI_STATUS_CREATING && c->state->pid > 0 &&
	    launch_kill_monitor(c->state->pid, 10000) < 0)
		log_warn("%s", err_msg());
	err_clear();
}

static int run_delete(struct cli_context *ctx, int argc, char **argv)
{
	bool force = false;
	const struct cli_flag flags[] = {
	    {"force", "f", CLI_BOOL, &force, "Forcibly deletes the container if it is still running (uses SIGKILL)"},
	    CLI_FLAG_END,
	};
	struct container *c = NULL;
	const char *id;
	int r, i;

	r = cli_parse_args(&cli_cmd_delete, flags, argc, argv, CLI_ARGS_EXACT, 1, &i);
	if (r != 0)
		return r < 0 ? r : 0;
	id = argv[i];
	if (force)
		end_create(ctx, id);
	r = container_load_for(ctx->root, id, force ? CONTAINER_OP_DELETE_FORCE : CONTAINER_OP_DELETE, &c);
	if (r == -ENOENT) {
		int q = container_remove_leftover(ctx->root, id);

		if (q < 0)
			return q;
		/* containerd runs `delete --force` to clean up and expects
		 * success when there is nothing left. */
		if (force) {
			err_clear();
			return 0;
		}
		return err_set(r, "container does not exist");
	}
	if (r < 0)
		return r;
	stop_point("delete:locked");
	/* A created container (or any, with --force) loses its VM first: the
	 * monitor owns the VM, so killing it ends everything in the guest. */
	if (c->state->status != OCI_STATUS_STOPPED && c->state->pid > 0) {
		r = launch_kill_monitor(c->state->pid, 10000);
		if (r < 0) {
			container_free(c);
			return r;
		}
	}
	/* Killed by us or before (a crash, kill 9): it must be all gone, or
	 * its cgroup cannot be removed. */
	if (launch_wait_exited(c->state, 10000) < 0)
		log_warn("%s", err_msg());
	err_clear();
	stop_point("delete:killed");
	/* After the VM is gone: its cgroup, the poststop hooks (failures are
	 * warnings, as runc's), the network namespace, the state directory. */
	return teardown_container(c, true);
}

const struct cli_command cli_cmd_delete = {
    .name = "delete",
    .summary = "delete any resources held by the container often used with detached container",
    .args = "<container-id>",
    .text = "Where \"<container-id>\" is the name for the instance of the container.\n\n"
	    "EXAMPLE:\n"
	    "For example, if the container id is \"ubuntu01\" and kvrun list currently shows the\n"
	    "status of \"ubuntu01\" as \"stopped\" the following will delete resources held for\n"
	    "\"ubuntu01\" removing \"ubuntu01\" from the kvrun list of containers:\n\n"
	    "       # kvrun delete ubuntu01",
    .run = run_delete,
};
