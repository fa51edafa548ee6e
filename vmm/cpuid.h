/* SPDX-License-Identifier: Apache-2.0 */
/* CPUID tables for vCPUs (cpuid.c). */
#ifndef KVRUN_VMM_CPUID_H
#define KVRUN_VMM_CPUID_H

#include <stdint.h>

struct kvm_cpuid2;
struct kvm_cpuid_entry2;

/* Build the CPUID table for vCPU id of ncpus from KVM's supported table:
 * APIC ids and topology (leaves 1, 4, 0xb, 0x1f, 0x80000008 on AMD), the
 * hypervisor bit and the KVM signature leaves, without the paravirtual
 * features that need hypercalls. Pure: no KVM needed. *ret is malloc'd. */
int cpuid_build(const struct kvm_cpuid2 *supported, unsigned int ncpus, unsigned int id, struct kvm_cpuid2 **ret);

/* Find an entry (NULL when absent). */
struct kvm_cpuid_entry2 *cpuid_find(struct kvm_cpuid2 *c, uint32_t function, uint32_t index);

#endif
