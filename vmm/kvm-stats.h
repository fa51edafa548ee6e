/* SPDX-License-Identifier: Apache-2.0 */
/*
 * KVM's binary statistics (KVM_GET_STATS_FD on a VM or a vCPU,
 * Documentation/virt/kvm/api.rst 4.133): a header, descriptors (flags,
 * size, offset, name) and a data block of u64 values. The layout is read
 * once; each sample is one pread of the data block.
 */
#ifndef KVRUN_VMM_KVM_STATS_H
#define KVRUN_VMM_KVM_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest name and number of descriptors accepted (today's kernels: 48
 * bytes, about 50 statistics per vCPU). */
#define KVM_STATS_MAX_NAME 256
#define KVM_STATS_MAX_DESC 4096

struct kvm_stat {
	char *name;
	uint32_t flags; /* KVM_STATS_TYPE_* | KVM_STATS_UNIT_* | KVM_STATS_BASE_* */
	uint16_t size; /* u64 values (histograms have more than one) */
	uint32_t offset; /* in the data block, bytes */
};

struct kvm_stats {
	int fd;
	char id[KVM_STATS_MAX_NAME + 1];
	unsigned int nr;
	struct kvm_stat *stats;
	uint64_t data_offset;
	size_t data_size; /* bytes covering every statistic */
};

/* Parse the statistics fd (owned by *ret from now on, closed by
 * kvm_stats_free, also on failure). -EINVAL for a header or descriptor
 * that does not hold together (sizes, offsets, names), -errno for a read
 * that failed. */
int kvm_stats_parse(int fd, struct kvm_stats **ret);
/* KVM_GET_STATS_FD on a VM or vCPU fd, then kvm_stats_parse(). */
int kvm_stats_open(int kvm_object_fd, struct kvm_stats **ret);
void kvm_stats_free(struct kvm_stats *s);

/* Index of the statistic called name, or -ENOENT. */
int kvm_stats_find(const struct kvm_stats *s, const char *name);
/* Whether statistic i is a plain counter: cumulative, one value. */
bool kvm_stats_is_counter(const struct kvm_stats *s, unsigned int i);
/* The first value of every statistic into values[0..nr): 0 or -errno. */
int kvm_stats_read(const struct kvm_stats *s, uint64_t *values);

#endif
