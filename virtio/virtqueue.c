/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <string.h>

#include "common/log.h"
#include "virtio/virtio.h"
#include "virtio/virtqueue.h"

/* The ring fields the guest writes concurrently are read exactly once, into
 * locals, through these: the compiler may not re-read them later. */
#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

void virtq_init(struct virtq *vq, const struct guest_mem *mem, uint16_t num_max)
{
	memset(vq, 0, sizeof(*vq));
	vq->mem = mem;
	vq->num_max = num_max;
	vq->num = num_max;
}

void virtq_reset(struct virtq *vq)
{
	virtq_init(vq, vq->mem, vq->num_max);
}

static int virtq_fail(struct virtq *vq, int err, const char *why)
{
	log_debug("virtqueue: %s (%s), queue broken", why, strerror(-err));
	vq->broken = true;
	return -EIO;
}

int virtq_start(struct virtq *vq, uint64_t features)
{
	uint64_t n = vq->num;

	vq->desc = NULL;
	vq->avail = NULL;
	vq->used = NULL;
	vq->last_avail = vq->used_idx = vq->signalled_used = 0;
	vq->broken = false;
	vq->event_idx = features & VIRTIO_BIT(VIRTIO_F_RING_EVENT_IDX);
	vq->indirect = features & VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC);
	/* Split rings index modulo num with a 16-bit counter: num must be a
	 * power of two (2.7). */
	if (n == 0 || n > vq->num_max || (n & (n - 1)))
		return virtq_fail(vq, -EINVAL, "bad queue size");
	if ((vq->desc_gpa & 15) || (vq->avail_gpa & 1) || (vq->used_gpa & 3))
		return virtq_fail(vq, -EINVAL, "misaligned ring");
	/* Sizes include used_event/avail_event, which drivers always lay out. */
	vq->desc = guest_mem_ptr(vq->mem, vq->desc_gpa, 16 * n);
	vq->avail = guest_mem_ptr(vq->mem, vq->avail_gpa, 6 + 2 * n);
	vq->used = guest_mem_ptr(vq->mem, vq->used_gpa, 6 + 8 * n);
	if (!vq->desc || !vq->avail || !vq->used) {
		vq->desc = NULL;
		return virtq_fail(vq, -EFAULT, "ring outside guest RAM");
	}
	return 0;
}

bool virtq_usable(const struct virtq *vq)
{
	return vq->ready && vq->desc && !vq->broken;
}

static uint16_t *virtq_used_event(struct virtq *vq)
{
	return &vq->avail->ring[vq->num];
}

static uint16_t *virtq_avail_event(struct virtq *vq)
{
	return (uint16_t *)&vq->used->ring[vq->num];
}

/* Append one direct descriptor to req. */
static int virtq_add_seg(struct virtq *vq, struct virtq_req *req, const struct virtq_desc *d)
{
	unsigned int n = req->nr_out + req->nr_in;
	void *p;

	if (n >= VIRTQ_MAX_SEGS)
		return virtq_fail(vq, -E2BIG, "chain has too many buffers");
	p = guest_mem_ptr(vq->mem, d->addr, d->len);
	if (!p)
		return virtq_fail(vq, -EFAULT, "buffer outside guest RAM");
	if (d->flags & VIRTQ_DESC_F_WRITE) {
		if ((uint64_t)req->in_len + d->len > UINT32_MAX)
			return virtq_fail(vq, -EOVERFLOW, "writable length overflow");
		req->in_len += d->len;
		req->nr_in++;
	} else {
		/* 2.7.4.2: readable buffers come before writable ones. */
		if (req->nr_in)
			return virtq_fail(vq, -EINVAL, "readable buffer after writable");
		if ((uint64_t)req->out_len + d->len > UINT32_MAX)
			return virtq_fail(vq, -EOVERFLOW, "readable length overflow");
		req->out_len += d->len;
		req->nr_out++;
	}
	req->iov[n] = (struct iovec){.iov_base = p, .iov_len = d->len};
	return 0;
}

/* Switch the walk to the indirect table d describes (2.7.5.3). The caller
 * makes sure this happens at most once per chain. */
static int virtq_enter_indirect(struct virtq *vq, const struct virtq_desc *d, const uint8_t **table,
                                uint32_t *table_len)
{
	if (!vq->indirect)
		return virtq_fail(vq, -EINVAL, "indirect descriptor not negotiated");
	if (d->flags & VIRTQ_DESC_F_NEXT)
		return virtq_fail(vq, -EINVAL, "indirect descriptor with NEXT");
	if (d->len == 0 || d->len % sizeof(struct virtq_desc) || d->len / sizeof(struct virtq_desc) > VIRTQ_MAX_SEGS)
		return virtq_fail(vq, -EINVAL, "bad indirect table length");
	*table = guest_mem_ptr(vq->mem, d->addr, d->len);
	if (!*table)
		return virtq_fail(vq, -EFAULT, "indirect table outside guest RAM");
	*table_len = d->len / sizeof(struct virtq_desc);
	return 0;
}

/*
 * Walk the chain at head. The rules of 2.7.5.3.1 bound the walk whatever
 * the guest wrote: a chain is zero or more descriptors of the ring, each
 * visited at most once, then at most one indirect descriptor (no NEXT), then
 * each entry of its table at most once, none of them indirect. So at most
 * num + VIRTQ_MAX_SEGS descriptors are read, counted in `left`, which is
 * refilled once, when the one indirect table is entered. Where the table
 * lies (even over the ring itself) does not matter.
 */
static int virtq_walk(struct virtq *vq, uint16_t head, struct virtq_req *req)
{
	const uint8_t *table = (const uint8_t *)vq->desc;
	uint32_t table_len = vq->num, idx = head, left = vq->num;
	bool in_indirect = false;
	struct virtq_desc d;
	int r;

	req->head = head;
	req->nr_out = req->nr_in = 0;
	req->out_len = req->in_len = 0;
	for (;;) {
		/* More descriptors than the table holds means a loop (2.7.4.2). */
		if (left-- == 0)
			return virtq_fail(vq, -ELOOP, "descriptor chain loops");
		/* Indirect tables need not be aligned: copy bytes. */
		memcpy(&d, table + (size_t)idx * sizeof(d), sizeof(d));
		if (d.flags & VIRTQ_DESC_F_INDIRECT) {
			if (in_indirect)
				return virtq_fail(vq, -EINVAL, "indirect descriptor inside an indirect table");
			r = virtq_enter_indirect(vq, &d, &table, &table_len);
			if (r < 0)
				return r;
			in_indirect = true;
			idx = 0;
			left = table_len;
			continue;
		}
		r = virtq_add_seg(vq, req, &d);
		if (r < 0)
			return r;
		if (!(d.flags & VIRTQ_DESC_F_NEXT))
			return 0;
		if (d.next >= table_len)
			return virtq_fail(vq, -EINVAL, "next descriptor out of range");
		idx = d.next;
	}
}

int virtq_pop(struct virtq *vq, struct virtq_req *req)
{
	uint16_t avail_idx, head;
	int r;

	if (vq->broken)
		return -EIO;
	/* A queue the driver did not set up holds nothing. */
	if (!virtq_usable(vq))
		return 0;
	/* Acquire: the ring entry and descriptors the driver wrote before
	 * publishing idx are visible once idx is (2.7.13). */
	avail_idx = __atomic_load_n(&vq->avail->idx, __ATOMIC_ACQUIRE);
	if (avail_idx == vq->last_avail)
		return 0;
	if ((uint16_t)(avail_idx - vq->last_avail) > vq->num)
		return virtq_fail(vq, -EINVAL, "avail idx more than queue size ahead");
	head = LOAD(&vq->avail->ring[vq->last_avail & (vq->num - 1)]);
	if (head >= vq->num)
		return virtq_fail(vq, -EINVAL, "head descriptor out of range");
	r = virtq_walk(vq, head, req);
	if (r < 0)
		return r;
	vq->last_avail++;
	return 1;
}

bool virtq_has_avail(const struct virtq *vq)
{
	return virtq_usable(vq) && __atomic_load_n(&vq->avail->idx, __ATOMIC_ACQUIRE) != vq->last_avail;
}

void virtq_unpop(struct virtq *vq)
{
	vq->last_avail--;
}

void virtq_fill(struct virtq *vq, uint16_t head, uint32_t len)
{
	struct virtq_used_elem *e;

	if (!virtq_usable(vq))
		return;
	e = &vq->used->ring[vq->used_idx & (vq->num - 1)];
	STORE(&e->id, head);
	STORE(&e->len, len);
	vq->used_idx++;
}

void virtq_flush(struct virtq *vq)
{
	if (!virtq_usable(vq))
		return;
	/* Release: the elements are visible before the index that covers
	 * them. */
	__atomic_store_n(&vq->used->idx, vq->used_idx, __ATOMIC_RELEASE);
}

void virtq_push(struct virtq *vq, uint16_t head, uint32_t len)
{
	virtq_fill(vq, head, len);
	virtq_flush(vq);
}

bool virtq_need_interrupt(struct virtq *vq)
{
	uint16_t old = vq->signalled_used, new = vq->used_idx, event;

	if (!virtq_usable(vq) || old == new)
		return false;
	/* Whatever virtq_fill() left unpublished goes out first. */
	virtq_flush(vq);
	vq->signalled_used = new;
	/* Full barrier: our used->idx store must be ordered before we read
	 * the driver's suppression fields, or both sides could miss (2.7.10). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!vq->event_idx)
		return !(LOAD(&vq->avail->flags) & VIRTQ_AVAIL_F_NO_INTERRUPT);
	event = LOAD(virtq_used_event(vq));
	/* vring_need_event(): did used idx move past used_event since old? */
	return (uint16_t)(new - event - 1) < (uint16_t)(new - old);
}

bool virtq_avail_pending(const struct virtq *vq)
{
	return virtq_usable(vq) && __atomic_load_n(&vq->avail->idx, __ATOMIC_ACQUIRE) != vq->last_avail;
}

void virtq_disable_notify(struct virtq *vq)
{
	/* With EVENT_IDX a stale avail_event already suppresses kicks. */
	if (virtq_usable(vq) && !vq->event_idx)
		STORE(&vq->used->flags, VIRTQ_USED_F_NO_NOTIFY);
}

bool virtq_enable_notify(struct virtq *vq)
{
	if (!virtq_usable(vq))
		return false;
	if (vq->event_idx)
		STORE(virtq_avail_event(vq), vq->last_avail);
	else
		STORE(&vq->used->flags, 0);
	/* The driver checks our flag after publishing avail idx; we check avail
	 * idx after publishing the flag. One of us sees the other. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return __atomic_load_n(&vq->avail->idx, __ATOMIC_ACQUIRE) != vq->last_avail;
}

size_t iov_to_buf(const struct iovec *iov, unsigned int n, size_t skip, void *dst, size_t len)
{
	size_t done = 0;

	for (unsigned int i = 0; i < n && done < len; i++) {
		size_t l = iov[i].iov_len, c;

		if (skip >= l) {
			skip -= l;
			continue;
		}
		c = l - skip < len - done ? l - skip : len - done;
		memcpy((uint8_t *)dst + done, (uint8_t *)iov[i].iov_base + skip, c);
		done += c;
		skip = 0;
	}
	return done;
}

size_t iov_from_buf(const struct iovec *iov, unsigned int n, size_t skip, const void *src, size_t len)
{
	size_t done = 0;

	for (unsigned int i = 0; i < n && done < len; i++) {
		size_t l = iov[i].iov_len, c;

		if (skip >= l) {
			skip -= l;
			continue;
		}
		c = l - skip < len - done ? l - skip : len - done;
		memcpy((uint8_t *)iov[i].iov_base + skip, (const uint8_t *)src + done, c);
		done += c;
		skip = 0;
	}
	return done;
}

unsigned int iov_slice(const struct iovec *iov, unsigned int n, size_t skip, size_t len, struct iovec *dst,
                       unsigned int max, size_t *ret_len)
{
	unsigned int out = 0;
	size_t done = 0;

	for (unsigned int i = 0; i < n && done < len && out < max; i++) {
		size_t l = iov[i].iov_len, c;

		if (skip >= l) {
			skip -= l;
			continue;
		}
		c = l - skip < len - done ? l - skip : len - done;
		dst[out++] = (struct iovec){.iov_base = (uint8_t *)iov[i].iov_base + skip, .iov_len = c};
		done += c;
		skip = 0;
	}
	if (ret_len)
		*ret_len = done;
	return out;
}
