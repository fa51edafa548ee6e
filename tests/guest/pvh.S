/* SPDX-License-Identifier: Apache-2.0 */
/* A second way in, for VMMs that load an ELF only through the PVH boot
 * protocol (QEMU's -kernel, Xen): the Xen ELF note XEN_ELFNOTE_PHYS32_ENTRY
 * names pvh_start, entered in 32-bit protected mode with paging off and
 * %ebx pointing at struct hvm_start_info. It builds identity page tables
 * for 4 GiB (2 MiB pages), enters long mode and goes on at _start with no
 * boot_params (%rsi 0); the command line's address is left in
 * pvh_cmdline for main.c. kvrun enters at _start directly, as it enters a
 * vmlinux, and never runs this. */

#define PVH_MAGIC 0x336ec578
#define MSR_EFER 0xc0000080

	.section .note.Xen, "a", @note
	.balign 4
	.long 4			/* name size */
	.long 4			/* descriptor size */
	.long 18		/* XEN_ELFNOTE_PHYS32_ENTRY */
	.asciz "Xen"
	.long pvh_start

	/* Not zeroed by _start's clearing of .bss: they are in use then. */
	.section .stacks, "aw", @nobits
	.balign 4096
pvh_pml4:
	.skip 4096
pvh_pdpt:
	.skip 4096
pvh_pd:
	.skip 4 * 4096

	.section .data
	.balign 8
	.globl pvh_cmdline
pvh_cmdline:
	.quad 0
pvh_gdt:
	.quad 0
	.quad 0
	.quad 0x00af9b000000ffff	/* 0x10: 64-bit code */
	.quad 0x00cf93000000ffff	/* 0x18: data */
pvh_gdt_end:
pvh_gdt_ptr:
	.word pvh_gdt_end - pvh_gdt - 1
	.long pvh_gdt

	.section .text
	.code32
	.globl pvh_start
pvh_start:
	cld
	/* The command line, when the start info is what it claims. */
	cmpl $PVH_MAGIC, (%ebx)
	jne 1f
	mov 24(%ebx), %eax
	mov %eax, pvh_cmdline
1:
	/* 2048 PD entries: 2 MiB pages, present, writable. */
	lea pvh_pd, %edi
	xor %eax, %eax
	mov $0x83, %eax
	mov $2048, %ecx
2:	mov %eax, (%edi)
	movl $0, 4(%edi)
	add $0x200000, %eax
	add $8, %edi
	loop 2b
	/* PDPT 0-3 -> the four PDs, PML4 0 -> the PDPT. */
	lea pvh_pdpt, %edi
	lea pvh_pd + 3, %eax
	mov $4, %ecx
3:	mov %eax, (%edi)
	movl $0, 4(%edi)
	add $4096, %eax
	add $8, %edi
	loop 3b
	lea pvh_pdpt + 3, %eax
	mov %eax, pvh_pml4
	movl $0, pvh_pml4 + 4
	/* PAE, long mode, paging. */
	mov %cr4, %eax
	or $0x20, %eax
	mov %eax, %cr4
	lea pvh_pml4, %eax
	mov %eax, %cr3
	mov $MSR_EFER, %ecx
	rdmsr
	or $0x100, %eax
	wrmsr
	lgdt pvh_gdt_ptr
	mov %cr0, %eax
	or $0x80000001, %eax
	mov %eax, %cr0
	ljmp $0x10, $pvh_long

	.code64
pvh_long:
	mov $0x18, %eax
	mov %eax, %ds
	mov %eax, %es
	mov %eax, %ss
	xor %esi, %esi
	jmp _start

	.section .note.GNU-stack, "", @progbits
