/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vCPUs: one KVM vCPU and one thread running KVM_RUN each. Exits are
 * dispatched to the VM's buses; a guest power-off, reset or triple fault,
 * and anything the VMM cannot handle, end the VM through the exit callback
 * given to vcpu_start() (never abort()).
 */
#ifndef KVRUN_VMM_VCPU_H
#define KVRUN_VMM_VCPU_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "vmm/vm.h"

struct kvm_run;

/* How a vCPU thread ends the VM (its thread then leaves its loop): the
 * reason, a code, and what happened (NULL when there is nothing to add).
 * Called on the vCPU thread; must not block. */
typedef void (*vcpu_exit_fn)(struct vm *vm, enum vm_exit_reason reason, int code, const char *detail);

struct vcpu {
	struct vm *vm;
	vcpu_exit_fn exit;
	unsigned int id; /* also its APIC id */
	int fd;
	struct kvm_run *run; /* mmap'd, vm->vcpu_mmap_size bytes */
	pthread_t thread;
	bool thread_started;
	atomic_bool sample_req; /* log RIP at the next chance (debugging) */
	/* The last exit was port or MMIO I/O, which KVM completes (RIP, RAX)
	 * only at the next KVM_RUN: done before parking, so that a paused
	 * vCPU's saved state is consistent. */
	bool io_pending;
};

/* Signal used to kick a vCPU thread out of KVM_RUN (a no-op handler is
 * installed by vcpu_create; the vCPU threads keep it unblocked). */
#define VCPU_KICK_SIGNAL (SIGRTMIN + 3)

/* KVM_CREATE_VCPU, map kvm_run, set CPUID (topology for vm->ncpus), MSRs,
 * LAPIC LINT0/LINT1 and FPU. *ret is owned by the caller (vcpu_free). */
int vcpu_create(struct vm *vm, unsigned int id, struct vcpu **ret);
/* The thread must have been joined. Accepts NULL. */
void vcpu_free(struct vcpu *v);

/* Mask LINT0 (LVT0 stays ExtINT, masked) so that the 8259 never reaches
 * this vCPU: for guests booted with hardware-reduced ACPI, which never
 * program the PIC (see boot_linux()). Before the vCPU runs. */
int vcpu_mask_lint0(struct vcpu *v);

/* Start the vCPU thread; it ends the VM through exit. */
int vcpu_start(struct vcpu *v, vcpu_exit_fn exit);
/* Make the thread leave KVM_RUN soon (it then sees vm->stopping). */
void vcpu_kick(struct vcpu *v);
void vcpu_join(struct vcpu *v);
/* Ask the thread to log its RIP at debug level (a kick without
 * immediate_exit: KVM_RUN returns, the thread logs and re-enters). */
void vcpu_request_sample(struct vcpu *v);

/* Log the registers at debug level (crash diagnostics). */
void vcpu_dump_regs(struct vcpu *v);

#endif
