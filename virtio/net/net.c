/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <linux/virtio_net.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "virtio/net/net-dev.h"
#include "virtio/net/net.h"
#include "virtio/net/vhost.h"

#define BIT(n) (1ULL << (n))

static struct virtio_net *to_net(struct virtio_mmio *m)
{
	return m->dev;
}

static uint64_t net_features(const struct virtio_net *n)
{
	uint64_t f = BIT(VIRTIO_NET_F_CSUM) | BIT(VIRTIO_NET_F_GUEST_CSUM) | BIT(VIRTIO_NET_F_GUEST_TSO4) |
	             BIT(VIRTIO_NET_F_GUEST_TSO6) | BIT(VIRTIO_NET_F_GUEST_ECN) | BIT(VIRTIO_NET_F_HOST_TSO4) |
	             BIT(VIRTIO_NET_F_HOST_TSO6) | BIT(VIRTIO_NET_F_HOST_ECN) | BIT(VIRTIO_NET_F_MRG_RXBUF) |
	             BIT(VIRTIO_NET_F_MAC) | BIT(VIRTIO_NET_F_MTU) | BIT(VIRTIO_NET_F_STATUS) |
	             VIRTIO_BIT(VIRTIO_F_RING_EVENT_IDX) | VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC);

	if (n->be->ufo)
		f |= BIT(VIRTIO_NET_F_GUEST_UFO) | BIT(VIRTIO_NET_F_HOST_UFO);
	if (n->pairs > 1)
		f |= BIT(VIRTIO_NET_F_CTRL_VQ) | BIT(VIRTIO_NET_F_MQ);
	if (n->vhost) {
		/* Ring features are the kernel's to serve. */
		uint64_t ring = VIRTIO_BIT(VIRTIO_F_RING_EVENT_IDX) | VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC) |
		                BIT(VIRTIO_NET_F_MRG_RXBUF);

		f &= ~ring | net_vhost_features(n->vhost);
	}
	return f;
}

static void net_config_read(struct virtio_mmio *m, uint32_t off, void *data, uint32_t len)
{
	memcpy(data, (const uint8_t *)&to_net(m)->config + off, len);
}

static void net_queue_notify(struct virtio_mmio *m, uint32_t q)
{
	struct virtio_net *n = to_net(m);

	if (n->vhost_running && q < 2 * n->pairs) {
		/* No ioeventfd for this queue: pass the kick to the kernel. */
		uint64_t one = 1;

		if (write(n->vhost_kick[q], &one, sizeof(one)) < 0)
			log_debug("virtio-net: vhost kick: %m");
		return;
	}
	net_kick(n, 1u << q);
}

static int net_activate_vhost(struct virtio_net *n)
{
	int r;

	for (unsigned int p = 0; p < n->pairs; p++) {
		int kick[2] = {n->vhost_kick[2 * p], n->vhost_kick[2 * p + 1]};
		int call[2] = {n->vhost_call[2 * p], n->vhost_call[2 * p + 1]};

		if (!virtq_usable(&n->mmio.vqs[2 * p]) || !virtq_usable(&n->mmio.vqs[2 * p + 1]))
			continue;
		r = net_vhost_start_pair(n->vhost, p, n->mmio.mem, n->mmio.driver_features, &n->mmio.vqs[2 * p], kick,
		                         call, n->be->fds[p]);
		if (r < 0)
			return r;
	}
	n->vhost_running = true;
	return 0;
}

static int net_activate(struct virtio_mmio *m)
{
	struct virtio_net *n = to_net(m);
	int r;

	r = n->be->ops->set_offload(n->be, m->driver_features);
	if (r < 0) {
		log_debug("virtio-net: %s", err_msg());
		return r;
	}
	pthread_mutex_lock(&n->lock);
	/* Until VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, only the first pair (5.1.6.5.5). */
	n->active_pairs = 1;
	if (n->be->ops->set_active)
		n->be->ops->set_active(n->be, 1);
	if (n->vhost) {
		r = net_activate_vhost(n);
		if (r < 0) {
			pthread_mutex_unlock(&n->lock);
			return r;
		}
	}
	n->running = true;
	for (unsigned int p = 0; p < n->pairs; p++)
		n->rx_wanted[p] = true;
	pthread_mutex_unlock(&n->lock);
	net_kick(n, ~0u);
	return 0;
}

static void net_reset(struct virtio_mmio *m)
{
	struct virtio_net *n = to_net(m);

	pthread_mutex_lock(&n->lock);
	n->running = false;
	if (n->vhost_running) {
		net_vhost_stop(n->vhost);
		n->vhost_running = false;
	}
	for (unsigned int p = 0; p < n->pairs; p++) {
		n->rx_wanted[p] = false;
		n->tx_blocked[p] = false;
		n->rx_staged[p] = 0; /* a frame waiting for buffers is lost */
		net_update_watch(n, p);
	}
	pthread_mutex_unlock(&n->lock);
}

static const struct virtio_dev_ops net_ops = {
    .config_read = net_config_read,
    .activate = net_activate,
    .queue_notify = net_queue_notify,
    .reset = net_reset,
};

/* Data queues, control queue and backend readiness, all on the loop. */
static void net_kick_handler(int fd, uint32_t revents, void *opaque)
{
	struct virtio_net *n = opaque;
	uint64_t count;
	uint32_t pending;

	if (read(fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
		return;
	pthread_mutex_lock(&n->lock);
	pending = __atomic_exchange_n(&n->pending, 0, __ATOMIC_SEQ_CST);
	if (n->running && !n->paused && virtio_mmio_active(&n->mmio))
		net_process(n, pending);
	else if (n->paused)
		__atomic_fetch_or(&n->pending, pending, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&n->lock);
}

void net_backend_event(int fd, uint32_t revents, void *opaque)
{
	struct virtio_net *n = opaque;

	pthread_mutex_lock(&n->lock);
	for (unsigned int p = 0; p < n->pairs; p++) {
		if (n->be->fds[p] != fd)
			continue;
		if (!n->running || n->paused || !virtio_mmio_active(&n->mmio)) {
			net_update_watch(n, p);
			continue;
		}
		if (revents & EPOLLOUT) {
			n->tx_blocked[p] = false;
			net_update_watch(n, p);
			net_process(n, 1u << (2 * p + 1));
		}
		if (revents & (EPOLLIN | EPOLLERR | EPOLLHUP))
			net_process(n, 1u << (2 * p));
	}
	pthread_mutex_unlock(&n->lock);
}

/* vhost signalled a used buffer: virtio-mmio has no way to inject the
 * interrupt without InterruptStatus, which the guest reads first. */
static void net_vhost_call_handler(int fd, uint32_t revents, void *opaque)
{
	struct virtio_net *n = opaque;
	uint64_t count;

	if (read(fd, &count, sizeof(count)) > 0)
		virtio_mmio_signal(&n->mmio, VIRTIO_MMIO_INT_VRING);
}

static int net_setup_vhost(struct virtio_net *n, const struct virtio_net_opts *opts)
{
	int r;

	if (opts->no_vhost || !n->be->is_tap) {
		log_debug("virtio-net: userspace data path (vhost-net not requested)");
		return 0;
	}
	r = net_vhost_open(n->pairs, &n->vhost);
	if (r < 0) {
		log_debug("virtio-net: userspace data path (/dev/vhost-net %s)",
		          r == -ENOENT ? "does not exist" : err_msg());
		n->vhost = NULL;
		return 0;
	}
	for (unsigned int q = 0; q < 2 * n->pairs; q++) {
		n->vhost_kick[q] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		n->vhost_call[q] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (n->vhost_kick[q] < 0 || n->vhost_call[q] < 0)
			return err_setsys(-errno, "eventfd");
		r = event_loop_add(n->loop, n->vhost_call[q], EPOLLIN, net_vhost_call_handler, n);
		if (r < 0)
			return err_setsys(r, "watching a vhost call fd");
	}
	log_debug("virtio-net: vhost-net data path (%u queue pair(s))", n->pairs);
	return 0;
}

static int net_init_fds(struct virtio_net *n)
{
	int r;

	n->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (n->kick_fd < 0)
		return err_setsys(-errno, "eventfd");
	r = event_loop_add(n->loop, n->kick_fd, EPOLLIN, net_kick_handler, n);
	if (r < 0)
		return err_setsys(r, "watching the kick fd");
	for (unsigned int p = 0; p < n->pairs; p++) {
		/* A device without a backend yet watches nothing. */
		if (n->be->fds[p] < 0)
			continue;
		/* Watched with no events until the guest is ready. */
		r = event_loop_add(n->loop, n->be->fds[p], 0, net_backend_event, n);
		if (r < 0)
			return err_setsys(r, "watching backend fd %u", p);
		n->watched[p] = true;
		n->watch_fd[p] = n->be->fds[p];
	}
	return 0;
}

int virtio_net_new(const struct guest_mem *mem, struct event_loop *loop, struct net_backend *be,
                   const struct virtio_net_opts *opts, struct virtio_net **ret)
{
	unsigned int pairs = opts->queue_pairs ? opts->queue_pairs : 1;
	uint16_t mtu = opts->mtu ? opts->mtu : 1500;
	struct virtio_mmio_info info = {
	    .device_id = VIRTIO_ID_NET, .queue_max = VIRTIO_NET_QUEUE_SIZE, .config_size = 12};
	struct virtio_net *n;
	int r;

	if (pairs > be->nr_queues || pairs > NET_MAX_QUEUE_PAIRS || 2 * pairs + (pairs > 1) > VIRTIO_MMIO_MAX_QUEUES ||
	    mtu < 68)
		return err_set(-EINVAL, "virtio-net: %u queue pairs (backend has %u), mtu %u", pairs, be->nr_queues,
		               mtu);
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	pthread_mutex_init(&n->lock, NULL);
	n->loop = loop;
	n->be = be;
	n->pairs = pairs;
	n->kick_fd = -1;
	for (unsigned int q = 0; q < ARRAY_SIZE(n->vhost_kick); q++)
		n->vhost_kick[q] = n->vhost_call[q] = -1;
	memcpy(n->config.mac, opts->mac, 6);
	n->config.status = VIRTIO_NET_S_LINK_UP;
	n->config.max_virtqueue_pairs = (uint16_t)pairs;
	n->config.mtu = mtu;
	n->max_frame = (size_t)mtu + 14 + 4; /* Ethernet header and a VLAN tag */
	r = net_setup_vhost(n, opts);
	if (r < 0)
		goto fail;
	info.nr_queues = 2 * pairs + (pairs > 1);
	info.features = net_features(n);
	r = virtio_mmio_init(&n->mmio, mem, &info, &net_ops, n);
	if (r < 0)
		goto fail_mmio;
	r = net_init_fds(n);
	if (r < 0)
		goto fail;
	*ret = n;
	return 0;
fail_mmio:
	err_set(r, "virtio-net: transport setup");
fail:
	n->be = NULL; /* stays the caller's on failure */
	virtio_net_free(n);
	return r;
}

struct virtio_mmio *virtio_net_mmio(struct virtio_net *n)
{
	return &n->mmio;
}

bool virtio_net_uses_vhost(const struct virtio_net *n)
{
	return n->vhost != NULL;
}

int virtio_net_set_doorbell(struct virtio_net *n, unsigned int q, int fd)
{
	if (q >= n->mmio.nr_queues)
		return -EINVAL;
	if (n->vhost && q < 2 * n->pairs) {
		/* The kernel reads the ioeventfd itself: no exit, no loop. */
		if (n->vhost_kick[q] >= 0)
			close(n->vhost_kick[q]);
		n->vhost_kick[q] = fd;
		n->vhost_kick_borrowed |= 1u << q;
		return 0;
	}
	return virtio_mmio_add_notify_fd(&n->mmio, n->loop, fd, q);
}

void virtio_net_get_stats(struct virtio_net *n, struct virtio_net_stats *ret)
{
	pthread_mutex_lock(&n->lock);
	*ret = n->stats;
	pthread_mutex_unlock(&n->lock);
}

void virtio_net_free(struct virtio_net *n)
{
	if (!n)
		return;
	if (n->vhost) {
		net_vhost_free(n->vhost);
		for (unsigned int q = 0; q < ARRAY_SIZE(n->vhost_kick); q++) {
			if (n->vhost_call[q] >= 0) {
				event_loop_remove(n->loop, n->vhost_call[q]);
				close(n->vhost_call[q]);
			}
			if (n->vhost_kick[q] >= 0 && !(n->vhost_kick_borrowed & (1u << q)))
				close(n->vhost_kick[q]);
		}
	}
	if (n->kick_fd >= 0) {
		event_loop_remove(n->loop, n->kick_fd);
		close(n->kick_fd);
	}
	for (unsigned int p = 0; p < n->pairs; p++)
		if (n->watched[p])
			event_loop_remove(n->loop, n->watch_fd[p]);
	if (n->mmio.ops)
		virtio_mmio_destroy(&n->mmio);
	if (n->be)
		n->be->ops->free(n->be);
	for (unsigned int p = 0; p < NET_MAX_QUEUE_PAIRS; p++)
		free(n->rx_staging[p]);
	pthread_mutex_destroy(&n->lock);
	free(n);
}
