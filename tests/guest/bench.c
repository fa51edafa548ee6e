/* SPDX-License-Identifier: Apache-2.0 */
/* Polled virtqueues and marks for the data-path benchmarks (bench.h). */
#include "bench.h"
#include "usermode.h"

static void bq_setup_mem(struct bq *q, unsigned int i, uint16_t size)
{
	uint64_t base = BENCH_RING_BASE + i * 0x10000ULL;

	memset((void *)(uintptr_t)base, 0, 0x10000);
	*q = (struct bq){
	    .desc = (volatile struct vdesc *)(uintptr_t)base,
	    .avail = (volatile uint16_t *)(uintptr_t)(base + 0x4000),
	    .used = (volatile uint32_t *)(uintptr_t)(base + 0x8000),
	    .size = size,
	    .index = i,
	};
}

static bool bq_register(struct vdev *d, struct bq *q)
{
	uint64_t base = (uint64_t)(uintptr_t)q->desc;

	wr(d, R_QUEUE_SEL, q->index);
	if (rd(d, R_QUEUE_READY) != 0 || rd(d, R_QUEUE_NUM_MAX) < q->size)
		return false;
	wr(d, R_QUEUE_NUM, q->size);
	wr(d, R_QUEUE_DESC, (uint32_t)base);
	wr(d, R_QUEUE_DESC + 4, 0);
	wr(d, R_QUEUE_DRIVER, (uint32_t)(base + 0x4000));
	wr(d, R_QUEUE_DRIVER + 4, 0);
	wr(d, R_QUEUE_DEVICE, (uint32_t)(base + 0x8000));
	wr(d, R_QUEUE_DEVICE + 4, 0);
	wr(d, R_QUEUE_READY, 1);
	q->notify_addr = d->base + R_QUEUE_NOTIFY;
	return rd(d, R_QUEUE_READY) == 1;
}

bool bench_dev_init(struct vdev *d, struct bq *qs, unsigned int nq, const uint16_t *sizes, uint64_t want)
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
	for (unsigned int i = 0; i < nq; i++) {
		if (sizes[i] < 1 || sizes[i] > BENCH_MAX_QUEUE || (sizes[i] & (sizes[i] - 1)))
			return false;
		bq_setup_mem(&qs[i], i, sizes[i]);
		qs[i].event_idx = has(d, F_EVENT_IDX);
		if (!bq_register(d, &qs[i]))
			return false;
	}
	wr(d, R_STATUS, S_ACK | S_DRIVER | S_FEATURES_OK | S_DRIVER_OK);
	return rd(d, R_STATUS) == (S_ACK | S_DRIVER | S_FEATURES_OK | S_DRIVER_OK);
}

void bq_add(struct bq *q, uint16_t head)
{
	q->avail[2 + q->avail_idx % q->size] = head;
	q->avail_idx++;
}

/* virtio 2.7.10: notify when the device's event index lies in
 * [old, new). */
static bool need_event(uint16_t event, uint16_t new_idx, uint16_t old)
{
	return (uint16_t)(new_idx - event - 1) < (uint16_t)(new_idx - old);
}

void bq_publish(struct bq *q)
{
	uint16_t old = q->published, now = q->avail_idx;
	bool kick;

	if (old == now)
		return;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	q->avail[1] = now;
	q->published = now;
	/* The device's avail_event (or flags) is read after the index is
	 * visible: a store-load fence. */
	fence();
	if (q->event_idx)
		kick = need_event((uint16_t)q->used[1 + 2 * q->size], now, old);
	else
		kick = !(q->used[0] & 1);
	if (kick) {
		mmio_write32(q->notify_addr, q->index);
		q->kicks++;
	}
}

void bq_no_interrupts(struct bq *q)
{
	if (q->event_idx)
		q->avail[2 + q->size] = (uint16_t)(q->last_used + 0x8000);
	else
		q->avail[0] = 1;
}

bool bq_get_used(struct bq *q, uint32_t *id, uint32_t *len)
{
	uint16_t used_idx = (uint16_t)(q->used[0] >> 16);
	uint32_t slot;

	if (used_idx == q->last_used)
		return false;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	slot = q->last_used % q->size;
	*id = q->used[1 + 2 * slot];
	*len = q->used[2 + 2 * slot];
	q->last_used++;
	return true;
}

uint64_t bench_rng(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*state = x;
	return x;
}

static bool bench_reg;

bool bench_port_present(void)
{
	bench_reg = mmio_read32(KVRUN_MMIO_TEST_BENCH) == KVRUN_BENCH_MAGIC;
	if (bench_reg)
		user_map(KVRUN_MMIO_TEST_BENCH, KVRUN_MMIO_TEST_BENCH_SIZE);
	return bench_reg;
}

void bench_mark(struct kvrun_bench_mark *m, uint32_t phase)
{
	m->magic = KVRUN_BENCH_MAGIC;
	m->phase = phase;
	if (bench_reg)
		mmio_write32(KVRUN_MMIO_TEST_BENCH, (uint32_t)(uintptr_t)m);
}

void bench_print(const struct kvrun_bench_mark *m)
{
	con_printf("KVRUN-BENCH {\"name\": \"%s\", \"ops\": %llu, \"bytes\": %llu, \"cycles\": %llu, \"kicks\": %llu, "
	           "\"errors\": %llu, \"queue_depth\": %llu, \"block_size\": %llu}\n",
	           m->name, (unsigned long long)m->ops, (unsigned long long)m->bytes, (unsigned long long)m->cycles,
	           (unsigned long long)m->kicks, (unsigned long long)m->errors, (unsigned long long)m->queue_depth,
	           (unsigned long long)m->block_size);
}

static size_t put(char *dst, size_t at, const char *s)
{
	while (*s && at + 1 < KVRUN_BENCH_NAME)
		dst[at++] = *s++;
	dst[at] = 0;
	return at;
}

static size_t put_num(char *dst, size_t at, uint64_t v)
{
	char buf[24];
	int n = 0;
	const char *unit = "";

	if (v && !(v % MiB)) {
		v /= MiB;
		unit = "M";
	} else if (v && !(v % 1024)) {
		v /= 1024;
		unit = "K";
	}
	do
		buf[n++] = (char)('0' + v % 10);
	while ((v /= 10) && n < 23);
	while (n && at + 1 < KVRUN_BENCH_NAME)
		dst[at++] = buf[--n];
	return put(dst, at, unit);
}

/* "<a>-<b>-<bs>-qd<qd>", e.g. "blk-randread-4K-qd32". */
void bench_name(struct kvrun_bench_mark *m, const char *a, const char *b, uint64_t bs, uint64_t qd)
{
	size_t at = put(m->name, 0, a);

	at = put(m->name, at, "-");
	at = put(m->name, at, b);
	at = put(m->name, at, "-");
	at = put_num(m->name, at, bs);
	at = put(m->name, at, "-qd");
	put_num(m->name, at, qd);
}
