/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a VM's work cost, sampled: KVM's statistics of the VM and of its
 * vCPUs (summed over the vCPUs), and kvrun's own counters (counters.h).
 * Two samples give the differences, written as JSON for benchmarks and
 * for `kvrun events --stats`.
 */
#ifndef KVRUN_VMM_VM_STATS_H
#define KVRUN_VMM_VM_STATS_H

#include <stdint.h>
#include <stdio.h>

#include "vmm/counters.h"
#include "vmm/kvm-stats.h"

struct vm;

struct vm_stats {
	struct kvm_stats *vm; /* NULL where KVM has no binary statistics */
	struct kvm_stats **vcpu;
	unsigned int ncpus;
};

struct vm_stats_sample {
	uint64_t t_ns; /* CLOCK_MONOTONIC */
	uint64_t *vm_values; /* by index of vm_stats.vm */
	uint64_t *vcpu_values; /* by index of vm_stats.vcpu[0], summed */
	uint64_t own[VMM_NR_COUNTERS];
};

/* Open the statistics of vm and its vCPUs. Without KVM's binary
 * statistics (older kernels) only kvrun's counters are sampled. */
int vm_stats_open(struct vm *vm, struct vm_stats **ret);
/* The same from already parsed statistics (taken over; for tests). */
int vm_stats_from(struct kvm_stats *vm, struct kvm_stats **vcpus, unsigned int ncpus, struct vm_stats **ret);
void vm_stats_free(struct vm_stats *s);

/* Read everything now into out (arrays allocated; free with
 * vm_stats_sample_free). */
int vm_stats_sample(const struct vm_stats *s, struct vm_stats_sample *out);
void vm_stats_sample_free(struct vm_stats_sample *sample);

/* Write {"kvm_vcpu": {name: b - a, ...}, "kvm_vm": {...}, "kvrun": {...}}
 * for every plain counter (cumulative, one value); with nonzero_only,
 * only those that changed. a NULL: b's totals. */
void vm_stats_write_delta(const struct vm_stats *s, const struct vm_stats_sample *a, const struct vm_stats_sample *b,
                          bool nonzero_only, FILE *f);
/* The difference of one statistic of the vCPUs by name (0 if absent). */
uint64_t vm_stats_vcpu_delta(const struct vm_stats *s, const struct vm_stats_sample *a, const struct vm_stats_sample *b,
                             const char *name);

/* A serial on_mark for measurement builds (meson option phase_marks):
 * logs, at info level, the mark's value with the time and the vCPUs'
 * exits, emulated instructions and kvrun's userspace exits so far.
 * opaque: the struct vm_stats. */
void vm_stats_log_mark(void *opaque, uint8_t value);

#endif
