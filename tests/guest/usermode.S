/* SPDX-License-Identifier: Apache-2.0 */
/* Entering CPL3 and coming back (usermode.c). user_call(fn, arg, rsp)
 * saves the callee-saved registers and the kernel stack, then iretq's to
 * user_trampoline at CPL3 with interrupts off; the trampoline calls
 * fn(arg) and executes ud2 at user_return_ud2. The #UD gate is
 * user_ud_entry: for that ud2 it switches back to the saved kernel stack
 * and returns fn's result from user_call; any other #UD goes on to the
 * ordinary stub. (An exception rather than syscall or "int n": on a host
 * that runs the guest's CPL3 code natively and emulates its CPL0 code,
 * kvm_pvm, "int n" from CPL3 raises #UD and syscall stays at CPL3, while
 * exceptions are delivered through the IDT as on hardware.) */

#define USER_DS 0x33
#define USER_CS 0x3b
#define USER_RFLAGS 0x0002 /* IF 0, the reserved bit 1 */
#define UD_VECTOR 6

	.section .bss
	.balign 8
user_saved_rsp:
	.quad 0

	.text
	.globl user_call
user_call:
	push %rbp
	push %rbx
	push %r12
	push %r13
	push %r14
	push %r15
	mov %rsp, user_saved_rsp(%rip)
	pushq $USER_DS
	pushq %rdx
	pushq $USER_RFLAGS
	pushq $USER_CS
	lea user_trampoline(%rip), %rax
	pushq %rax
	iretq

user_trampoline:
	mov %rdi, %rax
	mov %rsi, %rdi
	and $-16, %rsp
	call *%rax
user_return_ud2:
	ud2

	/* #UD: the frame is rip, cs, rflags, rsp, ss (no error code). */
	.globl user_ud_entry
user_ud_entry:
	push %rcx
	lea user_return_ud2(%rip), %rcx
	cmp %rcx, 8(%rsp)
	pop %rcx
	jne isr_stubs + 16 * UD_VECTOR
	mov user_saved_rsp(%rip), %rsp
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %rbx
	pop %rbp
	ret

	.section .note.GNU-stack, "", @progbits
