/* SPDX-License-Identifier: Apache-2.0 */
/* The binary statistics reader (vmm/kvm-stats.c) and the VM sampler
 * (vmm/vm-stats.c) on fake statistics fds: memfds laid out as KVM lays
 * them out, with known descriptors and values; and kvrun's own counters. */
#include <errno.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tap.h"
#include "vmm/counters.h"
#include "vmm/irq.h"
#include "vmm/kvm-stats.h"
#include "vmm/vm-stats.h"

#define NAME_SIZE 48

struct fake_stat {
	const char *name;
	uint32_t flags;
	uint16_t size;
	uint64_t value; /* every value of the statistic */
};

/* A stats fd: header, id, descriptors, then the data block with the
 * statistics in reverse order of their descriptors (offsets matter). */
static int fake_stats_fd(const char *id, const struct fake_stat *st, unsigned int n, uint32_t name_size)
{
	size_t dsize = sizeof(struct kvm_stats_desc) + name_size;
	struct kvm_stats_header h = {
	    .name_size = name_size,
	    .num_desc = n,
	    .id_offset = sizeof(h),
	    .desc_offset = (uint32_t)(sizeof(h) + name_size),
	};
	uint32_t off = 0, offs[16];
	int fd = memfd_create("stats", MFD_CLOEXEC);

	for (unsigned int i = n; i-- > 0;) {
		offs[i] = off;
		off += st[i].size * 8;
	}
	h.data_offset = (uint32_t)(h.desc_offset + n * dsize);
	if (pwrite(fd, &h, sizeof(h), 0) != sizeof(h) || pwrite(fd, id, strlen(id) + 1, h.id_offset) < 0)
		abort();
	for (unsigned int i = 0; i < n; i++) {
		uint8_t d[sizeof(struct kvm_stats_desc) + KVM_STATS_MAX_NAME] = {0};
		struct kvm_stats_desc *x = (struct kvm_stats_desc *)d;

		x->flags = st[i].flags;
		x->size = st[i].size;
		x->offset = offs[i];
		strncpy((char *)d + sizeof(*x), st[i].name, name_size - 1);
		if (pwrite(fd, d, dsize, h.desc_offset + i * dsize) != (ssize_t)dsize)
			abort();
		for (unsigned int k = 0; k < st[i].size; k++)
			if (pwrite(fd, &st[i].value, 8, h.data_offset + offs[i] + k * 8) != 8)
				abort();
	}
	return fd;
}

static void set_value(int fd, const struct kvm_stats *s, const char *name, uint64_t v)
{
	int i = kvm_stats_find(s, name);

	if (i < 0 || pwrite(fd, &v, 8, (off_t)(s->data_offset + s->stats[i].offset)) != 8)
		abort();
}

#define CUM (KVM_STATS_TYPE_CUMULATIVE | KVM_STATS_UNIT_NONE | KVM_STATS_BASE_POW10)
#define INST (KVM_STATS_TYPE_INSTANT | KVM_STATS_UNIT_NONE | KVM_STATS_BASE_POW10)
#define HIST (KVM_STATS_TYPE_LOG_HIST | KVM_STATS_UNIT_SECONDS | KVM_STATS_BASE_POW10)

static const struct fake_stat vcpu_stats[] = {
    {"exits", CUM, 1, 100},   {"mmio_exits", CUM, 1, 7},      {"insn_emulation", CUM, 1, 3},
    {"blocking", INST, 1, 1}, {"halt_wait_hist", HIST, 4, 9},
};

TEST(parse_and_read)
{
	struct kvm_stats *s = NULL;
	uint64_t v[5] = {0};
	int fd = fake_stats_fd("kvm-1/vcpu-0", vcpu_stats, 5, NAME_SIZE);

	is_int(kvm_stats_parse(fd, &s), 0);
	if (!s)
		return;
	is_str(s->id, "kvm-1/vcpu-0");
	is_int(s->nr, 5);
	is_str(s->stats[4].name, "halt_wait_hist");
	is_int(s->stats[4].size, 4);
	is_int(kvm_stats_find(s, "mmio_exits"), 1);
	is_int(kvm_stats_find(s, "nope"), -ENOENT);
	ok(kvm_stats_is_counter(s, 0) && !kvm_stats_is_counter(s, 3) && !kvm_stats_is_counter(s, 4),
	   "cumulative single values are counters; instants and histograms are not");
	is_int(kvm_stats_read(s, v), 0);
	ok(v[0] == 100 && v[1] == 7 && v[2] == 3 && v[3] == 1 && v[4] == 9, "values read at their offsets");
	set_value(s->fd, s, "exits", 250);
	is_int(kvm_stats_read(s, v), 0);
	ok(v[0] == 250, "a second read sees the new value");
	kvm_stats_free(s);
}

TEST(bad_layouts_refused)
{
	static const struct fake_stat unaligned[] = {{"x", CUM, 1, 1}};
	struct kvm_stats *s = NULL;
	struct kvm_stats_header h;
	int fd;

	/* A name size of 0, and one past the limit. */
	fd = fake_stats_fd("id", vcpu_stats, 2, NAME_SIZE);
	if (pread(fd, &h, sizeof(h), 0) != sizeof(h))
		abort();
	h.name_size = 0;
	if (pwrite(fd, &h, sizeof(h), 0) != sizeof(h))
		abort();
	is_int(kvm_stats_parse(fd, &s), -EINVAL);
	fd = fake_stats_fd("id", vcpu_stats, 2, NAME_SIZE);
	h.name_size = KVM_STATS_MAX_NAME + 1;
	if (pwrite(fd, &h.name_size, 4, offsetof(struct kvm_stats_header, name_size)) != 4)
		abort();
	is_int(kvm_stats_parse(fd, &s), -EINVAL);

	/* Too many descriptors. */
	fd = fake_stats_fd("id", vcpu_stats, 2, NAME_SIZE);
	h.num_desc = KVM_STATS_MAX_DESC + 1;
	if (pwrite(fd, &h.num_desc, 4, offsetof(struct kvm_stats_header, num_desc)) != 4)
		abort();
	is_int(kvm_stats_parse(fd, &s), -EINVAL);

	/* Descriptors past the end of the file. */
	fd = fake_stats_fd("id", vcpu_stats, 2, NAME_SIZE);
	h.num_desc = 50;
	if (pwrite(fd, &h.num_desc, 4, offsetof(struct kvm_stats_header, num_desc)) != 4)
		abort();
	is_int(kvm_stats_parse(fd, &s), -EINVAL);

	/* A name that fills its field without a NUL. */
	{
		char longname[NAME_SIZE + 1];
		struct fake_stat st = {longname, CUM, 1, 1};

		memset(longname, 'a', NAME_SIZE);
		longname[NAME_SIZE] = 0;
		fd = fake_stats_fd("id", &st, 1, NAME_SIZE);
		if (pwrite(fd, longname, NAME_SIZE, sizeof(h) + NAME_SIZE + sizeof(struct kvm_stats_desc)) != NAME_SIZE)
			abort();
		is_int(kvm_stats_parse(fd, &s), -EINVAL);
	}

	/* An offset that is not a whole value. */
	fd = fake_stats_fd("id", unaligned, 1, NAME_SIZE);
	{
		uint32_t bad = 4;
		if (pwrite(fd, &bad, 4, sizeof(h) + NAME_SIZE + offsetof(struct kvm_stats_desc, offset)) != 4)
			abort();
	}
	is_int(kvm_stats_parse(fd, &s), -EINVAL);
	ok(s == NULL, "nothing returned for a bad layout");
}

TEST(no_stats_fd)
{
	struct kvm_stats *s = NULL;
	int fd = memfd_create("empty", MFD_CLOEXEC);

	is_int(kvm_stats_parse(fd, &s), -EINVAL);
	is_int(kvm_stats_open(-1, &s), -EBADF);
}

static char *delta_json(const struct vm_stats *vs, const struct vm_stats_sample *a, const struct vm_stats_sample *b,
                        bool nonzero)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	vm_stats_write_delta(vs, a, b, nonzero, f);
	fclose(f);
	return buf;
}

TEST(vm_sample_sums_vcpus)
{
	static const struct fake_stat vm_st[] = {{"remote_tlb_flush", CUM, 1, 5}, {"pages_4k", INST, 1, 10}};
	struct kvm_stats *vm = NULL, **cpus = calloc(2, sizeof(*cpus));
	struct vm_stats_sample a, b;
	struct vm_stats *vs = NULL;
	char *json;

	if (kvm_stats_parse(fake_stats_fd("kvm-1", vm_st, 2, NAME_SIZE), &vm) < 0 ||
	    kvm_stats_parse(fake_stats_fd("kvm-1/vcpu-0", vcpu_stats, 5, NAME_SIZE), &cpus[0]) < 0 ||
	    kvm_stats_parse(fake_stats_fd("kvm-1/vcpu-1", vcpu_stats, 5, NAME_SIZE), &cpus[1]) < 0)
		abort();
	is_int(vm_stats_from(vm, cpus, 2, &vs), 0);
	is_int(vm_stats_sample(vs, &a), 0);
	ok(a.vcpu_values[0] == 200 && a.vm_values[0] == 5, "vCPU values summed, VM values as they are");
	set_value(cpus[0]->fd, cpus[0], "exits", 130);
	set_value(cpus[1]->fd, cpus[1], "exits", 104);
	set_value(cpus[1]->fd, cpus[1], "mmio_exits", 9);
	set_value(vm->fd, vm, "remote_tlb_flush", 6);
	vmm_count(VMM_BLK_REQUESTS, 128);
	vmm_count(VMM_EXIT_MMIO, 2);
	is_int(vm_stats_sample(vs, &b), 0);
	ok(vm_stats_vcpu_delta(vs, &a, &b, "exits") == 34, "exits: 30 + 4 more over both vCPUs");
	ok(vm_stats_vcpu_delta(vs, &a, &b, "nope") == 0, "an unknown statistic is 0");
	json = delta_json(vs, &a, &b, true);
	is_str(json, "{\"kvm_vcpu\": {\"exits\": 34, \"mmio_exits\": 2}, \"kvm_vm\": {\"remote_tlb_flush\": 1}, "
	             "\"kvrun\": {\"exit_mmio\": 2, \"blk_requests\": 128}}");
	free(json);
	json = delta_json(vs, &a, &b, false);
	ok(strstr(json, "\"insn_emulation\": 0") && !strstr(json, "blocking") && !strstr(json, "halt_wait_hist") &&
	       !strstr(json, "pages_4k") && strstr(json, "\"vsock_rx_packets\": 0"),
	   "every counter, and no instant or histogram, without nonzero_only");
	free(json);
	vm_stats_sample_free(&a);
	vm_stats_sample_free(&b);
	vm_stats_free(vs);
}

TEST(vm_sample_without_kvm_stats)
{
	struct vm_stats_sample a, b;
	struct vm_stats *vs = NULL;
	char *json;

	is_int(vm_stats_from(NULL, NULL, 0, &vs), 0);
	is_int(vm_stats_sample(vs, &a), 0);
	vmm_count(VMM_DOORBELL_SIGNALS, 3);
	is_int(vm_stats_sample(vs, &b), 0);
	json = delta_json(vs, &a, &b, true);
	is_str(json, "{\"kvm_vcpu\": {}, \"kvm_vm\": {}, \"kvrun\": {\"doorbell_signals\": 3}}");
	free(json);
	vm_stats_sample_free(&a);
	vm_stats_sample_free(&b);
	vm_stats_free(vs);
}

static void count_raise(void *opaque)
{
	(*(int *)opaque)++;
}

TEST(counters)
{
	int raised = 0;
	struct irq_line line = {.fd = -1, .raise_cb = count_raise, .opaque = &raised};
	uint64_t before = vmm_counter_get(VMM_IRQ_RAISED);

	irq_line_raise(&line);
	irq_line_raise(&line);
	ok(raised == 2 && vmm_counter_get(VMM_IRQ_RAISED) == before + 2, "irq_line_raise counts each raise");
	for (unsigned int c = 0; c < VMM_NR_COUNTERS; c++)
		ok(strcmp(vmm_counter_name((enum vmm_counter)c), "unknown") != 0, "counter %u has a name (%s)", c,
		   vmm_counter_name((enum vmm_counter)c));
	is_str(vmm_counter_name(VMM_NR_COUNTERS), "unknown");
}

TAP_MAIN()
