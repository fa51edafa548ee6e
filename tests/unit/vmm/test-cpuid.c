/* SPDX-License-Identifier: Apache-2.0 */
/* CPUID topology on a synthetic "supported" table (no KVM needed). */
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "vmm/cpuid.h"

static struct kvm_cpuid2 *fake_supported(void)
{
	struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + 16 * sizeof(c->entries[0]));
	struct kvm_cpuid_entry2 *e = c->entries;

	e[0] = (struct kvm_cpuid_entry2){.function = 0, .eax = 0x1f, .ebx = 0x756e6547}; /* "Genu" */
	e[1] = (struct kvm_cpuid_entry2){.function = 1, .eax = 0x806f8, .ebx = 0x00010800, .ecx = 0x1, .edx = 0x1};
	e[2] = (struct kvm_cpuid_entry2){
	    .function = 4, .index = 0, .flags = KVM_CPUID_FLAG_SIGNIFCANT_INDEX, .eax = 0xfc004121};
	e[3] = (struct kvm_cpuid_entry2){
	    .function = 4, .index = 3, .flags = KVM_CPUID_FLAG_SIGNIFCANT_INDEX, .eax = 0xfc0fc163};
	e[4] = (struct kvm_cpuid_entry2){
	    .function = 0xb, .index = 0, .flags = KVM_CPUID_FLAG_SIGNIFCANT_INDEX, .eax = 1, .ebx = 2};
	e[5] = (struct kvm_cpuid_entry2){.function = 0x40000000, .eax = 0x40000001};
	e[6] = (struct kvm_cpuid_entry2){.function = 0x40000001, .eax = 0x01ffffff};
	c->nent = 7;
	return c;
}

static void check_topology(unsigned int ncpus, unsigned int shift)
{
	struct kvm_cpuid2 *sup = fake_supported();

	for (unsigned int id = 0; id < ncpus; id++) {
		struct kvm_cpuid2 *c = NULL;
		struct kvm_cpuid_entry2 *e;

		is_int(cpuid_build(sup, ncpus, id, &c), 0);
		if (!c)
			continue;
		e = cpuid_find(c, 1, 0);
		is_int(e->ebx >> 24, id);
		is_int((e->ebx >> 16) & 0xff, 1u << shift);
		is_int((e->ebx >> 8) & 0xff, 8); /* clflush size kept */
		ok(e->ecx & (1u << 31), "hypervisor bit");
		is_int(!!(e->edx & (1u << 28)), ncpus > 1);
		e = cpuid_find(c, 4, 0);
		is_int(e->eax >> 26, (1u << shift) - 1);
		is_int((e->eax >> 14) & 0xfff, 0); /* L1 private */
		e = cpuid_find(c, 4, 3);
		is_int((e->eax >> 14) & 0xfff, (1u << shift) - 1); /* L3 shared */
		for (uint32_t leaf = 0xb; leaf <= 0x1f; leaf += 0x14) {
			e = cpuid_find(c, leaf, 0);
			ok(e && e->ebx == 1 && ((e->ecx >> 8) & 0xff) == 1 && e->edx == id, "leaf %#x SMT level", leaf);
			e = cpuid_find(c, leaf, 1);
			ok(e && e->eax == shift && e->ebx == ncpus && ((e->ecx >> 8) & 0xff) == 2 && e->edx == id,
			   "leaf %#x core level", leaf);
			e = cpuid_find(c, leaf, 2);
			ok(e && ((e->ecx >> 8) & 0xff) == 0, "leaf %#x ends", leaf);
		}
		e = cpuid_find(c, 0x40000000, 0);
		ok(e && memcmp(&e->ebx, "KVMKVMKVM", 9) == 0, "KVM signature");
		e = cpuid_find(c, 0x40000001, 0);
		ok(e && !(e->eax & ((1u << 7) | (1u << 11) | (1u << 13) | (1u << 16))), "no hypercall features");
		ok(e && (e->eax & (1u << 3)), "kvmclock kept");
		free(c);
	}
	free(sup);
}

TEST(topology_1)
{
	check_topology(1, 0);
}

TEST(topology_2)
{
	check_topology(2, 1);
}

TEST(topology_4)
{
	check_topology(4, 2);
}

TEST(topology_3_rounds_up)
{
	check_topology(3, 2);
}

TEST(bad_arguments)
{
	struct kvm_cpuid2 *sup = fake_supported(), *c = NULL;

	is_int(cpuid_build(sup, 2, 2, &c), -22);
	is_int(cpuid_build(sup, 0, 0, &c), -22);
	free(sup);
}

TAP_MAIN()
