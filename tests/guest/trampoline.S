/* SPDX-License-Identifier: Apache-2.0 */
/* Real-mode start code for the APs. The BSP copies tramp_start..tramp_end to
 * TRAMP_BASE (the SIPI vector's page) and fills in tramp_cr3, tramp_stack and
 * tramp_entry. The AP goes real mode -> protected mode -> long mode with the
 * BSP's page tables, then jumps to tramp_entry. Its own GDT keeps the
 * VMM's layout (0x10 64-bit code, 0x18 data), so the BSP's IDT works. */
#include "trampoline.h"

#define T(sym) (TRAMP_BASE + ((sym) - tramp_start))

	.section .rodata.trampoline, "a"
	.globl tramp_start, tramp_end, tramp_cr3, tramp_stack, tramp_entry
	.code16
tramp_start:
	cli
	cld
	mov %cs, %ax
	mov %ax, %ds
	lgdtl (tramp_gdt_desc - tramp_start)
	mov %cr0, %eax
	or $1, %eax
	mov %eax, %cr0
	ljmpl $0x08, $T(tramp_pm32)

	.code32
tramp_pm32:
	mov $0x18, %ax
	mov %ax, %ds
	mov %ax, %es
	mov %ax, %ss
	mov %cr4, %eax
	or $0x20, %eax			/* PAE */
	mov %eax, %cr4
	mov T(tramp_cr3), %eax
	mov %eax, %cr3
	mov $0xc0000080, %ecx		/* EFER.LME */
	rdmsr
	or $0x100, %eax
	wrmsr
	mov %cr0, %eax
	or $0x80000000, %eax		/* PG */
	mov %eax, %cr0
	ljmp $0x10, $T(tramp_lm64)

	.code64
tramp_lm64:
	mov $0x18, %ax
	mov %ax, %ds
	mov %ax, %es
	mov %ax, %ss
	mov %ax, %fs
	mov %ax, %gs
	mov T(tramp_stack), %rsp
	mov T(tramp_entry), %rax
	jmp *%rax

	.balign 8
tramp_gdt:
	.quad 0
	.quad 0x00cf9a000000ffff	/* 0x08: 32-bit code */
	.quad 0x00af9a000000ffff	/* 0x10: 64-bit code */
	.quad 0x00cf92000000ffff	/* 0x18: data */
tramp_gdt_desc:
	.word 4 * 8 - 1
	.long T(tramp_gdt)
	.balign 8
tramp_cr3:
	.quad 0
tramp_stack:
	.quad 0
tramp_entry:
	.quad 0
tramp_end:

	.section .note.GNU-stack, "", @progbits
