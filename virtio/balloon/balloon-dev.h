/* SPDX-License-Identifier: Apache-2.0 */
/* The virtio-balloon device's state, shared by balloon.c (queues),
 * balloon-stats.c (the statistics queue) and balloon-state.c (snapshots).
 * Internal to virtio/balloon. */
#ifndef KVRUN_VIRTIO_BALLOON_BALLOON_DEV_H
#define KVRUN_VIRTIO_BALLOON_BALLOON_DEV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "virtio/balloon/balloon.h"
#include "virtio/mmio.h"

/* Linux's driver needs room for a report of 32 blocks in the reporting
 * queue (PAGE_REPORTING_CAPACITY) and sends 256 PFNs per inflate buffer. */
#define BALLOON_QUEUE_SIZE 128
/* Queues the transport offers: inflate, deflate, and two for the
 * statistics and reporting queues (which exist by negotiated feature). */
#define BALLOON_NR_QUEUES 4
#define BALLOON_Q_INFLATE 0
#define BALLOON_Q_DEFLATE 1
/* Chains each queue takes per turn of the event loop: the rest waits for
 * a kick the device sends itself. */
#define BALLOON_BUDGET 64

/* What a queue index is for, decided by the negotiated features: queues
 * that do not exist take no index (5.5.2; Linux numbers them so). */
enum balloon_role {
	BALLOON_ROLE_NONE,
	BALLOON_ROLE_INFLATE,
	BALLOON_ROLE_DEFLATE,
	BALLOON_ROLE_STATS,
	BALLOON_ROLE_REPORTING,
};

/* The config space (5.5.4), little-endian. */
struct balloon_config {
	uint32_t num_pages;
	uint32_t actual;
	uint32_t free_page_hint_cmd_id;
	uint32_t poison_val;
};

struct virtio_balloon {
	struct virtio_mmio mmio;
	struct event_loop *loop;
	struct virtio_balloon_opts opts;
	/* Kicks from vCPU threads are moved to the loop thread through this. */
	int kick_fd;
	bool kick_watched;
	/* Held by the loop handler while it serves the queues, and by reset,
	 * activate, pause and the statistics calls. */
	pthread_mutex_t lock;
	bool running; /* under lock */
	bool paused; /* under lock */
	enum balloon_role roles[BALLOON_NR_QUEUES]; /* under lock, set at activate */
	/* The statistics buffer the device keeps to ask for the next update. */
	bool stats_held; /* under lock */
	uint16_t stats_head;
	struct virtio_balloon_stats stats; /* under lock */
	uint32_t num_pages; /* atomic: the target */
	uint32_t actual; /* atomic: written by the driver */
	struct virtio_balloon_counters counters; /* under lock, but target/actual */
	struct virtq_req req;
};

/* Hand work to the loop thread. */
void balloon_kick(struct virtio_balloon *b);
/* The queue indexes' roles for the driver's features. */
void balloon_roles(uint64_t features, enum balloon_role roles[BALLOON_NR_QUEUES]);
/* A statistics buffer the driver made available (lock held): read it and
 * keep it. Returns 0, or -EINVAL when the chain is not a statistics
 * buffer (the device is then broken). */
int balloon_stats_take(struct virtio_balloon *b, struct virtq *vq, const struct virtq_req *req);

#endif
