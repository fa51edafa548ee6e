/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vCPUs: one KVM vCPU and one thread running KVM_RUN each. Exits are
 * dispatched to the VM's buses; anything the VMM cannot handle ends the VM
 * through vm_stop() (never abort()).
 */
#ifndef KVRUN_VMM_VCPU_H
#define KVRUN_VMM_VCPU_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct vm;
struct kvm_run;
struct kvm_cpuid2;

struct vcpu {
	struct vm *vm;
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

int vcpu_start(struct vcpu *v);
/* Make the thread leave KVM_RUN soon (it then sees vm->stopping). */
void vcpu_kick(struct vcpu *v);
void vcpu_join(struct vcpu *v);
/* Ask the thread to log its RIP at debug level (a kick without
 * immediate_exit: KVM_RUN returns, the thread logs and re-enters). */
void vcpu_request_sample(struct vcpu *v);

/* Log the registers at debug level (crash diagnostics). */
void vcpu_dump_regs(struct vcpu *v);

/* Build the CPUID table for vCPU id of ncpus from KVM's supported table:
 * APIC ids and topology (leaves 1, 4, 0xb, 0x1f, 0x80000008 on AMD), the
 * hypervisor bit and the KVM signature leaves, without the paravirtual
 * features that need hypercalls. Pure: no KVM needed. *ret is malloc'd. */
int cpuid_build(const struct kvm_cpuid2 *supported, unsigned int ncpus, unsigned int id, struct kvm_cpuid2 **ret);

/* Find an entry (NULL when absent). */
struct kvm_cpuid_entry2 *cpuid_find(struct kvm_cpuid2 *c, uint32_t function, uint32_t index);

#endif
