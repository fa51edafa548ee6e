/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Minimal 16550A UART (COM1, port 0x3f8, IRQ 4) for the kernel log. The
 * registers always work (Linux probes and drives it); output goes to out_fd
 * when it is >= 0 and is dropped otherwise. No input.
 */
#ifndef KVRUN_VMM_SERIAL_H
#define KVRUN_VMM_SERIAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/bus.h"

#define SERIAL_COM1_BASE 0x3f8
#define SERIAL_COM1_IRQ 4

struct serial {
	pthread_mutex_t lock;
	uint8_t ier, lcr, mcr, lsr, msr, scr, dll, dlm, fcr;
	uint8_t rbr; /* one received byte (loopback only) */
	bool thr_ipending; /* THR-empty interrupt pending */
	bool irq_level; /* last level given to set_irq */
	int out_fd; /* -1: discard output */
	char buf[256]; /* output batched to a line */
	unsigned int buf_len;
	/* Drive the interrupt line (KVM_IRQ_LINE); called with lock held. */
	void (*set_irq)(void *opaque, bool level);
	void *irq_opaque;
	/* Measurement builds (meson option phase_marks): a byte 0x1e
	 * followed by 0x40 + n is phase mark n, given to on_mark (called
	 * with lock held) instead of the output; NULL: plain output. */
	void (*on_mark)(void *opaque, uint8_t value);
	void *mark_opaque;
	bool mark_next;
};

extern const struct bus_dev_ops serial_ops;

/* Initialise s (reset state). out_fd is not owned (-1 to discard). */
void serial_init(struct serial *s, int out_fd, void (*set_irq)(void *, bool), void *irq_opaque);
/* Write out any buffered output. */
void serial_flush(struct serial *s);
void serial_destroy(struct serial *s);

struct vm;
/* Allocate a UART on the VM's PIO bus at COM1 with IRQ 4. *ret is owned by
 * the caller: serial_free() after the VM stopped. */
int serial_create(struct vm *vm, int out_fd, struct serial **ret);
void serial_free(struct serial *s);

struct snap_buf;
/* Snapshot state (registers, pending interrupt, unfinished output line).
 * opaque is the struct serial. */
int serial_state_save(void *opaque, struct snap_buf *out);
int serial_state_load(void *opaque, const void *data, size_t len);

#endif
