/* SPDX-License-Identifier: Apache-2.0 */
/* The test guest's virtio-mmio 1.x driver (virtio.c), shared by the
 * virtio-blk and virtio-vsock scenarios. One request at a time, polled;
 * rings and buffers live in RAM below the guest image (8-16 MiB). */
#ifndef KVRUN_TEST_GUEST_VIRTIO_H
#define KVRUN_TEST_GUEST_VIRTIO_H

#include "guest.h"
#include "hw.h"

#define VIRTIO_MAGIC 0x74726976
#define R_MAGIC 0x000
#define R_VERSION 0x004
#define R_DEVICE_ID 0x008
#define R_DEV_FEATURES 0x010
#define R_DEV_FEATURES_SEL 0x014
#define R_DRV_FEATURES 0x020
#define R_DRV_FEATURES_SEL 0x024
#define R_QUEUE_SEL 0x030
#define R_QUEUE_NUM_MAX 0x034
#define R_QUEUE_NUM 0x038
#define R_QUEUE_READY 0x044
#define R_QUEUE_NOTIFY 0x050
#define R_INT_STATUS 0x060
#define R_INT_ACK 0x064
#define R_STATUS 0x070
#define R_QUEUE_DESC 0x080
#define R_QUEUE_DRIVER 0x090
#define R_QUEUE_DEVICE 0x0a0
#define R_CONFIG 0x100

#define S_ACK 1
#define S_DRIVER 2
#define S_DRIVER_OK 4
#define S_FEATURES_OK 8
#define S_NEEDS_RESET 64

#define F_INDIRECT 28
#define F_EVENT_IDX 29
#define F_VERSION_1 32
/* virtio-net feature bits the test guest takes. */
#define NET_F_CSUM 0
#define NET_F_GUEST_CSUM 1
#define NET_F_MAC 5
#define NET_F_GUEST_TSO4 7
#define NET_F_HOST_TSO4 11
#define NET_F_MRG_RXBUF 15

#define D_NEXT 1
#define D_WRITE 2
#define D_INDIRECT 4

#define QSIZE 16
#define RING_BASE 0x800000ULL /* queue q at RING_BASE + q * 0x4000 */
#define INDIRECT_TABLE 0x810000ULL
#define BUF_BASE 0x820000ULL

struct vdesc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags, next;
};

struct vq {
	volatile struct vdesc *desc;
	volatile uint16_t *avail; /* flags, idx, ring[QSIZE], used_event */
	volatile uint32_t *used; /* flags|idx, {id, len}[QSIZE], avail_event */
	uint16_t avail_idx, last_used;
	uint32_t num;
};

struct vdev {
	uint64_t base;
	uint32_t gsi;
	uint64_t features;
	struct vq q[3];
	unsigned int nq;
};

static inline uint32_t rd(struct vdev *d, uint32_t off)
{
	return mmio_read32(d->base + off);
}

static inline void wr(struct vdev *d, uint32_t off, uint32_t v)
{
	mmio_write32(d->base + off, v);
}

static inline void fence(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static inline bool has(const struct vdev *d, unsigned int bit)
{
	return d->features & 1ULL << bit;
}

/* Finds the first virtio_mmio.device= word of the command line whose
 * device (magic, version 2) has device_id, and fills d's address and GSI. */
bool find_device(uint32_t device_id, struct vdev *d);
/* The same for the n-th (from 0) such device. */
bool find_device_nth(uint32_t device_id, unsigned int n, struct vdev *d);
/* Reset, then ACKNOWLEDGE, DRIVER, features (VERSION_1, EVENT_IDX and
 * INDIRECT_DESC when offered, plus those in want), nq queues of QSIZE,
 * DRIVER_OK. False at the first step the device refuses. */
bool vdev_init(struct vdev *d, unsigned int nq, uint64_t want);
/* The same with the rings at rings + q * 0x4000 instead of RING_BASE. */
bool vdev_init_at(struct vdev *d, unsigned int nq, uint64_t want, uint64_t rings);
/* Publishes head in queue qi's avail ring and notifies. */
void vq_kick(struct vdev *d, unsigned int qi, uint16_t head);
uint16_t vq_used_idx(struct vq *q);
/* Waits (ticks of TSC at most) for the next used element. */
bool vq_wait(struct vdev *d, unsigned int qi, uint64_t ticks, uint32_t *ret_id, uint32_t *ret_len);
/* The number in "key=N" on the command line, or dflt. */
uint64_t cmd_num(const char *key, uint64_t dflt);

#endif
