/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fuzzers' fake guest (fuzz.h): a program of operations read from the
 * input, each a byte that picks the operation and its arguments after it.
 * The operations are the guest's whole power over a virtio-mmio device:
 * any register, any byte of its RAM, plus shortcuts (a bring-up, a
 * descriptor, a publish) that let the fuzzer reach a running queue in a few
 * bytes instead of dozens.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

enum fz_op {
	OP_REG_WRITE,
	OP_REG_READ,
	OP_CONFIG,
	OP_MEM_WRITE,
	OP_BRINGUP,
	OP_DESC,
	OP_TABLE_DESC,
	OP_PUBLISH,
	OP_KICK,
	OP_AVAIL,
	OP_SUPPRESS,
	OP_RESET,
	OP_EXTRA,
	NR_OPS
};

static void fz_irq(void *opaque)
{
	struct fz_guest *g = opaque;

	__atomic_fetch_add(&g->irqs, 1, __ATOMIC_RELAXED);
}

void fz_guest_init(struct fz_guest *g)
{
	memset(g, 0, sizeof(*g));
	g->ram = calloc(1, FZ_RAM_SIZE);
	if (!g->ram)
		abort();
	guest_mem_init_buffer(&g->mem, g->ram, FZ_RAM_SIZE);
}

void fz_guest_attach(struct fz_guest *g, struct virtio_mmio *m)
{
	struct irq_line line = {.fd = -1, .raise_cb = fz_irq, .opaque = g};

	g->m = m;
	virtio_mmio_set_irq(m, &line);
}

void fz_guest_free(struct fz_guest *g)
{
	free(g->ram);
	g->ram = NULL;
}

uint32_t fz_reg_read(struct fz_guest *g, uint64_t off)
{
	uint32_t v = 0;

	virtio_mmio_bus_ops.read(g->m, off, &v, 4);
	return v;
}

void fz_reg_write(struct fz_guest *g, uint64_t off, uint32_t v)
{
	virtio_mmio_bus_ops.write(g->m, off, &v, 4);
}

static void settle(struct fz_guest *g)
{
	if (g->settle)
		g->settle(g);
}

static void setup_queue(struct fz_guest *g, uint32_t q, uint16_t num)
{
	uint64_t base = FZ_RING(q);

	memset(g->ram + base, 0, 0x4000);
	g->q[q].num = num;
	g->q[q].avail_idx = 0;
	g->q[q].set_up = true;
	fz_reg_write(g, VIRTIO_MMIO_QUEUE_SEL, q);
	fz_reg_write(g, VIRTIO_MMIO_QUEUE_NUM, num);
	fz_reg_write(g, VIRTIO_MMIO_QUEUE_DESC_LOW, (uint32_t)base);
	fz_reg_write(g, VIRTIO_MMIO_QUEUE_DESC_HIGH, 0);
	fz_reg_write(g, VIRTIO_MMIO_QUEUE_DRIVER_LOW, (uint32_t)base + 0x1000);
	fz_reg_write(g, VIRTIO_MMIO_QUEUE_DRIVER_HIGH, 0);
	fz_reg_write(g, VIRTIO_MMIO_QUEUE_DEVICE_LOW, (uint32_t)base + 0x2000);
	fz_reg_write(g, VIRTIO_MMIO_QUEUE_DEVICE_HIGH, 0);
	fz_reg_write(g, VIRTIO_MMIO_QUEUE_READY, 1);
}

void fz_bringup(struct fz_guest *g, uint64_t want, unsigned int nq, uint16_t num)
{
	uint64_t offered;
	uint32_t st = VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER;

	fz_reg_write(g, VIRTIO_MMIO_STATUS, 0);
	settle(g);
	memset(g->q, 0, sizeof(g->q));
	fz_reg_write(g, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE);
	fz_reg_write(g, VIRTIO_MMIO_STATUS, st);
	fz_reg_write(g, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
	offered = fz_reg_read(g, VIRTIO_MMIO_DEVICE_FEATURES);
	fz_reg_write(g, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 1);
	offered |= (uint64_t)fz_reg_read(g, VIRTIO_MMIO_DEVICE_FEATURES) << 32;
	want = (want & offered) | VIRTIO_BIT(VIRTIO_F_VERSION_1);
	fz_reg_write(g, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
	fz_reg_write(g, VIRTIO_MMIO_DRIVER_FEATURES, (uint32_t)want);
	fz_reg_write(g, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	fz_reg_write(g, VIRTIO_MMIO_DRIVER_FEATURES, (uint32_t)(want >> 32));
	st |= VIRTIO_STATUS_FEATURES_OK;
	fz_reg_write(g, VIRTIO_MMIO_STATUS, st);
	for (uint32_t q = 0; q < nq && q < VIRTIO_MMIO_MAX_QUEUES; q++)
		setup_queue(g, q, num);
	fz_reg_write(g, VIRTIO_MMIO_STATUS, st | VIRTIO_STATUS_DRIVER_OK);
	settle(g);
}

/* A guest physical address: mostly inside RAM, sometimes just past it or
 * far out, as a hostile driver would write. */
static uint64_t fz_gpa(struct fz *f)
{
	uint32_t v = fz_u32(f);

	switch (v >> 30) {
	case 0:
	case 1:
		return FZ_DATA + v % (FZ_RAM_SIZE - FZ_DATA);
	case 2:
		return v % (FZ_RAM_SIZE + 0x100);
	default:
		return (uint64_t)v << 16;
	}
}

static void write_desc(struct fz_guest *g, uint64_t gpa, struct fz *f)
{
	struct {
		uint64_t addr;
		uint32_t len;
		uint16_t flags, next;
	} d;

	d.addr = fz_gpa(f);
	d.len = fz_u16(f);
	if (d.len & 0x8000)
		d.len = fz_u32(f); /* now and then a huge one */
	d.flags = fz_u8(f) & 7;
	d.next = fz_u16(f);
	if (gpa <= FZ_RAM_SIZE - sizeof(d))
		memcpy(g->ram + gpa, &d, sizeof(d));
}

static void op_mem_write(struct fz_guest *g, struct fz *f)
{
	uint64_t gpa = fz_u32(f) % FZ_RAM_SIZE;
	size_t len = fz_u8(f);

	if (len > FZ_RAM_SIZE - gpa)
		len = FZ_RAM_SIZE - gpa;
	fz_take(f, g->ram + gpa, len);
}

static void op_publish(struct fz_guest *g, struct fz *f)
{
	uint32_t q = fz_u8(f) % VIRTIO_MMIO_MAX_QUEUES;
	uint16_t head = fz_u16(f);
	uint16_t *avail;

	if (!g->q[q].set_up)
		return;
	avail = (uint16_t *)(g->ram + FZ_RING(q) + 0x1000);
	avail[2 + g->q[q].avail_idx % g->q[q].num] = head % (g->q[q].num + 2);
	g->q[q].avail_idx++;
	__atomic_store_n(&avail[1], g->q[q].avail_idx, __ATOMIC_RELEASE);
	fz_reg_write(g, VIRTIO_MMIO_QUEUE_NOTIFY, q);
	settle(g);
}

static void op_config(struct fz_guest *g, struct fz *f)
{
	static const uint32_t lens[] = {1, 2, 4, 8, 3, 16};
	uint64_t off = VIRTIO_MMIO_CONFIG + fz_u8(f);
	uint32_t len = lens[fz_u8(f) % 6];
	uint8_t buf[16];

	if (fz_u8(f) & 1) {
		fz_take(f, buf, len);
		virtio_mmio_bus_ops.write(g->m, off, buf, len);
	} else {
		virtio_mmio_bus_ops.read(g->m, off, buf, len);
	}
}

static void op_queue_field(struct fz_guest *g, struct fz *f, enum fz_op op)
{
	uint32_t q = fz_u8(f) % VIRTIO_MMIO_MAX_QUEUES;
	uint16_t *avail = (uint16_t *)(g->ram + FZ_RING(q) + 0x1000);
	uint16_t *used = (uint16_t *)(g->ram + FZ_RING(q) + 0x2000);
	uint16_t num = g->q[q].num ? g->q[q].num : 1;

	switch (op) {
	case OP_DESC:
		write_desc(g, FZ_RING(q) + 16ULL * (fz_u16(f) % num), f);
		break;
	case OP_KICK:
		fz_reg_write(g, VIRTIO_MMIO_QUEUE_NOTIFY, q);
		settle(g);
		break;
	case OP_AVAIL:
		/* Any avail idx, as a driver that lies would write it. */
		g->q[q].avail_idx = fz_u16(f);
		__atomic_store_n(&avail[1], g->q[q].avail_idx, __ATOMIC_RELEASE);
		break;
	default: /* OP_SUPPRESS: avail flags, used_event, used flags */
		avail[0] = fz_u16(f);
		avail[2 + num] = fz_u16(f);
		used[0] = fz_u16(f);
		break;
	}
}

static void fz_step(struct fz_guest *g, struct fz *f, uint8_t op)
{
	switch (op % NR_OPS) {
	case OP_REG_WRITE:
		fz_reg_write(g, fz_u8(f) & 0xfc, fz_u32(f));
		settle(g);
		break;
	case OP_REG_READ:
		fz_reg_read(g, fz_u16(f) % 0x200);
		break;
	case OP_CONFIG:
		op_config(g, f);
		break;
	case OP_MEM_WRITE:
		op_mem_write(g, f);
		break;
	case OP_BRINGUP: {
		uint64_t want = fz_u64(f);
		unsigned int nq = 1 + fz_u8(f) % VIRTIO_MMIO_MAX_QUEUES;

		fz_bringup(g, want, nq, (uint16_t)(1u << (fz_u8(f) % 9)));
		break;
	}
	case OP_TABLE_DESC:
		write_desc(g, FZ_DATA + 16ULL * (fz_u16(f) % 512), f);
		break;
	case OP_PUBLISH:
		op_publish(g, f);
		break;
	case OP_RESET:
		fz_reg_write(g, VIRTIO_MMIO_STATUS, 0);
		settle(g);
		break;
	case OP_EXTRA:
		if (g->extra)
			g->extra(g, f, fz_u8(f));
		break;
	default:
		op_queue_field(g, f, (enum fz_op)(op % NR_OPS));
		break;
	}
}

void fz_guest_run(struct fz_guest *g, struct fz *f, unsigned int max_ops)
{
	for (unsigned int i = 0; i < max_ops && f->n; i++)
		fz_step(g, f, fz_u8(f));
	settle(g);
}
