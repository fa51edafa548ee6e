/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CPUID for a vCPU: KVM's supported table with the topology of an
 * ncpus-core, one-thread-per-core, single-socket machine whose APIC ids are
 * 0..ncpus-1.
 */
#include <errno.h>
#include <linux/kvm.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/cpuid.h"

#define CPUID_MAX_ENTRIES 256

/* KVM paravirtual features (leaf 0x40000001 EAX) that use hypercalls, which
 * must not be offered: PV_UNHALT, PV_SEND_IPI, PV_SCHED_YIELD,
 * HC_MAP_GPA_RANGE. */
#define KVM_PV_HYPERCALL_FEATURES ((1u << 7) | (1u << 11) | (1u << 13) | (1u << 16))
/* clocksource, clocksource2, stable bit */
#define KVM_PV_DEFAULT_FEATURES ((1u << 0) | (1u << 3) | (1u << 24))

struct kvm_cpuid_entry2 *cpuid_find(struct kvm_cpuid2 *c, uint32_t function, uint32_t index)
{
	for (uint32_t i = 0; i < c->nent; i++) {
		struct kvm_cpuid_entry2 *e = &c->entries[i];

		if (e->function != function)
			continue;
		if (!(e->flags & KVM_CPUID_FLAG_SIGNIFCANT_INDEX) || e->index == index)
			return e;
	}
	return NULL;
}

static unsigned int order_of(unsigned int n)
{
	unsigned int s = 0;

	while ((1u << s) < n)
		s++;
	return s;
}

static struct kvm_cpuid_entry2 *cpuid_add(struct kvm_cpuid2 *c, uint32_t function, uint32_t index, uint32_t flags)
{
	struct kvm_cpuid_entry2 *e;

	if (c->nent >= CPUID_MAX_ENTRIES)
		return NULL;
	e = &c->entries[c->nent++];
	memset(e, 0, sizeof(*e));
	e->function = function;
	e->index = index;
	e->flags = flags;
	return e;
}

/* Leaf 0xb or 0x1f: level 0 = SMT (1 thread), level 1 = core, then end. */
static int add_topology_leaf(struct kvm_cpuid2 *c, uint32_t leaf, unsigned int ncpus, unsigned int id)
{
	unsigned int shift = order_of(ncpus);

	for (uint32_t i = 0; i < 3; i++) {
		struct kvm_cpuid_entry2 *e = cpuid_add(c, leaf, i, KVM_CPUID_FLAG_SIGNIFCANT_INDEX);

		if (!e)
			return -E2BIG;
		e->edx = id;
		e->ecx = i;
		if (i == 0) {
			e->eax = 0;
			e->ebx = 1;
			e->ecx |= 1u << 8; /* SMT */
		} else if (i == 1) {
			e->eax = shift;
			e->ebx = ncpus;
			e->ecx |= 2u << 8; /* core */
		}
	}
	return 0;
}

static void fix_leaf4(struct kvm_cpuid_entry2 *e, unsigned int ncpus)
{
	unsigned int shift = order_of(ncpus);
	uint32_t level = (e->eax >> 5) & 7;
	uint32_t sharing = level >= 3 ? (1u << shift) - 1 : 0;

	if ((e->eax & 0x1f) == 0) /* no more caches */
		return;
	e->eax &= 0x3fff;
	e->eax |= (((1u << shift) - 1) << 26) | (sharing << 14);
}

static bool vendor_is_amd(struct kvm_cpuid2 *c)
{
	struct kvm_cpuid_entry2 *e = cpuid_find(c, 0, 0);

	/* "AuthenticAMD" / "HygonGenuine" */
	return e && (e->ebx == 0x68747541 || e->ebx == 0x6f677948);
}

static void fix_kvm_leaves(struct kvm_cpuid2 *c)
{
	struct kvm_cpuid_entry2 *sig = cpuid_find(c, 0x40000000, 0);
	struct kvm_cpuid_entry2 *feat = cpuid_find(c, 0x40000001, 0);

	if (!sig)
		sig = cpuid_add(c, 0x40000000, 0, 0);
	if (!feat) {
		feat = cpuid_add(c, 0x40000001, 0, 0);
		if (feat)
			feat->eax = KVM_PV_DEFAULT_FEATURES;
	}
	if (sig) {
		sig->eax = 0x40000001;
		memcpy(&sig->ebx, "KVMK", 4);
		memcpy(&sig->ecx, "VMKV", 4);
		memcpy(&sig->edx, "M\0\0\0", 4);
	}
	if (feat)
		feat->eax &= ~KVM_PV_HYPERCALL_FEATURES;
}

int cpuid_build(const struct kvm_cpuid2 *supported, unsigned int ncpus, unsigned int id, struct kvm_cpuid2 **ret)
{
	struct kvm_cpuid2 *c;
	struct kvm_cpuid_entry2 *e;
	unsigned int shift = order_of(ncpus);
	uint32_t max_basic = 0;
	int r;

	if (ncpus == 0 || id >= ncpus || supported->nent > CPUID_MAX_ENTRIES)
		return -EINVAL;
	c = calloc(1, sizeof(*c) + CPUID_MAX_ENTRIES * sizeof(c->entries[0]));
	if (!c)
		return -ENOMEM;
	/* Copy all but the topology leaves, which are rebuilt below. */
	for (uint32_t i = 0; i < supported->nent; i++) {
		const struct kvm_cpuid_entry2 *s = &supported->entries[i];

		if (s->function == 0xb || s->function == 0x1f)
			continue;
		c->entries[c->nent++] = *s;
	}
	if ((e = cpuid_find(c, 0, 0)))
		max_basic = e->eax;
	for (uint32_t i = 0; i < c->nent; i++) {
		e = &c->entries[i];
		switch (e->function) {
		case 1:
			e->ebx &= 0x0000ffff;
			e->ebx |= (id << 24) | ((1u << shift) << 16);
			e->ecx |= 1u << 31; /* hypervisor */
			if (ncpus > 1)
				e->edx |= 1u << 28; /* HTT: the count in EBX is valid */
			break;
		case 4:
			fix_leaf4(e, ncpus);
			break;
		case 0x80000008:
			if (vendor_is_amd(c))
				e->ecx = (e->ecx & ~0xf0ffu) | (shift << 12) | (ncpus - 1);
			break;
		}
	}
	r = 0;
	if (max_basic >= 0xb)
		r = add_topology_leaf(c, 0xb, ncpus, id);
	if (r == 0 && max_basic >= 0x1f)
		r = add_topology_leaf(c, 0x1f, ncpus, id);
	if (r < 0) {
		free(c);
		return r;
	}
	fix_kvm_leaves(c);
	*ret = c;
	return 0;
}
