/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio-vsock (virtio 1.2, 5.10) in userspace: rx, tx and event queues,
 * served on the VMM's event loop, with the unix-socket backend of uds.h
 * (guest port P <-> "<uds_path>_P"; host streams via "<uds_path>" and
 * "CONNECT <P>\n" / "OK <host_port>\n").
 *
 * Runtime use:
 *   struct virtio_vsock *v;
 *   virtio_vsock_new(&vm_mem, loop, 3, "/run/kvrun/<id>/vsock.sock", true, &v);
 *   bus_register(mmio_bus, addr, VIRTIO_MMIO_SIZE, &virtio_mmio_bus_ops, virtio_vsock_mmio(v));
 *   virtio_mmio_set_irq(virtio_vsock_mmio(v), &line);
 *   (optional) virtio_mmio_add_notify_fd(virtio_vsock_mmio(v), loop, ioeventfd, VIRTIO_MMIO_ALL_QUEUES);
 *   kernel command line: virtio_mmio.device=4K@0x<addr>:<gsi>
 */
#ifndef KVRUN_VIRTIO_VSOCK_VSOCK_H
#define KVRUN_VIRTIO_VSOCK_VSOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "virtio/mmio.h"
#include "vmm/event-loop.h"
#include "vmm/snapshot.h"

struct virtio_vsock;

/* Create the device for guest_cid (>= 3) and, with host_listener, start
 * listening on uds_path for host-initiated streams (without it, only the
 * guest connects: to "<uds_path>_P"). mem and loop are borrowed and must
 * outlive the device; handlers run on the loop's thread. Returns 0 and the
 * device (owned by the caller), or -errno with err_set() context. */
int virtio_vsock_new(const struct guest_mem *mem, struct event_loop *loop, uint64_t guest_cid, const char *uds_path,
                     bool host_listener, struct virtio_vsock **ret);

struct virtio_mmio *virtio_vsock_mmio(struct virtio_vsock *v);

/* Live streams (tests, stats). */
unsigned int virtio_vsock_nr_conns(struct virtio_vsock *v);

/* Stop (true) or resume (false) serving the queues: when pausing returns
 * no queue is touched until resumed. Around a snapshot save. */
void virtio_vsock_pause(struct virtio_vsock *v, bool paused);

/* struct snapshot_dev functions (opaque: the struct virtio_vsock): the
 * guest CID, then the transport. Load refuses another CID; a running
 * device then sends VIRTIO_VSOCK_EVENT_TRANSPORT_RESET (from the loop
 * thread), so the guest drops its streams, which did not survive. */
int virtio_vsock_state_save(void *opaque, struct snap_buf *out);
int virtio_vsock_state_load(void *opaque, const void *data, size_t len);

/* Close every stream and the listener (its socket file is removed), free.
 * Call with the loop stopped or from its thread. Accepts NULL. */
void virtio_vsock_free(struct virtio_vsock *v);

#endif
