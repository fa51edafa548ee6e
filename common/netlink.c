/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/netlink.h"

void nl_msg_init(struct nl_msg *m, uint16_t type, uint16_t flags, const void *hdr, size_t hdr_len)
{
	memset(m->buf, 0, NLMSG_SPACE(hdr_len));
	m->overflow = false;
	m->hdr.nlmsg_len = NLMSG_LENGTH(hdr_len);
	m->hdr.nlmsg_type = type;
	m->hdr.nlmsg_flags = NLM_F_REQUEST | flags;
	if (hdr_len)
		memcpy(NLMSG_DATA(&m->hdr), hdr, hdr_len);
}

void *nl_msg_payload(struct nl_msg *m)
{
	return NLMSG_DATA(&m->hdr);
}

static struct rtattr *nl_tail(struct nl_msg *m)
{
	return (struct rtattr *)(m->buf + NLMSG_ALIGN(m->hdr.nlmsg_len));
}

void nl_attr_put(struct nl_msg *m, uint16_t type, const void *data, size_t len)
{
	size_t off = NLMSG_ALIGN(m->hdr.nlmsg_len);
	struct rtattr *rta;

	if (m->overflow || len > UINT16_MAX - RTA_LENGTH(0) || off + RTA_SPACE(len) > sizeof(m->buf)) {
		m->overflow = true;
		return;
	}
	rta = nl_tail(m);
	rta->rta_type = type;
	rta->rta_len = RTA_LENGTH(len);
	if (len)
		memcpy(RTA_DATA(rta), data, len);
	memset((uint8_t *)RTA_DATA(rta) + len, 0, RTA_SPACE(len) - RTA_LENGTH(len));
	m->hdr.nlmsg_len = off + RTA_SPACE(len);
}

void nl_attr_put_u8(struct nl_msg *m, uint16_t type, uint8_t v)
{
	nl_attr_put(m, type, &v, sizeof(v));
}

void nl_attr_put_u16(struct nl_msg *m, uint16_t type, uint16_t v)
{
	nl_attr_put(m, type, &v, sizeof(v));
}

void nl_attr_put_u32(struct nl_msg *m, uint16_t type, uint32_t v)
{
	nl_attr_put(m, type, &v, sizeof(v));
}

void nl_attr_put_str(struct nl_msg *m, uint16_t type, const char *s)
{
	nl_attr_put(m, type, s, strlen(s) + 1);
}

struct rtattr *nl_nest_start(struct nl_msg *m, uint16_t type)
{
	struct rtattr *nest = nl_tail(m);

	nl_attr_put(m, type | NLA_F_NESTED, NULL, 0);
	return m->overflow ? NULL : nest;
}

void nl_nest_end(struct nl_msg *m, struct rtattr *nest)
{
	size_t len;

	if (!nest || m->overflow)
		return;
	len = m->buf + m->hdr.nlmsg_len - (uint8_t *)nest;
	if (len > UINT16_MAX) {
		m->overflow = true;
		return;
	}
	nest->rta_len = (unsigned short)len;
}

void nl_parse_attrs(const struct rtattr *rta, size_t len, const struct rtattr **tb, unsigned int max)
{
	int left = len > INT32_MAX ? INT32_MAX : (int)len;

	memset(tb, 0, sizeof(*tb) * (max + 1));
	for (; RTA_OK(rta, left); rta = RTA_NEXT(rta, left)) {
		unsigned int type = rta->rta_type & NLA_TYPE_MASK;

		if (type <= max)
			tb[type] = rta;
	}
}

void nl_parse_msg(const struct nlmsghdr *h, size_t hdr_len, const struct rtattr **tb, unsigned int max)
{
	size_t off = NLMSG_SPACE(hdr_len);

	if (h->nlmsg_len < off) {
		memset(tb, 0, sizeof(*tb) * (max + 1));
		return;
	}
	nl_parse_attrs((const struct rtattr *)((const uint8_t *)h + off), h->nlmsg_len - off, tb, max);
}

int nl_open(int *ret_fd)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	int fd, one = 1;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	/* Extended acks are only a nicety; older kernels refuse the option. */
	(void)setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

static uint32_t nl_next_seq(void)
{
	static uint32_t seq;

	return __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED);
}

static int nl_send(int fd, struct nl_msg *m)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	ssize_t n;

	if (m->overflow)
		return -ENOBUFS;
	m->hdr.nlmsg_seq = nl_next_seq();
	do
		n = sendto(fd, m->buf, m->hdr.nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == (ssize_t)m->hdr.nlmsg_len ? 0 : -EIO;
}

/* Read answers to seq and hand each to fn; stops at the ack (NLMSG_ERROR)
 * or NLMSG_DONE. Returns the first error. */
static int nl_recv_until_done(int fd, uint32_t seq, nl_dump_fn fn, void *opaque)
{
	static _Thread_local uint8_t buf[32768] __attribute__((aligned(NLMSG_ALIGNTO)));
	int result = 0;

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		int left;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		left = (int)n;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
			if (h->nlmsg_seq != seq)
				continue;
			if (h->nlmsg_type == NLMSG_DONE)
				return result;
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
					return -EBADMSG;
				return result < 0 ? result : e->error;
			}
			if (fn && result >= 0) {
				int r = fn(h, opaque);

				if (r < 0)
					result = r;
			}
		}
		if (n == 0)
			return -ECONNRESET;
	}
}

int nl_transact(int fd, struct nl_msg *m)
{
	int r;

	m->hdr.nlmsg_flags |= NLM_F_ACK;
	r = nl_send(fd, m);
	if (r < 0)
		return r;
	return nl_recv_until_done(fd, m->hdr.nlmsg_seq, NULL, NULL);
}

int nl_dump(int fd, struct nl_msg *m, nl_dump_fn cb, void *opaque)
{
	int r;

	m->hdr.nlmsg_flags |= NLM_F_DUMP;
	r = nl_send(fd, m);
	if (r < 0)
		return r;
	return nl_recv_until_done(fd, m->hdr.nlmsg_seq, cb, opaque);
}

int nl_route_change(int fd, int ifindex, const struct net_config_route *rt, uint8_t scope, bool add)
{
	struct rtmsg rtm = {
	    .rtm_family = rt->family,
	    .rtm_dst_len = rt->dst_len,
	    .rtm_table = RT_TABLE_MAIN,
	    .rtm_protocol = RTPROT_BOOT,
	    .rtm_scope = scope,
	    .rtm_type = RTN_UNICAST,
	};
	size_t alen = rt->family == AF_INET ? 4 : 16;
	struct nl_msg m;
	int r;

	if (rt->family != AF_INET && rt->family != AF_INET6)
		return -EAFNOSUPPORT;
	nl_msg_init(&m, add ? RTM_NEWROUTE : RTM_DELROUTE, add ? NLM_F_CREATE | NLM_F_EXCL : 0, &rtm, sizeof(rtm));
	if (rt->dst_len)
		nl_attr_put(&m, RTA_DST, rt->dst, alen);
	if (rt->has_gw)
		nl_attr_put(&m, RTA_GATEWAY, rt->gw, alen);
	nl_attr_put_u32(&m, RTA_OIF, (uint32_t)ifindex);
	if (rt->metric)
		nl_attr_put_u32(&m, RTA_PRIORITY, rt->metric);
	r = nl_transact(fd, &m);
	if ((add && r == -EEXIST) || (!add && (r == -ESRCH || r == -ENOENT)))
		return 0;
	return r;
}
