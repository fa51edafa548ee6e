/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake-driver.h"

#define RING_BASE 0x10000u
#define RING_STRIDE 0x10000u
#define DATA_BASE 0x100000u

static void fake_irq(void *opaque)
{
	struct fake_drv *d = opaque;

	__atomic_fetch_add(&d->irqs, 1, __ATOMIC_SEQ_CST);
}

void fake_drv_init(struct fake_drv *d)
{
	memset(d, 0, sizeof(*d));
	d->ram = aligned_alloc(4096, FAKE_RAM_SIZE);
	if (!d->ram)
		abort();
	memset(d->ram, 0, FAKE_RAM_SIZE);
	guest_mem_init_buffer(&d->mem, d->ram, FAKE_RAM_SIZE);
	d->brk = DATA_BASE;
}

void fake_drv_attach(struct fake_drv *d, struct virtio_mmio *m)
{
	struct irq_line line = {.fd = -1, .raise_cb = fake_irq, .opaque = d};

	d->m = m;
	virtio_mmio_set_irq(m, &line);
}

void fake_drv_free(struct fake_drv *d)
{
	free(d->ram);
	d->ram = NULL;
}

void *fake_ptr(struct fake_drv *d, uint64_t gpa)
{
	return d->ram + gpa;
}

uint64_t fake_alloc(struct fake_drv *d, uint32_t len)
{
	uint64_t gpa = d->brk;

	d->brk = (d->brk + len + 15) & ~15ULL;
	if (d->brk > FAKE_RAM_SIZE)
		abort();
	return gpa;
}

uint32_t fake_read(struct fake_drv *d, uint64_t off)
{
	uint32_t v;

	virtio_mmio_bus_ops.read(d->m, off, &v, 4);
	return v;
}

void fake_write(struct fake_drv *d, uint64_t off, uint32_t v)
{
	virtio_mmio_bus_ops.write(d->m, off, &v, 4);
}

uint32_t fake_negotiate(struct fake_drv *d, uint64_t features)
{
	fake_write(d, VIRTIO_MMIO_STATUS, 0);
	fake_write(d, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE);
	fake_write(d, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	fake_write(d, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
	fake_write(d, VIRTIO_MMIO_DRIVER_FEATURES, (uint32_t)features);
	fake_write(d, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	fake_write(d, VIRTIO_MMIO_DRIVER_FEATURES, (uint32_t)(features >> 32));
	fake_write(d, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK);
	return fake_read(d, VIRTIO_MMIO_STATUS);
}

void fake_setup_queue(struct fake_drv *d, uint32_t q, uint16_t num)
{
	struct fake_vq *vq = &d->vqs[q];
	uint64_t base = RING_BASE + q * RING_STRIDE;

	memset(fake_ptr(d, base), 0, RING_STRIDE);
	*vq = (struct fake_vq){.num = num, .desc = base, .avail = base + 0x4000, .used = base + 0x8000};
	fake_write(d, VIRTIO_MMIO_QUEUE_SEL, q);
	fake_write(d, VIRTIO_MMIO_QUEUE_NUM, num);
	fake_write(d, VIRTIO_MMIO_QUEUE_DESC_LOW, (uint32_t)vq->desc);
	fake_write(d, VIRTIO_MMIO_QUEUE_DESC_HIGH, 0);
	fake_write(d, VIRTIO_MMIO_QUEUE_DRIVER_LOW, (uint32_t)vq->avail);
	fake_write(d, VIRTIO_MMIO_QUEUE_DRIVER_HIGH, 0);
	fake_write(d, VIRTIO_MMIO_QUEUE_DEVICE_LOW, (uint32_t)vq->used);
	fake_write(d, VIRTIO_MMIO_QUEUE_DEVICE_HIGH, 0);
	fake_write(d, VIRTIO_MMIO_QUEUE_READY, 1);
}

uint32_t fake_bringup(struct fake_drv *d, uint64_t features, uint32_t nr, uint16_t num)
{
	uint32_t st = fake_negotiate(d, features);

	for (uint32_t q = 0; q < nr; q++)
		fake_setup_queue(d, q, num);
	fake_write(d, VIRTIO_MMIO_STATUS, st | VIRTIO_STATUS_DRIVER_OK);
	return fake_read(d, VIRTIO_MMIO_STATUS);
}

void fake_set_desc(struct fake_drv *d, uint32_t q, uint64_t table, uint16_t i, uint64_t addr, uint32_t len,
                   uint16_t flags, uint16_t next)
{
	struct virtq_desc desc = {.addr = addr, .len = len, .flags = flags, .next = next};

	memcpy(fake_ptr(d, (table ? table : d->vqs[q].desc) + 16ULL * i), &desc, sizeof(desc));
}

void fake_publish(struct fake_drv *d, uint32_t q, uint16_t head)
{
	struct fake_vq *vq = &d->vqs[q];
	struct virtq_avail *avail = fake_ptr(d, vq->avail);

	avail->ring[vq->avail_idx % vq->num] = head;
	vq->avail_idx++;
	__atomic_store_n(&avail->idx, vq->avail_idx, __ATOMIC_RELEASE);
}

uint16_t fake_add(struct fake_drv *d, uint32_t q, const struct fbuf *bufs, unsigned int n, bool indirect)
{
	struct fake_vq *vq = &d->vqs[q];
	uint16_t head = vq->next_desc % vq->num;
	uint64_t table = 0;

	if (indirect) {
		table = fake_alloc(d, 16 * n);
		fake_set_desc(d, q, 0, head, table, 16 * n, VIRTQ_DESC_F_INDIRECT, 0);
		vq->next_desc++;
	}
	for (unsigned int i = 0; i < n; i++) {
		uint16_t idx = indirect ? i : (uint16_t)((vq->next_desc + i) % vq->num);
		uint16_t next = indirect ? i + 1 : (uint16_t)((vq->next_desc + i + 1) % vq->num);
		uint16_t flags = (bufs[i].write ? VIRTQ_DESC_F_WRITE : 0) | (i + 1 < n ? VIRTQ_DESC_F_NEXT : 0);

		fake_set_desc(d, q, table, idx, bufs[i].gpa, bufs[i].len, flags, next);
	}
	if (!indirect)
		vq->next_desc += n;
	fake_publish(d, q, head);
	return head;
}

void fake_kick(struct fake_drv *d, uint32_t q)
{
	fake_write(d, VIRTIO_MMIO_QUEUE_NOTIFY, q);
}

bool fake_get_used(struct fake_drv *d, uint32_t q, uint32_t *id, uint32_t *len)
{
	struct fake_vq *vq = &d->vqs[q];
	struct virtq_used *used = fake_ptr(d, vq->used);

	if (__atomic_load_n(&used->idx, __ATOMIC_ACQUIRE) == vq->last_used)
		return false;
	*id = used->ring[vq->last_used % vq->num].id;
	*len = used->ring[vq->last_used % vq->num].len;
	vq->last_used++;
	return true;
}

void fake_set_used_event(struct fake_drv *d, uint32_t q, uint16_t v)
{
	struct virtq_avail *avail = fake_ptr(d, d->vqs[q].avail);

	avail->ring[d->vqs[q].num] = v;
}

void fake_set_avail_flags(struct fake_drv *d, uint32_t q, uint16_t v)
{
	struct virtq_avail *avail = fake_ptr(d, d->vqs[q].avail);

	avail->flags = v;
}

uint16_t fake_avail_event(struct fake_drv *d, uint32_t q)
{
	struct virtq_used *used = fake_ptr(d, d->vqs[q].used);

	return *(uint16_t *)&used->ring[d->vqs[q].num];
}

uint16_t fake_used_flags(struct fake_drv *d, uint32_t q)
{
	struct virtq_used *used = fake_ptr(d, d->vqs[q].used);

	return used->flags;
}

bool fake_wait_used(struct fake_drv *d, uint32_t q, uint32_t *id, uint32_t *len)
{
	for (int i = 0; i < 20000; i++) {
		if (fake_get_used(d, q, id, len))
			return true;
		usleep(1000);
	}
	return false;
}
