/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A minimal virtio-mmio 1.x driver for the test guest (virtio.h). Devices
 * come from the virtio_mmio.device= words of the command line.
 */
#include "virtio.h"

/* Finds the first virtio_mmio.device=<size>@0x<addr>:<gsi> on the command
 * line whose device has device_id. */
bool find_device(uint32_t device_id, struct vdev *d)
{
	return find_device_nth(device_id, 0, d);
}

bool find_device_nth(uint32_t device_id, unsigned int n, struct vdev *d)
{
	static const char key[] = "virtio_mmio.device=";
	const char *p = cmdline();

	for (; *p; p++) {
		if (memcmp(p, key, sizeof(key) - 1))
			continue;
		const char *s = p + sizeof(key) - 1;
		while (*s && *s != '@' && *s != ' ')
			s++;
		if (s[0] != '@' || s[1] != '0' || s[2] != 'x')
			continue;
		uint64_t addr = 0;
		uint32_t gsi = 0;
		for (s += 3;; s++) {
			int v = *s >= '0' && *s <= '9' ? *s - '0' : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10 : -1;
			if (v < 0)
				break;
			addr = addr * 16 + (uint64_t)v;
		}
		if (*s == ':')
			for (s++; *s >= '0' && *s <= '9'; s++)
				gsi = gsi * 10 + (uint32_t)(*s - '0');
		/* kvrun's devices, or another VMM's in the 32-bit MMIO hole
		 * (QEMU microvm's at 0xfeb00000). */
		if (addr < 0xc0000000ULL || addr >= 0xfec00000ULL)
			continue;
		if (mmio_read32(addr + R_MAGIC) == VIRTIO_MAGIC && mmio_read32(addr + R_VERSION) == 2 &&
		    mmio_read32(addr + R_DEVICE_ID) == device_id && n-- == 0) {
			memset(d, 0, sizeof(*d));
			d->base = addr;
			d->gsi = gsi;
			return true;
		}
	}
	return false;
}

static bool setup_queue(struct vdev *d, unsigned int i, uint64_t rings)
{
	uint64_t base = rings + i * 0x4000ULL;
	struct vq *q = &d->q[i];

	memset((void *)(uintptr_t)base, 0, 0x3000);
	q->desc = (volatile struct vdesc *)(uintptr_t)base;
	q->avail = (volatile uint16_t *)(uintptr_t)(base + 0x1000);
	q->used = (volatile uint32_t *)(uintptr_t)(base + 0x2000);
	q->avail_idx = q->last_used = 0;
	q->num = QSIZE;
	wr(d, R_QUEUE_SEL, i);
	if (rd(d, R_QUEUE_READY) != 0 || rd(d, R_QUEUE_NUM_MAX) < QSIZE)
		return false;
	wr(d, R_QUEUE_NUM, QSIZE);
	wr(d, R_QUEUE_DESC, (uint32_t)base);
	wr(d, R_QUEUE_DESC + 4, 0);
	wr(d, R_QUEUE_DRIVER, (uint32_t)(base + 0x1000));
	wr(d, R_QUEUE_DRIVER + 4, 0);
	wr(d, R_QUEUE_DEVICE, (uint32_t)(base + 0x2000));
	wr(d, R_QUEUE_DEVICE + 4, 0);
	wr(d, R_QUEUE_READY, 1);
	return rd(d, R_QUEUE_READY) == 1;
}

bool vdev_init(struct vdev *d, unsigned int nq, uint64_t want)
{
	return vdev_init_at(d, nq, want, RING_BASE);
}

/* Reset and bring the device up to DRIVER_OK with nq queues whose rings
 * are at rings + q * 0x4000, taking VERSION_1, EVENT_IDX and
 * INDIRECT_DESC when offered plus the device features in want. */
bool vdev_init_at(struct vdev *d, unsigned int nq, uint64_t want, uint64_t rings)
{
	uint64_t offered;

	wr(d, R_STATUS, 0);
	if (rd(d, R_STATUS) != 0)
		return false;
	wr(d, R_STATUS, S_ACK);
	wr(d, R_STATUS, S_ACK | S_DRIVER);
	wr(d, R_DEV_FEATURES_SEL, 0);
	offered = rd(d, R_DEV_FEATURES);
	wr(d, R_DEV_FEATURES_SEL, 1);
	offered |= (uint64_t)rd(d, R_DEV_FEATURES) << 32;
	want |= 1ULL << F_VERSION_1 | 1ULL << F_EVENT_IDX | 1ULL << F_INDIRECT;
	d->features = offered & want;
	if (!(d->features & 1ULL << F_VERSION_1))
		return false;
	wr(d, R_DRV_FEATURES_SEL, 0);
	wr(d, R_DRV_FEATURES, (uint32_t)d->features);
	wr(d, R_DRV_FEATURES_SEL, 1);
	wr(d, R_DRV_FEATURES, (uint32_t)(d->features >> 32));
	wr(d, R_STATUS, S_ACK | S_DRIVER | S_FEATURES_OK);
	if (!(rd(d, R_STATUS) & S_FEATURES_OK))
		return false;
	d->nq = nq;
	for (unsigned int i = 0; i < nq; i++)
		if (!setup_queue(d, i, rings))
			return false;
	wr(d, R_STATUS, S_ACK | S_DRIVER | S_FEATURES_OK | S_DRIVER_OK);
	return rd(d, R_STATUS) == (S_ACK | S_DRIVER | S_FEATURES_OK | S_DRIVER_OK);
}

/* Publishes head in the avail ring and rings the doorbell. */
void vq_kick(struct vdev *d, unsigned int qi, uint16_t head)
{
	struct vq *q = &d->q[qi];

	q->avail[2 + q->avail_idx % q->num] = head;
	q->avail[2 + q->num] = q->last_used; /* used_event: interrupt on the next one */
	fence();
	q->avail_idx++;
	q->avail[1] = q->avail_idx;
	fence();
	wr(d, R_QUEUE_NOTIFY, qi);
}

uint16_t vq_used_idx(struct vq *q)
{
	return (uint16_t)(q->used[0] >> 16);
}

/* Waits for the next used element; false on timeout. */
bool vq_wait(struct vdev *d, unsigned int qi, uint64_t ticks, uint32_t *ret_id, uint32_t *ret_len)
{
	struct vq *q = &d->q[qi];
	struct deadline dl;

	deadline_start(&dl, ticks);
	while (vq_used_idx(q) == q->last_used)
		if (deadline_passed(&dl))
			return false;
	fence();
	uint32_t slot = q->last_used % q->num;
	if (ret_id)
		*ret_id = q->used[1 + 2 * slot];
	if (ret_len)
		*ret_len = q->used[2 + 2 * slot];
	q->last_used++;
	return true;
}

uint64_t cmd_num(const char *key, uint64_t dflt)
{
	char buf[32];
	uint64_t v;

	if (cmdline_get(key, buf, sizeof(buf)) && parse_size(buf, &v))
		return v;
	return dflt;
}
