/* SPDX-License-Identifier: Apache-2.0 */
#include <net/if.h> /* before any linux/ header */
#include <errno.h>
#include <stdio.h>
#include <linux/if_arp.h>
#include <linux/if_link.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "common/netlink.h"
#include "runtime/host/netns-rtnl.h"

static int link_cb(const struct nlmsghdr *h, void *opaque)
{
	const struct ifinfomsg *ifi = NLMSG_DATA(h);
	struct netns_links *links = opaque;
	const struct rtattr *tb[IFLA_MAX + 1];
	struct netns_link_info *l;

	if (h->nlmsg_type != RTM_NEWLINK || h->nlmsg_len < NLMSG_LENGTH(sizeof(*ifi)))
		return 0;
	if (links->n >= NETNS_MAX_LINKS)
		return -E2BIG;
	nl_parse_msg(h, sizeof(*ifi), tb, IFLA_MAX);
	l = &links->l[links->n++];
	memset(l, 0, sizeof(*l));
	l->ifindex = ifi->ifi_index;
	l->flags = ifi->ifi_flags;
	l->ether = ifi->ifi_type == ARPHRD_ETHER;
	if (tb[IFLA_IFNAME])
		snprintf(l->name, sizeof(l->name), "%.*s", (int)RTA_PAYLOAD(tb[IFLA_IFNAME]),
		         (const char *)RTA_DATA(tb[IFLA_IFNAME]));
	if (tb[IFLA_ADDRESS] && RTA_PAYLOAD(tb[IFLA_ADDRESS]) == 6)
		memcpy(l->mac, RTA_DATA(tb[IFLA_ADDRESS]), 6);
	if (tb[IFLA_MTU] && RTA_PAYLOAD(tb[IFLA_MTU]) == 4)
		memcpy(&l->mtu, RTA_DATA(tb[IFLA_MTU]), 4);
	if (tb[IFLA_IFALIAS])
		snprintf(l->alias, sizeof(l->alias), "%.*s", (int)RTA_PAYLOAD(tb[IFLA_IFALIAS]),
		         (const char *)RTA_DATA(tb[IFLA_IFALIAS]));
	return 0;
}

int rtnl_get_links(int nl, struct netns_links *ret)
{
	struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
	struct nl_msg m;

	ret->n = 0;
	nl_msg_init(&m, RTM_GETLINK, 0, &ifi, sizeof(ifi));
	return nl_dump(nl, &m, link_cb, ret);
}

struct iface_filter {
	int ifindex;
	struct net_config_iface *iface;
};

static int addr_cb(const struct nlmsghdr *h, void *opaque)
{
	const struct ifaddrmsg *ifa = NLMSG_DATA(h);
	struct iface_filter *f = opaque;
	const struct rtattr *tb[IFA_MAX + 1], *a;
	struct net_config_addr *out;
	size_t alen;

	if (h->nlmsg_type != RTM_NEWADDR || h->nlmsg_len < NLMSG_LENGTH(sizeof(*ifa)))
		return 0;
	/* Link-local and host addresses belong to each side's own stack. */
	if ((int)ifa->ifa_index != f->ifindex || ifa->ifa_scope >= RT_SCOPE_LINK)
		return 0;
	alen = ifa->ifa_family == AF_INET ? 4 : ifa->ifa_family == AF_INET6 ? 16 : 0;
	nl_parse_msg(h, sizeof(*ifa), tb, IFA_MAX);
	a = tb[IFA_LOCAL] ? tb[IFA_LOCAL] : tb[IFA_ADDRESS];
	if (!alen || !a || RTA_PAYLOAD(a) != alen)
		return 0;
	if (f->iface->nr_addrs >= NET_CONFIG_MAX_ADDRS)
		return -E2BIG;
	out = &f->iface->addrs[f->iface->nr_addrs++];
	memset(out, 0, sizeof(*out));
	out->family = ifa->ifa_family;
	out->prefixlen = ifa->ifa_prefixlen;
	memcpy(out->addr, RTA_DATA(a), alen);
	return 0;
}

int rtnl_get_addrs(int nl, int ifindex, struct net_config_iface *iface)
{
	struct ifaddrmsg ifa = {.ifa_family = AF_UNSPEC};
	struct iface_filter f = {ifindex, iface};
	struct nl_msg m;

	iface->nr_addrs = 0;
	nl_msg_init(&m, RTM_GETADDR, 0, &ifa, sizeof(ifa));
	return nl_dump(nl, &m, addr_cb, &f);
}

static bool route_wanted(const struct rtmsg *rtm, const struct rtattr **tb, int ifindex)
{
	uint32_t table = rtm->rtm_table, oif = 0;

	if (tb[RTA_TABLE] && RTA_PAYLOAD(tb[RTA_TABLE]) == 4)
		memcpy(&table, RTA_DATA(tb[RTA_TABLE]), 4);
	if (tb[RTA_OIF] && RTA_PAYLOAD(tb[RTA_OIF]) == 4)
		memcpy(&oif, RTA_DATA(tb[RTA_OIF]), 4);
	/* Prefix routes come back with the addresses in the guest. */
	return table == RT_TABLE_MAIN && rtm->rtm_type == RTN_UNICAST && rtm->rtm_protocol != RTPROT_KERNEL &&
	       (int)oif == ifindex && (rtm->rtm_family == AF_INET || rtm->rtm_family == AF_INET6);
}

static int route_cb(const struct nlmsghdr *h, void *opaque)
{
	const struct rtmsg *rtm = NLMSG_DATA(h);
	struct iface_filter *f = opaque;
	const struct rtattr *tb[RTA_MAX + 1];
	struct net_config_route *rt;
	size_t alen;

	if (h->nlmsg_type != RTM_NEWROUTE || h->nlmsg_len < NLMSG_LENGTH(sizeof(*rtm)))
		return 0;
	nl_parse_msg(h, sizeof(*rtm), tb, RTA_MAX);
	if (!route_wanted(rtm, tb, f->ifindex))
		return 0;
	alen = rtm->rtm_family == AF_INET ? 4 : 16;
	if (f->iface->nr_routes >= NET_CONFIG_MAX_ROUTES)
		return -E2BIG;
	rt = &f->iface->routes[f->iface->nr_routes++];
	memset(rt, 0, sizeof(*rt));
	rt->family = rtm->rtm_family;
	rt->dst_len = rtm->rtm_dst_len;
	rt->scope = rtm->rtm_scope;
	if (tb[RTA_DST] && RTA_PAYLOAD(tb[RTA_DST]) == alen)
		memcpy(rt->dst, RTA_DATA(tb[RTA_DST]), alen);
	if (tb[RTA_GATEWAY] && RTA_PAYLOAD(tb[RTA_GATEWAY]) == alen) {
		memcpy(rt->gw, RTA_DATA(tb[RTA_GATEWAY]), alen);
		rt->has_gw = 1;
	}
	if (tb[RTA_PRIORITY] && RTA_PAYLOAD(tb[RTA_PRIORITY]) == 4)
		memcpy(&rt->metric, RTA_DATA(tb[RTA_PRIORITY]), 4);
	return 0;
}

int rtnl_get_routes(int nl, int ifindex, struct net_config_iface *iface)
{
	struct rtmsg rtm = {.rtm_family = AF_UNSPEC};
	struct iface_filter f = {ifindex, iface};
	struct nl_msg m;

	iface->nr_routes = 0;
	nl_msg_init(&m, RTM_GETROUTE, 0, &rtm, sizeof(rtm));
	return nl_dump(nl, &m, route_cb, &f);
}

static void rtnl_setlink(int nl, int ifindex, unsigned int flags, unsigned int change, struct nl_msg *m)
{
	struct ifinfomsg ifi = {
	    .ifi_family = AF_UNSPEC, .ifi_index = ifindex, .ifi_flags = flags, .ifi_change = change};

	nl_msg_init(m, RTM_NEWLINK, 0, &ifi, sizeof(ifi));
}

int rtnl_set_up(int nl, int ifindex)
{
	struct nl_msg m;

	rtnl_setlink(nl, ifindex, IFF_UP, IFF_UP, &m);
	return nl_transact(nl, &m);
}

int rtnl_set_mtu(int nl, int ifindex, uint32_t mtu)
{
	struct nl_msg m;

	rtnl_setlink(nl, ifindex, 0, 0, &m);
	nl_attr_put_u32(&m, IFLA_MTU, mtu);
	return nl_transact(nl, &m);
}

int rtnl_no_ipv6_ll(int nl, int ifindex)
{
	struct rtattr *spec, *inet6;
	struct nl_msg m;

	rtnl_setlink(nl, ifindex, 0, 0, &m);
	spec = nl_nest_start(&m, IFLA_AF_SPEC);
	inet6 = nl_nest_start(&m, AF_INET6);
	nl_attr_put_u8(&m, IFLA_INET6_ADDR_GEN_MODE, IN6_ADDR_GEN_MODE_NONE);
	nl_nest_end(&m, inet6);
	nl_nest_end(&m, spec);
	return nl_transact(nl, &m);
}

int rtnl_set_alias(int nl, int ifindex, const char *alias)
{
	struct nl_msg m;

	rtnl_setlink(nl, ifindex, 0, 0, &m);
	/* An empty attribute clears the alias. */
	nl_attr_put(&m, IFLA_IFALIAS, alias, strlen(alias));
	return nl_transact(nl, &m);
}

int rtnl_del_link(int nl, int ifindex)
{
	struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = ifindex};
	struct nl_msg m;
	int r;

	nl_msg_init(&m, RTM_DELLINK, 0, &ifi, sizeof(ifi));
	r = nl_transact(nl, &m);
	return r == -ENODEV ? 0 : r;
}

int rtnl_addr(int nl, int ifindex, const struct net_config_addr *a, bool add)
{
	struct ifaddrmsg ifa = {.ifa_family = a->family, .ifa_prefixlen = a->prefixlen, .ifa_index = ifindex};
	size_t alen = a->family == AF_INET ? 4 : 16;
	struct nl_msg m;
	int r;

	nl_msg_init(&m, add ? RTM_NEWADDR : RTM_DELADDR, add ? NLM_F_CREATE | NLM_F_EXCL : 0, &ifa, sizeof(ifa));
	nl_attr_put(&m, IFA_LOCAL, a->addr, alen);
	nl_attr_put(&m, IFA_ADDRESS, a->addr, alen);
	if (a->family == AF_INET6)
		/* The guest runs its own DAD; the host copy needs none. */
		nl_attr_put_u32(&m, IFA_FLAGS, IFA_F_NODAD);
	r = nl_transact(nl, &m);
	if ((add && r == -EEXIST) || (!add && (r == -EADDRNOTAVAIL || r == -ENOENT || r == -ESRCH)))
		return 0;
	return r;
}

int rtnl_tc(int nl, struct nl_msg *m)
{
	return nl_transact(nl, m);
}
