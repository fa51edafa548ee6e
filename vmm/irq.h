/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What devices need from the VM for notifications, without knowing KVM:
 * an interrupt line they can raise (irqfd in KVM, or a callback in tests),
 * and a doorbell eventfd bound to a guest MMIO/PIO write (ioeventfd).
 */
#ifndef KVRUN_VMM_IRQ_H
#define KVRUN_VMM_IRQ_H

#include <stdbool.h>
#include <stdint.h>

struct vm;

/* Edge interrupt line. With KVM, fd is an eventfd bound to gsi with
 * KVM_IRQFD and irq_line_raise() writes to it (safe from any thread). */
struct irq_line {
	int fd;
	uint32_t gsi;
	void (*raise_cb)(void *opaque); /* used instead of fd when fd < 0 (tests) */
	void *opaque;
};

int irq_line_raise(struct irq_line *line);

/* Allocate a GSI (IOAPIC pin on x86) and bind a new eventfd to it. */
int vm_irq_line_new(struct vm *vm, struct irq_line *ret);
void vm_irq_line_free(struct vm *vm, struct irq_line *line);

/* Bind a new eventfd that KVM signals when the guest writes to addr (MMIO
 * when pio is false) of the given length, matching datamatch when
 * use_datamatch. Returns the eventfd (caller owns it) or -errno. */
/* Unbind: vm_ioeventfd_del() takes the same arguments as the add, and does
 * not close fd (the caller owns it). */
int vm_ioeventfd_add(struct vm *vm, uint64_t addr, uint32_t len, bool pio, bool use_datamatch, uint64_t datamatch);
int vm_ioeventfd_del(struct vm *vm, int fd, uint64_t addr, uint32_t len, bool pio, bool use_datamatch,
                     uint64_t datamatch);

/* Set the level of a level-triggered line (the UART's IRQ 4) with
 * KVM_IRQ_LINE. Returns 0 or -errno. */
int vm_irq_set_level(struct vm *vm, uint32_t gsi, bool level);

#endif
