/* SPDX-License-Identifier: Apache-2.0 */
/* Which network namespace a checkpoint's VM can be restored into
 * (sandbox_check_saved_nets()): as many interfaces as it had devices,
 * none with an MTU above its device's. The restore itself boots Linux:
 * tests/integration/test_template.py. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "runtime/sandbox/sandbox-int.h"
#include "tap.h"

static struct net_config cfg;

static void ifaces(unsigned int n, uint32_t mtu)
{
	memset(&cfg, 0, sizeof(cfg));
	cfg.nr_ifaces = n;
	for (unsigned int i = 0; i < n; i++) {
		snprintf(cfg.ifaces[i].name, sizeof(cfg.ifaces[i].name), "eth%u", i);
		cfg.ifaces[i].mtu = mtu;
	}
}

TEST(counts_must_match)
{
	struct virtio_net_opts saved[2] = {{.mtu = 1500, .queue_pairs = 1}, {.mtu = 1500, .queue_pairs = 1}};

	ifaces(2, 1500);
	is_int(sandbox_check_saved_nets(saved, 2, &cfg), 0);
	is_int(sandbox_check_saved_nets(NULL, 0, NULL), 0);
	ifaces(0, 0);
	is_int(sandbox_check_saved_nets(NULL, 0, &cfg), 0);

	ifaces(2, 1500);
	is_int(sandbox_check_saved_nets(saved, 1, &cfg), -EINVAL);
	ok(strstr(err_msg(), "the checkpoint has 1 network interface(s), the container's network namespace has 2") !=
	       NULL,
	   "both counts named: %s", err_msg());
	is_int(sandbox_check_saved_nets(saved, 2, NULL), -EINVAL);
	ok(strstr(err_msg(), "has 2 network interface(s)") && strstr(err_msg(), "namespace has 0"),
	   "no namespace: 0 (%s)", err_msg());
}

TEST(mtu_at_most_the_devices)
{
	struct virtio_net_opts saved[1] = {{.mtu = 1400, .queue_pairs = 1}};

	ifaces(1, 1400);
	is_int(sandbox_check_saved_nets(saved, 1, &cfg), 0);
	ifaces(1, 1280);
	is_int(sandbox_check_saved_nets(saved, 1, &cfg), 0);
	ifaces(1, 9000);
	is_int(sandbox_check_saved_nets(saved, 1, &cfg), -EINVAL);
	ok(strstr(err_msg(), "eth0: MTU 9000, more than the 1400") != NULL, "names the interface: %s", err_msg());
	ifaces(1, 0); /* no MTU given: 1500 */
	is_int(sandbox_check_saved_nets(saved, 1, &cfg), -EINVAL);
	saved[0].mtu = 65535; /* a template's device takes any */
	ifaces(1, 9000);
	is_int(sandbox_check_saved_nets(saved, 1, &cfg), 0);
}

TAP_MAIN()
