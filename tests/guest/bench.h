/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The test guest's data-path benchmarks (test=bench): queues set up at
 * CPL0, then the requests driven from CPL3 (usermode.h) with interrupts
 * off and the device's interrupts suppressed, polling the used rings, so
 * that no CPL0 code runs per request. Each workload is timed with rdtsc
 * between two marks written to the test device's bench register
 * (common/test-bench.h) and printed as a "KVRUN-BENCH" console line.
 *
 * Memory: rings at BENCH_RING_BASE (64 KiB per queue), per-slot headers,
 * indirect tables and status bytes at BENCH_META_BASE, data buffers from
 * BENCH_DATA_BASE up (queue depth x block size).
 */
#ifndef KVRUN_TEST_GUEST_BENCH_H
#define KVRUN_TEST_GUEST_BENCH_H

#include "common/test-bench.h"
#include "virtio.h"

#define BENCH_RING_BASE (32 * MiB)
#define BENCH_META_BASE (36 * MiB)
#define BENCH_DATA_BASE (64 * MiB)
#define BENCH_MAX_QUEUE 1024
/* A loop that sees no progress for this many TSC ticks gives up. */
#define BENCH_STALL_TICKS 30000000000ULL

/* A split virtqueue driven by polling. */
struct bq {
	volatile struct vdesc *desc;
	volatile uint16_t *avail; /* flags, idx, ring[size], used_event */
	volatile uint32_t *used; /* flags|idx, {id, len}[size], avail_event */
	uint16_t size;
	uint16_t avail_idx; /* next slot to fill */
	uint16_t published; /* avail idx the device was last shown */
	uint16_t last_used;
	bool event_idx;
	uint64_t notify_addr;
	uint32_t index;
	uint64_t kicks;
};

/* Reset the device and bring it to DRIVER_OK with nq queues of the given
 * sizes at BENCH_RING_BASE + i * 64 KiB, taking VERSION_1, EVENT_IDX,
 * INDIRECT_DESC and want. CPL0 only. */
bool bench_dev_init(struct vdev *d, struct bq *qs, unsigned int nq, const uint16_t *sizes, uint64_t want);
/* Put head in the next avail slot (not yet visible to the device). */
void bq_add(struct bq *q, uint16_t head);
/* Make what bq_add() queued visible, then ring the doorbell only if the
 * device asked for it (avail_event with EVENT_IDX, else NO_NOTIFY). */
void bq_publish(struct bq *q);
/* Ask the device for no interrupt (used_event far ahead, or
 * NO_INTERRUPT). */
void bq_no_interrupts(struct bq *q);
/* The next used element, if any: true and *id, *len. */
bool bq_get_used(struct bq *q, uint32_t *id, uint32_t *len);

/* Workload helpers. */
uint64_t bench_rng(uint64_t *state);
/* Whether the VMM has the test device's bench register; maps it for
 * CPL3. Call at CPL0 before user_mode_init(). */
bool bench_port_present(void);
/* Write a mark (from CPL3 or CPL0; nothing without the register). */
void bench_mark(struct kvrun_bench_mark *m, uint32_t phase);
/* Print the mark as a KVRUN-BENCH console line (CPL0). */
void bench_print(const struct kvrun_bench_mark *m);
void bench_name(struct kvrun_bench_mark *m, const char *a, const char *b, uint64_t bs, uint64_t qd);

/* 8-byte words of the data pattern: the word at byte offset off of a
 * disk or stream seeded with seed. */
static inline uint64_t bench_word(uint64_t seed, uint64_t off)
{
	return (off ^ (seed * 0x9e3779b97f4a7c15ULL)) + seed;
}

/* The scenarios. */
void bench_blk(void);
void bench_net(void);
void bench_vsock(void);

#endif
