/* SPDX-License-Identifier: Apache-2.0 */
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "common/stop-point.h"
#include "runtime/host/cgroup.h"
#include "runtime/host/netns.h"
#include "runtime/monitor/teardown.h"
#include "runtime/store/hooks.h"
#include "runtime/store/layout.h"

static void leave_cgroup(const struct oci_state *s)
{
	const char *cg = oci_map_get(&s->private_data, STATE_KEY_CGROUP);
	const char *unit = oci_map_get(&s->private_data, STATE_KEY_CGROUP_UNIT);

	/* With a systemd unit, stopping it removes the cgroup (runc's
	 * Destroy); what systemd did not create goes after. */
	if ((cg || unit) && cgroup_leave(cg, oci_map_get(&s->private_data, STATE_KEY_CGROUP_BASE), unit) < 0)
		log_warn("%s", err_msg());
	err_clear();
}

static void give_back_net(const struct oci_state *s)
{
	const char *netns = oci_map_get(&s->private_data, STATE_KEY_NETNS);

	/* "": nothing done in it (its setup failed and undid itself). */
	if (netns && *netns && netns_teardown(netns, s->id) < 0)
		log_error("restoring network namespace %s: %s", netns, err_msg());
	err_clear();
}

int teardown_container(struct container *c, bool poststop)
{
	leave_cgroup(c->state);
	stop_point("teardown:cgroup");
	if (poststop) {
		c->state->status = OCI_STATUS_STOPPED;
		if (c->state->bundle && access(c->state->bundle, F_OK) == 0 &&
		    hooks_run_bundle(c->state->bundle, OCI_HOOK_POSTSTOP, c->state) < 0)
			log_warn("%s", err_msg());
		err_clear();
	}
	/* The network namespace gets back what the VM took; the state
	 * directory holds everything else: disk, sockets, logs. */
	give_back_net(c->state);
	stop_point("teardown:net");
	return container_destroy(c);
}
