/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio-mmio transport, version 2 (virtio 1.2, 4.2), for virtio 1.x drivers
 * only (VIRTIO_F_VERSION_1 must be negotiated).
 *
 * A device embeds a struct virtio_mmio, fills in its virtio_dev_ops and calls
 * virtio_mmio_init(). The runtime then:
 *   - registers the 4 KiB window on the VM's MMIO bus:
 *       bus_register(mmio_bus, addr, VIRTIO_MMIO_SIZE, &virtio_mmio_bus_ops, m);
 *   - gives it an interrupt line: virtio_mmio_set_irq(m, &line);
 *   - optionally binds an ioeventfd on addr + VIRTIO_MMIO_QUEUE_NOTIFY (4
 *     bytes, no datamatch) and hands it over with virtio_mmio_add_notify_fd(),
 *     so kicks reach the device from the event loop instead of a vCPU exit;
 *   - tells the guest kernel: virtio_mmio.device=4K@0x<addr>:<gsi>.
 *
 * Threads: register accesses come from vCPU threads (serialized by m->lock);
 * devices process queues on their own thread (worker or event loop) and
 * raise interrupts from there. InterruptStatus and Status bits set by the
 * device are updated atomically, so interrupt handling never waits on a
 * device busy with I/O.
 */
#ifndef KVRUN_VIRTIO_MMIO_H
#define KVRUN_VIRTIO_MMIO_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/bus.h"
#include "vmm/event-loop.h"
#include "vmm/irq.h"
#include "vmm/mem.h"
#include "virtio/virtio.h"
#include "virtio/virtqueue.h"

#define VIRTIO_MMIO_SIZE 0x1000
#define VIRTIO_MMIO_MAX_QUEUES 9 /* virtio-net: 4 queue pairs and a control queue */
/* Queue argument of virtio_mmio_add_notify_fd() for a doorbell without
 * datamatch: every queue is looked at. */
#define VIRTIO_MMIO_ALL_QUEUES UINT32_MAX

/* Register offsets (4.2.2). */
#define VIRTIO_MMIO_MAGIC_VALUE 0x000
#define VIRTIO_MMIO_VERSION 0x004
#define VIRTIO_MMIO_DEVICE_ID 0x008
#define VIRTIO_MMIO_VENDOR_ID 0x00c
#define VIRTIO_MMIO_DEVICE_FEATURES 0x010
#define VIRTIO_MMIO_DEVICE_FEATURES_SEL 0x014
#define VIRTIO_MMIO_DRIVER_FEATURES 0x020
#define VIRTIO_MMIO_DRIVER_FEATURES_SEL 0x024
#define VIRTIO_MMIO_QUEUE_SEL 0x030
#define VIRTIO_MMIO_QUEUE_NUM_MAX 0x034
#define VIRTIO_MMIO_QUEUE_NUM 0x038
#define VIRTIO_MMIO_QUEUE_READY 0x044
#define VIRTIO_MMIO_QUEUE_NOTIFY 0x050
#define VIRTIO_MMIO_INTERRUPT_STATUS 0x060
#define VIRTIO_MMIO_INTERRUPT_ACK 0x064
#define VIRTIO_MMIO_STATUS 0x070
#define VIRTIO_MMIO_QUEUE_DESC_LOW 0x080
#define VIRTIO_MMIO_QUEUE_DESC_HIGH 0x084
#define VIRTIO_MMIO_QUEUE_DRIVER_LOW 0x090
#define VIRTIO_MMIO_QUEUE_DRIVER_HIGH 0x094
#define VIRTIO_MMIO_QUEUE_DEVICE_LOW 0x0a0
#define VIRTIO_MMIO_QUEUE_DEVICE_HIGH 0x0a4
#define VIRTIO_MMIO_SHM_SEL 0x0ac
#define VIRTIO_MMIO_SHM_LEN_LOW 0x0b0
#define VIRTIO_MMIO_SHM_LEN_HIGH 0x0b4
#define VIRTIO_MMIO_SHM_BASE_LOW 0x0b8
#define VIRTIO_MMIO_SHM_BASE_HIGH 0x0bc
#define VIRTIO_MMIO_QUEUE_RESET 0x0c0
#define VIRTIO_MMIO_CONFIG_GENERATION 0x0fc
#define VIRTIO_MMIO_CONFIG 0x100

#define VIRTIO_MMIO_MAGIC 0x74726976 /* "virt" */
#define VIRTIO_MMIO_VENDOR 0x4b56524e /* "NRVK" */

struct virtio_mmio;

/* What a device model provides. Callbacks get the transport; the device
 * finds itself through m->dev. All may be NULL except activate and reset. */
struct virtio_dev_ops {
	/* Device config space; off + len <= config_size was checked. */
	void (*config_read)(struct virtio_mmio *m, uint32_t off, void *data, uint32_t len);
	void (*config_write)(struct virtio_mmio *m, uint32_t off, const void *data, uint32_t len);
	/* DRIVER_OK was set: m->driver_features are final and the ready
	 * queues are started. A negative return marks the device broken. */
	int (*activate)(struct virtio_mmio *m);
	/* The driver kicked queue q (< nr_queues). Called on a vCPU thread or
	 * the event loop; must not block. */
	void (*queue_notify)(struct virtio_mmio *m, uint32_t q);
	/* The driver reset the device: when this returns no thread of the
	 * device touches the queues any more. */
	void (*reset)(struct virtio_mmio *m);
};

struct virtio_mmio_info {
	uint32_t device_id;
	uint32_t nr_queues; /* <= VIRTIO_MMIO_MAX_QUEUES */
	uint16_t queue_max; /* QueueNumMax, power of two <= VIRTQ_MAX_SIZE */
	uint64_t features; /* device features; VERSION_1 is added */
	uint32_t config_size; /* bytes of device config space */
};

struct virtio_mmio_notifier {
	struct virtio_mmio *m;
	int fd;
	uint32_t queue;
};

struct virtio_mmio {
	pthread_mutex_t lock; /* register state below, except the atomics */
	const struct virtio_dev_ops *ops;
	void *dev;
	const struct guest_mem *mem;
	struct irq_line irq;
	uint32_t device_id, nr_queues, config_size;
	uint64_t device_features, driver_features;
	uint32_t device_features_sel, driver_features_sel, queue_sel;
	uint32_t status; /* atomic: the device sets NEEDS_RESET */
	uint32_t isr; /* atomic: InterruptStatus */
	uint32_t config_gen; /* atomic */
	bool active; /* atomic: DRIVER_OK and activate() succeeded */
	struct virtq vqs[VIRTIO_MMIO_MAX_QUEUES];
	struct virtio_mmio_notifier notifiers[VIRTIO_MMIO_MAX_QUEUES + 1];
	unsigned int nr_notifiers;
	struct event_loop *loop; /* where notifiers are registered */
};

extern const struct bus_dev_ops virtio_mmio_bus_ops;

/* Set up m for a device (ops and dev are borrowed). -EINVAL on a bad info.
 * The interrupt line starts unset (fd -1, no callback). */
int virtio_mmio_init(struct virtio_mmio *m, const struct guest_mem *mem, const struct virtio_mmio_info *info,
                     const struct virtio_dev_ops *ops, void *dev);
/* Remove notifiers from the event loop and free the lock. Does not close
 * the notifier fds or the irq line (the runtime owns them). */
void virtio_mmio_destroy(struct virtio_mmio *m);

/* Use irq (copied) for interrupts. */
void virtio_mmio_set_irq(struct virtio_mmio *m, const struct irq_line *irq);

/* Watch eventfd fd on loop; each time it fires, queue (or every queue with
 * VIRTIO_MMIO_ALL_QUEUES) is notified. fd stays owned by the caller and must
 * outlive the device. All notifiers of one device use the same loop. */
int virtio_mmio_add_notify_fd(struct virtio_mmio *m, struct event_loop *loop, int fd, uint32_t queue);
/* The event-loop handler virtio_mmio_add_notify_fd() installs, exposed so
 * that tests and other loops can drive it; opaque is a notifier. */
void virtio_mmio_notify_fd_handler(int fd, uint32_t revents, void *opaque);

/* Device side: set InterruptStatus bits and raise the line. */
void virtio_mmio_signal(struct virtio_mmio *m, uint32_t bits);
/* Device side, after a batch of pushes on vq: interrupt when the driver
 * wants one. */
void virtio_mmio_notify_used(struct virtio_mmio *m, struct virtq *vq);
/* Device side, after changing config space: bump ConfigGeneration and
 * send a config change interrupt. */
void virtio_mmio_config_changed(struct virtio_mmio *m);
/* Device side: the driver broke the protocol. Sets DEVICE_NEEDS_RESET,
 * stops the device and sends a config change interrupt. The device stays
 * silent until the driver resets it. */
void virtio_mmio_set_broken(struct virtio_mmio *m);

/* Write the kernel command-line fragment that describes a device at addr
 * on interrupt gsi: "virtio_mmio.device=4K@0x<addr>:<gsi>". Returns the
 * length, or -ENOSPC when buf (of size len) is too small. */
int virtio_mmio_cmdline(char *buf, size_t len, uint64_t addr, uint32_t gsi);

/* Whether the device is running (DRIVER_OK, not broken). */
bool virtio_mmio_active(const struct virtio_mmio *m);
/* Whether the driver negotiated feature bit. */
bool virtio_mmio_has_feature(const struct virtio_mmio *m, unsigned int bit);

#endif
