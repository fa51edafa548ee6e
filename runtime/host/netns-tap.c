/* SPDX-License-Identifier: Apache-2.0 */
/* A named TAP in the current network namespace as a VM's only interface
 * (netns.h: netns_tap_link), for `kvrun boot --net`. */
#include <net/if.h> /* before any linux/ header */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "runtime/host/netns.h"
#include "virtio/net/tap.h"

/* Up, with this MTU. */
static int tap_configure(const char *name, uint32_t mtu)
{
	_cleanup_close_ int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = {0};

	if (s < 0)
		return err_setsys(-errno, "socket");
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	ifr.ifr_mtu = (int)mtu;
	if (ioctl(s, SIOCSIFMTU, &ifr) < 0)
		return err_setsys(-errno, "TAP %s: MTU %u", name, mtu);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		return err_setsys(-errno, "TAP %s: flags", name);
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		return err_setsys(-errno, "TAP %s: up", name);
	return 0;
}

int netns_tap_link(const char *tap, uint32_t mtu, struct netns_setup *ret)
{
	static const uint8_t mac[6] = {0x02, 0x6b, 0x76, 0x74, 0x01, 0x00};
	struct netns_link *l = &ret->links[0];
	struct net_config_iface *ifc = &ret->cfg.ifaces[0];
	int r;

	memset(ret, 0, sizeof(*ret));
	if (!*tap || strlen(tap) >= IFNAMSIZ)
		return err_set(-EINVAL, "TAP name '%s': 1 to %d characters", tap, IFNAMSIZ - 1);
	if (mtu < 68 || mtu > 65535)
		return err_set(-EINVAL, "MTU %u: 68 to 65535", mtu);
	r = net_tap_open(tap, 1, l->fds);
	if (r < 0)
		return r;
	l->nr_fds = 1;
	r = tap_configure(tap, mtu);
	if (r < 0) {
		netns_setup_close(ret);
		return r;
	}
	snprintf(l->tap, sizeof(l->tap), "%s", tap);
	snprintf(l->iface, sizeof(l->iface), "%s", tap);
	ret->cfg.nr_ifaces = 1;
	snprintf(ifc->name, sizeof(ifc->name), "eth0");
	memcpy(ifc->mac, mac, sizeof(mac));
	ifc->mtu = mtu;
	return 0;
}
