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
};

/* Reserve and map size bytes of guest RAM (anonymous, MAP_NORESERVE, huge
 * page advice), laid out below the 32-bit gap and above 4 GiB. size must be a
 * multiple of 4 KiB and at least 1 MiB. */
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

/* Copy between guest and host; -EFAULT when the range is not guest RAM. */
int guest_mem_read(const struct guest_mem *m, uint64_t gpa, void *dst, size_t len);
int guest_mem_write(const struct guest_mem *m, uint64_t gpa, const void *src, size_t len);

#endif
