/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <linux/vhost.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "virtio/net/backend.h"
#include "virtio/net/vhost.h"

struct net_vhost {
	unsigned int pairs;
	int fds[NET_MAX_QUEUE_PAIRS];
	bool started[NET_MAX_QUEUE_PAIRS];
	uint64_t features;
};

int net_vhost_open(unsigned int pairs, struct net_vhost **ret)
{
	struct net_vhost *v;
	int r;

	if (access("/dev/vhost-net", F_OK) < 0)
		return -ENOENT;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (unsigned int i = 0; i < NET_MAX_QUEUE_PAIRS; i++)
		v->fds[i] = -1;
	v->pairs = pairs;
	for (unsigned int i = 0; i < pairs; i++) {
		v->fds[i] = open("/dev/vhost-net", O_RDWR | O_CLOEXEC);
		if (v->fds[i] < 0) {
			r = err_setsys(-errno, "open /dev/vhost-net");
			goto fail;
		}
		if (ioctl(v->fds[i], VHOST_SET_OWNER, NULL) < 0) {
			r = err_setsys(-errno, "VHOST_SET_OWNER");
			goto fail;
		}
	}
	if (ioctl(v->fds[0], VHOST_GET_FEATURES, &v->features) < 0) {
		r = err_setsys(-errno, "VHOST_GET_FEATURES");
		goto fail;
	}
	*ret = v;
	return 0;
fail:
	net_vhost_free(v);
	return r;
}

uint64_t net_vhost_features(const struct net_vhost *v)
{
	return v->features;
}

static int set_mem_table(int fd, const struct guest_mem *mem)
{
	_cleanup_free_ struct vhost_memory *t = NULL;

	t = calloc(1, sizeof(*t) + mem->nr_regions * sizeof(t->regions[0]));
	if (!t)
		return -ENOMEM;
	t->nregions = mem->nr_regions;
	for (unsigned int i = 0; i < mem->nr_regions; i++) {
		t->regions[i].guest_phys_addr = mem->regions[i].gpa;
		t->regions[i].memory_size = mem->regions[i].size;
		t->regions[i].userspace_addr = (uint64_t)(uintptr_t)mem->regions[i].host;
	}
	return ioctl(fd, VHOST_SET_MEM_TABLE, t) < 0 ? -errno : 0;
}

static int setup_ring(int fd, unsigned int idx, struct virtq *vq, int kick, int call, int tap_fd)
{
	struct vhost_vring_state num = {.index = idx, .num = vq->num};
	struct vhost_vring_state base = {.index = idx, .num = vq->last_avail};
	struct vhost_vring_addr addr = {
	    .index = idx,
	    .desc_user_addr = (uint64_t)(uintptr_t)vq->desc,
	    .avail_user_addr = (uint64_t)(uintptr_t)vq->avail,
	    .used_user_addr = (uint64_t)(uintptr_t)vq->used,
	};
	struct vhost_vring_file kf = {.index = idx, .fd = kick}, cf = {.index = idx, .fd = call};
	struct vhost_vring_file be = {.index = idx, .fd = tap_fd};

	if (ioctl(fd, VHOST_SET_VRING_NUM, &num) < 0 || ioctl(fd, VHOST_SET_VRING_BASE, &base) < 0 ||
	    ioctl(fd, VHOST_SET_VRING_ADDR, &addr) < 0 || ioctl(fd, VHOST_SET_VRING_KICK, &kf) < 0 ||
	    ioctl(fd, VHOST_SET_VRING_CALL, &cf) < 0 || ioctl(fd, VHOST_NET_SET_BACKEND, &be) < 0)
		return -errno;
	return 0;
}

int net_vhost_start_pair(struct net_vhost *v, unsigned int p, const struct guest_mem *mem, uint64_t features,
                         struct virtq *vqs, const int kick[2], const int call[2], int tap_fd)
{
	uint64_t f = features & v->features;
	int fd = v->fds[p], r;

	if (p >= v->pairs)
		return -EINVAL;
	if (ioctl(fd, VHOST_SET_FEATURES, &f) < 0)
		return err_setsys(-errno, "VHOST_SET_FEATURES");
	r = set_mem_table(fd, mem);
	if (r < 0)
		return err_setsys(r, "VHOST_SET_MEM_TABLE");
	for (unsigned int i = 0; i < 2; i++) {
		r = setup_ring(fd, i, &vqs[i], kick[i], call[i], tap_fd);
		if (r < 0)
			return err_setsys(r, "vhost ring %u of pair %u", i, p);
	}
	v->started[p] = true;
	log_debug("vhost-net: pair %u started", p);
	return 0;
}

void net_vhost_stop(struct net_vhost *v)
{
	for (unsigned int p = 0; v && p < v->pairs; p++) {
		if (!v->started[p])
			continue;
		for (unsigned int i = 0; i < 2; i++) {
			struct vhost_vring_file be = {.index = i, .fd = -1};

			if (ioctl(v->fds[p], VHOST_NET_SET_BACKEND, &be) < 0)
				log_debug("vhost-net: detaching pair %u: %m", p);
		}
		v->started[p] = false;
	}
}

void net_vhost_free(struct net_vhost *v)
{
	if (!v)
		return;
	net_vhost_stop(v);
	for (unsigned int i = 0; i < NET_MAX_QUEUE_PAIRS; i++)
		if (v->fds[i] >= 0)
			close(v->fds[i]);
	free(v);
}
