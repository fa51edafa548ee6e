/* SPDX-License-Identifier: Apache-2.0 */
/* The virtio-vsock device's state, shared by vsock.c (queues) and
 * vsock-state.c (snapshots). Internal to virtio/vsock. */
#ifndef KVRUN_VIRTIO_VSOCK_VSOCK_DEV_H
#define KVRUN_VIRTIO_VSOCK_VSOCK_DEV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "virtio/mmio.h"
#include "virtio/vsock/uds.h"
#include "virtio/vsock/vsock.h"

#define VSOCK_QUEUE_SIZE 256
#define VSOCK_RX 0
#define VSOCK_TX 1
#define VSOCK_EVENT 2

struct virtio_vsock {
	struct virtio_mmio mmio;
	uint64_t guest_cid;
	struct event_loop *loop;
	struct vsock_uds *uds;
	/* Kicks from vCPU threads are moved to the loop thread through this. */
	int kick_fd;
	bool kick_watched;
	/* Held by every loop handler; reset/activate take it on the vCPU
	 * thread, so queues are never used after a reset returns. */
	pthread_mutex_t lock;
	bool running; /* under lock */
	bool reset_pending; /* under lock: drop the streams on the loop thread */
	bool paused; /* under lock: virtio_vsock_pause() */
	bool event_pending; /* under lock (read atomically): TRANSPORT_RESET to send */
	struct virtq_req req;
};

/* Hand work to the loop thread. */
void vsock_kick(struct virtio_vsock *v);
/* Put VIRTIO_VSOCK_EVENT_TRANSPORT_RESET in the guest's next event buffer
 * (event_pending stays set while there is none). Lock held. */
void vsock_send_reset_event(struct virtio_vsock *v);

#endif
