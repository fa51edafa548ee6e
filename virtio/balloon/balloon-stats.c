/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The statistics queue (virtio 1.2, 5.5.6.3), driven by the device: the
 * driver makes one buffer of statistics available and the device keeps
 * it; giving it back (used) asks for the next, which the driver fills
 * with fresh figures and makes available again.
 */
#include <errno.h>
#include <time.h>

#include "virtio/balloon/balloon-dev.h"

/* Entries read from one buffer (Linux sends 16 at most); the rest of a
 * longer one is ignored. */
#define BALLOON_STATS_MAX 64

struct balloon_stat {
	uint16_t tag;
	uint64_t val;
} __attribute__((packed));

_Static_assert(sizeof(struct balloon_stat) == 10, "a statistic is 10 bytes on the wire");

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int balloon_stats_take(struct virtio_balloon *b, struct virtq *vq, const struct virtq_req *req)
{
	struct balloon_stat st[BALLOON_STATS_MAX];
	size_t n;

	if (req->nr_in)
		return -EINVAL;
	/* The driver gives at most one buffer at a time (5.5.6.3.1); one
	 * more gets the one kept back, so the device never holds two. */
	if (b->stats_held)
		virtq_push(vq, b->stats_head, 0);
	n = iov_to_buf(req->iov, req->nr_out, 0, st, sizeof(st)) / sizeof(st[0]);
	b->stats.have = 0;
	for (size_t i = 0; i < n; i++) {
		/* Unknown tags are ignored (5.5.6.3.2). */
		if (st[i].tag >= VIRTIO_BALLOON_S_NR)
			continue;
		b->stats.val[st[i].tag] = st[i].val;
		b->stats.have |= 1u << st[i].tag;
	}
	b->stats.updated_ns = now_ns();
	b->stats_held = true;
	b->stats_head = req->head;
	return 0;
}

void virtio_balloon_stats(struct virtio_balloon *b, struct virtio_balloon_stats *ret)
{
	pthread_mutex_lock(&b->lock);
	*ret = b->stats;
	pthread_mutex_unlock(&b->lock);
}

static int stats_queue(const struct virtio_balloon *b)
{
	for (int q = 0; q < BALLOON_NR_QUEUES; q++)
		if (b->roles[q] == BALLOON_ROLE_STATS)
			return q;
	return -1;
}

int virtio_balloon_request_stats(struct virtio_balloon *b)
{
	int q, r = -EAGAIN;

	pthread_mutex_lock(&b->lock);
	q = stats_queue(b);
	if (q >= 0 && b->stats_held && b->running && !b->paused && virtio_mmio_active(&b->mmio) &&
	    virtq_usable(&b->mmio.vqs[q])) {
		virtq_push(&b->mmio.vqs[q], b->stats_head, 0);
		b->stats_held = false;
		virtio_mmio_notify_used(&b->mmio, &b->mmio.vqs[q]);
		r = 0;
	}
	pthread_mutex_unlock(&b->lock);
	return r;
}
