/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rtnetlink operations netns.c runs inside the container's namespace:
 * reading links, addresses and routes, and changing them. Internal to the
 * runtime.
 */
#ifndef KVRUN_RUNTIME_NETNS_RTNL_H
#define KVRUN_RUNTIME_NETNS_RTNL_H

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/net-config.h"
#include "common/netlink.h"

#define NETNS_MAX_LINKS 64
#define NETNS_ALIAS_MAX 256

struct netns_link_info {
	int ifindex;
	char name[IFNAMSIZ];
	uint8_t mac[6];
	uint32_t mtu;
	unsigned int flags; /* IFF_* */
	bool ether;
	char alias[NETNS_ALIAS_MAX];
};

struct netns_links {
	unsigned int n;
	struct netns_link_info l[NETNS_MAX_LINKS];
};

/* Dump every link of the namespace. */
int rtnl_get_links(int nl, struct netns_links *ret);
/* Addresses and routes of ifindex into iface (global/site addresses; routes
 * of the main table that the kernel did not derive from an address). */
int rtnl_get_addrs(int nl, int ifindex, struct net_config_iface *iface);
int rtnl_get_routes(int nl, int ifindex, struct net_config_iface *iface);

int rtnl_set_up(int nl, int ifindex);
int rtnl_set_mtu(int nl, int ifindex, uint32_t mtu);
/* No IPv6 link-local address on ifindex: the TAP's host side is no
 * endpoint, it must not talk to the guest. Best effort (no IPv6: fails). */
int rtnl_no_ipv6_ll(int nl, int ifindex);
/* alias "" clears it. */
int rtnl_set_alias(int nl, int ifindex, const char *alias);
int rtnl_del_link(int nl, int ifindex);
/* add: RTM_NEWADDR (EEXIST is success); otherwise delete
 * (ENOENT/ESRCH/EADDRNOTAVAIL are success). Routes: nl_route_change(). */
int rtnl_addr(int nl, int ifindex, const struct net_config_addr *a, bool add);
/* Run a tc message built by netns_build_*(). */
int rtnl_tc(int nl, struct nl_msg *m);

#endif
