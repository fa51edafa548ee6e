/* SPDX-License-Identifier: Apache-2.0 */
/* CPL3 for the test guest (usermode.h). */
#include "usermode.h"
#include "guest.h"
#include "hw.h"

#define KERNEL_CS 0x10
#define KERNEL_DS 0x18
#define TSS_SEL 0x20
#define UD_VECTOR 6

#define PTE_P 0x1ULL
#define PTE_RW 0x2ULL
#define PTE_US 0x4ULL
#define PTE_PS 0x80ULL

#define MIB2 (2 * MiB)
#define NR_2M (4 * 512) /* 4 GiB of 2 MiB pages */

struct tss64 {
	uint32_t reserved0;
	uint64_t rsp[3];
	uint64_t reserved1;
	uint64_t ist[7];
	uint64_t reserved2;
	uint16_t reserved3;
	uint16_t iomap_base;
} __attribute__((packed));

struct gdt_ptr {
	uint16_t limit;
	uint64_t base;
} __attribute__((packed));

extern char __image_start[], __image_end[];
void user_ud_entry(void);
uint64_t user_call(uint64_t (*fn)(void *), void *arg, uint64_t rsp);

static uint64_t pml4[512] __attribute__((aligned(4096)));
static uint64_t pdpt[512] __attribute__((aligned(4096)));
static uint64_t pd[4][512] __attribute__((aligned(4096)));
static bool user_2m[NR_2M];
static struct tss64 tss __attribute__((aligned(16)));
static uint64_t gdt[8] __attribute__((aligned(16)));
static uint8_t kernel_stack[16384] __attribute__((aligned(16)));
static uint8_t user_stack[65536] __attribute__((aligned(16)));

bool user_map(uint64_t start, uint64_t len)
{
	if (!len || start >= 4 * GiB || len > 4 * GiB - start)
		return false;
	for (uint64_t p = start / MIB2; p <= (start + len - 1) / MIB2; p++)
		user_2m[p] = true;
	return true;
}

static void load_page_tables(void)
{
	for (uint64_t i = 0; i < NR_2M; i++)
		pd[i / 512][i % 512] = i * MIB2 | PTE_P | PTE_RW | PTE_PS | (user_2m[i] ? PTE_US : 0);
	for (unsigned int j = 0; j < 4; j++)
		pdpt[j] = (uint64_t)(uintptr_t)pd[j] | PTE_P | PTE_RW | PTE_US;
	pml4[0] = (uint64_t)(uintptr_t)pdpt | PTE_P | PTE_RW | PTE_US;
	__asm__ volatile("mov %0, %%cr3" : : "r"((uint64_t)(uintptr_t)pml4) : "memory");
}

static void load_gdt(void)
{
	uint64_t base = (uint64_t)(uintptr_t)&tss, limit = sizeof(tss) - 1;
	struct gdt_ptr p = {sizeof(gdt) - 1, (uint64_t)(uintptr_t)gdt};

	tss.rsp[0] = (uint64_t)(uintptr_t)(kernel_stack + sizeof(kernel_stack));
	tss.iomap_base = sizeof(tss);
	gdt[0] = gdt[1] = 0;
	gdt[KERNEL_CS / 8] = 0x00af9b000000ffffULL; /* 64-bit code, DPL 0 */
	gdt[KERNEL_DS / 8] = 0x00cf93000000ffffULL;
	/* Available 64-bit TSS (type 9), present. */
	gdt[TSS_SEL / 8] = (limit & 0xffff) | (base & 0xffffff) << 16 | 0x89ULL << 40 | ((limit >> 16) & 0xf) << 48 |
	                   ((base >> 24) & 0xff) << 56;
	gdt[TSS_SEL / 8 + 1] = base >> 32;
	gdt[6] = 0x00cff3000000ffffULL; /* 0x30: data, DPL 3 */
	gdt[7] = 0x00affb000000ffffULL; /* 0x38: 64-bit code, DPL 3 */
	__asm__ volatile("lgdt %0" : : "m"(p) : "memory");
	__asm__ volatile("ltr %w0" : : "r"((uint16_t)TSS_SEL) : "memory");
}

void user_mode_init(void)
{
	uint64_t img = (uint64_t)(uintptr_t)__image_start;

	user_map(img, (uint64_t)(uintptr_t)__image_end - img);
	load_gdt();
	load_page_tables();
	idt_set_gate(UD_VECTOR, user_ud_entry);
}

uint64_t user_run(uint64_t (*fn)(void *), void *arg)
{
	return user_call(fn, arg, (uint64_t)(uintptr_t)(user_stack + sizeof(user_stack)));
}

bool user_mode_now(void)
{
	return (read_seg(cs) & 3) == 3;
}
