/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The network configuration of a guest, as plain data: produced on the host
 * by runtime/host/netns.c from the container's network namespace, carried to the
 * guest by the control protocol, applied inside the guest by
 * guest-init/netcfg.c. No pointers, so it can be copied and encoded as is.
 *
 * Each interface is one virtio-net device, found in the guest by its MAC
 * address (the device reports that MAC, VIRTIO_NET_F_MAC), or by dev_mac
 * when the device reported another one (a template's). Loopback is not
 * listed: the guest always brings lo up.
 */
#ifndef KVRUN_COMMON_NET_CONFIG_H
#define KVRUN_COMMON_NET_CONFIG_H

#include <stdint.h>

#define NET_CONFIG_MAX_IFACES 8
#define NET_CONFIG_MAX_ADDRS 16
#define NET_CONFIG_MAX_ROUTES 32
#define NET_CONFIG_IFNAMSIZ 16

struct net_config_addr {
	uint8_t family; /* AF_INET or AF_INET6 */
	uint8_t prefixlen;
	uint8_t addr[16]; /* 4 bytes used for AF_INET */
};

/* A route through this interface. A default route has dst_len 0; gw is all
 * zero for an on-link route. */
struct net_config_route {
	uint8_t family;
	uint8_t dst_len;
	uint8_t dst[16];
	uint8_t gw[16];
	uint8_t has_gw;
	uint8_t scope; /* RT_SCOPE_UNIVERSE or RT_SCOPE_LINK */
	uint32_t metric; /* 0: none */
};

struct net_config_iface {
	char name[NET_CONFIG_IFNAMSIZ]; /* name in the container ("eth0"), NUL-terminated */
	uint8_t mac[6];
	/* The MAC the device had when the guest's driver probed it, when
	 * that is not mac (a VM restored from a template: the template's
	 * device); the guest finds the link by it and sets mac. All zero:
	 * the device reports mac. */
	uint8_t dev_mac[6];
	uint32_t mtu;
	unsigned int nr_addrs, nr_routes;
	struct net_config_addr addrs[NET_CONFIG_MAX_ADDRS];
	struct net_config_route routes[NET_CONFIG_MAX_ROUTES];
};

struct net_config {
	unsigned int nr_ifaces; /* 0: loopback only */
	struct net_config_iface ifaces[NET_CONFIG_MAX_IFACES];
};

#endif
