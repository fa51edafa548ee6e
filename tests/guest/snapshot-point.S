/* SPDX-License-Identifier: Apache-2.0 */
/*
 * uint32_t snapshot_point(const struct snap_regs *in, struct snap_regs *out)
 *
 * Loads the callee-saved registers and xmm0-xmm15 from in, asks the VMM for
 * a snapshot through the test device, spins on the snapshot port while the
 * request is pending (counting in rcx), then stores the same registers, the
 * spin count and the final status to out. Between the request and the
 * stores nothing but rax, rcx and rdx is touched, so out shows exactly what
 * survived the save (and, in a restored VM, the restore).
 * Layout of struct snap_regs: rbx, rbp, r12-r15 at 0..40, xmm0-15 at
 * 48..288 (16 bytes each), spins at 304, status at 312.
 */
	.text
	.globl snapshot_point
snapshot_point:
	push %rbx
	push %rbp
	push %r12
	push %r13
	push %r14
	push %r15
	push %rsi
	mov 0(%rdi), %rbx
	mov 8(%rdi), %rbp
	mov 16(%rdi), %r12
	mov 24(%rdi), %r13
	mov 32(%rdi), %r14
	mov 40(%rdi), %r15
	movdqu 48(%rdi), %xmm0
	movdqu 64(%rdi), %xmm1
	movdqu 80(%rdi), %xmm2
	movdqu 96(%rdi), %xmm3
	movdqu 112(%rdi), %xmm4
	movdqu 128(%rdi), %xmm5
	movdqu 144(%rdi), %xmm6
	movdqu 160(%rdi), %xmm7
	movdqu 176(%rdi), %xmm8
	movdqu 192(%rdi), %xmm9
	movdqu 208(%rdi), %xmm10
	movdqu 224(%rdi), %xmm11
	movdqu 240(%rdi), %xmm12
	movdqu 256(%rdi), %xmm13
	movdqu 272(%rdi), %xmm14
	movdqu 288(%rdi), %xmm15
	xor %ecx, %ecx
	mov $0x700, %dx		/* KVRUN_PORT_TEST_SNAPSHOT */
	mov $1, %eax
	outl %eax, %dx
1:	inc %rcx
	inl %dx, %eax
	cmp $1, %eax		/* KVRUN_SNAPSHOT_PENDING */
	je 1b
	pop %rsi
	mov %rbx, 0(%rsi)
	mov %rbp, 8(%rsi)
	mov %r12, 16(%rsi)
	mov %r13, 24(%rsi)
	mov %r14, 32(%rsi)
	mov %r15, 40(%rsi)
	movdqu %xmm0, 48(%rsi)
	movdqu %xmm1, 64(%rsi)
	movdqu %xmm2, 80(%rsi)
	movdqu %xmm3, 96(%rsi)
	movdqu %xmm4, 112(%rsi)
	movdqu %xmm5, 128(%rsi)
	movdqu %xmm6, 144(%rsi)
	movdqu %xmm7, 160(%rsi)
	movdqu %xmm8, 176(%rsi)
	movdqu %xmm9, 192(%rsi)
	movdqu %xmm10, 208(%rsi)
	movdqu %xmm11, 224(%rsi)
	movdqu %xmm12, 240(%rsi)
	movdqu %xmm13, 256(%rsi)
	movdqu %xmm14, 272(%rsi)
	movdqu %xmm15, 288(%rsi)
	mov %rcx, 304(%rsi)
	mov %eax, 312(%rsi)
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %rbp
	pop %rbx
	ret

	.section .note.GNU-stack, "", @progbits
