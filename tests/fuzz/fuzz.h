/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by the libFuzzer targets of tests/fuzz/ (docs/testing.md): a reader
 * that turns the fuzzer's bytes into values (never failing: past the end it
 * reads zeros), and a fake guest that drives a virtio-mmio device with a
 * program taken from those bytes: register writes and reads, guest memory
 * writes, ring layouts, descriptors, kicks, resets.
 *
 * Each target defines LLVMFuzzerTestOneInput() and builds everything it
 * uses from that one input, so an input replays the same way.
 */
#ifndef KVRUN_TESTS_FUZZ_H
#define KVRUN_TESTS_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "virtio/mmio.h"
#include "vmm/event-loop.h"

struct virtio_blk;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fz {
	const uint8_t *p;
	size_t n;
};

static inline uint8_t fz_u8(struct fz *f)
{
	if (!f->n)
		return 0;
	f->n--;
	return *f->p++;
}

/* Little-endian; the operands are read in order (separate statements). */
static inline uint16_t fz_u16(struct fz *f)
{
	uint16_t lo = fz_u8(f);

	return (uint16_t)(lo | fz_u8(f) << 8);
}

static inline uint32_t fz_u32(struct fz *f)
{
	uint32_t lo = fz_u16(f);

	return lo | (uint32_t)fz_u16(f) << 16;
}

static inline uint64_t fz_u64(struct fz *f)
{
	uint64_t lo = fz_u32(f);

	return lo | (uint64_t)fz_u32(f) << 32;
}

/* Copy up to len bytes into dst, zeros past the end of the input; returns
 * the bytes that came from the input. */
static inline size_t fz_take(struct fz *f, void *dst, size_t len)
{
	size_t n = len < f->n ? len : f->n;

	memcpy(dst, f->p, n);
	memset((uint8_t *)dst + n, 0, len - n);
	f->p += n;
	f->n -= n;
	return n;
}

/* Guest RAM of the fake guest: exactly this many malloc'd bytes, so that
 * AddressSanitizer reports any device access past it. Queue q's rings are
 * laid out at FZ_RING(q) by the bring-up op; data goes above FZ_DATA. */
#define FZ_RAM_SIZE (256u << 10)
#define FZ_RING(q) (0x1000u + (q)*0x4000u)
#define FZ_DATA 0x28000u

struct fz_guest;

/* A device's own operations for the program (a frame from the backend,
 * a host connection...); op is the byte that chose it. */
typedef void (*fz_extra_fn)(struct fz_guest *g, struct fz *f, uint8_t op);
/* Run the device until it has nothing left to do (the event loop, or the
 * worker thread of virtio-blk). */
typedef void (*fz_settle_fn)(struct fz_guest *g);

struct fz_guest {
	uint8_t *ram;
	struct guest_mem mem;
	struct virtio_mmio *m;
	struct {
		uint16_t num, avail_idx;
		bool set_up;
	} q[VIRTIO_MMIO_MAX_QUEUES];
	fz_extra_fn extra;
	fz_settle_fn settle;
	void *opaque; /* the target's */
	int irqs;
	/* For the settle functions below. */
	struct virtio_blk *blk;
	struct event_loop *loop;
	void (*drain)(struct fz_guest *g); /* read what the device sent its host side */
};

/* fuzz-devices.c: settle functions. virtio-blk: wait until the worker took
 * every published request (g->blk); event-loop devices: dispatch g->loop
 * until idle, calling g->drain between turns. */
void fz_blk_settle(struct fz_guest *g);
void fz_loop_settle(struct fz_guest *g);

/* virtio-balloon's discard function over the fake guest (opaque: the
 * struct fz_guest): aborts on a range that is not inside its RAM (the
 * device must have checked it), else zeroes it, as madvise does to
 * anonymous RAM. */
int fz_balloon_discard(void *opaque, uint64_t gpa, uint64_t len);

/* Allocate guest RAM (zeroed). */
void fz_guest_init(struct fz_guest *g);
/* Bind the device's transport and count its interrupts. */
void fz_guest_attach(struct fz_guest *g, struct virtio_mmio *m);
void fz_guest_free(struct fz_guest *g);

/* Interpret the rest of f as a program, at most max_ops operations. */
void fz_guest_run(struct fz_guest *g, struct fz *f, unsigned int max_ops);

/* Register access as a vCPU makes it. */
uint32_t fz_reg_read(struct fz_guest *g, uint64_t off);
void fz_reg_write(struct fz_guest *g, uint64_t off, uint32_t v);
/* Negotiate features (those the device offers among want), lay out nq
 * queues of num entries at FZ_RING(q), and set DRIVER_OK. */
void fz_bringup(struct fz_guest *g, uint64_t want, unsigned int nq, uint16_t num);

#endif
