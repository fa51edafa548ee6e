/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The network side of bench/datapath-host.c: the host peer on a TAP's
 * interface (an AF_PACKET socket that counts what arrives, or sends as
 * fast as the interface takes), and the host-direct figures (a process
 * writing frames to the TAP, or reading them from it), with the frames the
 * test guest sends (tests/guest/bench-net.c): broadcast with a local
 * EtherType up to 1514 bytes, or TCP/IPv4 frames of 64 KiB with a GSO
 * header.
 */
#define _GNU_SOURCE
#include <net/if.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "datapath-host.h"

#define TSO_FRAME 65514
#define BATCH 64

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
	stop = 1;
}

static void catch_stop(void)
{
	struct sigaction sa = {.sa_handler = on_stop};

	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
}

static uint16_t ip_csum(const uint8_t *p, unsigned int n)
{
	uint32_t s = 0;

	for (unsigned int i = 0; i < n; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* The guest's frame of size bytes into f, and its GSO header (zero for
 * small frames). */
static void build_frame(uint8_t *f, size_t size, struct virtio_net_hdr *h)
{
	static const uint8_t guest[6] = {0x02, 0x6b, 0x76, 0x74, 0x01, 0x00};
	static const uint8_t src[6] = {0x02, 0x6b, 0x76, 0x74, 0x02, 0x00};
	uint8_t *ip = f + 14, *tcp = ip + 20;

	memset(h, 0, sizeof(*h));
	memcpy(f + 6, src, 6);
	if (size <= 1514) {
		memset(f, 0xff, 6);
		f[12] = 0x88;
		f[13] = 0xb5;
		for (size_t i = 14; i < size; i++)
			f[i] = (uint8_t)i;
		return;
	}
	memcpy(f, guest, 6);
	f[12] = 0x08;
	f[13] = 0x00;
	memset(ip, 0, 40);
	ip[0] = 0x45;
	*(uint16_t *)(ip + 2) = htons((uint16_t)(size - 14));
	ip[8] = 64;
	ip[9] = 6;
	memcpy(ip + 12, (const uint8_t[]){10, 213, 250, 1, 10, 213, 250, 2}, 8);
	*(uint16_t *)(ip + 10) = htons(ip_csum(ip, 20));
	*(uint16_t *)tcp = htons(5201);
	*(uint16_t *)(tcp + 2) = htons(40000);
	tcp[12] = 5 << 4;
	tcp[13] = 0x18;
	*(uint16_t *)(tcp + 14) = htons(65535);
	for (size_t i = 54; i < size; i++)
		f[i] = (uint8_t)i;
	h->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	h->gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
	h->hdr_len = 54;
	h->gso_size = 1448;
	h->csum_start = 34;
	h->csum_offset = 16;
}

static size_t frame_size(const char *s)
{
	size_t v = (size_t)dh_parse_size(s);

	return v == 65536 ? TSO_FRAME : v;
}

static int packet_socket(const char *ifname, bool vnet)
{
	struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL)};
	int one = 1, big = 64 << 20;
	int s = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));

	if (s < 0)
		dh_die("AF_PACKET socket", errno);
	sll.sll_ifindex = (int)if_nametoindex(ifname);
	if (!sll.sll_ifindex)
		dh_die(ifname, errno);
	if (bind(s, (struct sockaddr *)&sll, sizeof(sll)) < 0)
		dh_die("bind", errno);
	setsockopt(s, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
	setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
	setsockopt(s, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big));
	if (vnet && setsockopt(s, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) < 0)
		dh_die("PACKET_VNET_HDR", errno);
	return s;
}

static void report(uint64_t frames, uint64_t bytes, uint64_t ns, uint64_t cpu_ns)
{
	printf("{\"ops\": %llu, \"bytes\": %llu, \"ns\": %llu, \"cpu_ns\": %llu}\n", (unsigned long long)frames,
	       (unsigned long long)bytes, (unsigned long long)ns, (unsigned long long)cpu_ns);
	fflush(stdout);
}

/* tap-sink IFNAME SECONDS: count frames arriving on the interface. */
int dh_tap_sink(int argc, char **argv)
{
	static uint8_t bufs[BATCH][2048];
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	struct timeval tv = {0, 200000};
	uint64_t frames = 0, bytes = 0, first = 0, last = 0, end, c0 = 0;
	int s;

	if (argc != 4)
		return 2;
	catch_stop();
	s = packet_socket(argv[2], false);
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	end = dh_now_ns() + (uint64_t)(atof(argv[3]) * 1e9);
	printf("ready\n");
	fflush(stdout);
	while (!stop && dh_now_ns() < end) {
		for (int i = 0; i < BATCH; i++) {
			iov[i] = (struct iovec){bufs[i], sizeof(bufs[i])};
			msgs[i] = (struct mmsghdr){.msg_hdr = {.msg_iov = &iov[i], .msg_iovlen = 1}};
		}
		int n = recvmmsg(s, msgs, BATCH, MSG_TRUNC, NULL);

		if (n <= 0)
			continue;
		last = dh_now_ns();
		if (!first) {
			first = last;
			c0 = dh_cpu_ns();
		}
		frames += (uint64_t)n;
		for (int i = 0; i < n; i++)
			bytes += msgs[i].msg_len;
	}
	report(frames, bytes, last - first, dh_cpu_ns() - c0);
	return 0;
}

/* tap-source IFNAME SIZE SECONDS: send frames out of the interface (to
 * the TAP's reader) as fast as it takes them. */
int dh_tap_source(int argc, char **argv)
{
	static uint8_t frame[TSO_FRAME];
	struct virtio_net_hdr h;
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH][2];
	uint64_t sent = 0, end, t0;
	size_t size;
	bool vnet;
	int s;

	if (argc != 5)
		return 2;
	size = frame_size(argv[3]);
	if (size < 60 || (size > 1514 && size != TSO_FRAME))
		return 2;
	vnet = size > 1514;
	catch_stop();
	s = packet_socket(argv[2], vnet);
	build_frame(frame, size, &h);
	for (int i = 0; i < BATCH; i++) {
		iov[i][0] = (struct iovec){&h, sizeof(h)};
		iov[i][1] = (struct iovec){frame, size};
		msgs[i] =
		    (struct mmsghdr){.msg_hdr = {.msg_iov = vnet ? iov[i] : iov[i] + 1, .msg_iovlen = vnet ? 2 : 1}};
	}
	t0 = dh_now_ns();
	end = t0 + (uint64_t)(atof(argv[4]) * 1e9);
	printf("ready\n");
	fflush(stdout);
	while (!stop && dh_now_ns() < end) {
		int n = sendmmsg(s, msgs, BATCH, 0);

		if (n > 0)
			sent += (uint64_t)n;
		else if (errno == ENOBUFS || errno == EAGAIN)
			sched_yield();
		else if (n < 0)
			dh_die("sendmmsg", errno);
	}
	report(sent, sent * size, dh_now_ns() - t0, dh_cpu_ns());
	return 0;
}

static int tap_open(const char *name, size_t size)
{
	struct ifreq ifr = {.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR};
	int len = sizeof(struct virtio_net_hdr_v1), fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		dh_die("/dev/net/tun", errno);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0)
		dh_die(name, errno);
	if (ioctl(fd, TUNSETVNETHDRSZ, &len) < 0)
		dh_die("TUNSETVNETHDRSZ", errno);
	/* As kvrun's device sets it for a guest that takes TSO. */
	if (ioctl(fd, TUNSETOFFLOAD, size > 1514 ? TUN_F_CSUM | TUN_F_TSO4 : 0) < 0)
		dh_die("TUNSETOFFLOAD", errno);
	return fd;
}

/* tap-write TAP SIZE N: the guest's tx frames written to the TAP. */
int dh_tap_write(int argc, char **argv)
{
	static uint8_t buf[sizeof(struct virtio_net_hdr_v1) + TSO_FRAME];
	struct virtio_net_hdr h;
	uint64_t n, t0, c0;
	size_t size;
	int fd;

	if (argc != 5)
		return 2;
	size = frame_size(argv[3]);
	n = dh_parse_size(argv[4]);
	if (size < 60 || (size > 1514 && size != TSO_FRAME) || !n)
		return 2;
	fd = tap_open(argv[2], size);
	build_frame(buf + sizeof(struct virtio_net_hdr_v1), size, &h);
	memcpy(buf, &h, sizeof(h));
	t0 = dh_now_ns();
	c0 = dh_cpu_ns();
	for (uint64_t i = 0; i < n; i++)
		if (write(fd, buf, sizeof(struct virtio_net_hdr_v1) + size) < 0 && errno != EINTR)
			dh_die("write to the TAP", errno);
	report(n, n * size, dh_now_ns() - t0, dh_cpu_ns() - c0);
	return 0;
}

/* tap-read TAP SIZE N STALL_S: frames read from the TAP (the source
 * sends meanwhile), timed from the first to the last. */
int dh_tap_read(int argc, char **argv)
{
	static uint8_t buf[sizeof(struct virtio_net_hdr_v1) + 65550];
	uint64_t want, frames = 0, bytes = 0, first = 0, last = 0, c0 = 0;
	struct pollfd p;
	size_t size;
	int stall_ms;

	if (argc != 6)
		return 2;
	size = frame_size(argv[3]);
	want = dh_parse_size(argv[4]);
	stall_ms = (int)(atof(argv[5]) * 1000);
	p = (struct pollfd){.fd = tap_open(argv[2], size), .events = POLLIN};
	fcntl(p.fd, F_SETFL, O_NONBLOCK);
	printf("ready\n");
	fflush(stdout);
	while (frames < want) {
		ssize_t r = read(p.fd, buf, sizeof(buf));

		if (r < 0 && errno == EAGAIN) {
			if (poll(&p, 1, first ? stall_ms : 60000) <= 0)
				break;
			continue;
		}
		if (r < 0)
			dh_die("read from the TAP", errno);
		last = dh_now_ns();
		if (!first) {
			first = last;
			c0 = dh_cpu_ns();
		}
		frames++;
		bytes += (uint64_t)r - sizeof(struct virtio_net_hdr_v1);
	}
	report(frames, bytes, last - first, dh_cpu_ns() - c0);
	return frames == want ? 0 : 1;
}
