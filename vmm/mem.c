/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "vmm/mem.h"

int guest_mem_init(struct guest_mem *m, uint64_t size)
{
	uint64_t low, high;
	size_t total;
	uint8_t *p;

	memset(m, 0, sizeof(*m));
	if (size < (1ULL << 20) || (size & 0xfff))
		return -EINVAL;
	low = size < GUEST_MEM_32BIT_GAP_START ? size : GUEST_MEM_32BIT_GAP_START;
	high = size - low;
	total = (size_t)size;
	/* SAFETY: anonymous private mapping owned by this struct; NORESERVE so
	 * that untouched guest RAM costs nothing on the host. */
	p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	madvise(p, total, MADV_HUGEPAGE);
	madvise(p, total, MADV_DONTDUMP);
	m->mapping = p;
	m->mapping_size = total;
	m->ram_size = size;
	m->regions[0] = (struct guest_mem_region){.gpa = 0, .size = low, .host = p};
	m->nr_regions = 1;
	if (high) {
		m->regions[1] =
		    (struct guest_mem_region){.gpa = GUEST_MEM_32BIT_GAP_END, .size = high, .host = p + low};
		m->nr_regions = 2;
	}
	return 0;
}

void guest_mem_init_buffer(struct guest_mem *m, void *buf, uint64_t size)
{
	memset(m, 0, sizeof(*m));
	m->regions[0] = (struct guest_mem_region){.gpa = 0, .size = size, .host = buf};
	m->nr_regions = 1;
	m->ram_size = size;
}

void guest_mem_destroy(struct guest_mem *m)
{
	if (m->mapping)
		munmap(m->mapping, m->mapping_size);
	memset(m, 0, sizeof(*m));
}

int guest_mem_read(const struct guest_mem *m, uint64_t gpa, void *dst, size_t len)
{
	const void *p = guest_mem_ptr(m, gpa, len);

	if (!p)
		return -EFAULT;
	memcpy(dst, p, len);
	return 0;
}

int guest_mem_write(const struct guest_mem *m, uint64_t gpa, const void *src, size_t len)
{
	void *p = guest_mem_ptr(m, gpa, len);

	if (!p)
		return -EFAULT;
	memcpy(p, src, len);
	return 0;
}
