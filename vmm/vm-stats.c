/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "vmm/vcpu.h"
#include "vmm/vm-stats.h"
#include "vmm/vm.h"

int vm_stats_from(struct kvm_stats *vm, struct kvm_stats **vcpus, unsigned int ncpus, struct vm_stats **ret)
{
	struct vm_stats *s = calloc(1, sizeof(*s));

	if (!s) {
		kvm_stats_free(vm);
		for (unsigned int i = 0; i < ncpus; i++)
			kvm_stats_free(vcpus[i]);
		free(vcpus);
		return -ENOMEM;
	}
	s->vm = vm;
	s->vcpu = vcpus;
	s->ncpus = vcpus ? ncpus : 0;
	*ret = s;
	return 0;
}

int vm_stats_open(struct vm *vm, struct vm_stats **ret)
{
	struct kvm_stats *vs = NULL, **cpus;
	int r;

	cpus = calloc(vm->ncpus, sizeof(*cpus));
	if (!cpus)
		return -ENOMEM;
	r = kvm_stats_open(vm->vm_fd, &vs);
	for (unsigned int i = 0; r >= 0 && i < vm->ncpus; i++)
		r = kvm_stats_open(vm->vcpus[i]->fd, &cpus[i]);
	if (r < 0) {
		/* No binary statistics here (ENOTTY, EINVAL): kvrun's own
		 * counters alone. */
		kvm_stats_free(vs);
		for (unsigned int i = 0; i < vm->ncpus; i++)
			kvm_stats_free(cpus[i]);
		free(cpus);
		return vm_stats_from(NULL, NULL, 0, ret);
	}
	return vm_stats_from(vs, cpus, vm->ncpus, ret);
}

void vm_stats_free(struct vm_stats *s)
{
	if (!s)
		return;
	kvm_stats_free(s->vm);
	for (unsigned int i = 0; i < s->ncpus; i++)
		kvm_stats_free(s->vcpu[i]);
	free(s->vcpu);
	free(s);
}

void vm_stats_sample_free(struct vm_stats_sample *sample)
{
	free(sample->vm_values);
	free(sample->vcpu_values);
	sample->vm_values = sample->vcpu_values = NULL;
}

/* Add vCPU statistics st's values to sum, matched by name to the first
 * vCPU's layout (the same in practice). */
static int add_vcpu(const struct kvm_stats *first, const struct kvm_stats *st, uint64_t *sum)
{
	uint64_t *v = calloc(st->nr ? st->nr : 1, sizeof(*v));
	int r;

	if (!v)
		return -ENOMEM;
	r = kvm_stats_read(st, v);
	for (unsigned int i = 0; r >= 0 && i < first->nr; i++) {
		int j = i < st->nr && !strcmp(st->stats[i].name, first->stats[i].name)
		            ? (int)i
		            : kvm_stats_find(st, first->stats[i].name);
		if (j >= 0)
			sum[i] += v[j];
	}
	free(v);
	return r;
}

int vm_stats_sample(const struct vm_stats *s, struct vm_stats_sample *out)
{
	int r = 0;

	memset(out, 0, sizeof(*out));
	out->t_ns = vm_now_ns();
	for (unsigned int c = 0; c < VMM_NR_COUNTERS; c++)
		out->own[c] = vmm_counter_get((enum vmm_counter)c);
	if (!s->vm)
		return 0;
	out->vm_values = calloc(s->vm->nr ? s->vm->nr : 1, sizeof(uint64_t));
	out->vcpu_values = calloc(s->ncpus && s->vcpu[0]->nr ? s->vcpu[0]->nr : 1, sizeof(uint64_t));
	if (!out->vm_values || !out->vcpu_values)
		r = -ENOMEM;
	if (r >= 0)
		r = kvm_stats_read(s->vm, out->vm_values);
	for (unsigned int i = 0; r >= 0 && i < s->ncpus; i++)
		r = add_vcpu(s->vcpu[0], s->vcpu[i], out->vcpu_values);
	if (r < 0)
		vm_stats_sample_free(out);
	return r;
}

static void write_kvm(const struct kvm_stats *st, const uint64_t *a, const uint64_t *b, bool nonzero_only, FILE *f)
{
	bool first = true;

	fputc('{', f);
	for (unsigned int i = 0; st && b && i < st->nr; i++) {
		uint64_t from = a ? a[i] : 0;

		if (!kvm_stats_is_counter(st, i) || (nonzero_only && b[i] == from))
			continue;
		fprintf(f, "%s\"%s\": %" PRIu64, first ? "" : ", ", st->stats[i].name, b[i] - from);
		first = false;
	}
	fputc('}', f);
}

void vm_stats_write_delta(const struct vm_stats *s, const struct vm_stats_sample *a, const struct vm_stats_sample *b,
                          bool nonzero_only, FILE *f)
{
	bool first = true;

	fputs("{\"kvm_vcpu\": ", f);
	write_kvm(s->ncpus ? s->vcpu[0] : NULL, a ? a->vcpu_values : NULL, b->vcpu_values, nonzero_only, f);
	fputs(", \"kvm_vm\": ", f);
	write_kvm(s->vm, a ? a->vm_values : NULL, b->vm_values, nonzero_only, f);
	fputs(", \"kvrun\": {", f);
	for (unsigned int c = 0; c < VMM_NR_COUNTERS; c++) {
		uint64_t from = a ? a->own[c] : 0;

		if (nonzero_only && b->own[c] == from)
			continue;
		fprintf(f, "%s\"%s\": %" PRIu64, first ? "" : ", ", vmm_counter_name((enum vmm_counter)c),
		        b->own[c] - from);
		first = false;
	}
	fputs("}}", f);
}

uint64_t vm_stats_vcpu_delta(const struct vm_stats *s, const struct vm_stats_sample *a, const struct vm_stats_sample *b,
                             const char *name)
{
	int i;

	if (!s->ncpus || !a->vcpu_values || !b->vcpu_values)
		return 0;
	i = kvm_stats_find(s->vcpu[0], name);
	return i < 0 ? 0 : b->vcpu_values[i] - a->vcpu_values[i];
}

void vm_stats_log_mark(void *opaque, uint8_t value)
{
	const struct vm_stats *s = opaque;
	struct vm_stats_sample now;
	uint64_t exits = 0, insns = 0;
	int i;

	if (vm_stats_sample(s, &now) < 0)
		return;
	if (s->ncpus && now.vcpu_values) {
		if ((i = kvm_stats_find(s->vcpu[0], "exits")) >= 0)
			exits = now.vcpu_values[i];
		if ((i = kvm_stats_find(s->vcpu[0], "insn_emulation")) >= 0)
			insns = now.vcpu_values[i];
	}
	log_info("VM: mark %u: t_us=%" PRIu64 " exits=%" PRIu64 " insn_emulation=%" PRIu64 " user_exits=%" PRIu64,
	         value, now.t_ns / 1000, exits, insns,
	         now.own[VMM_EXIT_IO] + now.own[VMM_EXIT_MMIO] + now.own[VMM_EXIT_OTHER]);
	vm_stats_sample_free(&now);
}
