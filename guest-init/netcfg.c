/* SPDX-License-Identifier: Apache-2.0 */
#include <net/if.h> /* before any linux/ header */
#include <errno.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/netlink.h"
#include "guest-init/netcfg.h"

struct mac_lookup {
	const uint8_t *mac;
	int ifindex;
	char name[IFNAMSIZ];
};

static bool is_mac(const struct rtattr *a, const uint8_t *mac)
{
	return a && RTA_PAYLOAD(a) == 6 && memcmp(RTA_DATA(a), mac, 6) == 0;
}

static int mac_cb(const struct nlmsghdr *h, void *opaque)
{
	const struct ifinfomsg *ifi = NLMSG_DATA(h);
	const struct rtattr *tb[IFLA_MAX + 1];
	struct mac_lookup *q = opaque;

	if (h->nlmsg_type != RTM_NEWLINK || h->nlmsg_len < NLMSG_LENGTH(sizeof(*ifi)) || q->ifindex)
		return 0;
	nl_parse_msg(h, sizeof(*ifi), tb, IFLA_MAX);
	/* The MAC it has, or the one its device reported at probe (a link
	 * given another MAC by an earlier START, found again after a restore). */
	if (!is_mac(tb[IFLA_ADDRESS], q->mac) && !is_mac(tb[IFLA_PERM_ADDRESS], q->mac))
		return 0;
	q->ifindex = ifi->ifi_index;
	if (tb[IFLA_IFNAME])
		snprintf(q->name, sizeof(q->name), "%.*s", (int)RTA_PAYLOAD(tb[IFLA_IFNAME]),
		         (const char *)RTA_DATA(tb[IFLA_IFNAME]));
	return 0;
}

static int link_by_mac(int nl, const uint8_t *mac, struct mac_lookup *q)
{
	struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
	struct nl_msg m;
	int r;

	memset(q, 0, sizeof(*q));
	q->mac = mac;
	nl_msg_init(&m, RTM_GETLINK, 0, &ifi, sizeof(ifi));
	r = nl_dump(nl, &m, mac_cb, q);
	if (r < 0)
		return r;
	return q->ifindex ? 0 : -ENODEV;
}

/* flags/change as in ifinfomsg; name, mtu and mac only when set. */
static int set_link_mac(int nl, int ifindex, unsigned int flags, unsigned int change, const char *name, uint32_t mtu,
                        const uint8_t *mac)
{
	struct ifinfomsg ifi = {
	    .ifi_family = AF_UNSPEC, .ifi_index = ifindex, .ifi_flags = flags, .ifi_change = change};
	struct nl_msg m;

	nl_msg_init(&m, RTM_NEWLINK, 0, &ifi, sizeof(ifi));
	if (name)
		nl_attr_put_str(&m, IFLA_IFNAME, name);
	if (mtu)
		nl_attr_put_u32(&m, IFLA_MTU, mtu);
	if (mac)
		nl_attr_put(&m, IFLA_ADDRESS, mac, 6);
	return nl_transact(nl, &m);
}

static int set_link(int nl, int ifindex, unsigned int flags, unsigned int change, const char *name, uint32_t mtu)
{
	return set_link_mac(nl, ifindex, flags, change, name, mtu, NULL);
}

static bool has_dev_mac(const struct net_config_iface *c)
{
	static const uint8_t zero[6];

	return memcmp(c->dev_mac, zero, 6) != 0 && memcmp(c->dev_mac, c->mac, 6) != 0;
}

/* The link of c: the one with c's MAC; in a VM restored from a template
 * or a checkpoint, the one whose device reported c->dev_mac at probe
 * (*ret_set_mac: it must get c->mac). Looked up by dev_mac first: a link
 * already given its MAC (guest-init run again) is then found by c->mac. */
static int find_link(int nl, const struct net_config_iface *c, struct mac_lookup *q, bool *ret_set_mac)
{
	const uint8_t *m = c->mac;
	int r;

	*ret_set_mac = false;
	if (has_dev_mac(c)) {
		r = link_by_mac(nl, c->dev_mac, q);
		*ret_set_mac = r >= 0;
		if (r != -ENODEV)
			return r < 0 ? err_setsys(r, "listing the links") : 0;
	}
	r = link_by_mac(nl, c->mac, q);
	if (r == -ENODEV && has_dev_mac(c))
		return err_setsys(
		    r, "no interface with MAC %02x:%02x:%02x:%02x:%02x:%02x or %02x:%02x:%02x:%02x:%02x:%02x", m[0],
		    m[1], m[2], m[3], m[4], m[5], c->dev_mac[0], c->dev_mac[1], c->dev_mac[2], c->dev_mac[3],
		    c->dev_mac[4], c->dev_mac[5]);
	if (r < 0)
		return err_setsys(r, "no interface with MAC %02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3],
		                  m[4], m[5]);
	return 0;
}

static int add_addr(int nl, int ifindex, const struct net_config_addr *a)
{
	struct ifaddrmsg ifa = {.ifa_family = a->family, .ifa_prefixlen = a->prefixlen, .ifa_index = ifindex};
	size_t alen = a->family == AF_INET ? 4 : 16;
	struct nl_msg m;
	int r;

	if (a->family != AF_INET && a->family != AF_INET6)
		return -EAFNOSUPPORT;
	nl_msg_init(&m, RTM_NEWADDR, NLM_F_CREATE | NLM_F_REPLACE, &ifa, sizeof(ifa));
	nl_attr_put(&m, IFA_LOCAL, a->addr, alen);
	nl_attr_put(&m, IFA_ADDRESS, a->addr, alen);
	if (a->family == AF_INET6)
		nl_attr_put_u32(&m, IFA_FLAGS, IFA_F_NODAD);
	r = nl_transact(nl, &m);
	return r == -EEXIST ? 0 : r;
}

/* On-link IPv4 routes are link-scoped; the rest (and every IPv6 route)
 * universe. */
static uint8_t route_scope(const struct net_config_route *rt)
{
	return rt->has_gw || rt->family == AF_INET6 ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK;
}

/* Copies of dumped addresses or routes of one link, deleted after the
 * dump (the socket answers one request at a time). */
#define FLUSH_MAX 64
#define FLUSH_MSG 512

struct flush {
	int ifindex;
	unsigned int n, skipped;
	size_t len[FLUSH_MAX];
	uint8_t msg[FLUSH_MAX][FLUSH_MSG];
};

static void flush_keep(struct flush *f, const struct nlmsghdr *h, size_t hdr_len)
{
	size_t len = h->nlmsg_len - NLMSG_LENGTH(0);

	if (f->n == FLUSH_MAX || len > FLUSH_MSG || len < hdr_len) {
		f->skipped++;
		return;
	}
	memcpy(f->msg[f->n], NLMSG_DATA(h), len);
	f->len[f->n++] = len;
}

/* The link's own addresses: not link-local (fe80::, made again from the
 * new MAC) nor host-scoped. */
static int addr_cb(const struct nlmsghdr *h, void *opaque)
{
	const struct ifaddrmsg *ifa = NLMSG_DATA(h);
	struct flush *f = opaque;

	if (h->nlmsg_type != RTM_NEWADDR || h->nlmsg_len < NLMSG_LENGTH(sizeof(*ifa)))
		return 0;
	if ((int)ifa->ifa_index != f->ifindex || ifa->ifa_scope == RT_SCOPE_LINK || ifa->ifa_scope == RT_SCOPE_HOST)
		return 0;
	flush_keep(f, h, sizeof(*ifa));
	return 0;
}

/* Unicast routes of the main table out of the link, but the kernel's
 * own (those go with their addresses, or are the link-local prefix). */
static int route_cb(const struct nlmsghdr *h, void *opaque)
{
	const struct rtmsg *rtm = NLMSG_DATA(h);
	const struct rtattr *tb[RTA_MAX + 1];
	struct flush *f = opaque;
	uint32_t table;

	if (h->nlmsg_type != RTM_NEWROUTE || h->nlmsg_len < NLMSG_LENGTH(sizeof(*rtm)))
		return 0;
	nl_parse_msg(h, sizeof(*rtm), tb, RTA_MAX);
	table = tb[RTA_TABLE] && RTA_PAYLOAD(tb[RTA_TABLE]) == 4 ? *(const uint32_t *)RTA_DATA(tb[RTA_TABLE])
	                                                         : rtm->rtm_table;
	if (table != RT_TABLE_MAIN || rtm->rtm_type != RTN_UNICAST || rtm->rtm_protocol == RTPROT_KERNEL)
		return 0;
	if (!tb[RTA_OIF] || RTA_PAYLOAD(tb[RTA_OIF]) != 4 || *(const int *)RTA_DATA(tb[RTA_OIF]) != f->ifindex)
		return 0;
	flush_keep(f, h, sizeof(*rtm));
	return 0;
}

/* Dump with get (RTM_GETROUTE or RTM_GETADDR), delete what cb kept with
 * del, each as the dump described it. */
static int flush_link(int nl, int ifindex, uint16_t get, uint16_t del, nl_dump_fn cb, const char *what)
{
	static struct flush f;
	/* All families; an ifaddrmsg starts with its family too. */
	struct rtmsg hdr = {.rtm_family = AF_UNSPEC};
	struct nl_msg m;
	int r;

	memset(&f, 0, sizeof(f));
	f.ifindex = ifindex;
	nl_msg_init(&m, get, 0, &hdr, get == RTM_GETADDR ? sizeof(struct ifaddrmsg) : sizeof(hdr));
	r = nl_dump(nl, &m, cb, &f);
	if (r < 0)
		return err_setsys(r, "listing the %s", what);
	if (f.skipped)
		log_warn("netcfg: %u %s left in place", f.skipped, what);
	for (unsigned int i = 0; i < f.n; i++) {
		nl_msg_init(&m, del, 0, f.msg[i], f.len[i]);
		r = nl_transact(nl, &m);
		/* Gone already: a route with its address, or with the link down. */
		if (r < 0 && r != -ESRCH && r != -EADDRNOTAVAIL && r != -ENOENT)
			return err_setsys(r, "removing one of the %s", what);
	}
	return 0;
}

static int configure_iface(int nl, const struct net_config_iface *c, bool again)
{
	struct mac_lookup q;
	bool set_mac, rename;
	/* A template's device offered the largest MTU: never leave it. */
	uint32_t mtu = c->mtu ? c->mtu : has_dev_mac(c) ? 1500 : 0;
	int r;

	r = find_link(nl, c, &q, &set_mac);
	if (r < 0)
		return r;
	if (again) {
		/* Down first: the neighbours it knew (the old peer's MAC) go,
		 * and so do its IPv4 routes; then what is left of its own. */
		set_link(nl, q.ifindex, 0, IFF_UP, NULL, 0);
		r = flush_link(nl, q.ifindex, RTM_GETROUTE, RTM_DELROUTE, route_cb, "routes");
		if (r >= 0)
			r = flush_link(nl, q.ifindex, RTM_GETADDR, RTM_DELADDR, addr_cb, "addresses");
		if (r < 0)
			return err_prefix(r, "%s", q.name);
	}
	rename = c->name[0] && strcmp(c->name, q.name);
	/* Renaming needs the link down, and so may a new MAC. */
	if (rename || set_mac)
		set_link(nl, q.ifindex, 0, IFF_UP, NULL, 0);
	/* The container's MAC: what its peers know it by. */
	if (set_mac) {
		r = set_link_mac(nl, q.ifindex, 0, 0, NULL, 0, c->mac);
		if (r < 0)
			return err_setsys(r, "setting the MAC address of %s", q.name);
	}
	/* A taken name is not fatal. */
	if (rename) {
		r = set_link(nl, q.ifindex, 0, 0, c->name, 0);
		if (r < 0)
			log_debug("netcfg: keeping %s (renaming to %s: %s)", q.name, c->name, strerror(-r));
	}
	r = set_link(nl, q.ifindex, IFF_UP, IFF_UP, NULL, mtu);
	if (r < 0)
		return err_setsys(r, "bringing up %s (mtu %u)", c->name, mtu);
	for (unsigned int i = 0; i < c->nr_addrs && i < NET_CONFIG_MAX_ADDRS; i++) {
		r = add_addr(nl, q.ifindex, &c->addrs[i]);
		if (r < 0)
			return err_setsys(r, "adding address %u to %s", i, c->name);
	}
	/* On-link routes first: a gateway must be reachable when its route
	 * is added. */
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned int i = 0; i < c->nr_routes && i < NET_CONFIG_MAX_ROUTES; i++) {
			if (!!c->routes[i].has_gw != pass)
				continue;
			r = nl_route_change(nl, q.ifindex, &c->routes[i], route_scope(&c->routes[i]), true);
			if (r < 0)
				return err_setsys(r, "adding route %u to %s", i, c->name);
		}
	}
	return 0;
}

static int apply(const struct net_config *cfg, bool again)
{
	_cleanup_close_ int nl = -1;
	int r, lo;

	r = nl_open(&nl);
	if (r < 0)
		return err_setsys(r, "netlink socket");
	lo = (int)if_nametoindex("lo");
	if (lo <= 0)
		return err_setsys(-errno, "no loopback interface");
	r = set_link(nl, lo, IFF_UP, IFF_UP, NULL, 0);
	if (r < 0)
		return err_setsys(r, "bringing up lo");
	for (unsigned int i = 0; cfg && i < cfg->nr_ifaces && i < NET_CONFIG_MAX_IFACES; i++) {
		r = configure_iface(nl, &cfg->ifaces[i], again);
		if (r < 0)
			return r;
	}
	return 0;
}

int netcfg_apply(const struct net_config *cfg)
{
	return apply(cfg, false);
}

int netcfg_reapply(const struct net_config *cfg)
{
	return apply(cfg, true);
}
