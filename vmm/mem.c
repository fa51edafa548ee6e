/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vmm/mem.h"

/* An anonymous mapping of len bytes starting on a GUEST_MEM_HUGE_PAGE
 * boundary: a guest's 2 MiB block then lies on one host huge page (THP,
 * and KVM's 2 MiB EPT entries), and a block the guest gives back frees
 * that huge page whole instead of splitting it. Kernels align large
 * anonymous mappings themselves only since 6.7: reserve one huge page
 * more and trim. */
static uint8_t *map_aligned(size_t len)
{
	size_t extra = GUEST_MEM_HUGE_PAGE, head;
	uint8_t *raw, *p;

	/* SAFETY: anonymous private mapping owned by the caller; NORESERVE so
	 * that untouched guest RAM costs nothing on the host. */
	raw = mmap(NULL, len + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	p = (uint8_t *)(((uintptr_t)raw + extra - 1) & ~(uintptr_t)(extra - 1));
	head = (size_t)(p - raw);
	if (head)
		munmap(raw, head);
	if (extra - head)
		munmap(p + len, extra - head);
	return p;
}

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
	p = map_aligned(total);
	if (!p)
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
	if (m->file_backed)
		close(m->file_fd);
	memset(m, 0, sizeof(*m));
}

int guest_mem_gpa(const struct guest_mem *m, const void *p, uint64_t len, uint64_t *ret)
{
	uintptr_t a = (uintptr_t)p;

	for (unsigned int i = 0; i < m->nr_regions; i++) {
		const struct guest_mem_region *r = &m->regions[i];
		uintptr_t base = (uintptr_t)r->host;

		if (a >= base && a - base <= r->size && len <= r->size - (a - base)) {
			*ret = r->gpa + (a - base);
			return 0;
		}
	}
	return -EFAULT;
}

int guest_mem_discard(const struct guest_mem *m, uint64_t gpa, uint64_t len)
{
	uint8_t *p = guest_mem_ptr(m, gpa, len);
	uint64_t first, end;

	if (!p)
		return -EFAULT;
	if (!m->mapping)
		return -EOPNOTSUPP;
	/* Whole pages only: the guest's bytes around them stay. Regions and
	 * the mapping are page aligned, so host and guest pages coincide. */
	first = (gpa + GUEST_MEM_PAGE - 1) & ~(GUEST_MEM_PAGE - 1);
	end = (gpa + len) & ~(GUEST_MEM_PAGE - 1);
	if (end <= first)
		return 0;
	/* SAFETY: [p + (first - gpa), + (end - first)) lies inside the range
	 * guest_mem_ptr() found in one region of our own mapping. */
	if (madvise(p + (first - gpa), end - first, MADV_DONTNEED) < 0)
		return -errno;
	return 0;
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
