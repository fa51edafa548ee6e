/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun delete <id>`: remove a container and everything it holds. */
#include <errno.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "runtime/cli/cli-args.h"
#include "runtime/host/cgroup.h"
#include "runtime/store/hooks.h"
#include "runtime/cli/launch.h"
#include "runtime/monitor/monitor.h"
#include "runtime/store/state.h"

/* After the VM is gone: its cgroup, the poststop hooks (failures are
 * warnings, as runc's), then the state directory with everything else. */
static int delete_rest(struct container *c)
{
	const char *cg = oci_map_get(&c->state->private_data, STATE_KEY_CGROUP);
	const char *unit = oci_map_get(&c->state->private_data, STATE_KEY_CGROUP_UNIT);
	int r;

	/* With a systemd unit, stopping it removes the cgroup (runc's
	 * Destroy); what systemd did not create goes after. */
	if ((cg || unit) && cgroup_leave(cg, oci_map_get(&c->state->private_data, STATE_KEY_CGROUP_BASE), unit) < 0)
		log_warn("%s", err_msg());
	c->state->status = OCI_STATUS_STOPPED;
	if (c->state->bundle && access(c->state->bundle, F_OK) == 0 &&
	    hooks_run_bundle(c->state->bundle, OCI_HOOK_POSTSTOP, c->state) < 0)
		log_warn("%s", err_msg());
	err_clear();
	/* The network namespace gets back what the VM took; the state
	 * directory holds everything else: disk, sockets, logs. */
	r = launch_destroy(c);
	return r;
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
	/* A created container (or any, with --force) loses its VM first: the
	 * monitor owns the VM, so killing it ends everything in the guest. */
	if (c->state->status != OCI_STATUS_STOPPED && c->state->pid > 0) {
		r = launch_kill_monitor(c->state->pid, 10000);
		if (r < 0) {
			container_free(c);
			return r;
		}
	}
	return delete_rest(c);
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
