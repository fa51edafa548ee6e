/* SPDX-License-Identifier: Apache-2.0 */
/* virtio-net over a real TAP (opened by net_tap_open) in a private network
 * namespace of this test process: frames the fake guest sends come out of
 * the TAP interface into the host stack (seen by a packet socket), and
 * frames sent on the interface land in the guest's rx buffers with a vnet
 * header. Needs root. */
#include <net/if.h>
#include <arpa/inet.h>
#include <errno.h>
#include <linux/ethtool.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <linux/sockios.h>
#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/error.h"
#include "fake-driver.h"
#include "poll-loop.h"
#include "tap.h"
#include "virtio/net/net.h"
#include "virtio/net/tap.h"

#define F(b) (1ULL << (b))
#define FEATURES                                                                                                      \
	(VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VIRTIO_F_RING_EVENT_IDX) | F(VIRTIO_NET_F_MAC) |                 \
	 F(VIRTIO_NET_F_MRG_RXBUF) | F(VIRTIO_NET_F_CSUM) | F(VIRTIO_NET_F_GUEST_CSUM) | F(VIRTIO_NET_F_GUEST_TSO4) | \
	 F(VIRTIO_NET_F_HOST_TSO4))
#define TAPNAME "kvtest0"
#define ETYPE 0x88b5

static struct fake_drv d;
static struct event_loop *loop;
static struct virtio_net *n;
static int pkt = -1;

static void pump(void)
{
	for (int i = 0; i < 1000; i++)
		if (poll_loop_once(loop, 0) == 0)
			return;
}

static void make_frame(uint8_t *f, size_t len, uint8_t tag)
{
	memset(f, 0xff, 6); /* broadcast */
	memcpy(f + 6, (uint8_t[]){0x52, 0x54, 0, 1, 2, 3}, 6);
	f[12] = ETYPE >> 8;
	f[13] = ETYPE & 0xff;
	for (size_t i = 14; i < len; i++)
		f[i] = (uint8_t)(i ^ tag);
}

TEST(guest_tx_reaches_host_stack)
{
	uint8_t frame[1000], got[2048];
	uint64_t gpa = fake_alloc(&d, 12 + sizeof(frame));
	uint32_t id, len;
	ssize_t r = -1;
	bool used = false;

	ok(virtio_net_uses_vhost(n) == (access("/dev/vhost-net", F_OK) == 0),
	   "vhost-net used exactly when /dev/vhost-net exists");

	make_frame(frame, sizeof(frame), 1);
	memset(fake_ptr(&d, gpa), 0, 12);
	memcpy((uint8_t *)fake_ptr(&d, gpa) + 12, frame, sizeof(frame));
	fake_add(&d, 1, (struct fbuf[]){{gpa, 12 + sizeof(frame), false}}, 1, false);
	fake_kick(&d, 1);
	/* With vhost-net the kernel completes the chain on its own time. */
	for (int tries = 0; tries < 100 && !used; tries++) {
		pump();
		used = fake_get_used(&d, 1, &id, &len);
		if (!used)
			usleep(10000);
	}
	ok(used, "tx chain used");
	for (int tries = 0; tries < 50; tries++) {
		struct pollfd p = {.fd = pkt, .events = POLLIN};

		if (poll(&p, 1, 100) <= 0)
			continue;
		r = recv(pkt, got, sizeof(got), 0);
		if (r >= 14 && got[12] == (ETYPE >> 8) && got[13] == (ETYPE & 0xff))
			break;
		r = -1;
	}
	is_int(r, (int)sizeof(frame));
	ok(r > 0 && !memcmp(got, frame, sizeof(frame)), "the host stack got the frame unchanged");
}

TEST(host_frame_reaches_guest)
{
	uint8_t frame[1400];
	uint64_t bufs[40]; /* room for a 64 KiB GSO frame: the device waits for that much */
	uint32_t id, len;
	bool found = false;
	struct sockaddr_ll to = {.sll_family = AF_PACKET, .sll_ifindex = (int)if_nametoindex(TAPNAME), .sll_halen = 6};

	for (int i = 0; i < 40; i++) {
		bufs[i] = fake_alloc(&d, 2048);
		fake_add(&d, 0, (struct fbuf[]){{bufs[i], 2048, true}}, 1, false);
	}
	fake_kick(&d, 0);
	pump();
	make_frame(frame, sizeof(frame), 2);
	memset(to.sll_addr, 0xff, 6);
	ok(sendto(pkt, frame, sizeof(frame), 0, (struct sockaddr *)&to, sizeof(to)) == sizeof(frame),
	   "sent on the TAP");
	for (int tries = 0; tries < 50 && !found; tries++) {
		usleep(20000);
		pump();
		while (!found && fake_get_used(&d, 0, &id, &len)) {
			/* Buffers were posted in order: head i holds bufs[i]. */
			uint8_t *b = id < 40 ? fake_ptr(&d, bufs[id]) : NULL;

			if (b && len == 12 + sizeof(frame) && b[12 + 12] == (ETYPE >> 8)) {
				found = true;
				is_int(b[10] | b[11] << 8, 1);
				ok(!memcmp(b + 12, frame, sizeof(frame)), "frame bytes after the vnet header");
			}
		}
	}
	ok(found, "the frame arrived in a guest rx buffer");
}

/* Send frame on the TAP's interface and pump until count used rx chains
 * came back (their heads and lengths in ids/lens); returns how many. */
static int receive(const uint8_t *frame, size_t size, int count, uint32_t *ids, uint32_t *lens)
{
	struct sockaddr_ll to = {.sll_family = AF_PACKET, .sll_ifindex = (int)if_nametoindex(TAPNAME), .sll_halen = 6};
	int got = 0;

	memset(to.sll_addr, 0xff, 6);
	if (frame && sendto(pkt, frame, size, 0, (struct sockaddr *)&to, sizeof(to)) != (ssize_t)size)
		return -1;
	for (int tries = 0; tries < 25 && got < count; tries++) {
		usleep(20000);
		pump();
		while (got < count && fake_get_used(&d, 0, &ids[got], &lens[got]))
			got++;
	}
	return got;
}

/* With MRG_RXBUF and TSO the device could need 17 buffers of 4 KiB for a
 * frame: an ordinary frame takes one (it is read with the rest spilling
 * into the device's staging area), a large one the buffers it fills, and
 * one for which there are not enough waits whole until the guest adds
 * some. */
TEST(rx_buffers_as_frames_need)
{
	static uint8_t small[1000], big[5000], back[5000];
	uint64_t bufs[4], by_head[64] = {0};
	uint32_t ids[4], lens[4];
	size_t at = 0;
	int got;

	if (virtio_net_uses_vhost(n) || system("ip link set " TAPNAME " mtu 9000") != 0) {
		ok(true, "# SKIP vhost-net serves the queues, or no MTU 9000 on the TAP");
		return;
	}
	fake_bringup(&d, FEATURES, 2, 64);
	pump();
	for (int i = 0; i < 4; i++)
		bufs[i] = fake_alloc(&d, 2048);
	fake_add(&d, 0, (struct fbuf[]){{bufs[0], 2048, true}}, 1, false);
	fake_kick(&d, 0);
	pump();
	make_frame(small, sizeof(small), 4);
	got = receive(small, sizeof(small), 1, ids, lens);
	ok(got == 1 && lens[0] == 12 + sizeof(small), "an ordinary frame in the one buffer posted (%d, len %u)", got,
	   got > 0 ? lens[0] : 0);
	ok(got == 1 && !memcmp((uint8_t *)fake_ptr(&d, bufs[0]) + 12, small, sizeof(small)), "its bytes");

	/* One buffer for a frame of 5000 bytes: it waits. */
	by_head[fake_add(&d, 0, (struct fbuf[]){{bufs[0], 2048, true}}, 1, false) % 64] = bufs[0];
	fake_kick(&d, 0);
	make_frame(big, sizeof(big), 5);
	is_int(receive(big, sizeof(big), 1, ids, lens), 0);
	for (int i = 1; i < 4; i++)
		by_head[fake_add(&d, 0, (struct fbuf[]){{bufs[i], 2048, true}}, 1, false) % 64] = bufs[i];
	fake_kick(&d, 0);
	got = receive(NULL, 0, 3, ids, lens);
	is_int(got, 3);
	if (got != 3 || !by_head[ids[0] % 64])
		return;
	is_int(((uint8_t *)fake_ptr(&d, by_head[ids[0] % 64]))[10], 3);
	for (int i = 0; i < 3 && by_head[ids[i] % 64]; i++) {
		size_t skip = i == 0 ? 12 : 0, n_ = lens[i] - skip;

		memcpy(back + at, (uint8_t *)fake_ptr(&d, by_head[ids[i] % 64]) + skip,
		       n_ <= sizeof(back) - at ? n_ : 0);
		at += n_;
	}
	ok(at == sizeof(big) && !memcmp(back, big, sizeof(big)), "the staged frame whole over three buffers (%zu)", at);
	if (system("ip link set " TAPNAME " mtu 1500") != 0)
		ok(false, "MTU back to 1500");
}

/* An ethtool flag (ETHTOOL_GTSO, ETHTOOL_GTXCSUM) of interface name. */
static int ethtool_get(const char *name, uint32_t cmd)
{
	struct ethtool_value ev = {.cmd = cmd};
	struct ifreq ifr = {.ifr_data = (char *)&ev};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r;

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	r = fd >= 0 && ioctl(fd, SIOCETHTOOL, &ifr) == 0 ? (int)ev.data : -1;
	if (fd >= 0)
		close(fd);
	return r;
}

/* A template's device (no backend) that the driver brought up with
 * offloads gets a TAP opened with no offloads and a legacy header size:
 * after the attach the TAP has the header and offloads the driver
 * negotiated, and frames flow. */
TEST(detached_device_gets_a_tap)
{
	struct virtio_net_opts o = {.mac = {0x52, 0x54, 0, 9, 9, 10}, .queue_pairs = 1};
	struct fake_drv d2;
	struct virtio_net *n2 = NULL;
	struct net_backend *be = NULL;
	int fd, hdr = 10, got = 0;
	uint8_t frame[200];
	uint64_t gpa;
	uint32_t id, len;

	fake_drv_init(&d2);
	if (net_tap_open("kvtest1", 1, &fd) < 0 || ioctl(fd, TUNSETVNETHDRSZ, &hdr) < 0 ||
	    virtio_net_new_detached(&d2.mem, loop, &o, &n2) < 0) {
		ok(false, "setup: %s", err_msg());
		return;
	}
	fake_drv_attach(&d2, virtio_net_mmio(n2));
	fake_bringup(&d2, FEATURES, 2, 64);
	pump();
	is_int(ethtool_get("kvtest1", ETHTOOL_GTSO), 0);
	ok(ioctl(fd, TUNGETVNETHDRSZ, &got) == 0 && got == 10, "before: a 10-byte header");
	is_int(net_tap_backend_new(&fd, 1, &be), 0);
	is_int(virtio_net_attach_backend(n2, be), 0);
	if (ioctl(fd, TUNGETVNETHDRSZ, &got) < 0)
		got = -errno;
	is_int(got, (int)sizeof(struct virtio_net_hdr_v1));
	is_int(ethtool_get("kvtest1", ETHTOOL_GTSO), 1);
	is_int(ethtool_get("kvtest1", ETHTOOL_GTXCSUM), 1);
	/* The guest's frame comes out of the TAP. */
	if (system("ip link set kvtest1 up") != 0)
		ok(false, "ip link set kvtest1 up");
	make_frame(frame, sizeof(frame), 3);
	gpa = fake_alloc(&d2, 12 + sizeof(frame));
	memset(fake_ptr(&d2, gpa), 0, 12);
	memcpy((uint8_t *)fake_ptr(&d2, gpa) + 12, frame, sizeof(frame));
	fake_add(&d2, 1, (struct fbuf[]){{gpa, 12 + sizeof(frame), false}}, 1, false);
	fake_kick(&d2, 1);
	pump();
	ok(fake_get_used(&d2, 1, &id, &len), "tx chain used");
	struct virtio_net_stats st;
	virtio_net_get_stats(n2, &st);
	is_int(st.tx_frames, 1);
	is_int(st.tx_dropped, 0);
	virtio_net_free(n2);
	fake_drv_free(&d2);
}

struct tap_test tap_tests[TAP_MAX_TESTS];
int tap_nr_tests, tap_count, tap_failed;
const char *tap_current = "";

static void setup(void)
{
	struct virtio_net_opts o = {.mac = {0x52, 0x54, 0, 9, 9, 9}, .queue_pairs = 1};
	struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL)};
	struct net_backend *be;
	int fd;

	if (geteuid() != 0)
		tap_skip_all("needs root (a private network namespace and a TAP)");
	if (unshare(CLONE_NEWNET) < 0)
		tap_skip_all("unshare(CLONE_NEWNET) refused");
	if (net_tap_open(TAPNAME, 1, &fd) < 0)
		tap_skip_all("cannot open a TAP (/dev/net/tun)");
	/* No IPv6 chatter from the host side of the TAP into the guest. */
	if (system("echo 1 > /proc/sys/net/ipv6/conf/" TAPNAME "/disable_ipv6 2>/dev/null; ip link set " TAPNAME
	           " up") != 0)
		tap_skip_all("cannot bring the TAP up with ip(8)");
	pkt = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
	sll.sll_ifindex = (int)if_nametoindex(TAPNAME);
	if (pkt < 0 || bind(pkt, (struct sockaddr *)&sll, sizeof(sll)) < 0)
		tap_skip_all("no packet socket");
	fake_drv_init(&d);
	if (event_loop_new(&loop) < 0 || net_tap_backend_new(&fd, 1, &be) < 0 ||
	    virtio_net_new(&d.mem, loop, be, &o, &n) < 0)
		abort();
	fake_drv_attach(&d, virtio_net_mmio(n));
	fake_bringup(&d, FEATURES, 2, 64);
	pump();
	printf("# data path: %s\n", virtio_net_uses_vhost(n) ? "vhost-net" : "userspace");
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	setup();
	for (int i = 0; i < tap_nr_tests; i++) {
		tap_current = tap_tests[i].name;
		tap_tests[i].fn();
	}
	virtio_net_free(n);
	event_loop_free(loop);
	fake_drv_free(&d);
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}
