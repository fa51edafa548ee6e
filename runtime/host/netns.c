/* SPDX-License-Identifier: Apache-2.0 */
#include <net/if.h> /* before any linux/ header */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/tc_act/tc_mirred.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "oci-spec/spec.h"
#include "runtime/host/netns-rtnl.h"
#include "runtime/host/netns.h"
#include "virtio/net/tap.h"

#define RECORD_PREFIX "kvrun:"
/* How long a setup or teardown waits for another's in the same namespace. */
#define NETNS_LOCK_WAIT_MS (30 * 1000)
/* tc priority of our filters (any fixed value: one filter per qdisc). */
#define REDIRECT_PRIO 1

int netns_path_from_spec(const struct oci_spec *spec, const char **ret_path)
{
	const struct oci_linux *l = spec->linux_spec;

	for (size_t i = 0; l && i < l->n_namespaces; i++) {
		if (l->namespaces[i].kind == OCI_NS_NETWORK) {
			*ret_path = l->namespaces[i].path;
			return 0;
		}
	}
	return err_set(-EOPNOTSUPP, "config.json: no network namespace (host networking) cannot be given to a VM; "
	                            "add a \"network\" entry to linux.namespaces");
}

static uint32_t id_hash(const char *id)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (; *id; id++)
		h = (h ^ (uint8_t)*id) * 16777619u;
	return h;
}

static void hash_str(const char *id, char buf[9])
{
	snprintf(buf, 9, "%08x", id_hash(id));
}

void netns_tap_name(const char *container_id, unsigned int i, char *buf)
{
	snprintf(buf, IFNAMSIZ, "kvt%08x_%u", id_hash(container_id), i);
}

/* ---- tc messages -------------------------------------------------------- */

void netns_build_ingress_qdisc(struct nl_msg *m, int ifindex, bool del)
{
	struct tcmsg tcm = {
	    .tcm_family = AF_UNSPEC,
	    .tcm_ifindex = ifindex,
	    .tcm_handle = TC_H_MAKE(TC_H_INGRESS, 0),
	    .tcm_parent = TC_H_INGRESS,
	};

	nl_msg_init(m, del ? RTM_DELQDISC : RTM_NEWQDISC, del ? 0 : NLM_F_CREATE | NLM_F_EXCL, &tcm, sizeof(tcm));
	nl_attr_put_str(m, TCA_KIND, "ingress");
}

void netns_build_redirect(struct nl_msg *m, int ifindex, int to_ifindex)
{
	struct tcmsg tcm = {
	    .tcm_family = AF_UNSPEC,
	    .tcm_ifindex = ifindex,
	    .tcm_parent = TC_H_MAKE(TC_H_INGRESS, 0),
	    .tcm_info = TC_H_MAKE(REDIRECT_PRIO << 16, htons(ETH_P_ALL)),
	};
	/* One key that matches every packet (mask 0 at offset 0). */
	struct {
		struct tc_u32_sel sel;
		struct tc_u32_key key;
	} sel = {.sel = {.flags = TC_U32_TERMINAL, .nkeys = 1}};
	struct tc_mirred mirred = {
	    .action = TC_ACT_STOLEN,
	    .eaction = TCA_EGRESS_REDIR,
	    .ifindex = (uint32_t)to_ifindex,
	};
	struct rtattr *opts, *acts, *act, *aopts;

	nl_msg_init(m, RTM_NEWTFILTER, NLM_F_CREATE | NLM_F_EXCL, &tcm, sizeof(tcm));
	nl_attr_put_str(m, TCA_KIND, "u32");
	opts = nl_nest_start(m, TCA_OPTIONS);
	nl_attr_put(m, TCA_U32_SEL, &sel, sizeof(sel));
	acts = nl_nest_start(m, TCA_U32_ACT);
	act = nl_nest_start(m, 1); /* action order 1 */
	nl_attr_put_str(m, TCA_ACT_KIND, "mirred");
	aopts = nl_nest_start(m, TCA_ACT_OPTIONS);
	nl_attr_put(m, TCA_MIRRED_PARMS, &mirred, sizeof(mirred));
	nl_nest_end(m, aopts);
	nl_nest_end(m, act);
	nl_nest_end(m, acts);
	nl_nest_end(m, opts);
}

/* ---- the record kept in the interface's alias -------------------------- */

static void append(char *buf, size_t len, size_t *used, const char *tok)
{
	size_t l = strlen(tok);

	if (*used + 1 + l + 1 > len)
		return;
	buf[(*used)++] = ' ';
	memcpy(buf + *used, tok, l + 1);
	*used += l;
}

int netns_record_encode(const struct net_config_iface *iface, const char *hash, char *buf, size_t len)
{
	char tok[INET6_ADDRSTRLEN * 2 + 48], a[INET6_ADDRSTRLEN], g[INET6_ADDRSTRLEN];
	size_t used;

	used = (size_t)snprintf(buf, len, RECORD_PREFIX "%s", hash);
	if (used >= len)
		return -ENOSPC;
	for (unsigned int i = 0; i < iface->nr_addrs; i++) {
		const struct net_config_addr *ad = &iface->addrs[i];

		inet_ntop(ad->family, ad->addr, a, sizeof(a));
		snprintf(tok, sizeof(tok), "a=%s/%u", a, ad->prefixlen);
		append(buf, len, &used, tok);
	}
	for (unsigned int i = 0; i < iface->nr_routes; i++) {
		const struct net_config_route *rt = &iface->routes[i];

		inet_ntop(rt->family, rt->dst, a, sizeof(a));
		inet_ntop(rt->family, rt->gw, g, sizeof(g));
		snprintf(tok, sizeof(tok), "r=%s/%u,%s,%u,%u", a, rt->dst_len, rt->has_gw ? g : "-", rt->scope,
		         rt->metric);
		append(buf, len, &used, tok);
	}
	return 0;
}

static int parse_prefix(char *s, uint8_t *family, uint8_t *addr, uint8_t *len)
{
	char *slash = strchr(s, '/'), *end;
	unsigned long l;

	if (!slash)
		return -EINVAL;
	*slash = 0;
	*family = strchr(s, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(*family, s, addr) != 1)
		return -EINVAL;
	l = strtoul(slash + 1, &end, 10);
	if (end == slash + 1 || l > (*family == AF_INET ? 32u : 128u))
		return -EINVAL;
	*len = (uint8_t)l;
	return 0;
}

static int parse_route(char *s, struct net_config_route *rt)
{
	char *gw = strchr(s, ','), *scope, *metric;

	if (!gw || !(scope = strchr(gw + 1, ',')) || !(metric = strchr(scope + 1, ',')))
		return -EINVAL;
	*gw++ = 0;
	*scope++ = 0;
	*metric++ = 0;
	memset(rt, 0, sizeof(*rt));
	if (parse_prefix(s, &rt->family, rt->dst, &rt->dst_len) < 0)
		return -EINVAL;
	if (strcmp(gw, "-")) {
		if (inet_pton(rt->family, gw, rt->gw) != 1)
			return -EINVAL;
		rt->has_gw = 1;
	}
	rt->scope = (uint8_t)strtoul(scope, NULL, 10);
	rt->metric = (uint32_t)strtoul(metric, NULL, 10);
	return 0;
}

int netns_record_decode(const char *alias, const char *hash, struct net_config_iface *iface)
{
	char copy[NETNS_ALIAS_MAX], *save = NULL, *tok;
	size_t plen = strlen(RECORD_PREFIX);

	if (strncmp(alias, RECORD_PREFIX, plen) || strncmp(alias + plen, hash, 8) ||
	    (alias[plen + 8] && alias[plen + 8] != ' '))
		return -EINVAL;
	snprintf(copy, sizeof(copy), "%s", alias + plen + 8);
	iface->nr_addrs = iface->nr_routes = 0;
	for (tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		if (!strncmp(tok, "a=", 2) && iface->nr_addrs < NET_CONFIG_MAX_ADDRS) {
			struct net_config_addr *a = &iface->addrs[iface->nr_addrs];

			memset(a, 0, sizeof(*a));
			if (parse_prefix(tok + 2, &a->family, a->addr, &a->prefixlen) == 0)
				iface->nr_addrs++;
		} else if (!strncmp(tok, "r=", 2) && iface->nr_routes < NET_CONFIG_MAX_ROUTES) {
			if (parse_route(tok + 2, &iface->routes[iface->nr_routes]) == 0)
				iface->nr_routes++;
		}
	}
	return 0;
}

/* ---- setup and teardown, inside the namespace -------------------------- */

static bool is_our_tap(const char *name, const char *hash)
{
	return !strncmp(name, "kvt", 3) && !strncmp(name + 3, hash, 8) && name[11] == '_';
}

/* A TAP named as kvrun names them ("kvt<8 hex digits>_<n>"), of any id. */
static bool is_kvrun_tap(const char *name)
{
	if (strncmp(name, "kvt", 3) || strlen(name) < 13 || name[11] != '_')
		return false;
	for (int i = 3; i < 11; i++)
		if (!strchr("0123456789abcdef", name[i]))
			return false;
	return true;
}

/* Whether another kvrun container serves the namespace: a TAP of kvrun's
 * exists (TAPs vanish with their last fd, so its monitor is alive; one of
 * our own name too, which is then another container's: same hash, or the
 * same id under another state root), or an interface holds another
 * container's record (its addresses are that container's to give back).
 * -EBUSY naming the interface, or 0. */
static int check_not_served(const struct netns_links *links, const char *hash, const char *path)
{
	size_t plen = strlen(RECORD_PREFIX);

	/* The TAPs first: they name a monitor that is alive. */
	for (unsigned int i = 0; i < 2 * links->n; i++) {
		const struct netns_link_info *l = &links->l[i % links->n];
		const char *who = NULL;

		if (i < links->n && is_kvrun_tap(l->name))
			who = "is the TAP of";
		else if (i >= links->n && !strncmp(l->alias, RECORD_PREFIX, plen) && strncmp(l->alias + plen, hash, 8))
			who = "has its addresses held by";
		if (who)
			return err_set(-EBUSY,
			               "network namespace %s is already served by another kvrun container (%s %s it): "
			               "a VM cannot share its interfaces with another VM, so containers sharing a "
			               "network namespace (a pod's) are refused",
			               path, l->name, who);
	}
	return 0;
}

static int teardown_in_ns(int nl, const char *hash)
{
	struct netns_links *links = calloc(1, sizeof(*links));
	struct net_config_iface *rec = calloc(1, sizeof(*rec));
	struct nl_msg m;
	int r, first = 0;

	if (!links || !rec) {
		r = -ENOMEM;
		goto out;
	}
	r = rtnl_get_links(nl, links);
	if (r < 0) {
		err_setsys(r, "listing links");
		goto out;
	}
	for (unsigned int i = 0; i < links->n; i++) {
		const struct netns_link_info *l = &links->l[i];

		if (is_our_tap(l->name, hash)) {
			r = rtnl_del_link(nl, l->ifindex);
			if (r < 0 && !first)
				first = err_setsys(r, "deleting %s", l->name);
		}
	}
	for (unsigned int i = 0; i < links->n; i++) {
		const struct netns_link_info *l = &links->l[i];

		if (netns_record_decode(l->alias, hash, rec) < 0)
			continue;
		netns_build_ingress_qdisc(&m, l->ifindex, true);
		r = rtnl_tc(nl, &m);
		if (r < 0 && r != -ENOENT && r != -EINVAL && !first)
			first = err_setsys(r, "removing the ingress qdisc of %s", l->name);
		/* Already there: a teardown that was cut short. */
		for (unsigned int j = 0; j < rec->nr_addrs; j++) {
			r = rtnl_addr(nl, l->ifindex, &rec->addrs[j], true);
			if (r < 0 && r != -EEXIST && !first)
				first = err_setsys(r, "restoring an address of %s", l->name);
		}
		for (unsigned int j = 0; j < rec->nr_routes; j++) {
			r = nl_route_change(nl, l->ifindex, &rec->routes[j], rec->routes[j].scope, true);
			if (r < 0 && r != -EEXIST && !first)
				first = err_setsys(r, "restoring a route of %s", l->name);
		}
		r = rtnl_set_alias(nl, l->ifindex, "");
		if (r < 0 && !first)
			first = err_setsys(r, "clearing the alias of %s", l->name);
		log_debug("netns: %s given back (%u addresses, %u routes)", l->name, rec->nr_addrs, rec->nr_routes);
	}
	r = first;
out:
	free(links);
	free(rec);
	return r;
}

/* Read what the guest needs from interface l into iface. */
static int collect_iface(int nl, const struct netns_link_info *l, struct net_config_iface *iface)
{
	int r;

	memset(iface, 0, sizeof(*iface));
	snprintf(iface->name, sizeof(iface->name), "%s", l->name);
	memcpy(iface->mac, l->mac, 6);
	iface->mtu = l->mtu;
	r = rtnl_get_addrs(nl, l->ifindex, iface);
	if (r < 0)
		return err_setsys(r, "addresses of %s", l->name);
	r = rtnl_get_routes(nl, l->ifindex, iface);
	if (r < 0)
		return err_setsys(r, "routes of %s", l->name);
	return 0;
}

/* Take interface l's layer 3 away and redirect its frames to a new TAP. */
static int link_iface(int nl, const char *hash, const struct netns_link_info *l, const struct net_config_iface *iface,
                      unsigned int pairs, struct netns_link *out)
{
	char alias[NETNS_ALIAS_MAX];
	struct nl_msg m;
	int r, tap;

	/* The record goes first: a crash after this point can be undone. */
	netns_record_encode(iface, hash, alias, sizeof(alias));
	r = rtnl_set_alias(nl, l->ifindex, alias);
	if (r < 0)
		return err_setsys(r, "setting the alias of %s", l->name);
	r = net_tap_open(out->tap, pairs, out->fds);
	if (r < 0)
		return r;
	out->nr_fds = pairs;
	tap = (int)if_nametoindex(out->tap);
	if (tap <= 0)
		return err_setsys(-errno, "%s", out->tap);
	if (rtnl_no_ipv6_ll(nl, tap) < 0)
		log_debug("netns: %s keeps its IPv6 link-local address", out->tap);
	if ((r = rtnl_set_mtu(nl, tap, l->mtu)) < 0 || (r = rtnl_set_up(nl, tap)) < 0 ||
	    (r = rtnl_set_up(nl, l->ifindex)) < 0)
		return err_setsys(r, "bringing up %s and %s", out->tap, l->name);
	for (unsigned int i = 0; i < iface->nr_routes; i++)
		if ((r = nl_route_change(nl, l->ifindex, &iface->routes[i], iface->routes[i].scope, false)) < 0)
			return err_setsys(r, "removing a route of %s", l->name);
	for (unsigned int i = 0; i < iface->nr_addrs; i++)
		if ((r = rtnl_addr(nl, l->ifindex, &iface->addrs[i], false)) < 0)
			return err_setsys(r, "removing an address of %s", l->name);
	netns_build_ingress_qdisc(&m, l->ifindex, false);
	if ((r = rtnl_tc(nl, &m)) < 0 && r != -EEXIST)
		return err_setsys(r, "ingress qdisc on %s", l->name);
	netns_build_ingress_qdisc(&m, tap, false);
	if ((r = rtnl_tc(nl, &m)) < 0)
		return err_setsys(r, "ingress qdisc on %s", out->tap);
	netns_build_redirect(&m, l->ifindex, tap);
	if ((r = rtnl_tc(nl, &m)) < 0)
		return err_setsys(r, "redirect %s -> %s", l->name, out->tap);
	netns_build_redirect(&m, tap, l->ifindex);
	if ((r = rtnl_tc(nl, &m)) < 0)
		return err_setsys(r, "redirect %s -> %s", out->tap, l->name);
	log_debug("netns: %s <-> %s (tc u32 + mirred, %u addresses, %u routes to the guest)", l->name, out->tap,
	          iface->nr_addrs, iface->nr_routes);
	return 0;
}

static int setup_in_ns(int nl, const char *path, const char *id, unsigned int pairs, struct netns_setup *s,
                       bool *ret_touched)
{
	_cleanup_free_ struct netns_links *links = calloc(1, sizeof(*links));
	char hash[9];
	int r;

	if (!links)
		return -ENOMEM;
	hash_str(id, hash);
	r = rtnl_get_links(nl, links);
	if (r < 0)
		return err_setsys(r, "listing links");
	/* Before anything is changed: nothing of another container's is
	 * touched, now or by the undoing of a failure. */
	r = check_not_served(links, hash, path);
	if (r < 0)
		return r;
	*ret_touched = true;
	r = teardown_in_ns(nl, hash);
	if (r < 0)
		return err_prefix(r, "removing leftovers");
	r = rtnl_get_links(nl, links);
	if (r < 0)
		return err_setsys(r, "listing links");
	for (unsigned int i = 0; i < links->n; i++) {
		const struct netns_link_info *l = &links->l[i];
		unsigned int n = s->cfg.nr_ifaces;

		if ((l->flags & IFF_LOOPBACK) || !l->ether || is_our_tap(l->name, hash))
			continue;
		if (n >= NET_CONFIG_MAX_IFACES)
			return err_set(-E2BIG, "more than %d interfaces", NET_CONFIG_MAX_IFACES);
		netns_tap_name(id, n, s->links[n].tap);
		snprintf(s->links[n].iface, IFNAMSIZ, "%s", l->name);
		r = collect_iface(nl, l, &s->cfg.ifaces[n]);
		if (r < 0)
			return r;
		s->cfg.nr_ifaces++;
		r = link_iface(nl, hash, l, &s->cfg.ifaces[n], pairs, &s->links[n]);
		if (r < 0)
			return r;
	}
	return 0;
}

struct netns_job {
	const char *path, *id;
	unsigned int pairs;
	struct netns_setup *setup; /* NULL: teardown */
	int r;
	char err[512];
};

/* One kvrun process at a time changes a namespace (two creates in it at
 * once would both find it unserved): flock on the namespace's file,
 * waited for at most NETNS_LOCK_WAIT_MS. */
static int lock_ns(int nsfd, const char *path)
{
	for (int waited = 0; flock(nsfd, LOCK_EX | LOCK_NB) < 0; waited += 10) {
		struct timespec ts = {0, 10 * 1000 * 1000};

		if (errno == EINTR)
			continue;
		if (errno != EWOULDBLOCK)
			return err_setsys(-errno, "lock network namespace %s", path);
		if (waited >= NETNS_LOCK_WAIT_MS)
			return err_set(-EBUSY, "network namespace %s: another kvrun process kept it locked for %d s",
			               path, NETNS_LOCK_WAIT_MS / 1000);
		nanosleep(&ts, NULL);
	}
	return 0;
}

static void *netns_thread(void *opaque)
{
	struct netns_job *job = opaque;
	_cleanup_close_ int nsfd = -1, nl = -1;
	char hash[9];
	int r;

	err_clear();
	nsfd = open(job->path, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0) {
		r = -errno;
		r = (!job->setup && r == -ENOENT) ? 0 : err_setsys(r, "opening network namespace %s", job->path);
		goto out;
	}
	r = lock_ns(nsfd, job->path);
	if (r < 0)
		goto out;
	/* Only this thread moves: the monitor's other threads stay where
	 * they are, and the thread ends right after. */
	if (setns(nsfd, CLONE_NEWNET) < 0) {
		r = err_setsys(-errno, "entering network namespace %s", job->path);
		goto out;
	}
	r = nl_open(&nl);
	if (r < 0) {
		err_setsys(r, "netlink socket");
		goto out;
	}
	hash_str(job->id, hash);
	if (job->setup) {
		bool touched = false;

		r = setup_in_ns(nl, job->path, job->id, job->pairs, job->setup, &touched);
		if (r < 0) {
			char saved[512];

			snprintf(saved, sizeof(saved), "%s", err_msg());
			netns_setup_close(job->setup);
			if (touched)
				teardown_in_ns(nl, hash);
			err_set(r, "%s", saved);
		}
	} else {
		r = teardown_in_ns(nl, hash);
	}
out:
	job->r = r;
	snprintf(job->err, sizeof(job->err), "%s", err_msg());
	return NULL;
}

static int netns_run(struct netns_job *job)
{
	pthread_t t;
	int r;

	r = -pthread_create(&t, NULL, netns_thread, job);
	if (r < 0)
		return err_setsys(r, "netns helper thread");
	pthread_join(t, NULL);
	if (job->r < 0)
		return err_set(job->r, "%s", job->err[0] ? job->err : strerror(-job->r));
	return job->r;
}

int netns_setup(const char *netns_path, const char *container_id, unsigned int queue_pairs, struct netns_setup *ret)
{
	struct netns_job job = {.path = netns_path, .id = container_id, .pairs = queue_pairs, .setup = ret};

	memset(ret, 0, sizeof(*ret));
	for (unsigned int i = 0; i < NET_CONFIG_MAX_IFACES; i++)
		for (unsigned int j = 0; j < NET_MAX_QUEUE_PAIRS; j++)
			ret->links[i].fds[j] = -1;
	if (queue_pairs == 0 || queue_pairs > NET_MAX_QUEUE_PAIRS)
		return err_set(-EINVAL, "netns: %u queue pairs", queue_pairs);
	if (!netns_path) {
		log_debug("netns: new empty namespace, loopback only");
		return 0;
	}
	return netns_run(&job);
}

void netns_setup_close(struct netns_setup *s)
{
	for (unsigned int i = 0; i < NET_CONFIG_MAX_IFACES; i++) {
		for (unsigned int j = 0; j < s->links[i].nr_fds; j++) {
			if (s->links[i].fds[j] >= 0)
				close(s->links[i].fds[j]);
			s->links[i].fds[j] = -1;
		}
		s->links[i].nr_fds = 0;
	}
}

int netns_teardown(const char *netns_path, const char *container_id)
{
	struct netns_job job = {.path = netns_path, .id = container_id};

	if (!netns_path)
		return 0;
	return netns_run(&job);
}
