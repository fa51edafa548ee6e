/* SPDX-License-Identifier: Apache-2.0 */
/* virtio-net's userspace data path, run on the event loop with the device
 * lock held: tx chains to the backend, backend frames into rx chains, and
 * the control queue. */
#include <errno.h>
#include <stdlib.h>
#include <linux/virtio_net.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/log.h"
#include "virtio/net/net-dev.h"
#include "vmm/counters.h"

#define HDR_LEN sizeof(struct virtio_net_hdr_v1)
#define NUM_BUFFERS_OFF offsetof(struct virtio_net_hdr_v1, num_buffers)
/* A GSO frame from a TAP: 64 KiB of IP plus the Ethernet header and a tag. */
#define GSO_FRAME_MAX (65535 + 14 + 4)
/* Looks at the rx ring per turn once it seemed empty (see process_rx()). */
#define NET_RX_ROUNDS 4

void net_kick(struct virtio_net *n, uint32_t queues)
{
	uint64_t one = 1;

	__atomic_fetch_or(&n->pending, queues, __ATOMIC_SEQ_CST);
	if (write(n->kick_fd, &one, sizeof(one)) < 0)
		log_debug("virtio-net: kick: %m");
}

void net_update_watch(struct virtio_net *n, unsigned int p)
{
	uint32_t ev = 0;

	if (!n->watched[p])
		return;
	/* A broken or stopped device reads nothing: level-triggered epoll
	 * would otherwise call us forever. */
	if (n->running && !n->paused && virtio_mmio_active(&n->mmio) && p < n->active_pairs) {
		ev |= n->rx_wanted[p] ? EPOLLIN : 0;
		ev |= n->tx_blocked[p] ? EPOLLOUT : 0;
	}
	if (ev == n->watch_events[p])
		return;
	if (event_loop_modify(n->loop, n->be->fds[p], ev) == 0)
		n->watch_events[p] = ev;
}

/* One tx chain: the header and frame, all device-readable. Returns 1 when
 * sent (or dropped), 0 when the backend is full, -EINVAL on a bad chain. */
static int tx_one(struct virtio_net *n, unsigned int p, struct virtq_req *req)
{
	ssize_t w;

	if (req->nr_in || req->out_len < HDR_LEN || req->out_len > HDR_LEN + GSO_FRAME_MAX)
		return -EINVAL;
	if (n->be->fds[p] < 0) {
		/* No backend yet (a template's device): no cable, the frame
		 * is lost. */
		n->stats.tx_dropped++;
		return 1;
	}
	w = writev(n->be->fds[p], req->iov, (int)req->nr_out);
	if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (w < 0) {
		/* A frame the host refuses (bad GSO header, link down) is lost,
		 * as on a wire. */
		log_debug("virtio-net: tx%u: %m", p);
		n->stats.tx_dropped++;
	} else {
		n->stats.tx_frames++;
		vmm_count(VMM_NET_TX_FRAMES, 1);
	}
	return 1;
}

/* Send chains until the ring is empty (1), the backend is full or the
 * budget spent (0), or a chain is malformed (< 0). */
static int tx_drain(struct virtio_net *n, unsigned int p, struct virtq *vq, unsigned int *budget)
{
	int r;

	while (*budget) {
		r = virtq_pop(vq, &n->req);
		if (r <= 0)
			return r < 0 ? r : 1;
		r = tx_one(n, p, &n->req);
		if (r < 0)
			return r;
		if (r == 0) {
			/* The chain waits for EPOLLOUT. */
			virtq_unpop(vq);
			n->tx_blocked[p] = true;
			net_update_watch(n, p);
			return 0;
		}
		/* Published in batches (virtq_flush() in process_tx()). */
		virtq_fill(vq, n->req.head, 0);
		if (!(--(*budget) % NET_TX_FLUSH))
			virtq_flush(vq);
	}
	/* More next turn, after the other queues. */
	net_kick(n, 1u << (2 * p + 1));
	return 0;
}

static void process_tx(struct virtio_net *n, unsigned int p)
{
	struct virtq *vq = &n->mmio.vqs[2 * p + 1];
	unsigned int budget = NET_BUDGET;
	int r;

	if (n->tx_blocked[p] || !virtq_usable(vq))
		return;
	do {
		virtq_disable_notify(vq);
		r = tx_drain(n, p, vq, &budget);
		virtq_flush(vq);
	} while (r > 0 && virtq_enable_notify(vq));
	virtio_mmio_notify_used(&n->mmio, vq);
	if (r < 0) {
		log_debug("virtio-net: tx%u: malformed chain", p);
		virtio_mmio_set_broken(&n->mmio);
	}
}

/* Bytes one received frame may need, vnet header included. */
static size_t rx_need(const struct virtio_net *n)
{
	const struct virtio_mmio *m = &n->mmio;
	bool gso = virtio_mmio_has_feature(m, VIRTIO_NET_F_GUEST_TSO4) ||
	           virtio_mmio_has_feature(m, VIRTIO_NET_F_GUEST_TSO6) ||
	           virtio_mmio_has_feature(m, VIRTIO_NET_F_GUEST_UFO);

	return HDR_LEN + (gso ? GSO_FRAME_MAX : n->max_frame);
}

/* An ordinary frame (MTU 1500, a VLAN tag) with its header: the buffers
 * taken before reading, with MRG_RXBUF. */
static size_t rx_small_need(const struct virtio_net *n)
{
	size_t need = rx_need(n);

	return need < HDR_LEN + 1518 ? need : HDR_LEN + 1518;
}

struct rx_gathered {
	unsigned int chains, niov;
	size_t have;
};

/* Pop rx chains into n->rx_iov after those in g until they can hold need
 * bytes (one chain without MRG_RXBUF). Returns the number of chains now
 * taken (0: not enough buffers, none of them kept, g emptied), or -EINVAL
 * on a malformed chain. */
static int rx_gather(struct virtio_net *n, struct virtq *vq, bool mrg, size_t need, struct rx_gathered *g)
{
	unsigned int chains = g->chains, niov = g->niov;
	size_t have = g->have;
	int r;

	/* What "no buffers" was decided on; see process_rx(). */
	n->rx_seen_avail = __atomic_load_n(&vq->avail->idx, __ATOMIC_ACQUIRE);

	while (chains < NET_RX_MAX_CHAINS && (chains == 0 || (mrg && have < need))) {
		r = virtq_pop(vq, &n->req);
		if (r < 0)
			return r;
		if (r == 0)
			break;
		if (n->req.nr_out || n->req.in_len < HDR_LEN)
			return -EINVAL;
		if (niov + n->req.nr_in > NET_RX_MAX_IOV) {
			virtq_unpop(vq);
			break;
		}
		memcpy(&n->rx_iov[niov], &n->req.iov[0], n->req.nr_in * sizeof(struct iovec));
		niov += n->req.nr_in;
		n->rx_heads[chains] = n->req.head;
		n->rx_caps[chains] = n->req.in_len;
		have += n->req.in_len;
		chains++;
	}
	if (chains && mrg && have < need && chains < NET_RX_MAX_CHAINS && niov < NET_RX_MAX_IOV) {
		/* Not room for the frame: wait for more buffers rather than
		 * truncate one. */
		for (unsigned int i = 0; i < chains; i++)
			virtq_unpop(vq);
		chains = niov = 0;
		have = 0;
	}
	*g = (struct rx_gathered){chains, niov, have};
	return (int)chains;
}

/* Give the chains a frame of len bytes took back to the driver, in order,
 * with num_buffers in the first header; the rest go back to the ring. */
static void rx_push(struct virtio_net *n, struct virtq *vq, unsigned int chains, unsigned int niov, size_t len)
{
	uint32_t lens[NET_RX_MAX_CHAINS];
	uint16_t used = 0;

	while (used < chains && (len || used == 0)) {
		uint32_t l = len < n->rx_caps[used] ? (uint32_t)len : n->rx_caps[used];

		lens[used++] = l;
		len -= l;
	}
	/* Without MRG_RXBUF this is 1, as virtio 1.x requires. The first
	 * chain holds the whole header (checked when popped). */
	iov_from_buf(n->rx_iov, niov, NUM_BUFFERS_OFF, &used, sizeof(used));
	for (unsigned int i = used; i < chains; i++)
		virtq_unpop(vq);
	for (unsigned int i = 0; i < used; i++)
		virtq_push(vq, n->rx_heads[i], lens[i]);
}

static void rx_done(struct virtio_net *n, struct virtq *vq, const struct rx_gathered *g, size_t len)
{
	rx_push(n, vq, g->chains, g->niov, len);
	n->stats.rx_frames++;
	vmm_count(VMM_NET_RX_FRAMES, 1);
}

/* The frame waiting in pair p's staging area into the guest's buffers:
 * 1 delivered, 0 not enough buffers yet, -EINVAL. */
static int rx_deliver_staged(struct virtio_net *n, unsigned int p, struct virtq *vq)
{
	struct rx_gathered g = {0};
	int r = rx_gather(n, vq, true, n->rx_staged[p], &g);

	if (r <= 0)
		return r;
	iov_from_buf(n->rx_iov, g.niov, 0, n->rx_staging[p], n->rx_staged[p]);
	rx_done(n, vq, &g, n->rx_staged[p]);
	n->rx_staged[p] = 0;
	return 1;
}

/* A frame of len bytes went past the buffers in g into the staging area:
 * take more buffers for the rest and copy it there, or, without enough,
 * keep the whole frame staged and give the buffers back. */
static int rx_spilled(struct virtio_net *n, unsigned int p, struct virtq *vq, struct rx_gathered *g, size_t len)
{
	struct rx_gathered more = *g;
	size_t head = g->have;
	uint8_t *st = n->rx_staging[p];
	int r = rx_gather(n, vq, true, len, &more);

	if (r < 0)
		return r;
	if (r > 0 && more.have >= len) {
		iov_from_buf(n->rx_iov, more.niov, head, st, len - head);
		rx_done(n, vq, &more, len);
		return 0;
	}
	/* rx_gather() gave back everything it took, ours included. */
	memmove(st + head, st, len - head);
	iov_to_buf(n->rx_iov, g->niov, 0, st, head);
	n->rx_staged[p] = len;
	return 0;
}

/* Read frames while there are buffers and frames. Returns 1 when the guest
 * has no more buffers, 0 when the backend is empty or the budget spent,
 * -EINVAL on a malformed chain. */
static int rx_drain(struct virtio_net *n, unsigned int p, struct virtq *vq, bool mrg)
{
	bool staging;
	size_t need;

	/* Made on the first frame (a device that receives none never pays
	 * for it); without it every frame takes the buffers of the largest. */
	if (mrg && !n->rx_staging[p])
		n->rx_staging[p] = malloc(HDR_LEN + GSO_FRAME_MAX);
	staging = mrg && n->rx_staging[p];
	need = staging ? rx_small_need(n) : rx_need(n);

	for (unsigned int budget = NET_BUDGET; budget; budget--) {
		struct rx_gathered g = {0};
		unsigned int niov;
		ssize_t len;
		int r;

		if (n->rx_staged[p]) {
			r = rx_deliver_staged(n, p, vq);
			if (r <= 0)
				return r < 0 ? r : 1;
			continue;
		}
		r = rx_gather(n, vq, mrg, need, &g);
		if (r <= 0)
			return r < 0 ? r : 1;
		niov = g.niov;
		if (staging)
			n->rx_iov[niov++] = (struct iovec){n->rx_staging[p], HDR_LEN + GSO_FRAME_MAX};
		len = readv(n->be->fds[p], n->rx_iov, (int)niov);
		if (len < 0 || (size_t)len < HDR_LEN) {
			for (unsigned int i = 0; i < g.chains; i++)
				virtq_unpop(vq);
			if (len < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
				log_debug("virtio-net: rx%u: %m", p);
			return 0;
		}
		if ((size_t)len <= g.have) {
			rx_done(n, vq, &g, (size_t)len);
			continue;
		}
		r = rx_spilled(n, p, vq, &g, (size_t)len);
		if (r < 0)
			return r;
	}
	return 0;
}

static void process_rx(struct virtio_net *n, unsigned int p)
{
	struct virtq *vq = &n->mmio.vqs[2 * p];
	bool mrg = virtio_mmio_has_feature(&n->mmio, VIRTIO_NET_F_MRG_RXBUF);
	int r;

	/* Without a backend there is nothing to receive: the buffers wait. */
	if (!virtq_usable(vq) || p >= n->active_pairs || n->be->fds[p] < 0)
		return;
	/* Refills need no kick while we are reading. */
	virtq_disable_notify(vq);
	for (unsigned int round = 0;; round++) {
		r = rx_drain(n, p, vq, mrg);
		if (r <= 0)
			break;
		/* A driver that keeps moving avail idx without giving room for
		 * a frame would keep us here: the next look is a turn later. */
		if (round == NET_RX_ROUNDS) {
			net_kick(n, 1u << (2 * p));
			break;
		}
		/* Out of buffers: stop reading until the guest kicks. Buffers
		 * we put back count only once more were added meanwhile. */
		virtq_enable_notify(vq);
		if (vq->event_idx) {
			/* avail_event = last_avail would be behind the chains we
			 * put back, and the driver would never kick: ask for a
			 * kick on the next buffer instead. */
			uint16_t *avail_event = (uint16_t *)&vq->used->ring[vq->num];

			__atomic_store_n(avail_event, n->rx_seen_avail, __ATOMIC_RELAXED);
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
		}
		if (__atomic_load_n(&vq->avail->idx, __ATOMIC_ACQUIRE) != n->rx_seen_avail)
			continue;
		n->rx_wanted[p] = false;
		n->stats.rx_paused++;
		net_update_watch(n, p);
		break;
	}
	virtio_mmio_notify_used(&n->mmio, vq);
	if (r < 0) {
		log_debug("virtio-net: rx%u: malformed chain", p);
		virtio_mmio_set_broken(&n->mmio);
	}
}

static uint8_t ctrl_command(struct virtio_net *n, const struct virtq_req *req)
{
	struct {
		uint8_t class, cmd;
		uint16_t pairs;
	} __attribute__((packed)) c;

	if (iov_to_buf(req->iov, req->nr_out, 0, &c, sizeof(c)) < sizeof(c) || c.class != VIRTIO_NET_CTRL_MQ ||
	    c.cmd != VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET || c.pairs < 1 || c.pairs > n->pairs)
		return VIRTIO_NET_ERR;
	if (n->be->ops->set_active && n->be->ops->set_active(n->be, c.pairs) < 0)
		return VIRTIO_NET_ERR;
	n->active_pairs = c.pairs;
	for (unsigned int p = 0; p < n->pairs; p++) {
		n->rx_wanted[p] = p < c.pairs;
		net_update_watch(n, p);
	}
	log_debug("virtio-net: %u queue pair(s) active", c.pairs);
	return VIRTIO_NET_OK;
}

static void process_ctrl(struct virtio_net *n)
{
	struct virtq *vq = &n->mmio.vqs[2 * n->pairs];
	unsigned int budget = NET_BUDGET;
	int r = 0;

	while (budget && (r = virtq_pop(vq, &n->req)) > 0) {
		uint8_t ack;

		if (n->req.out_len < 2 || n->req.in_len < 1) {
			r = -EINVAL;
			break;
		}
		ack = ctrl_command(n, &n->req);
		iov_from_buf(n->req.iov + n->req.nr_out, n->req.nr_in, 0, &ack, 1);
		virtq_push(vq, n->req.head, 1);
		budget--;
	}
	virtio_mmio_notify_used(&n->mmio, vq);
	if (r < 0)
		virtio_mmio_set_broken(&n->mmio);
	else if (!budget)
		net_kick(n, 1u << (2 * n->pairs)); /* more next turn */
}

void net_process(struct virtio_net *n, uint32_t queues)
{
	if (n->pairs > 1 && (queues & (1u << (2 * n->pairs))))
		process_ctrl(n);
	if (n->vhost_running)
		return;
	for (unsigned int p = 0; p < n->pairs && virtio_mmio_active(&n->mmio); p++) {
		if (queues & (1u << (2 * p + 1)))
			process_tx(n, p);
		if ((queues & (1u << (2 * p))) && p < n->active_pairs) {
			n->rx_wanted[p] = true;
			net_update_watch(n, p);
			process_rx(n, p);
		}
	}
}
