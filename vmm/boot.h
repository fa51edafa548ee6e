/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Booting Linux on x86-64: an uncompressed ELF vmlinux, or a bzImage through
 * the 64-bit boot protocol, entered directly in long mode with boot_params
 * (zero page), identity page tables, a GDT, and an MP table.
 *
 * Guest physical layout below 1 MiB:
 *   0x00500  GDT                      0x07000  boot_params
 *   0x09000  PML4, 0x0a000 PDPT       0x20000  command line (64 KiB)
 *   0x30000  page directories         0x9fc00  MP table (1 KiB, reserved)
 *   0xe0000  ACPI tables (reserved, only with use_acpi)
 *   0xf0000  reserved (BIOS area)
 * The kernel loads at its p_paddr (ELF) or 1 MiB (bzImage); the initrd goes
 * page-aligned as high as possible below min(initrd_addr_max, end of low RAM).
 */
#ifndef KVRUN_VMM_BOOT_H
#define KVRUN_VMM_BOOT_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm/acpi.h"
#include "vmm/mem.h"

struct vm;
struct boot_params;

#define BOOT_GDT_ADDR 0x500ULL
#define BOOT_PARAMS_ADDR 0x7000ULL
#define BOOT_PML4_ADDR 0x9000ULL
#define BOOT_PDPT_ADDR 0xa000ULL
#define BOOT_CMDLINE_ADDR 0x20000ULL
#define BOOT_CMDLINE_MAX 0x10000ULL
#define BOOT_PD_ADDR 0x30000ULL
#define BOOT_PD_END 0x9f000ULL
#define BOOT_MPTABLE_ADDR 0x9fc00ULL
#define BOOT_LOW_RAM_END 0xa0000ULL
#define BOOT_ACPI_START 0xe0000ULL
#define BOOT_ACPI_END 0xf0000ULL
#define BOOT_BIOS_START 0xf0000ULL
#define BOOT_HIGH_START 0x100000ULL /* 1 MiB: kernels load at or above */

/* Linux x86 COMMAND_LINE_SIZE (with the NUL), for an ELF kernel. */
#define BOOT_ELF_CMDLINE_SIZE 2048
/* initrd_addr_max for an ELF kernel (no setup header to say otherwise). */
#define BOOT_ELF_INITRD_ADDR_MAX 0x7fffffffULL

/* Most virtio-mmio devices a boot_config can describe. */
#define BOOT_MAX_VIRTIO_MMIO ACPI_MAX_VIRTIO_MMIO

struct boot_config {
	const char *kernel_path; /* vmlinux (ELF) or bzImage */
	const char *initrd_path; /* NULL: none */
	const char *cmdline; /* NULL: empty */
	/* Firmware tables: the MP table is always written (kernels without
	 * ACPI need it). use_acpi adds ACPI tables at BOOT_ACPI_START
	 * (vmm/acpi.c), points boot_params.acpi_rsdp_addr at them and masks
	 * LINT0 on every vCPU. Without use_acpi boot_linux() appends
	 * " acpi=off" to the command line (unless it already has an "acpi="
	 * word), so a kernel with ACPI does not scan for tables that are not
	 * there. */
	bool use_acpi;
	/* With use_acpi: describe the 16550 at 0x3f8 (IRQ 4) in the DSDT. Set
	 * it when the VM has the serial port (serial_create()). */
	bool acpi_com1;
	/* The VM's virtio-mmio devices (nr_virtio <= BOOT_MAX_VIRTIO_MMIO),
	 * borrowed for the call. With use_acpi they are described in the
	 * DSDT; without, boot_linux() appends one
	 * "virtio_mmio.device=<size>@<base>:<gsi>" per device to the command
	 * line. */
	const struct acpi_virtio_mmio *virtio;
	unsigned int nr_virtio;
};

/* Load the kernel and initrd into vm's RAM, write boot_params, the command
 * line, page tables, GDT, MP table and (use_acpi) ACPI tables, and set the
 * boot vCPU's registers. Errors name the file at fault (err_msg()). */
int boot_linux(struct vm *vm, const struct boot_config *cfg);

/* --- Pieces of boot_linux(), exposed for unit tests --- */

struct kernel_image {
	uint64_t entry; /* 64-bit entry point (GPA) */
	uint64_t start, end; /* GPA range the kernel occupies */
	uint64_t initrd_addr_max; /* highest byte address an initrd may use */
	uint32_t cmdline_size; /* bytes including the NUL */
	bool bzimage;
};

/* Load the kernel file fd (size bytes, named path in errors) into m. For a
 * bzImage the setup header is copied into *bp (zeroed by the caller).
 * Returns 0, -ENOEXEC for a file that is neither format or is malformed,
 * -ENOSPC when it does not fit in RAM, or -errno from reading. */
int boot_load_kernel(const struct guest_mem *m, int fd, uint64_t size, const char *path, struct boot_params *bp,
                     struct kernel_image *ret);

/* Place an initrd of size bytes from fd: page-aligned, as high as possible
 * below min(img->initrd_addr_max + 1, end of low RAM), above img->end.
 * *ret_addr gets its GPA. -ENOSPC when it does not fit. */
int boot_load_initrd(const struct guest_mem *m, int fd, uint64_t size, const char *path, const struct kernel_image *img,
                     uint64_t *ret_addr);

/* Fill the non-header parts of boot_params: loader fields, command line
 * pointer, ramdisk, e820 from m's regions. */
void boot_params_fill(struct boot_params *bp, const struct guest_mem *m, uint64_t initrd_addr, uint64_t initrd_size,
                      bool use_acpi);

/* Identity-map [0, max(4 GiB, end of RAM)) with 2 MiB pages; returns CR3. */
int boot_page_tables(const struct guest_mem *m, uint64_t *ret_cr3);

/* The command line boot_linux() gives the kernel: cfg->cmdline plus the
 * virtio-mmio fragments (without use_acpi) and " acpi=off" (without
 * use_acpi, unless cfg->cmdline has an "acpi=" word). Returns a malloc'd
 * string in *ret, or -ENOMEM / -EINVAL (too many devices). */
int boot_cmdline_compose(const struct boot_config *cfg, char **ret);

/* Build the ACPI tables for cfg and vm->ncpus at BOOT_ACPI_START in m, and
 * return the RSDP's GPA in *ret_rsdp. */
int boot_acpi_tables(const struct guest_mem *m, const struct boot_config *cfg, unsigned int ncpus, uint64_t *ret_rsdp);

/* GDT at BOOT_GDT_ADDR: 0x10 = 64-bit code, 0x18 = data, 0x20 = TSS. */
int boot_gdt(const struct guest_mem *m);

#endif
