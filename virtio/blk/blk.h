/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio-blk (virtio 1.2, 5.2) over a raw disk image. One request queue;
 * requests run on a worker thread per disk, fed by the queue notifications,
 * with preadv/pwritev straight into guest memory.
 *
 * Runtime use:
 *   struct virtio_blk *b;
 *   virtio_blk_new(&vm_mem, &(struct virtio_blk_opts){.path = img, .read_only = ro, .id = "root"}, &b);
 *   bus_register(mmio_bus, addr, VIRTIO_MMIO_SIZE, &virtio_mmio_bus_ops, virtio_blk_mmio(b));
 *   virtio_mmio_set_irq(virtio_blk_mmio(b), &line);
 *   (optional) virtio_blk_set_doorbell(b, ioeventfd): the worker reads the guest's kicks itself
 *   kernel command line: virtio_mmio.device=4K@0x<addr>:<gsi>
 */
#ifndef KVRUN_VIRTIO_BLK_BLK_H
#define KVRUN_VIRTIO_BLK_BLK_H

#include <stdbool.h>
#include <stdint.h>

#include "virtio/blk/backend.h"
#include "virtio/mmio.h"
#include "vmm/snapshot.h"

#define VIRTIO_BLK_ID_BYTES 20

struct virtio_blk_opts {
	const char *path; /* raw image or block device; with base, the overlay */
	const char *base; /* a copy-on-write disk's base image (blk_open()), or NULL */
	bool read_only;
	/* Offer no VIRTIO_BLK_F_RO although read_only: the disk of a VM
	 * restored from a snapshot in which the guest's driver negotiated a
	 * writable disk (a template's disk, created without media, that got
	 * read-only media later: writes fail with VIRTIO_BLK_S_IOERR). The
	 * features offered cannot change under a driver that negotiated them
	 * (virtio_blk_state_offers_ro() reads the saved offer). */
	bool offer_writable;
	const char *id; /* serial returned by GET_ID (at most 20 bytes used); may be NULL */
};

struct virtio_blk;

/* Open the image and start the disk's worker thread. Guest memory is
 * borrowed and must outlive the device. Returns 0 and the device (owned by
 * the caller), or -errno with err_set() context. */
int virtio_blk_new(const struct guest_mem *mem, const struct virtio_blk_opts *opts, struct virtio_blk **ret);

/* Same with a backend that the device takes ownership of (also on failure). */
int virtio_blk_new_backend(const struct guest_mem *mem, struct blk_backend *backend, const char *id,
                           struct virtio_blk **ret);

/* A disk without media: capacity 0, writable (no VIRTIO_BLK_F_RO, which
 * cannot change once negotiated), for a VM that gets its disk later
 * (templates). */
int virtio_blk_new_empty(const struct guest_mem *mem, const char *id, struct virtio_blk **ret);

/* Give an empty disk its media: open path (with base as blk_open() does;
 * read-only: writes then fail with VIRTIO_BLK_S_IOERR), set the capacity
 * and send a config change interrupt. -EBUSY when the disk has media
 * already. */
int virtio_blk_attach_media(struct virtio_blk *b, const char *path, const char *base, bool read_only);

/* Write the disk's whole content, as the guest reads it now, into the
 * regular file out (blk_backend_ops.export). Pause the device (or the
 * VM) around it. -ENOMEDIUM for a disk without media. */
int virtio_blk_export(struct virtio_blk *b, int out);

/* Stop (true) or resume (false) serving requests: when pausing returns,
 * no request is between pop and push and none is taken until resumed.
 * Around a snapshot save. */
void virtio_blk_pause(struct virtio_blk *b, bool paused);

/* struct snapshot_dev functions (opaque: the struct virtio_blk). The
 * state is the media's presence, capacity, mode and id, then the
 * transport; load refuses a disk that differs. Pause the device around a
 * save. */
int virtio_blk_state_save(void *opaque, struct snap_buf *out);
int virtio_blk_state_load(void *opaque, const void *data, size_t len);

/* From a saved state (virtio_blk_state_save()'s data): whether the disk
 * offered VIRTIO_BLK_F_RO (*ret_ro) and was saved read-only
 * (*ret_read_only), so that a restore makes the disk the same way. -EBADMSG
 * (err_set) when data is no virtio-blk state. */
int virtio_blk_state_offers_ro(const void *data, size_t len, bool *ret_ro, bool *ret_read_only);

/* The device's transport: what the runtime registers on the MMIO bus. */
struct virtio_mmio *virtio_blk_mmio(struct virtio_blk *b);

/* Hand the queue's doorbell (an eventfd KVM signals on the guest's
 * QueueNotify write) to the device's worker, which waits on it directly.
 * fd stays the caller's and must outlive the device. */
void virtio_blk_set_doorbell(struct virtio_blk *b, int fd);

/* Capacity in 512-byte sectors. */
uint64_t virtio_blk_capacity(const struct virtio_blk *b);

/* Stop the worker, close the image, free. The MMIO range must already be
 * unregistered (or the vCPUs stopped). Accepts NULL. */
void virtio_blk_free(struct virtio_blk *b);

#endif
