/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "virtio/mmio.h"
#include "vmm/counters.h"

#define ATOMIC_LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define ATOMIC_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

int virtio_mmio_init(struct virtio_mmio *m, const struct guest_mem *mem, const struct virtio_mmio_info *info,
                     const struct virtio_dev_ops *ops, void *dev)
{
	uint16_t qmax = info->queue_max;
	int r;

	if (info->nr_queues == 0 || info->nr_queues > VIRTIO_MMIO_MAX_QUEUES || qmax == 0 || qmax > VIRTQ_MAX_SIZE ||
	    (qmax & (qmax - 1)) || info->config_size > VIRTIO_MMIO_SIZE - VIRTIO_MMIO_CONFIG || !ops->activate ||
	    !ops->reset)
		return -EINVAL;
	memset(m, 0, sizeof(*m));
	r = pthread_mutex_init(&m->lock, NULL);
	if (r)
		return -r;
	m->ops = ops;
	m->dev = dev;
	m->mem = mem;
	m->irq = (struct irq_line){.fd = -1};
	m->device_id = info->device_id;
	m->nr_queues = info->nr_queues;
	m->config_size = info->config_size;
	m->device_features = info->features | VIRTIO_BIT(VIRTIO_F_VERSION_1);
	for (uint32_t i = 0; i < m->nr_queues; i++)
		virtq_init(&m->vqs[i], mem, qmax);
	return 0;
}

void virtio_mmio_set_irq(struct virtio_mmio *m, const struct irq_line *irq)
{
	m->irq = *irq;
}

int virtio_mmio_cmdline(char *buf, size_t len, uint64_t addr, uint32_t gsi)
{
	int n = snprintf(buf, len, "virtio_mmio.device=4K@0x%llx:%u", (unsigned long long)addr, gsi);

	return n < 0 || (size_t)n >= len ? -ENOSPC : n;
}

bool virtio_mmio_active(const struct virtio_mmio *m)
{
	return ATOMIC_LOAD(&m->active);
}

bool virtio_mmio_has_feature(const struct virtio_mmio *m, unsigned int bit)
{
	return bit < 64 && (m->driver_features & VIRTIO_BIT(bit));
}

void virtio_mmio_signal(struct virtio_mmio *m, uint32_t bits)
{
	__atomic_fetch_or(&m->isr, bits, __ATOMIC_SEQ_CST);
	irq_line_raise(&m->irq);
}

void virtio_mmio_notify_used(struct virtio_mmio *m, struct virtq *vq)
{
	bool pending = vq->used_idx != vq->signalled_used;

	if (virtq_need_interrupt(vq))
		virtio_mmio_signal(m, VIRTIO_MMIO_INT_VRING);
	else if (pending && virtq_usable(vq))
		vmm_count(VMM_IRQ_SUPPRESSED, 1);
}

void virtio_mmio_config_changed(struct virtio_mmio *m)
{
	__atomic_fetch_add(&m->config_gen, 1, __ATOMIC_SEQ_CST);
	virtio_mmio_signal(m, VIRTIO_MMIO_INT_CONFIG);
}

void virtio_mmio_set_broken(struct virtio_mmio *m)
{
	uint32_t old = __atomic_fetch_or(&m->status, VIRTIO_STATUS_DEVICE_NEEDS_RESET, __ATOMIC_SEQ_CST);

	ATOMIC_STORE(&m->active, false);
	if (old & VIRTIO_STATUS_DEVICE_NEEDS_RESET)
		return;
	log_debug("virtio-mmio: device %u broken by its driver, needs reset", m->device_id);
	/* 2.1.2: with DRIVER_OK set, NEEDS_RESET comes with a config change
	 * notification. Before that the driver reads the status itself. */
	if (old & VIRTIO_STATUS_DRIVER_OK)
		virtio_mmio_signal(m, VIRTIO_MMIO_INT_CONFIG);
}

static struct virtq *mmio_sel_vq(struct virtio_mmio *m)
{
	return m->queue_sel < m->nr_queues ? &m->vqs[m->queue_sel] : NULL;
}

static uint32_t mmio_reg_read(struct virtio_mmio *m, uint64_t off)
{
	struct virtq *vq = mmio_sel_vq(m);

	switch (off) {
	case VIRTIO_MMIO_MAGIC_VALUE:
		return VIRTIO_MMIO_MAGIC;
	case VIRTIO_MMIO_VERSION:
		return 2;
	case VIRTIO_MMIO_DEVICE_ID:
		return m->device_id;
	case VIRTIO_MMIO_VENDOR_ID:
		return VIRTIO_MMIO_VENDOR;
	case VIRTIO_MMIO_DEVICE_FEATURES:
		if (m->device_features_sel > 1)
			return 0;
		return (uint32_t)(m->device_features >> (32 * m->device_features_sel));
	case VIRTIO_MMIO_QUEUE_NUM_MAX:
		return vq ? vq->num_max : 0;
	case VIRTIO_MMIO_QUEUE_READY:
		return vq ? vq->ready : 0;
	case VIRTIO_MMIO_INTERRUPT_STATUS:
		return ATOMIC_LOAD(&m->isr);
	case VIRTIO_MMIO_STATUS:
		return ATOMIC_LOAD(&m->status);
	case VIRTIO_MMIO_CONFIG_GENERATION:
		return ATOMIC_LOAD(&m->config_gen);
	case VIRTIO_MMIO_SHM_LEN_LOW:
	case VIRTIO_MMIO_SHM_LEN_HIGH:
	case VIRTIO_MMIO_SHM_BASE_LOW:
	case VIRTIO_MMIO_SHM_BASE_HIGH:
		return UINT32_MAX; /* 4.2.2: no shared memory region */
	default:
		return 0; /* write-only or reserved */
	}
}

static void mmio_reset(struct virtio_mmio *m)
{
	ATOMIC_STORE(&m->active, false);
	m->ops->reset(m);
	for (uint32_t i = 0; i < m->nr_queues; i++)
		virtq_reset(&m->vqs[i]);
	m->driver_features = 0;
	m->device_features_sel = m->driver_features_sel = m->queue_sel = 0;
	ATOMIC_STORE(&m->isr, 0);
	ATOMIC_STORE(&m->status, 0);
}

/* DRIVER_OK: start every ready queue with the final features, then the
 * device. Returns false when the device must be marked broken. */
static bool mmio_activate(struct virtio_mmio *m)
{
	for (uint32_t i = 0; i < m->nr_queues; i++) {
		if (m->vqs[i].ready && virtq_start(&m->vqs[i], m->driver_features) < 0)
			return false;
	}
	ATOMIC_STORE(&m->active, true);
	if (m->ops->activate(m) < 0) {
		ATOMIC_STORE(&m->active, false);
		return false;
	}
	return true;
}

static void mmio_write_status(struct virtio_mmio *m, uint32_t v)
{
	uint32_t old = ATOMIC_LOAD(&m->status);
	bool broken = false;

	if (v == 0) {
		mmio_reset(m);
		return;
	}
	/* 3.1.1: features are accepted only if VERSION_1 is among them and
	 * nothing the device did not offer is; otherwise FEATURES_OK does not
	 * stick and the driver sees that on its read-back. */
	if ((v & VIRTIO_STATUS_FEATURES_OK) && !(old & VIRTIO_STATUS_FEATURES_OK) &&
	    (!(m->driver_features & VIRTIO_BIT(VIRTIO_F_VERSION_1)) || (m->driver_features & ~m->device_features)))
		v &= ~VIRTIO_STATUS_FEATURES_OK;
	if ((v & VIRTIO_STATUS_DRIVER_OK) && !(old & VIRTIO_STATUS_DRIVER_OK)) {
		if (!((old | v) & VIRTIO_STATUS_FEATURES_OK) || (old & VIRTIO_STATUS_DEVICE_NEEDS_RESET))
			v &= ~VIRTIO_STATUS_DRIVER_OK;
		else
			broken = !mmio_activate(m);
	}
	/* Drivers only ever add bits (2.1.2); NEEDS_RESET stays until reset. */
	__atomic_fetch_or(&m->status, v, __ATOMIC_SEQ_CST);
	if (broken)
		virtio_mmio_set_broken(m);
}

static void mmio_set_half(uint64_t *field, bool high, uint32_t v)
{
	if (high)
		*field = (*field & 0xffffffffULL) | ((uint64_t)v << 32);
	else
		*field = (*field & ~0xffffffffULL) | v;
}

static void mmio_write_queue_ready(struct virtio_mmio *m, struct virtq *vq, uint32_t v)
{
	if (v & 1) {
		if (vq->ready)
			return;
		vq->ready = true;
		/* Validate now so a bad layout is reported at once; the queue
		 * is started again with the final features at DRIVER_OK. */
		if (virtq_start(vq, m->driver_features) < 0)
			virtio_mmio_set_broken(m);
		return;
	}
	/* Stopping one queue of a running device needs VIRTIO_F_RING_RESET,
	 * which is not offered: only a stopped device lets go of a queue. */
	if (!virtio_mmio_active(m))
		vq->ready = false;
}

/* Registers of the selected queue; returns false for other offsets. */
static bool mmio_write_queue_reg(struct virtio_mmio *m, uint64_t off, uint32_t v)
{
	struct virtq *vq = mmio_sel_vq(m);

	switch (off) {
	case VIRTIO_MMIO_QUEUE_NUM:
	case VIRTIO_MMIO_QUEUE_DESC_LOW:
	case VIRTIO_MMIO_QUEUE_DESC_HIGH:
	case VIRTIO_MMIO_QUEUE_DRIVER_LOW:
	case VIRTIO_MMIO_QUEUE_DRIVER_HIGH:
	case VIRTIO_MMIO_QUEUE_DEVICE_LOW:
	case VIRTIO_MMIO_QUEUE_DEVICE_HIGH:
		break;
	case VIRTIO_MMIO_QUEUE_READY:
		if (vq)
			mmio_write_queue_ready(m, vq, v);
		return true;
	default:
		return false;
	}
	/* 4.2.2.2: the queue layout may only change while it is not ready. */
	if (!vq || vq->ready)
		return true;
	switch (off) {
	case VIRTIO_MMIO_QUEUE_NUM:
		vq->num = v > UINT16_MAX ? 0 : (uint16_t)v; /* checked at ready */
		break;
	case VIRTIO_MMIO_QUEUE_DESC_LOW:
	case VIRTIO_MMIO_QUEUE_DESC_HIGH:
		mmio_set_half(&vq->desc_gpa, off == VIRTIO_MMIO_QUEUE_DESC_HIGH, v);
		break;
	case VIRTIO_MMIO_QUEUE_DRIVER_LOW:
	case VIRTIO_MMIO_QUEUE_DRIVER_HIGH:
		mmio_set_half(&vq->avail_gpa, off == VIRTIO_MMIO_QUEUE_DRIVER_HIGH, v);
		break;
	default:
		mmio_set_half(&vq->used_gpa, off == VIRTIO_MMIO_QUEUE_DEVICE_HIGH, v);
		break;
	}
	return true;
}

static void mmio_reg_write(struct virtio_mmio *m, uint64_t off, uint32_t v)
{
	uint32_t status = ATOMIC_LOAD(&m->status);

	if (mmio_write_queue_reg(m, off, v))
		return;
	switch (off) {
	case VIRTIO_MMIO_DEVICE_FEATURES_SEL:
		m->device_features_sel = v;
		break;
	case VIRTIO_MMIO_DRIVER_FEATURES:
		/* Features are frozen once FEATURES_OK is set (3.1.1). */
		if (!(status & VIRTIO_STATUS_FEATURES_OK) && m->driver_features_sel <= 1)
			mmio_set_half(&m->driver_features, m->driver_features_sel == 1, v);
		break;
	case VIRTIO_MMIO_DRIVER_FEATURES_SEL:
		m->driver_features_sel = v;
		break;
	case VIRTIO_MMIO_QUEUE_SEL:
		m->queue_sel = v;
		break;
	case VIRTIO_MMIO_QUEUE_NOTIFY:
		vmm_count(VMM_NOTIFY_EXITS, 1);
		if (v < m->nr_queues && virtio_mmio_active(m) && m->ops->queue_notify)
			m->ops->queue_notify(m, v);
		break;
	case VIRTIO_MMIO_INTERRUPT_ACK:
		__atomic_fetch_and(&m->isr, ~v, __ATOMIC_SEQ_CST);
		break;
	case VIRTIO_MMIO_STATUS:
		mmio_write_status(m, v);
		break;
	default:
		log_debug("virtio-mmio: write to read-only or reserved register 0x%llx", (unsigned long long)off);
		break;
	}
}

static void mmio_bus_read(void *opaque, uint64_t offset, void *data, uint32_t len)
{
	struct virtio_mmio *m = opaque;
	uint32_t v;

	memset(data, 0, len);
	if (offset >= VIRTIO_MMIO_CONFIG) {
		uint64_t off = offset - VIRTIO_MMIO_CONFIG;

		if (off < m->config_size && len <= m->config_size - off && m->ops->config_read) {
			pthread_mutex_lock(&m->lock);
			m->ops->config_read(m, (uint32_t)off, data, len);
			pthread_mutex_unlock(&m->lock);
		}
		return;
	}
	/* 4.2.2.2: registers are 32-bit and aligned; anything else is ignored. */
	if (len != 4 || (offset & 3))
		return;
	pthread_mutex_lock(&m->lock);
	v = mmio_reg_read(m, offset);
	pthread_mutex_unlock(&m->lock);
	memcpy(data, &v, 4);
}

static void mmio_bus_write(void *opaque, uint64_t offset, const void *data, uint32_t len)
{
	struct virtio_mmio *m = opaque;
	uint32_t v;

	if (offset >= VIRTIO_MMIO_CONFIG) {
		uint64_t off = offset - VIRTIO_MMIO_CONFIG;

		if (off < m->config_size && len <= m->config_size - off && m->ops->config_write) {
			pthread_mutex_lock(&m->lock);
			m->ops->config_write(m, (uint32_t)off, data, len);
			pthread_mutex_unlock(&m->lock);
		}
		return;
	}
	if (len != 4 || (offset & 3))
		return;
	memcpy(&v, data, 4);
	/* Acknowledging an interrupt never waits for the lock. */
	if (offset == VIRTIO_MMIO_INTERRUPT_ACK) {
		__atomic_fetch_and(&m->isr, ~v, __ATOMIC_SEQ_CST);
		return;
	}
	pthread_mutex_lock(&m->lock);
	mmio_reg_write(m, offset, v);
	pthread_mutex_unlock(&m->lock);
}

const struct bus_dev_ops virtio_mmio_bus_ops = {
    .read = mmio_bus_read,
    .write = mmio_bus_write,
};
