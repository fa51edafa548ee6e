/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Split virtqueues (virtio 1.2, 2.7) as seen from the device side.
 *
 * The rings live in guest memory; a virtq holds host pointers to them that
 * virtq_start() validated once with guest_mem_ptr(). Every value the guest
 * writes (ring indexes, descriptor indexes, addresses, lengths, flags) is
 * checked where it is read. Any violation marks the queue broken: virtq_pop()
 * then fails with -EIO until virtq_reset(), and the caller marks the device
 * as needing reset (virtio_mmio_set_broken()).
 *
 * A virtq is used by one thread at a time (the device's worker or the event
 * loop); the transport only changes it while the device is stopped.
 */
#ifndef KVRUN_VIRTIO_VIRTQUEUE_H
#define KVRUN_VIRTIO_VIRTQUEUE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "vmm/mem.h"

/* Largest queue a device may offer (QueueNumMax). */
#define VIRTQ_MAX_SIZE 1024
/* Most buffers one chain may hold, indirect tables included. */
#define VIRTQ_MAX_SEGS 256

#define VIRTQ_DESC_F_NEXT 1
#define VIRTQ_DESC_F_WRITE 2
#define VIRTQ_DESC_F_INDIRECT 4
#define VIRTQ_AVAIL_F_NO_INTERRUPT 1
#define VIRTQ_USED_F_NO_NOTIFY 1

struct virtq_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

struct virtq_avail {
	uint16_t flags;
	uint16_t idx;
	uint16_t ring[]; /* num entries, then used_event */
};

struct virtq_used_elem {
	uint32_t id;
	uint32_t len;
};

struct virtq_used {
	uint16_t flags;
	uint16_t idx;
	struct virtq_used_elem ring[]; /* num entries, then avail_event */
};

struct virtq {
	const struct guest_mem *mem;
	uint16_t num_max;
	/* Transport registers, written while the queue is not ready. */
	uint16_t num;
	bool ready;
	uint64_t desc_gpa, avail_gpa, used_gpa;
	/* Set by virtq_start(). */
	struct virtq_desc *desc;
	struct virtq_avail *avail;
	struct virtq_used *used;
	bool event_idx, indirect;
	/* Device-side state. */
	uint16_t last_avail; /* next avail ring slot to consume */
	uint16_t used_idx; /* shadow of used->idx */
	uint16_t signalled_used; /* used_idx at the last interrupt decision */
	bool broken;
};

/* One descriptor chain mapped to host memory: iov[0..nr_out) are the
 * device-readable buffers (driver to device), iov[nr_out..nr_out+nr_in) the
 * device-writable ones. The pointers stay valid for the VM's lifetime. */
struct virtq_req {
	uint16_t head;
	unsigned int nr_out, nr_in;
	uint32_t out_len, in_len; /* byte totals of each side */
	struct iovec iov[VIRTQ_MAX_SEGS];
};

/* Bind vq to guest memory with the given QueueNumMax; the queue starts
 * unconfigured (num = num_max, not ready). */
void virtq_init(struct virtq *vq, const struct guest_mem *mem, uint16_t num_max);

/* Forget everything the driver configured (device reset). */
void virtq_reset(struct virtq *vq);

/* Validate num and the ring addresses (alignment, whole ring inside guest
 * RAM) and map them; features are the negotiated driver features. Returns 0,
 * or -EINVAL (bad size or alignment) / -EFAULT (not RAM) and marks the queue
 * broken. */
int virtq_start(struct virtq *vq, uint64_t features);

/* True when the queue is started and not broken. */
bool virtq_usable(const struct virtq *vq);

/* Take the next available chain into req. Returns 1 when one was taken, 0
 * when the ring is empty or the queue not set up, -EIO when the queue is
 * (or just became) broken:
 * avail idx more than num ahead, head or next out of range, a chain longer
 * than the queue or than VIRTQ_MAX_SEGS, a loop, nested or malformed
 * indirect tables, an address outside RAM, a readable buffer after a
 * writable one, or a side totalling 4 GiB or more. */
int virtq_pop(struct virtq *vq, struct virtq_req *req);

/* Whether the driver made chains available that virtq_pop() has not taken
 * yet: a hint (for waking more workers), not a promise. */
bool virtq_has_avail(const struct virtq *vq);

/* Give back the chain virtq_pop() just returned, unused (it will be popped
 * again). Only valid right after a successful pop. */
void virtq_unpop(struct virtq *vq);

/* Return a chain to the driver with len bytes written into its writable
 * buffers, and publish it (used->idx, release ordering). */
void virtq_push(struct virtq *vq, uint16_t head, uint32_t len);

/* virtq_push() in two steps, for a batch: virtq_fill() writes a used
 * element without publishing it, virtq_flush() publishes every element
 * filled so far (used->idx, release ordering). A driver polling the used
 * ring then sees a batch at once, and the cache line of used->idx moves
 * between the CPUs once per batch instead of once per element.
 * virtq_need_interrupt() flushes first. */
void virtq_fill(struct virtq *vq, uint16_t head, uint32_t len);
void virtq_flush(struct virtq *vq);

/* After a batch of pushes: whether the driver asked for an interrupt
 * (used_event with EVENT_IDX, otherwise VIRTQ_AVAIL_F_NO_INTERRUPT). Call once
 * per batch; it remembers where the last decision was made. */
bool virtq_need_interrupt(struct virtq *vq);

/* Whether the driver made buffers available that virtq_pop() has not
 * taken yet (a cheap check for a device polling the ring). */
bool virtq_avail_pending(const struct virtq *vq);

/* Ask the driver not to kick while the device is busy draining the queue. */
void virtq_disable_notify(struct virtq *vq);

/* Ask for kicks again. Returns true when buffers arrived meanwhile (the
 * caller must drain again: no kick will come for them). */
bool virtq_enable_notify(struct virtq *vq);

/* Copy up to len bytes starting at byte offset skip of iov[0..n) into dst;
 * returns the number of bytes copied. */
size_t iov_to_buf(const struct iovec *iov, unsigned int n, size_t skip, void *dst, size_t len);
/* Copy src into iov[0..n) from byte offset skip; returns bytes copied. */
size_t iov_from_buf(const struct iovec *iov, unsigned int n, size_t skip, const void *src, size_t len);
/* Describe bytes [skip, skip + len) of iov[0..n) in dst (at most max
 * entries); returns the number of entries, and the bytes covered through
 * ret_len (less than len when iov is shorter). */
unsigned int iov_slice(const struct iovec *iov, unsigned int n, size_t skip, size_t len, struct iovec *dst,
                       unsigned int max, size_t *ret_len);

#endif
