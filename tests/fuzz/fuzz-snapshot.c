/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The snapshot loader's checks (vmm/snapshot-load.c, snapshot-mem.c): a
 * snapshot file laid out from the input and opened with
 * vm_snapshot_open(), as `kvrun restore` opens a checkpoint it was handed.
 * The input says which sections there are (names, flags, offsets, lengths,
 * bytes), the RAM size and its map of stored pages, and whether the
 * harness fixes up the checksums, the build string and the file size (most
 * of the time: the fuzzer would rarely find a right crc32 by itself, and
 * the checks behind them are what is fuzzed). An opened snapshot is asked
 * for its shape and each section a device could ask for.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "fuzz.h"
#include "vmm/snapshot-int.h"
#include "vmm/vm.h"

#define PAGE 4096u
#define MAX_FILE (256u << 10)

static const char *const names[] = {"memory", "memmap", "vcpu0", "vcpu1", "irqchip", "pit",
                                    "clock",  "blk0",   "net0",  "vsock", "serial",  "platform"};
#define NR_NAMES (sizeof(names) / sizeof(names[0]))

struct layout {
	uint8_t *file;
	size_t len; /* bytes used */
	struct snap_header *h;
};

static uint64_t place(struct layout *l, const void *data, size_t n, size_t align)
{
	size_t at = (l->len + align - 1) / align * align;

	if (at > MAX_FILE || n > MAX_FILE - at)
		return UINT64_MAX;
	memcpy(l->file + at, data, n);
	l->len = at + n;
	return at;
}

/* The map of stored pages and the RAM behind it, both from the input. */
static void add_memory(struct layout *l, struct fz *f, bool fix)
{
	struct snap_section *map = &l->h->sections[l->h->nr_sections++];
	struct snap_section *mem = &l->h->sections[l->h->nr_sections++];
	struct snap_extent ext[8];
	unsigned int n = fz_u8(f) % 9, pages = 1 + fz_u8(f) % 16;
	uLong crc = crc32(0, NULL, 0);
	uint8_t page[PAGE];

	for (unsigned int i = 0; i < n; i++) {
		ext[i].first_page = fz_u8(f) & 0x80 ? fz_u64(f) : fz_u8(f) % 16;
		ext[i].npages = fz_u8(f) & 0x80 ? fz_u64(f) : 1 + fz_u8(f) % 4;
	}
	snprintf(map->name, sizeof(map->name), "memmap");
	map->length = n * sizeof(ext[0]);
	map->offset = place(l, ext, map->length, 8);
	map->crc = (uint32_t)crc32(0, (const Bytef *)ext, (uInt)map->length);
	snprintf(mem->name, sizeof(mem->name), "memory");
	mem->flags = SNAP_SEC_MEMORY;
	mem->offset = (l->len + SNAP_HEADER_AREA - 1) / SNAP_HEADER_AREA * SNAP_HEADER_AREA;
	mem->length = (uint64_t)pages * PAGE;
	l->h->mem_size = mem->length;
	for (unsigned int p = 0; p < pages && mem->offset + (p + 1) * PAGE <= MAX_FILE; p++) {
		memset(page, 0, sizeof(page));
		fz_take(f, page, fz_u8(f));
		place(l, page, PAGE, PAGE);
	}
	/* The crc of the stored pages, as snap_mem_crc() reads them. */
	for (unsigned int i = 0; fix && i < n; i++)
		for (uint64_t p = ext[i].first_page;
		     p - ext[i].first_page < ext[i].npages && p < pages && mem->offset + (p + 1) * PAGE <= MAX_FILE;
		     p++)
			crc = crc32(crc, l->file + mem->offset + p * PAGE, PAGE);
	mem->crc = (uint32_t)crc;
}

static void add_section(struct layout *l, struct fz *f)
{
	struct snap_section *s = &l->h->sections[l->h->nr_sections++];
	uint8_t data[512];
	size_t n = fz_u16(f) % sizeof(data);

	snprintf(s->name, sizeof(s->name), "%s", names[fz_u8(f) % NR_NAMES]);
	s->flags = fz_u8(f) % 4;
	fz_take(f, data, n);
	s->length = n;
	s->offset = place(l, data, n, 8);
	s->crc = (uint32_t)crc32(0, data, (uInt)n);
}

static void layout_from(struct layout *l, struct fz *f)
{
	uint8_t fix = fz_u8(f), n = fz_u8(f) % 12;

	l->len = SNAP_HEADER_AREA;
	memcpy(l->h->magic, SNAP_MAGIC, sizeof(l->h->magic));
	l->h->version = SNAPSHOT_FORMAT_VERSION;
	l->h->header_size = sizeof(*l->h);
	snprintf(l->h->build, sizeof(l->h->build), "%s", snap_build());
	l->h->ncpus = 1 + fz_u8(f) % 3;
	if (fix & 0x10)
		add_memory(l, f, fix & 0x20);
	for (unsigned int i = 0; i < n && l->h->nr_sections < SNAP_MAX_SECTIONS; i++)
		add_section(l, f);
	l->h->file_size = l->len;
	if (!(fix & 1)) {
		/* Anything at all in the header. */
		fz_take(f, l->h, fz_u8(f) % sizeof(*l->h));
	}
	if (!(fix & 2))
		l->h->header_crc = (uint32_t)crc32(0, (const Bytef *)l->h, offsetof(struct snap_header, header_crc));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = {data, size};
	struct layout l = {.file = calloc(1, MAX_FILE + PAGE)};
	struct vm_snapshot *s;
	char path[64];
	int fd;

	if (!l.file)
		abort();
	l.h = (struct snap_header *)l.file;
	layout_from(&l, &f);
	fd = memfd_create("snapshot", MFD_CLOEXEC);
	if (fd < 0 || write(fd, l.file, l.len) != (ssize_t)l.len)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (vm_snapshot_open(path, fz_u8(&f) & 1 ? SNAPSHOT_OPEN_TRUST_MEMORY : 0, &s) == 0) {
		struct vm_config cfg = {0};

		vm_snapshot_config(s, &cfg);
		if (cfg.ncpus < 1 || cfg.mem_size == 0)
			abort();
		for (size_t i = 0; i < NR_NAMES; i++) {
			const void *p;
			size_t len;

			if (vm_snapshot_device_data(s, names[i], &p, &len) == 0 && len && !p)
				abort();
			(void)vm_snapshot_has_device(s, names[i]);
		}
		vm_snapshot_close(s);
	}
	close(fd);
	free(l.file);
	return 0;
}
