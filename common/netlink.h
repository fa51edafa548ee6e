/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small rtnetlink client: build a request in a fixed buffer (attributes
 * and nested attributes), send it and wait for the kernel's ack, or run a
 * dump and walk the answers. Used by the host's netns setup and by
 * guest-init's network configuration, so it depends on nothing but libc.
 */
#ifndef KVRUN_COMMON_NETLINK_H
#define KVRUN_COMMON_NETLINK_H

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/net-config.h"

#define NL_MSG_MAX 4096

struct nl_msg {
	union {
		struct nlmsghdr hdr;
		uint8_t buf[NL_MSG_MAX];
	};
	bool overflow; /* an attribute did not fit: sending fails with -ENOBUFS */
};

/* Start a request of type with flags (NLM_F_REQUEST is added) followed by
 * the fixed header hdr of hdr_len bytes (struct ifinfomsg, ifaddrmsg...). */
void nl_msg_init(struct nl_msg *m, uint16_t type, uint16_t flags, const void *hdr, size_t hdr_len);
/* The fixed header after the nlmsghdr. */
void *nl_msg_payload(struct nl_msg *m);

/* Append an attribute. When it does not fit the message is marked as
 * overflowed and is refused when sent. */
void nl_attr_put(struct nl_msg *m, uint16_t type, const void *data, size_t len);
void nl_attr_put_u8(struct nl_msg *m, uint16_t type, uint8_t v);
void nl_attr_put_u16(struct nl_msg *m, uint16_t type, uint16_t v);
void nl_attr_put_u32(struct nl_msg *m, uint16_t type, uint32_t v);
void nl_attr_put_str(struct nl_msg *m, uint16_t type, const char *s); /* with its NUL */
/* Open a nested attribute; close it with nl_nest_end() once its contents
 * are appended. Returns NULL on overflow (nl_nest_end accepts NULL). */
struct rtattr *nl_nest_start(struct nl_msg *m, uint16_t type);
void nl_nest_end(struct nl_msg *m, struct rtattr *nest);

/* Find attributes in [rta, rta + len): tb[type] = the last one of each type
 * <= max (others ignored); tb has max + 1 entries, zeroed first. */
void nl_parse_attrs(const struct rtattr *rta, size_t len, const struct rtattr **tb, unsigned int max);
/* Attributes following a fixed header of hdr_len bytes in message h. */
void nl_parse_msg(const struct nlmsghdr *h, size_t hdr_len, const struct rtattr **tb, unsigned int max);

/* A NETLINK_ROUTE socket (close-on-exec) in the calling thread's netns. */
int nl_open(int *ret_fd);

/* Send m with NLM_F_ACK and wait for the answer. Returns 0 or the kernel's
 * negative errno (-ENOBUFS when m overflowed). */
int nl_transact(int fd, struct nl_msg *m);

/* Send a dump request (NLM_F_DUMP is added) and call cb for each answer
 * message until NLMSG_DONE. A negative return of cb stops the dump
 * (remaining answers are read and dropped) and is returned. */
typedef int (*nl_dump_fn)(const struct nlmsghdr *h, void *opaque);
int nl_dump(int fd, struct nl_msg *m, nl_dump_fn cb, void *opaque);

/* Add (add true) or delete route rt through link ifindex, in the main
 * table, protocol "boot", with scope. Adding a route that is there, or
 * deleting one that is not, succeeds. -EAFNOSUPPORT for a family other
 * than AF_INET and AF_INET6; otherwise the kernel's negative errno. */
int nl_route_change(int fd, int ifindex, const struct net_config_route *rt, uint8_t scope, bool add);

#endif
