/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Intel MultiProcessor Specification 1.4 table: CPUs 0..ncpus-1 (APIC ids
 * equal their index, CPU 0 the BSP), one ISA bus, the IOAPIC at 0xfec00000
 * (id ncpus), I/O interrupt entries for ISA IRQs 0-15 and pins 16-23 used by
 * virtio-mmio devices, each IRQ n on pin n as KVM's default GSI routing
 * does, and LINT0 = ExtINT, LINT1 = NMI.
 */
#ifndef KVRUN_VMM_MPTABLE_H
#define KVRUN_VMM_MPTABLE_H

#include <stdint.h>

#include "vmm/mem.h"

#define MPTABLE_IOAPIC_ADDR 0xfec00000U
#define MPTABLE_LAPIC_ADDR 0xfee00000U
#define MPTABLE_MAX_SIZE 1024 /* [0x9fc00, 0xa0000) */

/* Write the floating pointer and config table at gpa. -E2BIG when ncpus
 * does not fit in MPTABLE_MAX_SIZE bytes; -EFAULT when gpa is not RAM. */
int mptable_write(const struct guest_mem *m, uint64_t gpa, unsigned int ncpus);

/* Bytes the table takes for ncpus. */
uint32_t mptable_size(unsigned int ncpus);

#endif
