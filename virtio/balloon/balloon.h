/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio-balloon (virtio 1.2, 5.5; device id 5): the guest gives memory it
 * does not use back to the host.
 *
 *   - Free page reporting (VIRTIO_BALLOON_F_PAGE_REPORTING): the guest
 *     kernel hands over blocks of free memory (2 MiB and up, from its
 *     buddy allocator) on the reporting queue; each is given back to the
 *     host (guest_mem_discard(): MADV_DONTNEED) before the buffer is used.
 *     The guest takes the pages back by touching them.
 *   - Inflate and deflate queues: arrays of 4 KiB page frame numbers. An
 *     inflated page is given back like a reported one; a deflated one
 *     needs nothing (it comes back on the guest's next touch). The host
 *     asks for a balloon size with virtio_balloon_set_target().
 *   - Statistics (VIRTIO_BALLOON_F_STATS_VQ): the guest's memory figures,
 *     refreshed when the host asks (virtio_balloon_request_stats()).
 *   - VIRTIO_BALLOON_F_DEFLATE_ON_OOM: the guest may take pages back from
 *     the balloon rather than kill a process.
 *
 * Every page frame number and range the guest sends is checked against
 * guest RAM before anything is given back: a PFN outside RAM is skipped
 * (and counted), a reporting buffer outside RAM breaks the device (the
 * virtqueue walk refuses it), and so does a chain with buffers of the
 * wrong direction. All queue work runs on the event loop, at most 64
 * chains per queue per turn.
 *
 * Runtime use:
 *   struct virtio_balloon *b;
 *   virtio_balloon_new(&vm_mem, loop, NULL, &b);
 *   bus_register(mmio_bus, addr, VIRTIO_MMIO_SIZE, &virtio_mmio_bus_ops, virtio_balloon_mmio(b));
 *   virtio_mmio_set_irq(virtio_balloon_mmio(b), &line);
 *   (optional) virtio_mmio_add_notify_fd(virtio_balloon_mmio(b), loop, ioeventfd, VIRTIO_MMIO_ALL_QUEUES);
 */
#ifndef KVRUN_VIRTIO_BALLOON_BALLOON_H
#define KVRUN_VIRTIO_BALLOON_BALLOON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "virtio/mmio.h"
#include "vmm/event-loop.h"
#include "vmm/snapshot.h"

/* Feature bits (5.5.3). */
#define VIRTIO_BALLOON_F_MUST_TELL_HOST 0
#define VIRTIO_BALLOON_F_STATS_VQ 1
#define VIRTIO_BALLOON_F_DEFLATE_ON_OOM 2
#define VIRTIO_BALLOON_F_FREE_PAGE_HINT 3
#define VIRTIO_BALLOON_F_PAGE_POISON 4
#define VIRTIO_BALLOON_F_PAGE_REPORTING 5

/* Balloon pages are 4 KiB whatever the guest's page size (5.5.6). */
#define VIRTIO_BALLOON_PFN_SHIFT 12

/* Statistics tags (5.5.6.3) kept by the device; others are ignored. */
#define VIRTIO_BALLOON_S_SWAP_IN 0
#define VIRTIO_BALLOON_S_SWAP_OUT 1
#define VIRTIO_BALLOON_S_MAJFLT 2
#define VIRTIO_BALLOON_S_MINFLT 3
#define VIRTIO_BALLOON_S_MEMFREE 4
#define VIRTIO_BALLOON_S_MEMTOT 5
#define VIRTIO_BALLOON_S_AVAIL 6
#define VIRTIO_BALLOON_S_CACHES 7
#define VIRTIO_BALLOON_S_HTLB_PGALLOC 8
#define VIRTIO_BALLOON_S_HTLB_PGFAIL 9
#define VIRTIO_BALLOON_S_NR 10

struct virtio_balloon;

struct virtio_balloon_opts {
	/* Give back guest RAM [gpa, gpa + len), which the device checked to
	 * be RAM of one region; returns 0 or a negative errno (counted, the
	 * request is still used). NULL: guest_mem_discard(). For tests and
	 * fuzzing: record instead of madvise. */
	int (*discard)(void *opaque, uint64_t gpa, uint64_t len);
	void *opaque;
};

/* What the device did since it was made (a reset keeps these). */
struct virtio_balloon_counters {
	uint32_t target; /* num_pages: the balloon size asked for, 4 KiB pages */
	uint32_t actual; /* the size the driver says it has */
	uint64_t reported_bytes; /* free page reports given back */
	uint64_t inflated_pages, deflated_pages;
	uint64_t skipped_pfns; /* inflate entries outside guest RAM, or past a buffer's 4096 */
	uint64_t discard_errors; /* ranges the discard function refused */
};

struct virtio_balloon_stats {
	uint64_t updated_ns; /* CLOCK_MONOTONIC of the last buffer, 0: none yet */
	uint32_t have; /* bit per tag the guest supplied */
	uint64_t val[VIRTIO_BALLOON_S_NR];
};

/* Make the device (offering STATS_VQ, DEFLATE_ON_OOM, PAGE_REPORTING,
 * RING_EVENT_IDX, INDIRECT_DESC). mem and loop are borrowed and must
 * outlive it; opts (copied) may be NULL. Returns 0 and the device (the
 * caller's), or -errno with err_set() context. */
int virtio_balloon_new(const struct guest_mem *mem, struct event_loop *loop, const struct virtio_balloon_opts *opts,
                       struct virtio_balloon **ret);

struct virtio_mmio *virtio_balloon_mmio(struct virtio_balloon *b);

/* Ask the guest to hold pages (4 KiB each) in the balloon: num_pages is
 * set and a config change interrupt sent. Any thread. */
void virtio_balloon_set_target(struct virtio_balloon *b, uint32_t pages);

void virtio_balloon_counters(struct virtio_balloon *b, struct virtio_balloon_counters *ret);

/* The guest's last statistics (nothing set until it sent some). */
void virtio_balloon_stats(struct virtio_balloon *b, struct virtio_balloon_stats *ret);
/* Ask the guest for fresh statistics: the buffer it left with the device
 * is given back, and it answers with a new one. -EAGAIN when the device
 * holds none (not running, STATS_VQ not negotiated, or a request already
 * out). Any thread. */
int virtio_balloon_request_stats(struct virtio_balloon *b);

/* Stop (true) or resume (false) serving the queues: when pausing returns
 * no queue is touched until resumed. Around a snapshot save. */
void virtio_balloon_pause(struct virtio_balloon *b, bool paused);

/* struct snapshot_dev functions (opaque: the struct virtio_balloon): the
 * target, the driver's actual size, the statistics buffer the device
 * holds, then the transport. */
int virtio_balloon_state_save(void *opaque, struct snap_buf *out);
int virtio_balloon_state_load(void *opaque, const void *data, size_t len);

/* Free the device. Call with the loop stopped or from its thread. Accepts
 * NULL. */
void virtio_balloon_free(struct virtio_balloon *b);

#endif
