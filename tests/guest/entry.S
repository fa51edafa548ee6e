/* SPDX-License-Identifier: Apache-2.0 */
/* Entry of the test guest (64-bit mode, as the VMM enters a vmlinux), and
 * the interrupt stubs: one 16-byte stub per vector, so the IDT entry for
 * vector v is isr_stubs + 16 * v. */

	.section .data
	.balign 8
	.globl entry_state
entry_state:
	.quad 0			/* rsi */
	.quad 0			/* rflags */
	.quad 0			/* rsp */
	.word 0, 0, 0, 0	/* cs, ds, es, ss */

	.section .stacks, "aw", @nobits
	.balign 4096
boot_stack:
	.skip 16384
boot_stack_top:

	.section .text.entry, "ax"
	.code64
	.globl _start
_start:
	/* Record the state the VMM left before anything changes it. */
	mov %rsi, entry_state(%rip)
	mov %rsp, entry_state+16(%rip)
	lea boot_stack_top(%rip), %rsp
	pushfq
	popq entry_state+8(%rip)
	cli
	mov %cs, %ax
	mov %ax, entry_state+24(%rip)
	mov %ds, %ax
	mov %ax, entry_state+26(%rip)
	mov %es, %ax
	mov %ax, entry_state+28(%rip)
	mov %ss, %ax
	mov %ax, entry_state+30(%rip)
	cld
	lea __bss_start(%rip), %rdi
	lea __bss_end(%rip), %rcx
	sub %rdi, %rcx
	shr $3, %rcx
	xor %eax, %eax
	rep stosq
	mov entry_state(%rip), %rdi
	call guest_main
1:	cli
	hlt
	jmp 1b

	.text
	.balign 16
	.globl isr_stubs
isr_stubs:
	.set vec, 0
	.rept 256
	.balign 16
	/* The CPU pushes an error code for these exceptions only. */
	.if (vec == 8) || (vec >= 10 && vec <= 14) || (vec == 17) || (vec == 21) || (vec == 29) || (vec == 30)
	.else
	pushq $0
	.endif
	pushq $vec
	jmp isr_common
	.set vec, vec + 1
	.endr

isr_common:
	push %rax
	push %rcx
	push %rdx
	push %rsi
	push %rdi
	push %r8
	push %r9
	push %r10
	push %r11
	mov %rsp, %rdi
	cld
	call isr_dispatch
	pop %r11
	pop %r10
	pop %r9
	pop %r8
	pop %rdi
	pop %rsi
	pop %rdx
	pop %rcx
	pop %rax
	add $16, %rsp
	iretq

	.section .note.GNU-stack, "", @progbits
