/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio-net (virtio 1.2, 5.1) over a frame backend (backend.h; a TAP in
 * practice, see tap.h).
 *
 * Features offered: CSUM, GUEST_CSUM, GUEST/HOST_TSO4/TSO6/ECN (and UFO
 * when the backend takes it), MRG_RXBUF, MAC, MTU, STATUS (link up),
 * RING_EVENT_IDX, INDIRECT_DESC; with more than one queue pair also
 * CTRL_VQ and MQ (VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET). Queues: rx0, tx0, rx1,
 * tx1, ..., then the control queue.
 *
 * Data path, userspace: on the event loop. TX chains are written to the
 * backend with one writev() straight from guest memory (virtio_net_hdr_v1
 * first, which the TAP understands as is), many per kick. RX frames are read
 * with one readv() straight into the guest's buffers, spanning several
 * chains with MRG_RXBUF (num_buffers set). With no rx buffers the backend
 * fd is taken off epoll until the guest kicks the rx queue.
 *
 * Data path, vhost-net: when /dev/vhost-net can be opened and the backend
 * is a TAP, the kernel serves rx/tx queues (the control queue stays here).
 *
 * Runtime use (see docs/networking.md):
 *   struct virtio_net *n;
 *   net_tap_backend_new(fds, pairs, &be);
 *   virtio_net_new(&vm->mem, vm->loop, be, &(struct virtio_net_opts){.mac = ..., .mtu = 1500,
 *                  .queue_pairs = pairs}, &n);
 *   m = virtio_net_mmio(n);   then bus_register / virtio_mmio_set_irq as for any device;
 *   doorbells: virtio_net_set_doorbell(n, fd, q) per queue (ioeventfd with
 *   datamatch q), or one virtio_mmio_add_notify_fd(m, loop, fd, ALL) when
 *   vhost is not in use.
 */
#ifndef KVRUN_VIRTIO_NET_NET_H
#define KVRUN_VIRTIO_NET_NET_H

#include <stdbool.h>
#include <stdint.h>

#include "virtio/mmio.h"
#include "virtio/net/backend.h"
#include "vmm/event-loop.h"
#include "vmm/snapshot.h"

#define VIRTIO_ID_NET 1
#define VIRTIO_NET_QUEUE_SIZE 256

struct virtio_net;

struct virtio_net_opts {
	uint8_t mac[6];
	uint16_t mtu; /* 68..65535; 0: 1500 */
	unsigned int queue_pairs; /* 1..NET_MAX_QUEUE_PAIRS, at most the backend's */
	bool no_vhost; /* stay in userspace even when /dev/vhost-net exists */
	/* virtio_net_new_detached() only: offer UFO as a device over a TAP
	 * that takes it does (to load such a device's saved state). */
	bool ufo;
};

/* Create the device. mem and loop are borrowed (must outlive it); be is
 * taken over on success (freed with the device). Returns 0 or -errno with
 * err_set() context. */
int virtio_net_new(const struct guest_mem *mem, struct event_loop *loop, struct net_backend *be,
                   const struct virtio_net_opts *opts, struct virtio_net **ret);

struct virtio_mmio *virtio_net_mmio(struct virtio_net *n);

/* Whether vhost-net serves the data queues. */
bool virtio_net_uses_vhost(const struct virtio_net *n);

/* Hand over the doorbell eventfd of queue q (an ioeventfd with datamatch
 * q). With vhost it becomes the queue's kick fd; otherwise it is watched on
 * the loop. fd stays owned by the caller and must outlive the device. */
int virtio_net_set_doorbell(struct virtio_net *n, unsigned int q, int fd);

/* Counters for tests and stats. */
struct virtio_net_stats {
	uint64_t tx_frames, rx_frames, tx_dropped, rx_paused;
};
void virtio_net_get_stats(struct virtio_net *n, struct virtio_net_stats *ret);

/* A device without a backend (a template's, or a checkpoint's before its
 * TAP): the same device as virtio_net_new() would make with opts, never
 * served by vhost-net and without UFO unless opts->ufo, whose link status is down (VIRTIO_NET_F_STATUS): frames the
 * guest sends are dropped (counted in tx_dropped), its rx buffers wait.
 * Returns 0 or -errno with err_set() context. */
int virtio_net_new_detached(const struct guest_mem *mem, struct event_loop *loop, const struct virtio_net_opts *opts,
                            struct virtio_net **ret);

/* Whether the device has no backend yet. */
bool virtio_net_detached(const struct virtio_net *n);

/* Give a device made by virtio_net_new_detached() its backend, typically
 * after a snapshot load and before the vCPUs start: when the driver runs
 * the device, the offloads it negotiated (set_offload) and its active queue
 * pairs (set_active) are applied to be; then the link goes up with a config
 * change interrupt and the queues are served. be->nr_queues must equal the
 * device's queue pairs. On success be is the device's; on failure (-EBUSY:
 * it has a backend; -EINVAL: another pair count; -EBADF: a missing fd; or
 * the backend's error) be stays the caller's and the device is unchanged. */
int virtio_net_attach_backend(struct virtio_net *n, struct net_backend *be);

/* Stop (true) or resume (false) serving the userspace queues, around a
 * snapshot save. */
void virtio_net_pause(struct virtio_net *n, bool paused);

/* struct snapshot_dev functions (opaque: the struct virtio_net): config
 * space, active queue pairs, transport. Save refuses while vhost-net
 * serves the queues (their positions are in the kernel); load refuses a
 * device with another MAC, MTU or queue pair count. */
int virtio_net_state_save(void *opaque, struct snap_buf *out);
int virtio_net_state_load(void *opaque, const void *data, size_t len);

/* The options of the device whose state virtio_net_state_save() wrote into
 * data (MAC, MTU, queue pairs, whether it offered UFO), so that
 * virtio_net_new_detached() makes one that virtio_net_state_load() takes
 * (a checkpoint's device, whose TAP was the saving process's). Returns 0,
 * or -EBADMSG/-EINVAL with err_set() context. */
int virtio_net_state_opts(const void *data, size_t len, struct virtio_net_opts *ret);

/* The MAC address the device reports (its config space), which the
 * guest's driver read at probe. */
void virtio_net_get_mac(struct virtio_net *n, uint8_t mac[6]);

/* Stop serving (the loop may keep running), free the backend and the
 * device. Call with the vCPUs stopped. Accepts NULL. */
void virtio_net_free(struct virtio_net *n);

#endif
