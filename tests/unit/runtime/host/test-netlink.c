/* SPDX-License-Identifier: Apache-2.0 */
/* rtnetlink message building (no privileges needed): attributes, nesting,
 * overflow, the tc messages of the netns setup parsed back field by field,
 * and the ifalias record that teardown restores from. */
#include <net/if.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/tc_act/tc_mirred.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "common/netlink.h"
#include "runtime/host/netns.h"
#include "tap.h"

TEST(attributes_and_nesting)
{
	struct ifinfomsg ifi = {.ifi_index = 7};
	const struct rtattr *tb[IFLA_MAX + 1], *inner[4];
	struct rtattr *nest;
	struct nl_msg m;

	nl_msg_init(&m, RTM_NEWLINK, NLM_F_CREATE, &ifi, sizeof(ifi));
	is_int(m.hdr.nlmsg_flags, NLM_F_REQUEST | NLM_F_CREATE);
	is_int(((struct ifinfomsg *)nl_msg_payload(&m))->ifi_index, 7);
	nl_attr_put_str(&m, IFLA_IFNAME, "eth0");
	nl_attr_put_u32(&m, IFLA_MTU, 9000);
	nest = nl_nest_start(&m, IFLA_LINKINFO);
	nl_attr_put_str(&m, 1, "veth");
	nl_attr_put_u8(&m, 2, 5);
	nl_nest_end(&m, nest);
	ok(!m.overflow, "fits");
	is_int(m.hdr.nlmsg_len % 4, 0);
	nl_parse_msg(&m.hdr, sizeof(ifi), tb, IFLA_MAX);
	ok(tb[IFLA_IFNAME] && !strcmp(RTA_DATA(tb[IFLA_IFNAME]), "eth0"), "name");
	ok(tb[IFLA_MTU] && *(uint32_t *)RTA_DATA(tb[IFLA_MTU]) == 9000, "mtu");
	ok(tb[IFLA_LINKINFO], "nest present");
	nl_parse_attrs(RTA_DATA(tb[IFLA_LINKINFO]), RTA_PAYLOAD(tb[IFLA_LINKINFO]), inner, 3);
	ok(inner[1] && !strcmp(RTA_DATA(inner[1]), "veth"), "nested string");
	ok(inner[2] && *(uint8_t *)RTA_DATA(inner[2]) == 5, "nested u8");
	ok(tb[IFLA_LINKINFO]->rta_type & NLA_F_NESTED, "NLA_F_NESTED set");
}

TEST(overflow_is_refused)
{
	static uint8_t big[1000];
	struct nl_msg m;
	int fd;

	nl_msg_init(&m, RTM_NEWLINK, 0, NULL, 0);
	for (int i = 0; i < 5; i++)
		nl_attr_put(&m, 1, big, sizeof(big));
	ok(m.overflow, "marked");
	ok(m.hdr.nlmsg_len <= NL_MSG_MAX, "length stays inside the buffer");
	if (nl_open(&fd) == 0) {
		is_int(nl_transact(fd, &m), -ENOBUFS);
		close(fd);
	}
}

TEST(ingress_qdisc_message)
{
	const struct rtattr *tb[TCA_MAX + 1];
	struct nl_msg m;
	struct tcmsg *t;

	netns_build_ingress_qdisc(&m, 5, false);
	t = nl_msg_payload(&m);
	is_int(m.hdr.nlmsg_type, RTM_NEWQDISC);
	ok(m.hdr.nlmsg_flags & NLM_F_CREATE, "create");
	is_int(t->tcm_ifindex, 5);
	is_int(t->tcm_parent, TC_H_INGRESS);
	is_int(t->tcm_handle, 0xffff0000u);
	nl_parse_msg(&m.hdr, sizeof(*t), tb, TCA_MAX);
	ok(tb[TCA_KIND] && !strcmp(RTA_DATA(tb[TCA_KIND]), "ingress"), "kind ingress");
	netns_build_ingress_qdisc(&m, 5, true);
	is_int(m.hdr.nlmsg_type, RTM_DELQDISC);
}

TEST(redirect_filter_message)
{
	const struct rtattr *tb[TCA_MAX + 1], *u32[TCA_U32_MAX + 1], *acts[3], *act[TCA_ACT_MAX + 1],
	    *mir[TCA_MIRRED_MAX + 1];
	const struct tc_u32_sel *sel;
	const struct tc_mirred *p;
	struct nl_msg m;
	struct tcmsg *t;

	netns_build_redirect(&m, 3, 9);
	ok(!m.overflow, "fits");
	t = nl_msg_payload(&m);
	is_int(m.hdr.nlmsg_type, RTM_NEWTFILTER);
	is_int(t->tcm_ifindex, 3);
	is_int(t->tcm_parent, 0xffff0000u);
	is_int(TC_H_MIN(t->tcm_info), htons(ETH_P_ALL));
	nl_parse_msg(&m.hdr, sizeof(*t), tb, TCA_MAX);
	ok(tb[TCA_KIND] && !strcmp(RTA_DATA(tb[TCA_KIND]), "u32"), "u32 classifier");
	if (!ok(tb[TCA_OPTIONS] != NULL, "options"))
		return;
	nl_parse_attrs(RTA_DATA(tb[TCA_OPTIONS]), RTA_PAYLOAD(tb[TCA_OPTIONS]), u32, TCA_U32_MAX);
	if (!ok(u32[TCA_U32_SEL] && u32[TCA_U32_ACT], "selector and actions"))
		return;
	sel = RTA_DATA(u32[TCA_U32_SEL]);
	is_int(RTA_PAYLOAD(u32[TCA_U32_SEL]), sizeof(struct tc_u32_sel) + sizeof(struct tc_u32_key));
	is_int(sel->nkeys, 1);
	ok(sel->flags & TC_U32_TERMINAL, "terminal");
	ok(sel->keys[0].mask == 0 && sel->keys[0].val == 0, "match-all key");
	nl_parse_attrs(RTA_DATA(u32[TCA_U32_ACT]), RTA_PAYLOAD(u32[TCA_U32_ACT]), acts, 2);
	if (!ok(acts[1] != NULL, "action 1"))
		return;
	nl_parse_attrs(RTA_DATA(acts[1]), RTA_PAYLOAD(acts[1]), act, TCA_ACT_MAX);
	ok(act[TCA_ACT_KIND] && !strcmp(RTA_DATA(act[TCA_ACT_KIND]), "mirred"), "mirred");
	if (!ok(act[TCA_ACT_OPTIONS] != NULL, "action options"))
		return;
	nl_parse_attrs(RTA_DATA(act[TCA_ACT_OPTIONS]), RTA_PAYLOAD(act[TCA_ACT_OPTIONS]), mir, TCA_MIRRED_MAX);
	if (!ok(mir[TCA_MIRRED_PARMS] != NULL, "mirred parms"))
		return;
	p = RTA_DATA(mir[TCA_MIRRED_PARMS]);
	is_int(p->eaction, TCA_EGRESS_REDIR);
	is_int(p->action, TC_ACT_STOLEN);
	is_int(p->ifindex, 9);
}

static void v4(struct net_config_addr *a, const char *s, int len)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET;
	a->prefixlen = (uint8_t)len;
	inet_pton(AF_INET, s, a->addr);
}

TEST(record_round_trip)
{
	struct net_config_iface in = {0}, out = {0};
	char buf[256];

	v4(&in.addrs[0], "10.1.2.3", 24);
	in.addrs[1].family = AF_INET6;
	in.addrs[1].prefixlen = 64;
	inet_pton(AF_INET6, "fd00:1::5", in.addrs[1].addr);
	in.nr_addrs = 2;
	in.routes[0].family = AF_INET;
	in.routes[0].has_gw = 1;
	inet_pton(AF_INET, "10.1.2.1", in.routes[0].gw);
	in.routes[0].metric = 100;
	in.routes[1].family = AF_INET;
	in.routes[1].dst_len = 32;
	inet_pton(AF_INET, "10.9.9.9", in.routes[1].dst);
	in.routes[1].scope = 253;
	in.nr_routes = 2;
	is_int(netns_record_encode(&in, "0badcafe", buf, sizeof(buf)), 0);
	printf("# %s\n", buf);
	is_int(netns_record_decode(buf, "0badcafe", &out), 0);
	is_int(out.nr_addrs, 2);
	is_int(out.nr_routes, 2);
	ok(!memcmp(out.addrs, in.addrs, sizeof(in.addrs[0]) * 2), "addresses");
	ok(!memcmp(out.routes, in.routes, sizeof(in.routes[0]) * 2), "routes");
	is_int(netns_record_decode(buf, "12345678", &out), -EINVAL);
	is_int(netns_record_decode("something else", "0badcafe", &out), -EINVAL);
	/* Too small: addresses kept, routes left out, still terminated. */
	is_int(netns_record_encode(&in, "0badcafe", buf, 48), 0);
	ok(strlen(buf) < 48, "bounded");
	is_int(netns_record_decode(buf, "0badcafe", &out), 0);
	is_int(out.nr_routes, 0);
	ok(out.nr_addrs >= 1, "first address kept");
}

TEST(tap_names)
{
	char a[IFNAMSIZ], b[IFNAMSIZ];

	netns_tap_name("a-very-long-container-id-0123456789abcdef0123456789abcdef", 3, a);
	ok(strlen(a) < IFNAMSIZ, "fits IFNAMSIZ");
	ok(!strncmp(a, "kvt", 3) && a[strlen(a) - 1] == '3', "kvt<hash>_3: %s", a);
	netns_tap_name("other", 3, b);
	ok(strcmp(a, b), "different ids, different names");
}

TAP_MAIN()
