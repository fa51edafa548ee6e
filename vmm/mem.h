/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Guest physical memory. The only way the VMM and devices reach guest memory:
 * every access goes through guest_mem_ptr(), which validates the whole range
 * [gpa, gpa + len) against the RAM regions, so a guest-supplied address or
 * length can never make the VMM touch host memory outside guest RAM.
 */
#ifndef KVRUN_VMM_MEM_H
#define KVRUN_VMM_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GUEST_MEM_MAX_REGIONS 4

/* x86: RAM above this goes to 4 GiB upwards (room for MMIO, IOAPIC, LAPIC). */
#define GUEST_MEM_32BIT_GAP_START 0xc0000000ULL
#define GUEST_MEM_32BIT_GAP_END 0x100000000ULL

struct guest_mem_region {
	uint64_t gpa;
	uint64_t size;
	uint8_t *host; /* mapping of this region in the VMM */
};

struct guest_mem {
	struct guest_mem_region regions[GUEST_MEM_MAX_REGIONS];
	unsigned int nr_regions;
	uint8_t *mapping; /* one reservation holding all regions */
	size_t mapping_size;
	uint64_t ram_size; /* total RAM bytes */
	/* RAM mapped MAP_PRIVATE from a snapshot file (vmm/snapshot-mem.c)
	 * at file_off: file_fd is a descriptor of it the struct owns. */
	bool file_backed;
	int file_fd;
	uint64_t file_off;
};

/* Host huge page size: the RAM mapping starts on such a boundary. */
#define GUEST_MEM_HUGE_PAGE (2ULL << 20)
/* The unit guest_mem_discard() gives back (the host's base page on x86-64). */
#define GUEST_MEM_PAGE 4096ULL

/* Reserve and map size bytes of guest RAM (anonymous, MAP_NORESERVE, huge
 * page advice, 2 MiB aligned), laid out below the 32-bit gap and above 4 GiB.
 * size must be a multiple of 4 KiB and at least 1 MiB. Nothing is allocated
 * until touched: a page costs host memory once the guest (or the VMM)
 * writes it; reads of untouched pages map the shared zero page. */
int guest_mem_init(struct guest_mem *m, uint64_t size);

/* Wrap an existing buffer as a single region at GPA 0 (unit tests, fakes). */
void guest_mem_init_buffer(struct guest_mem *m, void *buf, uint64_t size);

/* Unmap (only what guest_mem_init mapped). Accepts a zeroed struct. */
void guest_mem_destroy(struct guest_mem *m);

/* Host pointer for [gpa, gpa + len), or NULL when any byte of the range is
 * not guest RAM or the range wraps. The range must lie in one region. */
static inline void *guest_mem_ptr(const struct guest_mem *m, uint64_t gpa, uint64_t len)
{
	for (unsigned int i = 0; i < m->nr_regions; i++) {
		const struct guest_mem_region *r = &m->regions[i];

		if (gpa >= r->gpa && gpa - r->gpa <= r->size && len <= r->size - (gpa - r->gpa))
			return r->host + (gpa - r->gpa);
	}
	return NULL;
}

/* The guest physical address of host pointer p, when [p, p + len) is
 * guest RAM of one region: 0, else -EFAULT. */
int guest_mem_gpa(const struct guest_mem *m, const void *p, uint64_t len, uint64_t *ret);

/* Give the host memory behind guest RAM [gpa, gpa + len) back: the guest
 * said it keeps nothing there (a free page report, an inflated balloon).
 * The range must be RAM of one region; the whole 4 KiB pages inside it
 * are dropped with MADV_DONTNEED (a partial page at either end is kept).
 * The next access to a dropped page finds zeros in anonymous RAM, and the
 * snapshot's page in RAM mapped from a snapshot (MAP_PRIVATE: only the
 * VM's private copies go; the file, which other VMs may map, is never
 * written). Returns 0, -EFAULT when the range is not guest RAM,
 * -EOPNOTSUPP for memory guest_mem_init() did not map, or madvise's
 * errno. */
int guest_mem_discard(const struct guest_mem *m, uint64_t gpa, uint64_t len);

/* Copy between guest and host; -EFAULT when the range is not guest RAM. */
int guest_mem_read(const struct guest_mem *m, uint64_t gpa, void *dst, size_t len);
int guest_mem_write(const struct guest_mem *m, uint64_t gpa, const void *src, size_t len);

#endif
