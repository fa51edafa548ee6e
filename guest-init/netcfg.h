/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Guest side of networking: apply the struct net_config the host sent
 * (common/net-config.h) with rtnetlink. Loopback comes up in any case;
 * each configured interface is the virtio-net device whose MAC matches.
 */
#ifndef KVRUN_GUEST_INIT_NETCFG_H
#define KVRUN_GUEST_INIT_NETCFG_H

#include "common/net-config.h"

/* In the calling thread's network namespace: bring lo up; then for each
 * cfg->ifaces[i] find the link with that MAC, now or at probe (or,
 * restored from a template, the one with dev_mac, which then gets the MAC: RTM_NEWLINK IFLA_ADDRESS
 * with the link down), give it the name (when free), MTU, bring it up, add its addresses (IPv6 without DAD: the address was
 * already in use by this container), then its routes (on-link ones first,
 * so gateways are reachable). cfg may be NULL (loopback only). Returns 0, or
 * -errno with err_set() context (-ENODEV when no link has a MAC). */
int netcfg_apply(const struct net_config *cfg);

/* netcfg_apply() again, in a VM restored from a checkpoint into another
 * network namespace: each link (found by dev_mac, which may be its
 * permanent MAC, or by its MAC) is first taken down, which drops its
 * neighbours, then loses its routes in the main table (all but the
 * kernel's) and its addresses (all but link-local ones); then it gets
 * cfg's MAC, name, MTU, addresses and routes as from START. */
int netcfg_reapply(const struct net_config *cfg);

#endif
