/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio-net in snapshots: config space (MAC, link status, queue pairs,
 * MTU), the active queue pairs and the transport. The backend (a TAP) is
 * the restoring runtime's: frames in flight at save time are lost, as on
 * a wire (TCP retransmits).
 */
#include <errno.h>
#include <linux/virtio_net.h>
#include <string.h>

#include "common/error.h"
#include "virtio/mmio-state.h"
#include "virtio/net/net-dev.h"

#define NET_STATE_MAGIC 0x3154454eu /* "NET1" */

struct net_state {
	uint32_t magic;
	uint32_t pairs, active_pairs;
	uint32_t pad;
	struct net_config_space config;
	uint8_t pad2[6];
};

void virtio_net_pause(struct virtio_net *n, bool paused)
{
	pthread_mutex_lock(&n->lock);
	n->paused = paused;
	for (unsigned int p = 0; p < n->pairs; p++)
		net_update_watch(n, p);
	pthread_mutex_unlock(&n->lock);
	if (!paused)
		net_kick(n, ~0u);
}

int virtio_net_state_save(void *opaque, struct snap_buf *out)
{
	struct virtio_net *n = opaque;
	struct net_state st;

	memset(&st, 0, sizeof(st));
	st.magic = NET_STATE_MAGIC;
	pthread_mutex_lock(&n->lock);
	/* The kernel holds the ring positions of vhost-served queues. */
	if (n->vhost_running) {
		pthread_mutex_unlock(&n->lock);
		return err_set(-EOPNOTSUPP, "virtio-net: snapshots of vhost-net queues are not supported (their "
		                            "positions are in the kernel; a VM without vhost-net can be saved)");
	}
	st.pairs = n->pairs;
	st.active_pairs = n->active_pairs;
	st.config = n->config;
	pthread_mutex_unlock(&n->lock);
	snap_buf_put(out, &st, sizeof(st));
	if (out->err)
		return out->err;
	return virtio_mmio_state_save(&n->mmio, out);
}

static int check_state(const struct virtio_net *n, const struct net_state *st)
{
	if (st->magic != NET_STATE_MAGIC)
		return err_set(-EINVAL, "virtio-net: not a virtio-net state");
	/* 0 active: a device its driver never brought up (no driver for it
	 * in the guest), which must then not be running (checked on load). */
	if (st->pairs != n->pairs || st->active_pairs > st->pairs)
		return err_set(-EINVAL, "virtio-net: saved %u queue pairs (%u active), this device has %u", st->pairs,
		               st->active_pairs, n->pairs);
	if (memcmp(st->config.mac, n->config.mac, sizeof(st->config.mac)) != 0)
		return err_set(-EINVAL, "virtio-net: saved with another MAC address");
	if (st->config.mtu != n->config.mtu || st->config.max_virtqueue_pairs != n->config.max_virtqueue_pairs)
		return err_set(-EINVAL, "virtio-net: saved MTU %u, this device has %u", st->config.mtu, n->config.mtu);
	return 0;
}

int virtio_net_state_load(void *opaque, const void *data, size_t len)
{
	struct virtio_net *n = opaque;
	struct snap_reader rd = {.p = data, .len = len};
	struct net_state st;
	int r;

	if (snap_get(&rd, &st, sizeof(st)) < 0)
		return err_set(-EBADMSG, "virtio-net: state too short");
	r = check_state(n, &st);
	if (r < 0)
		return r;
	r = virtio_mmio_state_load_last(&n->mmio, &rd, "virtio-net");
	if (r < 0)
		return r;
	pthread_mutex_lock(&n->lock);
	if (n->running && st.active_pairs < 1) {
		pthread_mutex_unlock(&n->lock);
		return err_set(-EINVAL, "virtio-net: saved running with no active queue pair");
	}
	n->config.status = st.config.status;
	/* activate() started with one pair, as after a driver reset. */
	if (n->running && st.active_pairs != n->active_pairs) {
		n->active_pairs = st.active_pairs;
		if (n->be->ops->set_active)
			n->be->ops->set_active(n->be, n->active_pairs);
	}
	pthread_mutex_unlock(&n->lock);
	return 0;
}

int virtio_net_state_opts(const void *data, size_t len, struct virtio_net_opts *ret)
{
	struct snap_reader rd = {.p = data, .len = len};
	struct net_state st;
	uint64_t offered;
	int r;

	if (snap_get(&rd, &st, sizeof(st)) < 0)
		return err_set(-EBADMSG, "virtio-net: state too short");
	if (st.magic != NET_STATE_MAGIC)
		return err_set(-EINVAL, "virtio-net: not a virtio-net state");
	if (st.pairs < 1 || st.pairs > NET_MAX_QUEUE_PAIRS || st.config.mtu < 68)
		return err_set(-EINVAL, "virtio-net: saved with %u queue pairs, MTU %u", st.pairs, st.config.mtu);
	r = virtio_mmio_state_offered(&rd, &offered);
	if (r < 0)
		return err_prefix(r, "virtio-net");
	*ret = (struct virtio_net_opts){
	    .mtu = st.config.mtu,
	    .queue_pairs = st.pairs,
	    .ufo = !!(offered & (1ULL << VIRTIO_NET_F_HOST_UFO)),
	};
	memcpy(ret->mac, st.config.mac, sizeof(ret->mac));
	return 0;
}

void virtio_net_get_mac(struct virtio_net *n, uint8_t mac[6])
{
	pthread_mutex_lock(&n->lock);
	memcpy(mac, n->config.mac, 6);
	pthread_mutex_unlock(&n->lock);
}
