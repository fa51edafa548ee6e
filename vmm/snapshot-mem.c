/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Guest RAM in a snapshot file: an image of the whole RAM mapping at a
 * page-aligned offset, in which only non-zero pages are written; zero pages
 * stay holes of a sparse file (on file systems that have holes). Every page
 * is read once to find out: a page the guest never touched reads as the
 * shared zero page, without allocating memory. (mincore() is no shortcut:
 * pages mapped from the kernel file and swapped-out pages are not resident
 * yet hold data.) The extents of stored pages and their crc32 are kept
 * beside it, so corruption is found without reading the holes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "common/error.h"
#include "vmm/snapshot-int.h"
#include "vmm/vm.h"

#define PAGE 4096ULL
#define CRC_CHUNK (1ULL << 20)

static bool page_is_zero(const uint8_t *p)
{
	const uint64_t *w = (const uint64_t *)p;
	uint64_t acc = 0;

	for (size_t i = 0; i < PAGE / 8; i += 8)
		acc |= w[i] | w[i + 1] | w[i + 2] | w[i + 3] | w[i + 4] | w[i + 5] | w[i + 6] | w[i + 7];
	return acc == 0;
}

static int pwrite_all(int fd, const uint8_t *p, size_t len, uint64_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static int write_extent(int fd, const uint8_t *base, uint64_t mem_off, struct snap_extent *e, struct snap_buf *map,
                        uint32_t *crc)
{
	const uint8_t *p = base + e->first_page * PAGE;
	size_t len = e->npages * PAGE;
	int r;

	/* zlib's crc32 takes a uInt length: feed it in chunks. */
	for (size_t done = 0; done < len; done += CRC_CHUNK)
		*crc = (uint32_t)crc32(*crc, p + done, (uInt)(len - done < CRC_CHUNK ? len - done : CRC_CHUNK));
	r = pwrite_all(fd, p, len, mem_off + e->first_page * PAGE);
	if (r < 0)
		return err_setsys(r, "writing guest memory to the snapshot");
	return snap_buf_put(map, e, sizeof(*e));
}

int snap_mem_write(struct vm *vm, int fd, uint64_t mem_off, struct snap_buf *map, uint32_t *ret_crc,
                   uint64_t *ret_bytes, uint64_t *ret_pages)
{
	const uint8_t *base = vm->mem.mapping;
	uint64_t npages = vm->mem.mapping_size / PAGE, stored = 0;
	uint32_t crc = (uint32_t)crc32(0, NULL, 0);
	struct snap_extent e = {0};
	int r;

	for (uint64_t pg = 0; pg <= npages; pg++) {
		bool data = pg < npages && !page_is_zero(base + pg * PAGE);

		if (data) {
			if (!e.npages)
				e.first_page = pg;
			e.npages++;
			continue;
		}
		if (!e.npages)
			continue;
		r = write_extent(fd, base, mem_off, &e, map, &crc);
		if (r < 0)
			return r;
		stored += e.npages;
		e.npages = 0;
	}
	if (map->err)
		return map->err;
	*ret_crc = crc;
	*ret_bytes = stored * PAGE;
	*ret_pages = stored;
	return 0;
}

int snap_mem_crc(int fd, uint64_t mem_off, uint64_t mem_size, const void *map, size_t map_len, uint32_t *ret_crc)
{
	_cleanup_free_ uint8_t *buf = malloc(CRC_CHUNK);
	const struct snap_extent *e = map;
	uint32_t crc = (uint32_t)crc32(0, NULL, 0);
	uint64_t prev_end = 0;

	if (!buf)
		return -ENOMEM;
	if (map_len % sizeof(*e))
		return err_set(-EBADMSG, "memory map section has %zu bytes", map_len);
	for (size_t i = 0; i < map_len / sizeof(*e); i++) {
		uint64_t off = e[i].first_page * PAGE, len = e[i].npages * PAGE;

		/* In order, not overlapping, inside RAM. */
		if (e[i].first_page < prev_end || !e[i].npages || e[i].npages > mem_size / PAGE ||
		    e[i].first_page > mem_size / PAGE - e[i].npages)
			return err_set(-EBADMSG, "memory map extent %zu is out of range", i);
		prev_end = e[i].first_page + e[i].npages;
		while (len) {
			size_t n = len < CRC_CHUNK ? len : CRC_CHUNK;
			ssize_t got = pread(fd, buf, n, (off_t)(mem_off + off));

			if (got < 0 && errno == EINTR)
				continue;
			if (got < 0)
				return err_setsys(-errno, "reading guest memory from the snapshot");
			if (got == 0)
				return err_set(-EBADMSG, "guest memory ends early (truncated file)");
			crc = (uint32_t)crc32(crc, buf, (uInt)got);
			off += (uint64_t)got;
			len -= (uint64_t)got;
		}
	}
	*ret_crc = crc;
	return 0;
}

int snap_mem_map(struct vm *vm, int fd, uint64_t mem_off)
{
	void *p;

	/* SAFETY: replaces the VM's own anonymous RAM mapping in place (same
	 * address and size, so the KVM memory slots and the region pointers
	 * stay valid) with a private copy-on-write mapping of the file: the
	 * guest's writes never reach the file, which may be restored again. */
	p = mmap(vm->mem.mapping, vm->mem.mapping_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED | MAP_NORESERVE,
	         fd, (off_t)mem_off);
	if (p == MAP_FAILED)
		return err_setsys(-errno, "mapping guest memory from the snapshot");
	madvise(p, vm->mem.mapping_size, MADV_DONTDUMP);
	return 0;
}
