/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host side of a container's network: inside the container's network
 * namespace (made by CNI, podman or docker), each interface (veth, macvlan,
 * ...) is paired with a TAP that virtio-net serves. Its addresses and routes
 * go to the guest; the interface keeps its MAC and link, and tc redirects
 * (ingress qdisc + u32 match-all + mirred egress redirect, both ways) move
 * every frame between it and the TAP. Everything is done with rtnetlink
 * from a helper thread that entered the namespace: the monitor's own
 * namespace never changes.
 *
 * Names come from the container id, so teardown finds what setup made even
 * after a crash: TAP i is "kvt<hash>_<i>" (hash: 8 hex digits of the id),
 * and each linked interface carries an ifalias "kvrun:<hash> <addresses>
 * <routes>" that records what to give back.
 */
#ifndef KVRUN_RUNTIME_NETNS_H
#define KVRUN_RUNTIME_NETNS_H

#include <net/if.h>

#include "common/net-config.h"
#include "common/netlink.h"
#include "virtio/net/backend.h"

struct oci_spec;

/* Per linked interface: the TAP the device uses. */
struct netns_link {
	char tap[IFNAMSIZ];
	char iface[IFNAMSIZ];
	unsigned int nr_fds;
	int fds[NET_MAX_QUEUE_PAIRS]; /* TAP fds, one per queue pair (owned) */
};

struct netns_setup {
	struct net_config cfg; /* for the guest; cfg.ifaces[i] goes with links[i] */
	struct netns_link links[NET_CONFIG_MAX_IFACES];
};

/* The network namespace kvrun must serve, from config.json:
 * *ret_path = the namespace's path, or NULL when the spec asks for a new
 * (empty) namespace, which means loopback only. A spec without a network
 * namespace entry (host networking) is refused with -EOPNOTSUPP: a VM
 * cannot share the host's interfaces. */
int netns_path_from_spec(const struct oci_spec *spec, const char **ret_path);

/* Enter netns_path and link every interface but lo to a new TAP with
 * queue_pairs fds (1..NET_MAX_QUEUE_PAIRS). A namespace another kvrun
 * container serves (a TAP of kvrun's in it, or an interface holding
 * another container's record) is refused with -EBUSY before anything is
 * changed: a VM cannot share interfaces with another, and containers that
 * share a namespace (a pod's) would each take the other's. Leftovers of an
 * earlier run of the same id are torn down first. Setups and teardowns of
 * one namespace take turns (flock on it). On success *ret holds the
 * guest's configuration and the TAP fds (release with
 * netns_setup_close()); on failure everything done is undone. netns_path
 * NULL: loopback only (ret->cfg.nr_ifaces 0). */
int netns_setup(const char *netns_path, const char *container_id, unsigned int queue_pairs, struct netns_setup *ret);

/* The TAP called tap in the current namespace (made if it does not exist;
 * it goes when its last fd closes unless made persistent), up with this
 * MTU, as the only link of *ret: one queue pair, interface "eth0" with a
 * fixed local MAC (02:6b:76:74:01:00) and no address. For `kvrun boot
 * --net`; release with netns_setup_close(). */
int netns_tap_link(const char *tap, uint32_t mtu, struct netns_setup *ret);

/* Close the TAP fds held by s (the TAPs vanish with their last fd). */
void netns_setup_close(struct netns_setup *s);

/* Undo netns_setup() for container_id in netns_path: delete its TAPs and
 * the ingress qdiscs, give the addresses and routes back to the interfaces
 * and clear their alias. Idempotent; works from the names alone (after a
 * monitor crash too). A namespace that no longer exists is not an error. */
int netns_teardown(const char *netns_path, const char *container_id);

/* Name of TAP index i for container_id (buf of IFNAMSIZ). */
void netns_tap_name(const char *container_id, unsigned int i, char *buf);

/* Message builders, exposed for unit tests: an ingress qdisc on ifindex
 * (RTM_NEWQDISC, or RTM_DELQDISC when del), and a u32 match-all filter on
 * ifindex's ingress that redirects every frame to the egress of to_ifindex
 * (RTM_NEWTFILTER with a mirred action). */
void netns_build_ingress_qdisc(struct nl_msg *m, int ifindex, bool del);
void netns_build_redirect(struct nl_msg *m, int ifindex, int to_ifindex);

/* The ifalias record of interface iface: encode writes at most len bytes
 * (always NUL-terminated; what does not fit is left out, routes first)
 * and returns 0; decode fills addrs/routes of iface (returns -EINVAL when
 * alias is not a record of hash). */
int netns_record_encode(const struct net_config_iface *iface, const char *hash, char *buf, size_t len);
int netns_record_decode(const char *alias, const char *hash, struct net_config_iface *iface);

#endif
