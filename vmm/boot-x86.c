/* SPDX-License-Identifier: Apache-2.0 */
/* boot_params, page tables, GDT and registers for a 64-bit Linux entry. */
#include <asm/bootparam.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "vmm/boot.h"
#include "vmm/mptable.h"
#include "vmm/vcpu.h"
#include "vmm/vm.h"

#define E820_TYPE_RAM 1
#define E820_TYPE_RESERVED 2

#define PTE_PRESENT 0x1ULL
#define PTE_RW 0x2ULL
#define PTE_PS 0x80ULL
#define SIZE_1G (1ULL << 30)
#define SIZE_2M (1ULL << 21)
#define SIZE_4G (1ULL << 32)

#define X86_CR0_PE 0x1ULL
#define X86_CR0_MP 0x2ULL
#define X86_CR0_ET 0x10ULL
#define X86_CR0_NE 0x20ULL
#define X86_CR0_WP 0x10000ULL
#define X86_CR0_AM 0x40000ULL
#define X86_CR0_PG 0x80000000ULL
#define X86_CR4_PAE 0x20ULL
#define EFER_LME 0x100ULL
#define EFER_LMA 0x400ULL

#define GDT_CODE_SEL 0x10
#define GDT_DATA_SEL 0x18
#define GDT_TSS_SEL 0x20
#define GDT_ENTRIES 6 /* null, null, code, data, TSS (16 bytes) */

static void e820_add(struct boot_params *bp, uint64_t addr, uint64_t size, uint32_t type)
{
	if (bp->e820_entries >= E820_MAX_ENTRIES_ZEROPAGE)
		return;
	bp->e820_table[bp->e820_entries++] = (struct boot_e820_entry){.addr = addr, .size = size, .type = type};
}

void boot_params_fill(struct boot_params *bp, const struct guest_mem *m, uint64_t initrd_addr, uint64_t initrd_size,
                      bool use_acpi)
{
	bp->hdr.boot_flag = 0xaa55;
	bp->hdr.header = 0x53726448; /* "HdrS" */
	if (bp->hdr.version == 0)
		bp->hdr.version = 0x20f; /* ELF kernel: no header of its own */
	bp->hdr.type_of_loader = 0xff;
	bp->hdr.loadflags |= LOADED_HIGH | CAN_USE_HEAP;
	bp->hdr.heap_end_ptr = 0xfe00;
	if (bp->hdr.kernel_alignment == 0)
		bp->hdr.kernel_alignment = 0x1000000;
	bp->hdr.cmd_line_ptr = (uint32_t)BOOT_CMDLINE_ADDR;
	bp->ext_cmd_line_ptr = 0;
	bp->hdr.ramdisk_image = (uint32_t)initrd_addr;
	bp->hdr.ramdisk_size = (uint32_t)initrd_size;
	bp->ext_ramdisk_image = (uint32_t)(initrd_addr >> 32);
	bp->ext_ramdisk_size = (uint32_t)(initrd_size >> 32);

	bp->e820_entries = 0;
	for (unsigned int i = 0; i < m->nr_regions; i++) {
		const struct guest_mem_region *r = &m->regions[i];

		if (r->gpa != 0) {
			e820_add(bp, r->gpa, r->size, E820_TYPE_RAM);
			continue;
		}
		/* Low region: a hole for the MP table, ACPI and BIOS areas. */
		e820_add(bp, 0, BOOT_MPTABLE_ADDR, E820_TYPE_RAM);
		e820_add(bp, BOOT_MPTABLE_ADDR, BOOT_LOW_RAM_END - BOOT_MPTABLE_ADDR, E820_TYPE_RESERVED);
		if (use_acpi)
			e820_add(bp, BOOT_ACPI_START, BOOT_ACPI_END - BOOT_ACPI_START, E820_TYPE_RESERVED);
		e820_add(bp, BOOT_BIOS_START, BOOT_HIGH_START - BOOT_BIOS_START, E820_TYPE_RESERVED);
		if (r->size > BOOT_HIGH_START)
			e820_add(bp, BOOT_HIGH_START, r->size - BOOT_HIGH_START, E820_TYPE_RAM);
	}
}

int boot_page_tables(const struct guest_mem *m, uint64_t *ret_cr3)
{
	uint64_t end = SIZE_4G, *pml4, *pdpt, *pd;
	uint64_t npd;

	for (unsigned int i = 0; i < m->nr_regions; i++)
		if (m->regions[i].gpa + m->regions[i].size > end)
			end = m->regions[i].gpa + m->regions[i].size;
	npd = (end + SIZE_1G - 1) / SIZE_1G;
	/* Page directories fit below the MP table; RAM beyond what they map
	 * is not needed to boot (Linux builds its own page tables). */
	if (npd > (BOOT_PD_END - BOOT_PD_ADDR) / 4096)
		npd = (BOOT_PD_END - BOOT_PD_ADDR) / 4096;
	pml4 = guest_mem_ptr(m, BOOT_PML4_ADDR, 4096);
	pdpt = guest_mem_ptr(m, BOOT_PDPT_ADDR, 4096);
	pd = guest_mem_ptr(m, BOOT_PD_ADDR, npd * 4096);
	if (!pml4 || !pdpt || !pd)
		return -EFAULT;
	/* Only the entries used are written; the rest of RAM stays untouched
	 * (and zero). */
	pml4[0] = BOOT_PDPT_ADDR | PTE_PRESENT | PTE_RW;
	for (uint64_t i = 0; i < npd; i++) {
		pdpt[i] = (BOOT_PD_ADDR + i * 4096) | PTE_PRESENT | PTE_RW;
		for (uint64_t j = 0; j < 512; j++)
			pd[i * 512 + j] = (i * SIZE_1G + j * SIZE_2M) | PTE_PRESENT | PTE_RW | PTE_PS;
	}
	*ret_cr3 = BOOT_PML4_ADDR;
	return 0;
}

int boot_gdt(const struct guest_mem *m)
{
	uint64_t *gdt = guest_mem_ptr(m, BOOT_GDT_ADDR, GDT_ENTRIES * 8);

	if (!gdt)
		return -EFAULT;
	gdt[0] = 0;
	gdt[1] = 0;
	gdt[GDT_CODE_SEL / 8] = 0x00af9b000000ffffULL; /* 64-bit code, DPL 0 */
	gdt[GDT_DATA_SEL / 8] = 0x00cf93000000ffffULL; /* data, 4 GiB, DPL 0 */
	gdt[GDT_TSS_SEL / 8] = 0x00008b0000000fffULL; /* busy TSS at 0 */
	gdt[GDT_TSS_SEL / 8 + 1] = 0;
	return 0;
}

static void seg_from(struct kvm_segment *s, uint16_t sel, uint8_t type, bool code)
{
	*s = (struct kvm_segment){
	    .base = 0,
	    .limit = 0xffffffff,
	    .selector = sel,
	    .type = type,
	    .present = 1,
	    .dpl = 0,
	    .db = code ? 0 : 1,
	    .s = 1,
	    .l = code ? 1 : 0,
	    .g = 1,
	};
}

static int boot_set_regs(struct vcpu *v, uint64_t entry, uint64_t cr3)
{
	struct kvm_sregs s;
	struct kvm_regs r = {.rflags = 2, .rip = entry, .rsi = BOOT_PARAMS_ADDR};

	if (ioctl(v->fd, KVM_GET_SREGS, &s) < 0)
		return err_setsys(-errno, "KVM_GET_SREGS");
	seg_from(&s.cs, GDT_CODE_SEL, 0xb, true);
	seg_from(&s.ds, GDT_DATA_SEL, 0x3, false);
	s.es = s.fs = s.gs = s.ss = s.ds;
	s.tr = (struct kvm_segment){.selector = GDT_TSS_SEL, .limit = 0xfff, .type = 0xb, .present = 1, .s = 0, .g = 0};
	s.ldt = (struct kvm_segment){.type = 0x2, .present = 1, .unusable = 1};
	s.gdt.base = BOOT_GDT_ADDR;
	s.gdt.limit = GDT_ENTRIES * 8 - 1;
	s.idt.base = 0;
	s.idt.limit = 0;
	s.cr0 = X86_CR0_PE | X86_CR0_MP | X86_CR0_ET | X86_CR0_NE | X86_CR0_WP | X86_CR0_AM | X86_CR0_PG;
	s.cr3 = cr3;
	s.cr4 = X86_CR4_PAE;
	s.efer = EFER_LME | EFER_LMA;
	if (ioctl(v->fd, KVM_SET_SREGS, &s) < 0)
		return err_setsys(-errno, "KVM_SET_SREGS");
	if (ioctl(v->fd, KVM_SET_REGS, &r) < 0)
		return err_setsys(-errno, "KVM_SET_REGS");
	return 0;
}

static int open_sized(const char *path, const char *what, uint64_t *ret_size)
{
	struct stat st;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_setsys(-errno, "cannot open %s %s", what, path);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return err_set(-EINVAL, "%s %s is not a regular file", what, path);
	}
	*ret_size = (uint64_t)st.st_size;
	return fd;
}

static int boot_load_files(struct vm *vm, const struct boot_config *cfg, struct boot_params *bp,
                           struct kernel_image *img)
{
	_cleanup_close_ int kfd = -1, ifd = -1;
	uint64_t ksize, isize = 0, iaddr = 0;
	int r;

	kfd = open_sized(cfg->kernel_path, "kernel", &ksize);
	if (kfd < 0)
		return kfd;
	r = boot_load_kernel(&vm->mem, kfd, ksize, cfg->kernel_path, bp, img);
	if (r < 0)
		return r;
	if (cfg->initrd_path) {
		ifd = open_sized(cfg->initrd_path, "initrd", &isize);
		if (ifd < 0)
			return ifd;
		r = boot_load_initrd(&vm->mem, ifd, isize, cfg->initrd_path, img, &iaddr);
		if (r < 0)
			return r;
	}
	boot_params_fill(bp, &vm->mem, iaddr, isize, cfg->use_acpi);
	return 0;
}

static int boot_write_cmdline(struct vm *vm, const char *cmdline, uint32_t max)
{
	size_t len = cmdline ? strlen(cmdline) : 0;

	if (max > BOOT_CMDLINE_MAX)
		max = BOOT_CMDLINE_MAX;
	if (len + 1 > max)
		return err_set(-E2BIG, "kernel command line is %zu bytes, the kernel takes at most %u", len, max - 1);
	return guest_mem_write(&vm->mem, BOOT_CMDLINE_ADDR, cmdline ? cmdline : "", len + 1);
}

/* ACPI tables, and LINT0 masked on every vCPU. A hardware-reduced Linux
 * never programs the 8259, which KVM creates with every input unmasked and
 * to which it routes GSIs 0-15 besides the IOAPIC; on the boot CPU Linux
 * keeps LINT0 as it finds it (setup_local_APIC()). With LINT0 in ExtINT
 * mode the UART's IRQ 4 can then reach the CPU from the PIC with vector 4
 * (#OF): the test guest (test=acpi) gets exception 4 that way, and an early
 * ACPI boot of kvrun's kernel did too. kvrun's kernel as it is now also
 * booted without the mask, once; it stays because it costs nothing and a
 * guest that enables interrupts before it programs LVT0 needs it. */
static int boot_acpi(struct vm *vm, const struct boot_config *cfg, struct boot_params *bp)
{
	uint64_t rsdp;
	int r;

	r = boot_acpi_tables(&vm->mem, cfg, vm->ncpus, &rsdp);
	if (r < 0)
		return r;
	bp->acpi_rsdp_addr = rsdp;
	for (unsigned int i = 0; i < vm->ncpus; i++) {
		r = vcpu_mask_lint0(vm->vcpus[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

int boot_linux(struct vm *vm, const struct boot_config *cfg)
{
	struct boot_params *bp = guest_mem_ptr(&vm->mem, BOOT_PARAMS_ADDR, sizeof(*bp));
	_cleanup_free_ char *cmdline = NULL;
	struct kernel_image img;
	uint64_t cr3;
	int r;

	if (!bp || vm->mem.regions[0].size < BOOT_HIGH_START)
		return err_set(-EINVAL, "guest RAM too small to boot Linux");
	r = boot_load_files(vm, cfg, bp, &img);
	if (r < 0)
		return r;
	/* An ELF kernel has no header to say these: report what was used. */
	if (!bp->hdr.cmdline_size)
		bp->hdr.cmdline_size = img.cmdline_size - 1;
	if (!bp->hdr.initrd_addr_max)
		bp->hdr.initrd_addr_max = (uint32_t)img.initrd_addr_max;
	r = boot_cmdline_compose(cfg, &cmdline);
	if (r < 0)
		return r;
	r = boot_write_cmdline(vm, cmdline, img.cmdline_size);
	if (r < 0)
		return r;
	r = boot_page_tables(&vm->mem, &cr3);
	if (r >= 0)
		r = boot_gdt(&vm->mem);
	if (r < 0)
		return err_setsys(r, "writing boot page tables");
	/* Firmware tables. The MP table is always there; ACPI tables (RSDP
	 * pointer in bp->acpi_rsdp_addr, tables in [BOOT_ACPI_START,
	 * BOOT_ACPI_END), reserved in the e820 map by boot_params_fill) are
	 * added when cfg->use_acpi. */
	r = mptable_write(&vm->mem, BOOT_MPTABLE_ADDR, vm->ncpus);
	if (r < 0)
		return err_setsys(r, "writing the MP table for %u vCPUs", vm->ncpus);
	if (cfg->use_acpi) {
		r = boot_acpi(vm, cfg, bp);
		if (r < 0)
			return r;
	}
	return boot_set_regs(vm->vcpus[0], img.entry, cr3);
}
