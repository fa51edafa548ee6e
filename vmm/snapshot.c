/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The snapshot file: a header page (magic, format version, build, host CPU,
 * VM shape, section table, header crc32), then sections, each with its own
 * crc32: "irqchip", "pit", "vcpu<N>", one per device, "clock", guest RAM
 * ("memory", page aligned, sparse) and the map of its stored pages
 * ("memmap"). docs/snapshot.md has the layout.
 */
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "config.h"
#include "common/error.h"
#include "common/log.h"
#include "vmm/snapshot-int.h"
#include "vmm/vcpu.h"
#include "vmm/vm.h"

#define SNAP_BUILD "kvrun " KVRUN_VERSION " " KVRUN_COMMIT

int snap_buf_put(struct snap_buf *b, const void *p, size_t n)
{
	/* Nothing to add: an empty buffer keeps data NULL, and NULL + 0 is
	 * undefined for memcpy's destination. */
	if (b->err || n == 0)
		return b->err;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		uint8_t *d;

		while (cap < b->len + n)
			cap *= 2;
		d = realloc(b->data, cap);
		if (!d)
			return b->err = -ENOMEM;
		b->data = d;
		b->cap = cap;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

void snap_buf_free(struct snap_buf *b)
{
	free(b->data);
	*b = (struct snap_buf){0};
}

int snap_get(struct snap_reader *r, void *dst, size_t n)
{
	if (n > r->len - r->off)
		return -EBADMSG;
	if (n == 0)
		return 0;
	memcpy(dst, r->p + r->off, n);
	r->off += n;
	return 0;
}

const char *snap_build(void)
{
	return SNAP_BUILD;
}

uint32_t crc_of(const void *p, size_t n)
{
	return (uint32_t)crc32(crc32(0, NULL, 0), p, (uInt)n);
}

/* What identifies the host for a snapshot: the CPU vendor, KVM's CPUID
 * table (features, XSAVE layout) and the XSAVE size. */
void snap_host_fill(const struct vm *vm, struct snap_header *h)
{
	unsigned int a, b, c, d;

	memset(h->cpu_vendor, 0, sizeof(h->cpu_vendor));
	if (__get_cpuid(0, &a, &b, &c, &d)) {
		memcpy(h->cpu_vendor, &b, 4);
		memcpy(h->cpu_vendor + 4, &d, 4);
		memcpy(h->cpu_vendor + 8, &c, 4);
	}
	h->cpuid_nent = vm->supported_cpuid->nent;
	h->cpuid_crc = (uint32_t)crc32(0, NULL, 0);
	for (uint32_t i = 0; i < vm->supported_cpuid->nent; i++) {
		struct kvm_cpuid_entry2 e = vm->supported_cpuid->entries[i];

		/* Fields that name the host CPU this thread happens to run on
		 * (its APIC id) are not features. */
		if (e.function == 1)
			e.ebx &= 0x00ffffff;
		if (e.function == 0xb || e.function == 0x1f)
			e.edx = 0;
		if (e.function == 0x8000001e)
			e.eax = 0;
		h->cpuid_crc = (uint32_t)crc32(h->cpuid_crc, (const Bytef *)&e, sizeof(e));
	}
	h->xsave_size = vcpu_state_xsave_size(vm->kvm_fd);
}

struct snap_writer {
	int fd;
	uint64_t off;
	struct snap_header *h;
	uint64_t bytes;
};

static int writer_add(struct snap_writer *w, const char *name, uint32_t flags, const struct snap_buf *b)
{
	struct snap_section *s;
	int r;

	if (b->err)
		return b->err;
	if (w->h->nr_sections >= SNAP_MAX_SECTIONS)
		return err_set(-E2BIG, "more than %d snapshot sections", SNAP_MAX_SECTIONS);
	if (strlen(name) >= SNAPSHOT_NAME_MAX)
		return err_set(-ENAMETOOLONG, "snapshot section name '%s' is too long", name);
	s = &w->h->sections[w->h->nr_sections++];
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->offset = w->off;
	s->length = b->len;
	s->crc = crc_of(b->data, b->len);
	s->flags = flags;
	for (size_t done = 0; done < b->len;) {
		ssize_t n = pwrite(w->fd, b->data + done, b->len - done, (off_t)(w->off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			return err_setsys(r, "writing snapshot section '%s'", name);
		}
		done += (size_t)n;
	}
	w->bytes += b->len;
	w->off = (w->off + b->len + 7) & ~7ULL;
	return 0;
}

/* One section from a save function; buf is reused. */
typedef int (*save_fn)(void *ctx, struct snap_buf *out);

static int writer_add_fn(struct snap_writer *w, const char *name, uint32_t flags, save_fn fn, void *ctx)
{
	struct snap_buf b = {0};
	int r = fn(ctx, &b);

	if (r >= 0)
		r = writer_add(w, name, flags, &b);
	snap_buf_free(&b);
	return r;
}

static int save_irqchip(void *vm, struct snap_buf *out)
{
	return vm_state_save_irqchip(vm, out);
}

static int save_pit(void *vm, struct snap_buf *out)
{
	return vm_state_save_pit(vm, out);
}

static int save_clock(void *vm, struct snap_buf *out)
{
	return vm_state_save_clock(vm, out);
}

struct vcpu_ctx {
	struct vcpu *v;
	const struct vcpu_state_caps *caps;
};

static int save_vcpu(void *ctx, struct snap_buf *out)
{
	struct vcpu_ctx *c = ctx;

	return vcpu_state_save(c->v, c->caps, out);
}

static int write_devices(struct snap_writer *w, const struct snapshot_dev *devs, unsigned int ndevs)
{
	for (unsigned int i = 0; i < ndevs; i++) {
		int r = writer_add_fn(w, devs[i].name, SNAP_SEC_DEVICE, devs[i].save, devs[i].opaque);

		if (r < 0)
			return err_prefix(r, "device %s", devs[i].name);
	}
	return 0;
}

static int write_memory(struct snap_writer *w, struct vm *vm, struct snapshot_stats *st)
{
	struct snap_buf map = {0};
	uint64_t mem_off = (w->off + SNAP_HEADER_AREA - 1) & ~(SNAP_HEADER_AREA - 1), bytes;
	struct snap_section *mem;
	uint32_t crc;
	int r;

	if (w->h->nr_sections + 2 > SNAP_MAX_SECTIONS)
		return err_set(-E2BIG, "more than %d snapshot sections", SNAP_MAX_SECTIONS);
	r = snap_mem_write(vm, w->fd, mem_off, &map, &crc, &bytes, &st->mem_pages);
	if (r < 0) {
		snap_buf_free(&map);
		return r;
	}
	mem = &w->h->sections[w->h->nr_sections++];
	*mem = (struct snap_section){
	    .name = "memory", .offset = mem_off, .length = vm->mem.mapping_size, .crc = crc, .flags = SNAP_SEC_MEMORY};
	w->bytes += bytes;
	w->off = mem_off + vm->mem.mapping_size;
	r = writer_add(w, "memmap", 0, &map);
	snap_buf_free(&map);
	return r;
}

static int write_all(struct snap_writer *w, struct vm *vm, const struct snapshot_dev *devs, unsigned int ndevs,
                     struct snapshot_stats *st)
{
	struct vcpu_state_caps caps;
	char name[SNAPSHOT_NAME_MAX];
	int r;

	r = vcpu_state_caps_probe(vm, &caps);
	if (r < 0)
		return r;
	w->h->xsave_size = caps.xsave_size;
	r = writer_add_fn(w, "irqchip", 0, save_irqchip, vm);
	if (r >= 0)
		r = writer_add_fn(w, "pit", 0, save_pit, vm);
	for (unsigned int i = 0; r >= 0 && i < vm->ncpus; i++) {
		struct vcpu_ctx c = {vm->vcpus[i], &caps};

		snprintf(name, sizeof(name), "vcpu%u", i);
		r = writer_add_fn(w, name, 0, save_vcpu, &c);
	}
	vcpu_state_caps_free(&caps);
	if (r >= 0)
		r = write_devices(w, devs, ndevs);
	if (r >= 0)
		r = writer_add_fn(w, "clock", 0, save_clock, vm);
	if (r >= 0)
		r = write_memory(w, vm, st);
	return r;
}

static int write_header(struct snap_writer *w)
{
	struct snap_header *h = w->h;

	h->file_size = w->off;
	h->header_crc = crc_of(h, offsetof(struct snap_header, header_crc));
	if (pwrite(w->fd, h, sizeof(*h), 0) != (ssize_t)sizeof(*h))
		return err_setsys(-errno, "writing the snapshot header");
	if (ftruncate(w->fd, (off_t)w->off) < 0)
		return err_setsys(-errno, "sizing the snapshot file");
	w->bytes += sizeof(*h);
	return 0;
}

int vm_snapshot_save_fd(struct vm *vm, int fd, const struct snapshot_dev *devs, unsigned int ndevs,
                        struct snapshot_stats *ret_stats)
{
	_cleanup_free_ struct snap_header *h = calloc(1, sizeof(*h));
	struct snapshot_stats st = {0};
	uint64_t t0 = vm_now_ns();
	struct snap_writer w = {.off = SNAP_HEADER_AREA, .fd = fd};
	int r;

	if (!h)
		return -ENOMEM;
	/* Zero pages are left as holes: stale bytes there would read back as
	 * guest memory. */
	if (ftruncate(fd, 0) < 0)
		return err_setsys(-errno, "emptying the snapshot file");
	memcpy(h->magic, SNAP_MAGIC, sizeof(h->magic));
	h->version = SNAPSHOT_FORMAT_VERSION;
	h->header_size = sizeof(*h);
	snprintf(h->build, sizeof(h->build), "%s", SNAP_BUILD);
	snap_host_fill(vm, h);
	h->ncpus = vm->ncpus;
	h->mem_size = vm->mem.ram_size;
	w.h = h;
	r = write_all(&w, vm, devs, ndevs, &st);
	if (r >= 0)
		r = write_header(&w);
	if (r < 0)
		return r;
	st.file_bytes = w.bytes;
	st.save_us = (vm_now_ns() - t0) / 1000;
	if (ret_stats)
		*ret_stats = st;
	return 0;
}

int vm_snapshot_save(struct vm *vm, const char *path, const struct snapshot_dev *devs, unsigned int ndevs,
                     struct snapshot_stats *ret_stats)
{
	_cleanup_free_ char *tmp = NULL;
	int fd, r;

	if (asprintf(&tmp, "%s.tmp.XXXXXX", path) < 0)
		return -ENOMEM;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return err_setsys(-errno, "cannot create snapshot file %s", tmp);
	r = vm_snapshot_save_fd(vm, fd, devs, ndevs, ret_stats);
	if (close(fd) < 0 && r >= 0)
		r = err_setsys(-errno, "closing snapshot file");
	if (r >= 0 && rename(tmp, path) < 0)
		r = err_setsys(-errno, "renaming the snapshot to %s", path);
	if (r < 0) {
		unlink(tmp);
		return err_prefix(r, "snapshot %s", path);
	}
	return 0;
}
