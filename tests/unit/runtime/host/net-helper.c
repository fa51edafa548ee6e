/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Drives runtime/host/netns.c and guest-init/netcfg.c for the integration tests
 * (tests/integration/test_net_*.py):
 *
 *   net-helper setup NETNS ID PAIRS   prints the guest config, then "ready",
 *       then serves stdin lines until "quit" (the TAPs live as long as it):
 *         send I HEX        write frame HEX (with a zero vnet header) to TAP I
 *         recv I MS TYPE    wait up to MS ms for a frame of ethertype TYPE
 *                           (hex) on TAP I; prints "frame HEX" or "timeout"
 *   net-helper teardown NETNS ID
 *   net-helper spec CONFIG.JSON      prints the netns path, "new", or the error
 *   net-helper netcfg [--name N] [--mac M] [--mtu U] [--addr A/L]...
 *       [--route DST/LEN[,GW]]...    applies it in the current netns
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "guest-init/netcfg.h"
#include "oci-spec/spec.h"
#include "runtime/host/netns.h"

#define VNET_HDR 12

static void print_hex(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%02x", p[i]);
}

static void print_config(const struct netns_setup *s)
{
	char a[INET6_ADDRSTRLEN], g[INET6_ADDRSTRLEN];

	for (unsigned int i = 0; i < s->cfg.nr_ifaces; i++) {
		const struct net_config_iface *c = &s->cfg.ifaces[i];

		printf("iface %s %s %02x:%02x:%02x:%02x:%02x:%02x %u %u\n", c->name, s->links[i].tap, c->mac[0],
		       c->mac[1], c->mac[2], c->mac[3], c->mac[4], c->mac[5], c->mtu, s->links[i].nr_fds);
		for (unsigned int j = 0; j < c->nr_addrs; j++) {
			inet_ntop(c->addrs[j].family, c->addrs[j].addr, a, sizeof(a));
			printf("addr %s %s/%u\n", c->name, a, c->addrs[j].prefixlen);
		}
		for (unsigned int j = 0; j < c->nr_routes; j++) {
			const struct net_config_route *r = &c->routes[j];

			inet_ntop(r->family, r->dst, a, sizeof(a));
			inet_ntop(r->family, r->gw, g, sizeof(g));
			printf("route %s %s/%u %s %u\n", c->name, a, r->dst_len, r->has_gw ? g : "-", r->metric);
		}
	}
	printf("ready\n");
	fflush(stdout);
}

static size_t unhex(const char *s, uint8_t *out, size_t max)
{
	size_t n = 0;

	while (s[0] && s[1] && n < max) {
		unsigned int v;

		if (sscanf(s, "%2x", &v) != 1)
			break;
		out[n++] = (uint8_t)v;
		s += 2;
	}
	return n;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A multiqueue TAP steers each flow to one of its fds: watch them all. */
static void do_recv(const struct netns_link *l, int ms, unsigned int type)
{
	static uint8_t buf[VNET_HDR + 65536];
	long end = now_ms() + ms;

	for (;;) {
		struct pollfd p[NET_MAX_QUEUE_PAIRS];
		long left = end - now_ms();
		ssize_t n = -1;

		for (unsigned int q = 0; q < l->nr_fds; q++)
			p[q] = (struct pollfd){.fd = l->fds[q], .events = POLLIN};
		if (left <= 0 || poll(p, l->nr_fds, (int)left) <= 0)
			break;
		for (unsigned int q = 0; q < l->nr_fds && n < 0; q++)
			if (p[q].revents & POLLIN)
				n = read(l->fds[q], buf, sizeof(buf));
		if (n < VNET_HDR + 14)
			continue;
		if (((unsigned int)buf[VNET_HDR + 12] << 8 | buf[VNET_HDR + 13]) != type)
			continue;
		printf("frame ");
		print_hex(buf + VNET_HDR, (size_t)n - VNET_HDR);
		printf("\n");
		fflush(stdout);
		return;
	}
	printf("timeout\n");
	fflush(stdout);
}

static int serve(struct netns_setup *s)
{
	static uint8_t frame[VNET_HDR + 9216];
	char line[40000], hex[20000];
	unsigned int i, type;
	int ms;

	while (fgets(line, sizeof(line), stdin)) {
		if (sscanf(line, "send %u %19999s", &i, hex) == 2 && i < s->cfg.nr_ifaces) {
			size_t n;

			memset(frame, 0, VNET_HDR);
			n = unhex(hex, frame + VNET_HDR, sizeof(frame) - VNET_HDR);
			printf("%s\n", write(s->links[i].fds[0], frame, VNET_HDR + n) < 0 ? strerror(errno) : "sent");
			fflush(stdout);
		} else if (sscanf(line, "recv %u %d %x", &i, &ms, &type) == 3 && i < s->cfg.nr_ifaces) {
			do_recv(&s->links[i], ms, type);
		} else if (!strncmp(line, "quit", 4)) {
			break;
		} else {
			printf("bad command\n");
			fflush(stdout);
		}
	}
	netns_setup_close(s);
	return 0;
}

static int cmd_netcfg(int argc, char **argv)
{
	static struct net_config cfg;
	struct net_config_iface *c = &cfg.ifaces[0];
	int r;

	for (int i = 0; i + 1 < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];

		cfg.nr_ifaces = 1;
		if (!strcmp(k, "--name")) {
			snprintf(c->name, sizeof(c->name), "%s", v);
		} else if (!strcmp(k, "--mac")) {
			sscanf(v, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &c->mac[0], &c->mac[1], &c->mac[2], &c->mac[3],
			       &c->mac[4], &c->mac[5]);
		} else if (!strcmp(k, "--mtu")) {
			c->mtu = (uint32_t)atoi(v);
		} else if (!strcmp(k, "--addr") || !strcmp(k, "--route")) {
			char buf[128], *slash, *comma;
			uint8_t fam, *dst, *len;

			snprintf(buf, sizeof(buf), "%s", v);
			comma = strchr(buf, ',');
			if (comma)
				*comma++ = 0;
			slash = strchr(buf, '/');
			if (!slash)
				return 2;
			*slash = 0;
			fam = strchr(buf, ':') ? AF_INET6 : AF_INET;
			if (k[2] == 'a') {
				struct net_config_addr *a = &c->addrs[c->nr_addrs++];
				a->family = fam;
				dst = a->addr;
				len = &a->prefixlen;
			} else {
				struct net_config_route *rt = &c->routes[c->nr_routes++];
				rt->family = fam;
				dst = rt->dst;
				len = &rt->dst_len;
				if (comma) {
					inet_pton(fam, comma, rt->gw);
					rt->has_gw = 1;
				}
			}
			if (inet_pton(fam, buf, dst) != 1)
				return 2;
			*len = (uint8_t)atoi(slash + 1);
		}
	}
	r = netcfg_apply(&cfg);
	if (r < 0) {
		fprintf(stderr, "netcfg: %s\n", err_msg());
		return 1;
	}
	return 0;
}

static int cmd_spec(const char *path)
{
	struct oci_spec *spec;
	const char *ns;
	int r;

	r = oci_spec_load(path, &spec);
	if (r < 0) {
		fprintf(stderr, "%s\n", err_msg());
		return 1;
	}
	r = netns_path_from_spec(spec, &ns);
	if (r < 0)
		fprintf(stderr, "%s\n", err_msg());
	else
		printf("%s\n", ns ? ns : "new");
	oci_spec_free(spec);
	return r < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	static struct netns_setup s;
	int r;

	if (argc == 5 && !strcmp(argv[1], "setup")) {
		r = netns_setup(argv[2], argv[3], (unsigned int)atoi(argv[4]), &s);
		if (r < 0) {
			fprintf(stderr, "setup: %s\n", err_msg());
			return 1;
		}
		print_config(&s);
		return serve(&s);
	}
	if (argc == 4 && !strcmp(argv[1], "teardown")) {
		r = netns_teardown(argv[2], argv[3]);
		if (r < 0)
			fprintf(stderr, "teardown: %s\n", err_msg());
		return r < 0;
	}
	if (argc == 3 && !strcmp(argv[1], "spec"))
		return cmd_spec(argv[2]);
	if (argc >= 2 && !strcmp(argv[1], "netcfg"))
		return cmd_netcfg(argc - 2, argv + 2);
	fprintf(stderr, "usage: see the comment at the top of net-helper.c\n");
	return 2;
}
