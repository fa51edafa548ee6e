/* SPDX-License-Identifier: Apache-2.0 */
/* Kernel loaders, boot_params/e820, page tables, GDT and MP table on a
 * plain guest_mem (no KVM). */
#include <asm/bootparam.h>
#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tap.h"
#include "vmm/boot.h"
#include "vmm/mptable.h"

#define MIB (1ULL << 20)

static int memfd_with(const void *data, size_t len)
{
	int fd = memfd_create("kernel", 0);

	if (fd < 0 || write(fd, data, len) != (ssize_t)len)
		return -1;
	return fd;
}

/* ELF with one PT_LOAD of code at paddr (filesz bytes, memsz total). */
static size_t make_elf(uint8_t *buf, size_t cap, uint64_t paddr, uint64_t filesz, uint64_t memsz, uint64_t entry)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
	Elf64_Phdr *ph = (Elf64_Phdr *)(buf + sizeof(*eh));
	size_t off = 0x1000;

	memset(buf, 0, cap);
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_EXEC;
	eh->e_machine = EM_X86_64;
	eh->e_entry = entry;
	eh->e_phoff = sizeof(*eh);
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 1;
	ph->p_type = PT_LOAD;
	ph->p_offset = off;
	ph->p_paddr = ph->p_vaddr = paddr;
	ph->p_filesz = filesz;
	ph->p_memsz = memsz;
	for (uint64_t i = 0; i < filesz && off + i < cap; i++)
		buf[off + i] = (uint8_t)(i * 7 + 1);
	return off + filesz;
}

static int load(struct guest_mem *m, const void *file, size_t len, struct boot_params *bp, struct kernel_image *img)
{
	int fd = memfd_with(file, len);
	int r = boot_load_kernel(m, fd, len, "test-kernel", bp, img);

	close(fd);
	return r;
}

static uint8_t filebuf[8 * MIB];

TEST(elf_loads_segments)
{
	struct guest_mem m;
	struct boot_params bp = {0};
	struct kernel_image img;
	size_t len;
	uint8_t *p;

	guest_mem_init(&m, 64 * MIB);
	len = make_elf(filebuf, sizeof(filebuf), 16 * MIB, 0x3000, 0x5000, 16 * MIB + 0x10);
	is_int(load(&m, filebuf, len, &bp, &img), 0);
	is_int(img.entry, 16 * MIB + 0x10);
	is_int(img.start, 16 * MIB);
	is_int(img.end, 16 * MIB + 0x5000);
	ok(!img.bzimage, "ELF detected");
	p = guest_mem_ptr(&m, 16 * MIB, 0x5000);
	ok(p && memcmp(p, filebuf + 0x1000, 0x3000) == 0, "segment bytes copied");
	ok(p && p[0x3000] == 0 && p[0x4fff] == 0, "bss is zero");
	guest_mem_destroy(&m);
}

TEST(elf_rejects_bad_input)
{
	struct guest_mem m;
	struct boot_params bp = {0};
	struct kernel_image img;
	size_t len;
	Elf64_Ehdr *eh = (Elf64_Ehdr *)filebuf;
	Elf64_Phdr *ph = (Elf64_Phdr *)(filebuf + sizeof(*eh));

	guest_mem_init(&m, 64 * MIB);
	len = make_elf(filebuf, sizeof(filebuf), 16 * MIB, 0x3000, 0x5000, 16 * MIB);
	/* Truncated: the segment runs past the end of the file. */
	is_int(load(&m, filebuf, len - 1, &bp, &img), -ENOEXEC);
	is_int(load(&m, filebuf, 40, &bp, &img), -ENOEXEC);
	is_int(load(&m, filebuf, 100, &bp, &img), -ENOEXEC);
	ph->p_filesz = 0x6000;
	is_int(load(&m, filebuf, sizeof(filebuf), &bp, &img), -ENOEXEC);
	len = make_elf(filebuf, sizeof(filebuf), 0x7000, 0x100, 0x100, 0x7000);
	is_int(load(&m, filebuf, len, &bp, &img), -ENOEXEC); /* over boot_params */
	len = make_elf(filebuf, sizeof(filebuf), 63 * MIB, 0x1000, 2 * MIB, 63 * MIB);
	is_int(load(&m, filebuf, len, &bp, &img), -ENOSPC); /* past RAM */
	len = make_elf(filebuf, sizeof(filebuf), UINT64_MAX - 0xfff, 0x100, 0x2000, 0);
	is_int(load(&m, filebuf, len, &bp, &img), -ENOSPC); /* wraps */
	len = make_elf(filebuf, sizeof(filebuf), 16 * MIB, 0x100, 0x100, 32 * MIB);
	is_int(load(&m, filebuf, len, &bp, &img), -ENOEXEC); /* entry outside */
	len = make_elf(filebuf, sizeof(filebuf), 16 * MIB, 0x100, 0x100, 16 * MIB);
	eh->e_machine = EM_AARCH64;
	is_int(load(&m, filebuf, len, &bp, &img), -ENOEXEC);
	eh->e_machine = EM_X86_64;
	eh->e_type = ET_DYN;
	is_int(load(&m, filebuf, len, &bp, &img), -ENOEXEC);
	eh->e_type = ET_EXEC;
	eh->e_phnum = 60000;
	is_int(load(&m, filebuf, len, &bp, &img), -ENOEXEC);
	eh->e_phnum = 1;
	eh->e_phoff = len;
	is_int(load(&m, filebuf, len, &bp, &img), -ENOEXEC);
	/* Garbage. */
	for (size_t i = 0; i < 4096; i++)
		filebuf[i] = (uint8_t)(i * 31 + 17);
	is_int(load(&m, filebuf, 4096, &bp, &img), -ENOEXEC);
	guest_mem_destroy(&m);
}

static size_t make_bzimage(uint8_t *buf, size_t cap, uint16_t version, uint8_t xlf, uint32_t init_size)
{
	struct setup_header *h = (struct setup_header *)(buf + 0x1f1);
	size_t setup = (4 + 1) * 512, pm = 0x4000;

	memset(buf, 0, cap);
	h->setup_sects = 4;
	h->boot_flag = 0xaa55;
	h->jump = 0x66eb; /* jmp to 0x268: header length byte at 0x201 = 0x66 */
	h->header = 0x53726448;
	h->version = version;
	h->loadflags = LOADED_HIGH;
	h->initrd_addr_max = 0x7fffffff;
	h->kernel_alignment = 0x200000;
	h->cmdline_size = 2047;
	h->xloadflags = xlf;
	h->init_size = init_size;
	for (size_t i = 0; i < pm; i++)
		buf[setup + i] = (uint8_t)(i ^ 0xa5);
	return setup + pm;
}

TEST(bzimage_loads_at_1m)
{
	struct guest_mem m;
	struct boot_params bp = {0};
	struct kernel_image img;
	size_t len;
	uint8_t *p;

	guest_mem_init(&m, 64 * MIB);
	len = make_bzimage(filebuf, sizeof(filebuf), 0x20f, XLF_KERNEL_64, 0x800000);
	is_int(load(&m, filebuf, len, &bp, &img), 0);
	ok(img.bzimage, "bzImage detected");
	is_int(img.entry, 0x100200);
	is_int(img.end, 0x100000 + 0x800000);
	is_int(img.cmdline_size, 2048);
	is_int(bp.hdr.version, 0x20f);
	is_int(bp.hdr.init_size, 0x800000);
	is_int(bp.hdr.kernel_alignment, 0x200000);
	p = guest_mem_ptr(&m, 0x100000, 0x4000);
	ok(p && memcmp(p, filebuf + 5 * 512, 0x4000) == 0, "protected-mode part at 1 MiB");
	guest_mem_destroy(&m);
}

TEST(bzimage_rejects_bad_input)
{
	struct guest_mem m;
	struct boot_params bp = {0};
	struct kernel_image img;
	size_t len;

	guest_mem_init(&m, 64 * MIB);
	len = make_bzimage(filebuf, sizeof(filebuf), 0x20b, XLF_KERNEL_64, 0x800000);
	is_int(load(&m, filebuf, len, &bp, &img), -ENOEXEC); /* old protocol */
	len = make_bzimage(filebuf, sizeof(filebuf), 0x20f, 0, 0x800000);
	is_int(load(&m, filebuf, len, &bp, &img), -ENOEXEC); /* no 64-bit entry */
	len = make_bzimage(filebuf, sizeof(filebuf), 0x20f, XLF_KERNEL_64, 0x800000);
	is_int(load(&m, filebuf, 5 * 512, &bp, &img), -ENOEXEC); /* truncated */
	is_int(load(&m, filebuf, 0x300, &bp, &img), -ENOEXEC);
	len = make_bzimage(filebuf, sizeof(filebuf), 0x20f, XLF_KERNEL_64, 0x8000000);
	is_int(load(&m, filebuf, len, &bp, &img), -ENOSPC); /* init_size > RAM */
	guest_mem_destroy(&m);
}

/* Random corruption of valid headers: every outcome is 0 or an error
 * code, never a crash or a write outside guest RAM (ASan in CI). */
TEST(mutated_headers)
{
	struct guest_mem m;
	struct kernel_image img;
	static struct boot_params bp;
	unsigned int seed = 12345, bad = 0, loaded = 0;

	guest_mem_init(&m, 64 * MIB);
	for (int i = 0; i < 3000; i++) {
		size_t len = (i & 1) ? make_bzimage(filebuf, 0x8000, 0x20f, XLF_KERNEL_64, 0x800000)
		                     : make_elf(filebuf, 0x8000, 16 * MIB, 0x3000, 0x5000, 16 * MIB);
		int flips = 1 + rand_r(&seed) % 4, r;

		for (int f = 0; f < flips; f++) {
			size_t at = (size_t)rand_r(&seed) % ((i & 1) ? 0x300 : 0x80);

			filebuf[at] = (uint8_t)rand_r(&seed);
		}
		if (rand_r(&seed) % 4 == 0)
			len = (size_t)rand_r(&seed) % len;
		memset(&bp, 0, sizeof(bp));
		r = load(&m, filebuf, len, &bp, &img);
		if (r == 0) {
			loaded++;
			bad += !(img.end > img.start && guest_mem_ptr(&m, img.start, img.end - img.start));
		} else {
			bad += !(r == -ENOEXEC || r == -ENOSPC || r == -ENODATA || r == -EINVAL);
		}
	}
	is_int(bad, 0);
	ok(loaded > 0, "some mutations still load (%u)", loaded);
	guest_mem_destroy(&m);
}

TEST(initrd_placement)
{
	struct guest_mem m;
	struct kernel_image img = {.end = 16 * MIB + 0x5000, .initrd_addr_max = 0x7fffffff};
	uint64_t addr = 0;
	int fd;

	guest_mem_init(&m, 64 * MIB);
	memset(filebuf, 0x42, 3 * MIB + 5);
	fd = memfd_with(filebuf, 3 * MIB + 5);
	is_int(boot_load_initrd(&m, fd, 3 * MIB + 5, "initrd", &img, &addr), 0);
	is_int(addr & 0xfff, 0);
	ok(addr + 3 * MIB + 5 <= 64 * MIB && addr + 3 * MIB + 5 > 64 * MIB - 0x1000, "initrd at the top of RAM");
	ok(((uint8_t *)guest_mem_ptr(&m, addr, 1))[0] == 0x42, "initrd bytes copied");
	img.initrd_addr_max = 32 * MIB - 1;
	is_int(boot_load_initrd(&m, fd, 3 * MIB + 5, "initrd", &img, &addr), 0);
	ok(addr + 3 * MIB + 5 <= 32 * MIB, "initrd below initrd_addr_max");
	img.end = 30 * MIB;
	is_int(boot_load_initrd(&m, fd, 3 * MIB + 5, "initrd", &img, &addr), -ENOSPC);
	close(fd);
	guest_mem_destroy(&m);
}

TEST(boot_params_e820)
{
	struct guest_mem m;
	static struct boot_params bp;

	guest_mem_init(&m, 128 * MIB);
	memset(&bp, 0, sizeof(bp));
	boot_params_fill(&bp, &m, 0x7000000, 0x100000, false);
	is_int(bp.hdr.boot_flag, 0xaa55);
	is_int(bp.hdr.header, 0x53726448);
	is_int(bp.hdr.type_of_loader, 0xff);
	ok(bp.hdr.loadflags & LOADED_HIGH, "LOADED_HIGH");
	is_int(bp.hdr.cmd_line_ptr, BOOT_CMDLINE_ADDR);
	is_int(bp.hdr.ramdisk_image, 0x7000000);
	is_int(bp.hdr.ramdisk_size, 0x100000);
	is_int(bp.e820_entries, 4);
	is_int(bp.e820_table[0].addr, 0);
	is_int(bp.e820_table[0].size, 0x9fc00);
	is_int(bp.e820_table[0].type, 1);
	is_int(bp.e820_table[1].addr, 0x9fc00);
	is_int(bp.e820_table[1].type, 2);
	is_int(bp.e820_table[2].addr, 0xf0000);
	is_int(bp.e820_table[2].size, 0x10000);
	is_int(bp.e820_table[2].type, 2);
	is_int(bp.e820_table[3].addr, MIB);
	is_int(bp.e820_table[3].size, 127 * MIB);
	is_int(bp.e820_table[3].type, 1);
	guest_mem_destroy(&m);

	/* Above the 32-bit gap: a fifth entry at 4 GiB. */
	guest_mem_init(&m, 4ULL << 30);
	memset(&bp, 0, sizeof(bp));
	boot_params_fill(&bp, &m, 0, 0, true);
	is_int(bp.e820_entries, 6);
	is_int(bp.e820_table[2].addr, BOOT_ACPI_START);
	is_int(bp.e820_table[4].addr + bp.e820_table[4].size, GUEST_MEM_32BIT_GAP_START);
	is_int(bp.e820_table[5].addr, 1ULL << 32);
	is_int(bp.e820_table[5].size, (4ULL << 30) - GUEST_MEM_32BIT_GAP_START);
	guest_mem_destroy(&m);
}

TEST(page_tables_and_gdt)
{
	struct guest_mem m;
	uint64_t cr3 = 0, *pml4, *pdpt, *pd, *gdt;

	guest_mem_init(&m, 64 * MIB);
	is_int(boot_page_tables(&m, &cr3), 0);
	is_int(cr3, BOOT_PML4_ADDR);
	pml4 = guest_mem_ptr(&m, BOOT_PML4_ADDR, 4096);
	pdpt = guest_mem_ptr(&m, BOOT_PDPT_ADDR, 4096);
	pd = guest_mem_ptr(&m, BOOT_PD_ADDR, 4 * 4096);
	is_int(pml4[0], BOOT_PDPT_ADDR | 3);
	is_int(pdpt[3], (BOOT_PD_ADDR + 3 * 4096) | 3);
	is_int(pdpt[4], 0);
	is_int(pd[0], 0x83);
	is_int(pd[8], (16 * MIB) | 0x83);
	is_int(pd[4 * 512 - 1], (4ULL << 30) - (2 * MIB) + 0x83);
	is_int(boot_gdt(&m), 0);
	gdt = guest_mem_ptr(&m, BOOT_GDT_ADDR, 48);
	is_int(gdt[2], 0x00af9b000000ffffULL);
	is_int(gdt[3], 0x00cf93000000ffffULL);
	guest_mem_destroy(&m);
}

static uint8_t sum(const uint8_t *p, size_t n)
{
	uint8_t s = 0;

	while (n--)
		s += *p++;
	return s;
}

TEST(mptable)
{
	struct guest_mem m;
	const uint8_t *mpf, *mpc, *e;
	unsigned int cpus = 0, ioapics = 0, intsrc = 0, lint = 0, bsp = 0;
	uint16_t len, count;

	guest_mem_init(&m, 16 * MIB);
	is_int(mptable_write(&m, BOOT_MPTABLE_ADDR, 4), 0);
	mpf = guest_mem_ptr(&m, BOOT_MPTABLE_ADDR, 16);
	ok(memcmp(mpf, "_MP_", 4) == 0, "floating pointer signature");
	is_int(sum(mpf, 16), 0);
	is_int(*(const uint32_t *)(mpf + 4), BOOT_MPTABLE_ADDR + 16);
	mpc = guest_mem_ptr(&m, BOOT_MPTABLE_ADDR + 16, 44);
	ok(memcmp(mpc, "PCMP", 4) == 0, "config table signature");
	len = *(const uint16_t *)(mpc + 4);
	count = *(const uint16_t *)(mpc + 34);
	is_int(sum(mpc, len), 0);
	ok(16 + len <= MPTABLE_MAX_SIZE, "fits below 640 KiB");
	is_int(*(const uint32_t *)(mpc + 36), MPTABLE_LAPIC_ADDR);
	e = mpc + 44;
	for (unsigned int i = 0; i < count; i++) {
		switch (e[0]) {
		case 0:
			ok(e[1] == cpus, "cpu %u has APIC id %u", cpus, e[1]);
			bsp += (e[3] & 2) ? 1 : 0;
			cpus++;
			e += 20;
			break;
		case 2:
			ioapics++;
			is_int(*(const uint32_t *)(e + 4), MPTABLE_IOAPIC_ADDR);
			e += 8;
			break;
		case 3:
			ok(e[5] == e[7], "IRQ %u on pin %u", e[5], e[7]); /* KVM: GSI n = pin n */
			intsrc++;
			e += 8;
			break;
		case 4:
			lint++;
			e += 8;
			break;
		default:
			e += 8;
			break;
		}
	}
	is_int(e - mpc, len);
	is_int(cpus, 4);
	is_int(bsp, 1);
	is_int(ioapics, 1);
	is_int(intsrc, 24);
	is_int(lint, 2);
	is_int(mptable_write(&m, BOOT_MPTABLE_ADDR, 200), -E2BIG);
	guest_mem_destroy(&m);
}

TAP_MAIN()
