/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fake guest for virtio unit tests: guest RAM in a malloc'd buffer and a
 * driver that lays out split virtqueues there and drives a device's
 * virtio-mmio registers through its bus callbacks, as a guest kernel would.
 */
#ifndef KVRUN_TESTS_FAKE_DRIVER_H
#define KVRUN_TESTS_FAKE_DRIVER_H

#include <stdbool.h>
#include <stdint.h>

#include "virtio/mmio.h"

#define FAKE_RAM_SIZE (4u << 20)

struct fake_vq {
	uint16_t num;
	uint64_t desc, avail, used;
	uint16_t avail_idx, last_used, next_desc;
};

struct fake_drv {
	uint8_t *ram;
	struct guest_mem mem;
	uint64_t brk; /* bump allocator for data buffers */
	struct virtio_mmio *m;
	struct fake_vq vqs[VIRTIO_MMIO_MAX_QUEUES];
	int irqs; /* interrupts raised, counted through raise_cb */
};

struct fbuf {
	uint64_t gpa;
	uint32_t len;
	bool write; /* device-writable */
};

/* Allocate guest RAM; fake_drv_attach() then binds a device's transport
 * (and installs the counting interrupt callback). */
void fake_drv_init(struct fake_drv *d);
void fake_drv_attach(struct fake_drv *d, struct virtio_mmio *m);
void fake_drv_free(struct fake_drv *d);

void *fake_ptr(struct fake_drv *d, uint64_t gpa);
uint64_t fake_alloc(struct fake_drv *d, uint32_t len);

uint32_t fake_read(struct fake_drv *d, uint64_t off);
void fake_write(struct fake_drv *d, uint64_t off, uint32_t v);

/* Reset, ACKNOWLEDGE|DRIVER, write features, FEATURES_OK. Returns the
 * status read back (FEATURES_OK set when accepted). */
uint32_t fake_negotiate(struct fake_drv *d, uint64_t features);
/* Lay out queue q with num entries and set QueueReady. */
void fake_setup_queue(struct fake_drv *d, uint32_t q, uint16_t num);
/* Full bring-up: negotiate, set up nr queues of num, DRIVER_OK. Returns the
 * final status. */
uint32_t fake_bringup(struct fake_drv *d, uint64_t features, uint32_t nr, uint16_t num);

/* Write descriptor i of queue q (or of an indirect table at table gpa when
 * table != 0). */
void fake_set_desc(struct fake_drv *d, uint32_t q, uint64_t table, uint16_t i, uint64_t addr, uint32_t len,
                   uint16_t flags, uint16_t next);
/* Put head in the avail ring and publish it (avail idx + 1). */
void fake_publish(struct fake_drv *d, uint32_t q, uint16_t head);
/* Chain bufs in fresh descriptors (or in one indirect table) and publish;
 * returns the head. */
uint16_t fake_add(struct fake_drv *d, uint32_t q, const struct fbuf *bufs, unsigned int n, bool indirect);
void fake_kick(struct fake_drv *d, uint32_t q);
/* Take the next used element; false when none. */
bool fake_get_used(struct fake_drv *d, uint32_t q, uint32_t *id, uint32_t *len);
/* Driver-side suppression fields. */
void fake_set_used_event(struct fake_drv *d, uint32_t q, uint16_t v);
void fake_set_avail_flags(struct fake_drv *d, uint32_t q, uint16_t v);
uint16_t fake_avail_event(struct fake_drv *d, uint32_t q);
uint16_t fake_used_flags(struct fake_drv *d, uint32_t q);
/* fake_get_used(), waiting for a device that completes on another thread
 * (gives up after about 20 seconds). */
bool fake_wait_used(struct fake_drv *d, uint32_t q, uint32_t *id, uint32_t *len);

#endif
