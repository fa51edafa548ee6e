/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ACPI tables for a hardware-reduced x86 microVM: RSDP (v2), XSDT, FADT
 * (revision 6, HW_REDUCED_ACPI), MADT (local APICs, one IOAPIC) and a DSDT
 * whose AML describes each virtio-mmio device ("LNRO0005") and \_S5, so
 * that Linux finds its devices without virtio_mmio.device= and powers off by
 * writing SLP_TYP|SLP_EN to the sleep control register. Optionally it also
 * describes the COM1 UART (see acpi_config.com1).
 *
 * Wiring (done by the boot code):
 *  - Build the tables into guest RAM at a 16-byte-aligned GPA, for example
 *    ACPI_TABLES_GPA (0xe0000, up to ACPI_TABLES_MAX_SIZE bytes; 1-2 KiB
 *    are used for a few CPUs and devices): the RSDP is written first, so the
 *    kernel finds it both by scanning 0xe0000-0xfffff and through
 *    boot_params.acpi_rsdp_addr (offset 0x070, boot protocol >= 2.14),
 *    which the boot code should set to layout.rsdp as well.
 *  - Reserve the region in e820 (type 2, reserved: [0xe0000, 0xf0000)
 *    next to the reserved BIOS area [0xf0000, 0x100000)) so the kernel
 *    neither allocates over the tables nor refuses to map them.
 *  - Register a one-byte device at cfg.sleep_addr (ACPI_SLEEP_PORT; port I/O for
 *    ACPI_GAS_SPACE_IO, MMIO for ACPI_GAS_SPACE_MEMORY) with
 *    acpi_sleep_dev_ops, and end the VM on ACPI_SLEEP_POWER_OFF (and reset
 *    it, or end it, on ACPI_SLEEP_RESET).
 *  - Virtio-mmio GSIs are IOAPIC pins (< ACPI_IOAPIC_PINS), raised edge
 *    triggered, active high (KVM_IRQ_LINE or an irqfd).
 *  - A hardware-reduced Linux never programs the 8259, which KVM resets
 *    with every input unmasked, and KVM routes GSIs 0-15 to it as well as
 *    to the IOAPIC: mask LINT0 (LVT0 = ExtINT | masked) on every vCPU, or
 *    the PIC itself (KVM_SET_IRQCHIP, IMR 0xff), when booting with ACPI, or
 *    the UART's IRQ 4 reaches the CPU as an ExtINT with vector 4.
 *  - Set com1 when the 16550 at 0x3f8 is present: without a device that
 *    claims IRQ 4, a hardware-reduced Linux leaves it unrouted and the
 *    console tty cannot be opened.
 */
#ifndef KVRUN_VMM_ACPI_H
#define KVRUN_VMM_ACPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/bus.h"

#define ACPI_TABLES_GPA 0xe0000ULL /* start of the BIOS area Linux scans */
#define ACPI_TABLES_MAX_SIZE 0x10000ULL /* 0xe0000-0xeffff; 0xf0000 up is the BIOS area */
#define ACPI_SLEEP_PORT 0x600 /* suggested I/O port of the sleep register */
#define ACPI_LAPIC_ADDR 0xfee00000U
#define ACPI_IOAPIC_ADDR 0xfec00000U
#define ACPI_IOAPIC_PINS 24 /* KVM's in-kernel IOAPIC */
#define ACPI_MAX_CPUS 254 /* xAPIC ids 0..254 (0xff is broadcast) */
#define ACPI_MAX_VIRTIO_MMIO 64

/* Generic Address Structure address space ids. */
#define ACPI_GAS_SPACE_MEMORY 0
#define ACPI_GAS_SPACE_IO 1

/* Sleep control register bits (ACPI 6.x, 4.8.3.7) and the S5 type the DSDT
 * advertises; Linux writes (ACPI_S5_SLP_TYP << 2) | ACPI_SLP_EN = 0x34. */
#define ACPI_SLP_TYP_SHIFT 2
#define ACPI_SLP_TYP_MASK 0x1c
#define ACPI_SLP_EN 0x20
#define ACPI_S5_SLP_TYP 5
/* Written to the same register by an ACPI reset (reboot=acpi, the default
 * reboot method when the FADT has RESET_REG_SUP). It has no SLP_EN bit, so
 * it cannot be mistaken for a sleep request. */
#define ACPI_RESET_VALUE 0x01

struct acpi_virtio_mmio {
	uint64_t base; /* GPA, below 4 GiB (Memory32Fixed) */
	uint64_t size; /* bytes, usually 0x1000 */
	uint32_t gsi; /* IOAPIC pin */
};

struct acpi_config {
	unsigned int ncpus; /* 1..ACPI_MAX_CPUS */
	const uint32_t *apic_ids; /* ncpus local APIC ids, or NULL for 0..ncpus-1 */
	const struct acpi_virtio_mmio *virtio;
	unsigned int nr_virtio; /* 0..ACPI_MAX_VIRTIO_MMIO */
	uint8_t sleep_space; /* ACPI_GAS_SPACE_IO or ACPI_GAS_SPACE_MEMORY */
	uint64_t sleep_addr; /* one byte: sleep control and sleep status */
	bool reset_reg; /* also describe RESET_REG at sleep_addr */
	bool cmos_rtc; /* the VMM emulates the CMOS clock at 0x70/0x71 (else FADT says none) */
	/* Describe the 16550 UART at 0x3f8, IRQ 4 (Device COM1, PNP0501). With
	 * hardware-reduced ACPI Linux routes no ISA IRQ by itself, so the
	 * console UART's IRQ 4 works only when a device claims it. */
	bool com1;
	/* Add an ISA IRQ0 -> GSI 2 override. Only right when the VMM routes the
	 * PIT's GSI 0 to IOAPIC pin 2 (as QEMU does); KVM's default routing is
	 * the identity. A hardware-reduced Linux guest does not use the PIT. */
	bool irq0_to_gsi2;
};

/* Where acpi_build_tables() put each table (GPAs) and how much it used. */
struct acpi_layout {
	uint64_t rsdp, xsdt, fadt, madt, dsdt;
	size_t size;
};

/*
 * Build every table into buf (len bytes), which the guest will see at
 * guest-physical address gpa (16-byte aligned). The RSDP is at offset 0, so
 * layout.rsdp == gpa. Pointers inside the tables are GPAs. Pure: touches
 * nothing but buf and *ret_layout (written only on success).
 * Returns 0; -EINVAL for a bad config (no CPUs, too many, an APIC id > 254,
 * a device above 4 GiB or with a GSI >= ACPI_IOAPIC_PINS, an unaligned gpa,
 * a buffer whose GPA range wraps past 2^64),
 * -ENOSPC when buf is too small. Records a message with err_set().
 */
int acpi_build_tables(const struct acpi_config *cfg, uint64_t gpa, void *buf, size_t len,
                      struct acpi_layout *ret_layout);

/* Sum of len bytes modulo 256; an ACPI table is valid when this is 0. */
uint8_t acpi_checksum(const void *p, size_t len);

/* Encode an AML PkgLength for a package whose contents after the PkgLength
 * are body bytes. Writes 1-4 bytes to out and returns how many, or 0 when
 * the total does not fit in 28 bits. */
size_t acpi_aml_pkglen(uint8_t out[4], size_t body);

enum acpi_sleep_event {
	ACPI_SLEEP_NONE = 0, /* ignore (status clears, other sleep states) */
	ACPI_SLEEP_POWER_OFF = 1, /* SLP_EN with SLP_TYP == S5 */
	ACPI_SLEEP_RESET = 2, /* ACPI_RESET_VALUE through RESET_REG */
};

/* Decode one byte the guest wrote to the sleep control register. */
enum acpi_sleep_event acpi_sleep_reg_write(uint8_t value);

/* The sleep register as a bus device: register it at cfg.sleep_addr with
 * length 1 and a struct acpi_sleep_dev as opaque. Reads return 0 (never
 * "woken"); writes call event() for anything but ACPI_SLEEP_NONE, on the
 * vCPU thread that wrote. */
struct acpi_sleep_dev {
	void (*event)(void *opaque, enum acpi_sleep_event ev);
	void *opaque;
};

extern const struct bus_dev_ops acpi_sleep_dev_ops;

#endif
