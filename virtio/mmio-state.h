/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Snapshot state of the virtio-mmio transport and its split virtqueues:
 * the registers the driver wrote (features, selectors, status, interrupt
 * status, config generation) and, per queue, its size, ring addresses,
 * readiness and the device-side indices (next avail slot, used idx, last
 * interrupt decision). The rings themselves are in guest RAM, saved with it.
 *
 * A device's snapshot save function appends its own state and then calls
 * virtio_mmio_state_save(); its load function reads its own part, then calls
 * virtio_mmio_state_load(), which restarts the queues on the restored guest
 * RAM and, for a device that was running, calls ops->activate() (so the
 * device model must be ready for that when it calls). What each device adds
 * is in docs/snapshot.md.
 */
#ifndef KVRUN_VIRTIO_MMIO_STATE_H
#define KVRUN_VIRTIO_MMIO_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "virtio/mmio.h"
#include "vmm/snapshot.h"

/* One virtqueue, as saved. */
struct virtq_state {
	uint64_t desc_gpa, avail_gpa, used_gpa;
	uint16_t num, num_max;
	uint16_t last_avail, used_idx, signalled_used;
	uint8_t ready, broken;
	uint8_t pad[2];
};

void virtq_state_save(const struct virtq *vq, struct virtq_state *out);
/* Restore vq (bound to its guest memory by virtq_init()) from st, with the
 * negotiated features. A ready, unbroken queue is started again, which
 * checks its layout against guest RAM; -EINVAL when st does not fit vq
 * (another queue size) or the queue cannot start. */
int virtq_state_load(struct virtq *vq, const struct virtq_state *st, uint64_t features);

/* Append the transport state of m (and all its queues) to out. Takes
 * m->lock; call with the vCPUs paused and the device quiesced. */
int virtio_mmio_state_save(struct virtio_mmio *m, struct snap_buf *out);
/* Load what virtio_mmio_state_save() wrote, from rd (advanced past it),
 * into m, which virtio_mmio_init() set up for the same device (same id,
 * queue count and sizes, features): -EINVAL with err_set() otherwise. */
int virtio_mmio_state_load(struct virtio_mmio *m, struct snap_reader *rd);

/* virtio_mmio_state_load() of the last part of a device's state: bytes left
 * after it are refused (-EBADMSG, the message naming dev). */
int virtio_mmio_state_load_last(struct virtio_mmio *m, struct snap_reader *rd, const char *dev);

/* The features the saved device offered, read from what
 * virtio_mmio_state_save() wrote at rd (rd is not advanced): for a
 * runtime that makes the device again before loading it. -EBADMSG when
 * too short. */
int virtio_mmio_state_offered(const struct snap_reader *rd, uint64_t *ret);

#endif
