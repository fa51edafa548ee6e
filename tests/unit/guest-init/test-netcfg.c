/* SPDX-License-Identifier: Apache-2.0 */
/* guest-init/netcfg.c in a private network namespace of this test process
 * (unshare(CLONE_NEWNET)): a veth with a known MAC plays the virtio-net
 * device; the result is read back with rtnetlink. Needs root. */
#include <net/if.h>
#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/error.h"
#include "common/netlink.h"
#include "guest-init/netcfg.h"
#include "tap.h"

static const uint8_t MAC[6] = {0x52, 0x54, 0x00, 0xab, 0xcd, 0x01};

struct found {
	int ifindex;
	char want[INET6_ADDRSTRLEN + 8];
	bool hit;
};

static int addr_cb(const struct nlmsghdr *h, void *opaque)
{
	const struct ifaddrmsg *ifa = NLMSG_DATA(h);
	const struct rtattr *tb[IFA_MAX + 1];
	struct found *f = opaque;
	char a[INET6_ADDRSTRLEN], s[INET6_ADDRSTRLEN + 8];

	nl_parse_msg(h, sizeof(*ifa), tb, IFA_MAX);
	if ((int)ifa->ifa_index != f->ifindex || !tb[IFA_ADDRESS])
		return 0;
	inet_ntop(ifa->ifa_family, RTA_DATA(tb[IFA_ADDRESS]), a, sizeof(a));
	snprintf(s, sizeof(s), "%s/%u", a, ifa->ifa_prefixlen);
	if (!strcmp(s, f->want))
		f->hit = true;
	return 0;
}

static bool has_addr(int nl, int ifindex, const char *want)
{
	struct ifaddrmsg ifa = {.ifa_family = AF_UNSPEC};
	struct found f = {.ifindex = ifindex};
	struct nl_msg m;

	snprintf(f.want, sizeof(f.want), "%s", want);
	nl_msg_init(&m, RTM_GETADDR, 0, &ifa, sizeof(ifa));
	return nl_dump(nl, &m, addr_cb, &f) == 0 && f.hit;
}

static int route_cb(const struct nlmsghdr *h, void *opaque)
{
	const struct rtmsg *rtm = NLMSG_DATA(h);
	const struct rtattr *tb[RTA_MAX + 1];
	struct found *f = opaque;
	char gw[INET6_ADDRSTRLEN];

	nl_parse_msg(h, sizeof(*rtm), tb, RTA_MAX);
	if (rtm->rtm_dst_len != 0 || !tb[RTA_GATEWAY] || rtm->rtm_table != RT_TABLE_MAIN)
		return 0;
	inet_ntop(rtm->rtm_family, RTA_DATA(tb[RTA_GATEWAY]), gw, sizeof(gw));
	if (!strcmp(gw, f->want))
		f->hit = true;
	return 0;
}

static bool has_default_via(int nl, int family, const char *gw)
{
	struct rtmsg rtm = {.rtm_family = (unsigned char)family};
	struct found f = {0};
	struct nl_msg m;

	snprintf(f.want, sizeof(f.want), "%s", gw);
	nl_msg_init(&m, RTM_GETROUTE, 0, &rtm, sizeof(rtm));
	return nl_dump(nl, &m, route_cb, &f) == 0 && f.hit;
}

static void prefix(uint8_t family, const char *s, uint8_t *out)
{
	inet_pton(family, s, out);
}

TEST(configure_veth_by_mac)
{
	static struct net_config cfg;
	struct net_config_iface *c = &cfg.ifaces[0];
	int nl, idx;

	cfg.nr_ifaces = 1;
	snprintf(c->name, sizeof(c->name), "eth3");
	memcpy(c->mac, MAC, 6);
	c->mtu = 1400;
	c->addrs[0] = (struct net_config_addr){.family = AF_INET, .prefixlen = 24};
	prefix(AF_INET, "10.199.20.2", c->addrs[0].addr);
	c->addrs[1] = (struct net_config_addr){.family = AF_INET6, .prefixlen = 64};
	prefix(AF_INET6, "fd99:20::2", c->addrs[1].addr);
	c->nr_addrs = 2;
	c->routes[0] = (struct net_config_route){.family = AF_INET, .has_gw = 1};
	prefix(AF_INET, "10.199.20.1", c->routes[0].gw);
	c->routes[1] = (struct net_config_route){.family = AF_INET6, .has_gw = 1};
	prefix(AF_INET6, "fd99:20::1", c->routes[1].gw);
	c->nr_routes = 2;

	is_int(netcfg_apply(&cfg), 0);
	idx = (int)if_nametoindex("eth3");
	ok(idx > 0, "renamed to eth3");
	if (nl_open(&nl) < 0)
		return;
	ok(has_addr(nl, idx, "10.199.20.2/24"), "IPv4 address");
	ok(has_addr(nl, idx, "fd99:20::2/64"), "IPv6 address");
	ok(has_default_via(nl, AF_INET, "10.199.20.1"), "IPv4 default gateway");
	ok(has_default_via(nl, AF_INET6, "fd99:20::1"), "IPv6 default gateway");
	close(nl);

	cfg.ifaces[0].mac[5] = 0x99;
	ok(netcfg_apply(&cfg) == -ENODEV, "unknown MAC: -ENODEV");
}

/* An ifreq ioctl on interface name (this namespace's: /sys shows the
 * namespace it was mounted in). Returns false on failure. */
static bool if_ioctl(const char *name, unsigned long req, struct ifreq *ifr)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool r;

	memset(ifr, 0, sizeof(*ifr));
	snprintf(ifr->ifr_name, sizeof(ifr->ifr_name), "%s", name);
	r = fd >= 0 && ioctl(fd, req, ifr) == 0;
	if (fd >= 0)
		close(fd);
	return r;
}

static int if_mtu(const char *name)
{
	struct ifreq ifr;

	return if_ioctl(name, SIOCGIFMTU, &ifr) ? ifr.ifr_mtu : -1;
}

/* A VM restored from a template: the link has the template's MAC (and the
 * largest MTU); the configuration names it by dev_mac and it gets the
 * container's MAC, name, MTU and address. Applying again finds it by its
 * new MAC. */
TEST(template_link_gets_the_mac)
{
	static struct net_config cfg;
	struct net_config_iface *c = &cfg.ifaces[0];
	static const uint8_t want[6] = {0x52, 0x54, 0x00, 0xab, 0xcd, 0x02};
	struct ifreq ifr;
	int nl, idx;

	if (system("ip link add gv2 address 02:6b:76:74:00:00 mtu 9000 type veth peer name gv3 mtu 9000 && "
	           "ip link set gv3 up") != 0) {
		ok(false, "a veth with the template's MAC");
		return;
	}
	cfg.nr_ifaces = 1;
	snprintf(c->name, sizeof(c->name), "eth4");
	memcpy(c->mac, want, 6);
	memcpy(c->dev_mac, (uint8_t[]){0x02, 0x6b, 0x76, 0x74, 0x00, 0x00}, 6);
	c->addrs[0] = (struct net_config_addr){.family = AF_INET, .prefixlen = 24};
	prefix(AF_INET, "10.199.21.2", c->addrs[0].addr);
	c->nr_addrs = 1;

	is_int(netcfg_apply(&cfg), 0);
	idx = (int)if_nametoindex("eth4");
	ok(idx > 0, "renamed to eth4");
	ok(if_ioctl("eth4", SIOCGIFHWADDR, &ifr) && !memcmp(ifr.ifr_hwaddr.sa_data, want, 6), "the container's MAC");
	is_int(if_mtu("eth4"), 1500);
	ok(if_ioctl("eth4", SIOCGIFFLAGS, &ifr) && (ifr.ifr_flags & IFF_UP), "up");
	if (nl_open(&nl) == 0) {
		ok(has_addr(nl, idx, "10.199.21.2/24"), "IPv4 address");
		close(nl);
	}
	c->mtu = 1450;
	is_int(netcfg_apply(&cfg), 0);
	ok((int)if_nametoindex("eth4") == idx, "applied again: the same link, found by its new MAC");
	is_int(if_mtu("eth4"), 1450);

	c->mac[5] = 0x77;
	c->dev_mac[5] = 0x07;
	ok(netcfg_apply(&cfg) == -ENODEV && strstr(err_msg(), "02:6b:76:74:00:07"),
	   "neither MAC: -ENODEV naming both (%s)", err_msg());
}

static void set_iface(struct net_config_iface *c, const char *name, const uint8_t *mac, uint32_t mtu, const char *a4,
                      const char *gw4)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", name);
	memcpy(c->mac, mac, 6);
	c->mtu = mtu;
	c->addrs[0] = (struct net_config_addr){.family = AF_INET, .prefixlen = 24};
	prefix(AF_INET, a4, c->addrs[0].addr);
	c->nr_addrs = 1;
	c->routes[0] = (struct net_config_route){.family = AF_INET, .has_gw = 1};
	prefix(AF_INET, gw4, c->routes[0].gw);
	c->routes[1] = (struct net_config_route){.family = AF_INET, .dst_len = 16, .has_gw = 1};
	prefix(AF_INET, "10.250.0.0", c->routes[1].dst);
	prefix(AF_INET, gw4, c->routes[1].gw);
	c->nr_routes = 2;
}

/* A checkpoint restored into another namespace: the link (found by the
 * MAC its device had, dev_mac) gets the new MAC and MTU, loses the old
 * addresses and routes (IPv4 and IPv6) and gets the new ones. Applied
 * again it is found by its new MAC and nothing changes. */
TEST(restored_link_reconfigured)
{
	static struct net_config cfg;
	struct net_config_iface *c = &cfg.ifaces[0];
	static const uint8_t old_mac[6] = {0x52, 0x54, 0x00, 0xab, 0xcd, 0x04};
	static const uint8_t new_mac[6] = {0x52, 0x54, 0x00, 0xab, 0xcd, 0x05};
	struct ifreq ifr;
	int nl, idx;

	/* The earlier tests' default routes would take the place of ours. */
	if (system("ip route flush default; ip -6 route flush default; "
	           "ip link add gv4 address 52:54:00:ab:cd:04 mtu 9000 type veth peer name gv5 mtu 9000 && "
	           "ip link set gv5 up") != 0) {
		ok(false, "a veth for the saved container");
		return;
	}
	cfg.nr_ifaces = 1;
	set_iface(c, "eth5", old_mac, 1500, "10.199.22.2", "10.199.22.1");
	c->addrs[1] = (struct net_config_addr){.family = AF_INET6, .prefixlen = 64};
	prefix(AF_INET6, "fd99:22::2", c->addrs[1].addr);
	c->nr_addrs = 2;
	c->routes[2] = (struct net_config_route){.family = AF_INET6, .has_gw = 1};
	prefix(AF_INET6, "fd99:22::1", c->routes[2].gw);
	c->nr_routes = 3;
	is_int(netcfg_apply(&cfg), 0);
	idx = (int)if_nametoindex("eth5");
	if (!ok(idx > 0, "the saved container's configuration") || nl_open(&nl) < 0)
		return;
	ok(has_default_via(nl, AF_INET, "10.199.22.1") && has_default_via(nl, AF_INET6, "fd99:22::1"),
	   "saved: its default routes");

	set_iface(c, "eth5", new_mac, 1400, "10.199.23.2", "10.199.23.1");
	memcpy(c->dev_mac, old_mac, 6);
	is_int(netcfg_reapply(&cfg), 0);
	ok((int)if_nametoindex("eth5") == idx, "restored: the same link, found by the MAC it had");
	ok(if_ioctl("eth5", SIOCGIFHWADDR, &ifr) && !memcmp(ifr.ifr_hwaddr.sa_data, new_mac, 6), "the new MAC");
	is_int(if_mtu("eth5"), 1400);
	ok(if_ioctl("eth5", SIOCGIFFLAGS, &ifr) && (ifr.ifr_flags & IFF_UP), "up");
	ok(has_addr(nl, idx, "10.199.23.2/24"), "the new address");
	ok(!has_addr(nl, idx, "10.199.22.2/24"), "the old IPv4 address is gone");
	ok(!has_addr(nl, idx, "fd99:22::2/64"), "the old IPv6 address is gone");
	ok(has_default_via(nl, AF_INET, "10.199.23.1"), "the new default route");
	ok(!has_default_via(nl, AF_INET, "10.199.22.1"), "the old IPv4 default route is gone");
	ok(!has_default_via(nl, AF_INET6, "fd99:22::1"), "the old IPv6 default route is gone");

	/* Again (dev_mac now names no link): found by its MAC, unchanged. */
	is_int(netcfg_reapply(&cfg), 0);
	ok((int)if_nametoindex("eth5") == idx && has_addr(nl, idx, "10.199.23.2/24") &&
	       has_default_via(nl, AF_INET, "10.199.23.1"),
	   "applied again: the same link and configuration");
	close(nl);
}

struct dst_found {
	int ifindex;
	uint8_t dst[4], dst_len, scope;
	bool hit;
};

static int dst_cb(const struct nlmsghdr *h, void *opaque)
{
	const struct rtmsg *rtm = NLMSG_DATA(h);
	const struct rtattr *tb[RTA_MAX + 1];
	struct dst_found *f = opaque;

	nl_parse_msg(h, sizeof(*rtm), tb, RTA_MAX);
	if (rtm->rtm_family == AF_INET && rtm->rtm_dst_len == f->dst_len && rtm->rtm_table == RT_TABLE_MAIN &&
	    rtm->rtm_scope == f->scope && tb[RTA_DST] && !memcmp(RTA_DATA(tb[RTA_DST]), f->dst, 4) && tb[RTA_OIF] &&
	    *(const int *)RTA_DATA(tb[RTA_OIF]) == f->ifindex)
		f->hit = true;
	return 0;
}

static bool has_route(int nl, int ifindex, const struct net_config_route *rt, uint8_t scope)
{
	struct rtmsg rtm = {.rtm_family = AF_INET};
	struct dst_found f = {.ifindex = ifindex, .dst_len = rt->dst_len, .scope = scope};
	struct nl_msg m;

	memcpy(f.dst, rt->dst, 4);
	nl_msg_init(&m, RTM_GETROUTE, 0, &rtm, sizeof(rtm));
	return nl_dump(nl, &m, dst_cb, &f) == 0 && f.hit;
}

/* common/netlink.c's route change, which guest-init and the host's netns
 * setup share: added with the scope asked for, added again, deleted,
 * deleted again. */
TEST(route_change)
{
	struct net_config_route rt = {.family = AF_INET, .dst_len = 24};
	int nl, lo;

	prefix(AF_INET, "10.199.40.0", rt.dst);
	if (!ok(system("ip link set lo up") == 0, "lo up") || nl_open(&nl) < 0)
		return;
	lo = (int)if_nametoindex("lo");
	is_int(nl_route_change(nl, lo, &rt, RT_SCOPE_LINK, true), 0);
	ok(has_route(nl, lo, &rt, RT_SCOPE_LINK), "on-link route with link scope");
	is_int(nl_route_change(nl, lo, &rt, RT_SCOPE_LINK, true), 0); /* EEXIST */
	is_int(nl_route_change(nl, lo, &rt, RT_SCOPE_LINK, false), 0);
	ok(!has_route(nl, lo, &rt, RT_SCOPE_LINK), "deleted");
	is_int(nl_route_change(nl, lo, &rt, RT_SCOPE_LINK, false), 0); /* ESRCH */
	rt.family = AF_PACKET;
	is_int(nl_route_change(nl, lo, &rt, RT_SCOPE_LINK, true), -EAFNOSUPPORT);
	close(nl);
}

/* TAP_MAIN() with a preamble that may skip the whole program. */
struct tap_test tap_tests[TAP_MAX_TESTS];
int tap_nr_tests, tap_count, tap_failed;
const char *tap_current = "";

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0)
		tap_skip_all("needs root (a private network namespace)");
	if (unshare(CLONE_NEWNET) < 0)
		tap_skip_all("unshare(CLONE_NEWNET) refused");
	if (system("ip link add gv0 address 52:54:00:ab:cd:01 type veth peer name gv1 && ip link set gv1 up") != 0)
		tap_skip_all("cannot create a veth pair with ip(8)");
	for (int i = 0; i < tap_nr_tests; i++) {
		tap_current = tap_tests[i].name;
		tap_tests[i].fn();
	}
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}
