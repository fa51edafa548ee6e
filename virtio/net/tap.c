/* SPDX-License-Identifier: Apache-2.0 */
#include <net/if.h> /* before any linux/ header */
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "virtio/net/tap.h"

static int tap_open_one(const char *name, unsigned int nr_queues)
{
	struct ifreq ifr = {.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR};
	int hdr_len = sizeof(struct virtio_net_hdr_v1);
	_cleanup_close_ int fd = -1;

	if (nr_queues > 1)
		ifr.ifr_flags |= IFF_MULTI_QUEUE;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return err_setsys(-errno, "open /dev/net/tun");
	if (ioctl(fd, TUNSETIFF, &ifr) < 0)
		return err_setsys(-errno, "TUNSETIFF %s", name);
	if (ioctl(fd, TUNSETVNETHDRSZ, &hdr_len) < 0)
		return err_setsys(-errno, "TUNSETVNETHDRSZ %s", name);
	/* No offloads until the guest says which it accepts. */
	if (ioctl(fd, TUNSETOFFLOAD, 0) < 0)
		return err_setsys(-errno, "TUNSETOFFLOAD %s", name);
	return TAKE_FD(fd);
}

int net_tap_open(const char *name, unsigned int nr_queues, int *fds)
{
	unsigned int i;

	if (nr_queues == 0 || nr_queues > NET_MAX_QUEUE_PAIRS || strlen(name) >= IFNAMSIZ)
		return err_set(-EINVAL, "tap %s: bad name or queue count %u", name, nr_queues);
	for (i = 0; i < nr_queues; i++) {
		int fd = tap_open_one(name, nr_queues);

		if (fd < 0) {
			while (i > 0)
				close(fds[--i]);
			return fd;
		}
		fds[i] = fd;
	}
	log_debug("tap %s: %u queue(s), vnet header %zu bytes", name, nr_queues, sizeof(struct virtio_net_hdr_v1));
	return 0;
}

unsigned int net_tap_offload_flags(uint64_t features)
{
	unsigned int flags = 0;

	/* Without GUEST_CSUM the guest cannot take partial checksums, so no
	 * segmentation offload can be enabled either. */
	if (!(features & (1ULL << VIRTIO_NET_F_GUEST_CSUM)))
		return 0;
	flags |= TUN_F_CSUM;
	if (features & (1ULL << VIRTIO_NET_F_GUEST_TSO4))
		flags |= TUN_F_TSO4;
	if (features & (1ULL << VIRTIO_NET_F_GUEST_TSO6))
		flags |= TUN_F_TSO6;
	if ((flags & (TUN_F_TSO4 | TUN_F_TSO6)) && (features & (1ULL << VIRTIO_NET_F_GUEST_ECN)))
		flags |= TUN_F_TSO_ECN;
	if (features & (1ULL << VIRTIO_NET_F_GUEST_UFO))
		flags |= TUN_F_UFO;
	return flags;
}

int net_tap_set_offload(int fd, uint64_t features)
{
	unsigned int flags = net_tap_offload_flags(features);

	if (ioctl(fd, TUNSETOFFLOAD, flags) == 0)
		return 0;
	if (errno == EINVAL && (flags & TUN_F_UFO) && ioctl(fd, TUNSETOFFLOAD, flags & ~TUN_F_UFO) == 0)
		return 0;
	return err_setsys(-errno, "TUNSETOFFLOAD 0x%x", flags);
}

/* The device reads and writes virtio_net_hdr_v1 (the transport requires
 * VERSION_1); a TAP handed over later (a restored template's device) may
 * have been opened with another size. */
static int tap_set_vnet_hdr(int fd)
{
	int len = sizeof(struct virtio_net_hdr_v1), cur = 0;

	if (ioctl(fd, TUNGETVNETHDRSZ, &cur) == 0 && cur == len)
		return 0;
	if (ioctl(fd, TUNSETVNETHDRSZ, &len) < 0)
		return err_setsys(-errno, "TUNSETVNETHDRSZ %d", len);
	return 0;
}

static int tap_backend_set_offload(struct net_backend *b, uint64_t features)
{
	for (unsigned int i = 0; i < b->nr_queues; i++) {
		int r = tap_set_vnet_hdr(b->fds[i]);

		if (r >= 0)
			r = net_tap_set_offload(b->fds[i], features);
		if (r < 0)
			return r;
	}
	return 0;
}

static int tap_backend_set_active(struct net_backend *b, unsigned int nr)
{
	if (b->nr_queues < 2)
		return 0;
	for (unsigned int i = 0; i < b->nr_queues; i++) {
		struct ifreq ifr = {.ifr_flags = i < nr ? IFF_ATTACH_QUEUE : IFF_DETACH_QUEUE};

		/* Attaching an attached queue fails with EINVAL: ignore. */
		if (ioctl(b->fds[i], TUNSETQUEUE, &ifr) < 0 && errno != EINVAL)
			return err_setsys(-errno, "TUNSETQUEUE %u", i);
	}
	return 0;
}

static void tap_backend_free(struct net_backend *b)
{
	for (unsigned int i = 0; i < b->nr_queues; i++)
		close(b->fds[i]);
	free(b);
}

static const struct net_backend_ops tap_backend_ops = {
    .set_offload = tap_backend_set_offload,
    .set_active = tap_backend_set_active,
    .free = tap_backend_free,
};

int net_tap_backend_new(const int *fds, unsigned int nr_queues, struct net_backend **ret)
{
	struct net_backend *b;

	if (nr_queues == 0 || nr_queues > NET_MAX_QUEUE_PAIRS)
		return err_set(-EINVAL, "tap backend: %u queues", nr_queues);
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->ops = &tap_backend_ops;
	b->nr_queues = nr_queues;
	b->is_tap = true;
	/* Kernels since 4.14 dropped UFO from TAPs; ask this one. */
	b->ufo = ioctl(fds[0], TUNSETOFFLOAD, TUN_F_CSUM | TUN_F_UFO) == 0;
	ioctl(fds[0], TUNSETOFFLOAD, 0);
	memcpy(b->fds, fds, nr_queues * sizeof(*fds));
	*ret = b;
	return 0;
}
