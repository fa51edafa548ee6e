/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A virtio-net device without a backend (a template's: the guest's driver
 * probes it at boot, sees the link down and its frames go nowhere), and the
 * backend it gets after a restore: the offloads and active queue pairs the
 * driver negotiated in the template are applied to it, the link comes up
 * and a config change interrupt tells the driver (Linux's virtio_net reads
 * the status again and turns the carrier on).
 */
#include <errno.h>
#include <linux/virtio_net.h>
#include <stdlib.h>
#include <sys/epoll.h>

#include "common/error.h"
#include "common/log.h"
#include "virtio/net/net-dev.h"

static int detached_set_offload(struct net_backend *b, uint64_t features)
{
	return 0;
}

static void detached_free(struct net_backend *b)
{
	free(b);
}

static const struct net_backend_ops detached_ops = {
    .set_offload = detached_set_offload,
    .free = detached_free,
};

bool virtio_net_detached(const struct virtio_net *n)
{
	return n->be->ops == &detached_ops;
}

int virtio_net_new_detached(const struct guest_mem *mem, struct event_loop *loop, const struct virtio_net_opts *opts,
                            struct virtio_net **ret)
{
	struct virtio_net_opts o = *opts;
	struct net_backend *be;
	int r;

	if (o.queue_pairs > NET_MAX_QUEUE_PAIRS)
		return err_set(-EINVAL, "virtio-net: %u queue pairs", o.queue_pairs);
	be = calloc(1, sizeof(*be));
	if (!be)
		return -ENOMEM;
	be->ops = &detached_ops;
	be->nr_queues = o.queue_pairs ? o.queue_pairs : 1;
	be->ufo = o.ufo;
	for (unsigned int p = 0; p < NET_MAX_QUEUE_PAIRS; p++)
		be->fds[p] = -1;
	/* Whatever backend comes later: no UFO unless asked (not every TAP
	 * takes it; a TAP that does not is told without it, and the guest's
	 * UFO frames are still taken from it) and no vhost-net (its ring
	 * positions could not be saved). */
	o.no_vhost = true;
	r = virtio_net_new(mem, loop, be, &o, ret);
	if (r < 0) {
		free(be);
		return r;
	}
	pthread_mutex_lock(&(*ret)->lock);
	(*ret)->config.status = 0; /* VIRTIO_NET_S_LINK_UP clear: no cable */
	pthread_mutex_unlock(&(*ret)->lock);
	return 0;
}

static void unwatch(struct virtio_net *n, const struct net_backend *be, unsigned int count)
{
	for (unsigned int p = 0; p < count; p++)
		event_loop_remove(n->loop, be->fds[p]);
}

/* Lock held. What the driver negotiated, for a device it runs. */
static int apply_negotiated(struct virtio_net *n, struct net_backend *be)
{
	int r;

	if (!n->running)
		return 0; /* activate() applies it */
	r = be->ops->set_offload(be, n->mmio.driver_features);
	if (r < 0)
		return err_prefix(r, "virtio-net: the negotiated offloads");
	if (be->ops->set_active) {
		r = be->ops->set_active(be, n->active_pairs);
		if (r < 0)
			return err_prefix(r, "virtio-net: %u active queue pairs", n->active_pairs);
	}
	return 0;
}

int virtio_net_attach_backend(struct virtio_net *n, struct net_backend *be)
{
	struct net_backend *old;
	unsigned int p, added;
	int r;

	if (!virtio_net_detached(n))
		return err_set(-EBUSY, "virtio-net: the device already has a backend");
	if (be->nr_queues != n->pairs)
		return err_set(-EINVAL, "virtio-net: the backend has %u queue pairs, the device %u", be->nr_queues,
		               n->pairs);
	for (p = 0; p < n->pairs; p++)
		if (be->fds[p] < 0)
			return err_set(-EBADF, "virtio-net: backend queue %u has no fd", p);
	pthread_mutex_lock(&n->lock);
	r = apply_negotiated(n, be);
	for (added = 0; r >= 0 && added < n->pairs; added++) {
		r = event_loop_add(n->loop, be->fds[added], 0, net_backend_event, n);
		if (r < 0) {
			err_setsys(r, "virtio-net: watching backend fd %u", added);
			break;
		}
	}
	if (r < 0) {
		unwatch(n, be, added);
		pthread_mutex_unlock(&n->lock);
		return r;
	}
	old = n->be;
	n->be = be;
	for (p = 0; p < n->pairs; p++) {
		n->watched[p] = true;
		n->watch_fd[p] = be->fds[p];
		n->watch_events[p] = 0;
		n->rx_wanted[p] = n->running && p < n->active_pairs;
		n->tx_blocked[p] = false;
		net_update_watch(n, p);
	}
	n->config.status = VIRTIO_NET_S_LINK_UP;
	pthread_mutex_unlock(&n->lock);
	old->ops->free(old);
	log_debug("virtio-net: backend attached (%u queue pair(s)), link up", n->pairs);
	virtio_mmio_config_changed(&n->mmio);
	/* Buffers the driver posted while there was no backend. */
	net_kick(n, ~0u);
	return 0;
}
