/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Guest RAM in a snapshot file: an image of the whole RAM mapping at a
 * page-aligned offset, in which only non-zero pages are written; zero pages
 * stay holes of a sparse file (on file systems that have holes). The
 * extents of stored pages and their crc32 are kept beside it, so corruption
 * is found without reading the holes.
 *
 * Which pages hold data: anonymous RAM (a booted VM) is read page by page;
 * a page the guest never touched reads as the shared zero page, without
 * allocating memory. (mincore() is no shortcut: swapped-out pages are not
 * resident yet hold data.) RAM mapped from a snapshot (a restored VM) is
 * different: reading a page there that the VM has no copy of maps the
 * file's page, and for a hole of the file the page cache allocates a zero
 * page: 2 GiB of holes read would cost 2 GiB of page cache, all mapped. So
 * /proc/self/pagemap says which pages are the VM's own (present and
 * anonymous, or swapped: read them), and of the others, those over a hole
 * of the file (SEEK_DATA/SEEK_HOLE) are zero without being read. Without
 * pagemap, or on a file system without SEEK_DATA, every page is read.
 */
#include <errno.h>
#include <fcntl.h>
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
/* pagemap entries read at a time. */
#define PM_CHUNK 4096
#define PM_PRESENT (1ULL << 63)
#define PM_SWAPPED (1ULL << 62)
#define PM_FILE (1ULL << 61)

static bool page_is_zero(const uint8_t *p)
{
	const uint64_t *w = (const uint64_t *)p;
	uint64_t acc = 0;

	for (size_t i = 0; i < PAGE / 8; i += 8)
		acc |= w[i] | w[i + 1] | w[i + 2] | w[i + 3] | w[i + 4] | w[i + 5] | w[i + 6] | w[i + 7];
	return acc == 0;
}

/* RAM mapped from a file: which pages are the VM's own, and where the
 * file has data. */
struct mem_scan {
	const struct guest_mem *mem;
	int pagemap_fd; /* -1: read every page */
	uint64_t pm[PM_CHUNK];
	uint64_t pm_first, pm_n; /* pages pm holds */
	uint64_t data_start, data_end; /* a data extent of the file (offsets), or past the end */
	bool no_seek; /* the file system cannot tell holes: all data */
};

static void scan_init(struct mem_scan *sc, const struct guest_mem *mem)
{
	sc->mem = mem;
	sc->pm_n = 0;
	sc->data_start = sc->data_end = 0;
	sc->no_seek = false;
	sc->pagemap_fd = mem->file_backed ? open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC) : -1;
}

/* The pagemap entry of page pg of the RAM mapping into *ret; false when
 * it cannot be read (then the page is read). */
static bool scan_pagemap(struct mem_scan *sc, uint64_t pg, uint64_t npages, uint64_t *ret)
{
	if (pg < sc->pm_first || pg >= sc->pm_first + sc->pm_n) {
		uint64_t n = npages - pg < PM_CHUNK ? npages - pg : PM_CHUNK;
		uint64_t vpage = ((uintptr_t)sc->mem->mapping >> 12) + pg;
		ssize_t got = pread(sc->pagemap_fd, sc->pm, n * 8, (off_t)(vpage * 8));

		sc->pm_first = pg;
		sc->pm_n = got > 0 ? (uint64_t)got / 8 : 0;
		if (!sc->pm_n)
			return false;
	}
	*ret = sc->pm[pg - sc->pm_first];
	return true;
}

/* Whether the file has a hole at off (false when that cannot be told). */
static bool scan_hole(struct mem_scan *sc, uint64_t off)
{
	int fd = sc->mem->file_fd;
	off_t d, h;

	if (sc->no_seek || off < sc->data_start)
		return !sc->no_seek;
	if (off < sc->data_end)
		return false;
	d = lseek(fd, (off_t)off, SEEK_DATA);
	if (d < 0 && errno == ENXIO) {
		/* No data from off to the end of the file. */
		sc->data_start = sc->data_end = UINT64_MAX;
		return true;
	}
	if (d < 0) {
		sc->no_seek = true;
		return false;
	}
	h = lseek(fd, d, SEEK_HOLE);
	sc->data_start = (uint64_t)d;
	sc->data_end = h > d ? (uint64_t)h : UINT64_MAX;
	return off < sc->data_start;
}

/* Whether page pg holds anything but zeros. */
static bool page_has_data(struct mem_scan *sc, uint64_t pg, uint64_t npages)
{
	uint64_t e;

	/* Not the VM's own: the file's page, which over a hole is zero. */
	if (sc->pagemap_fd >= 0 && scan_pagemap(sc, pg, npages, &e) && !(e & PM_SWAPPED) &&
	    !((e & PM_PRESENT) && !(e & PM_FILE)) && scan_hole(sc, sc->mem->file_off + pg * PAGE))
		return false;
	return !page_is_zero(sc->mem->mapping + pg * PAGE);
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
	_cleanup_free_ struct mem_scan *sc = malloc(sizeof(*sc));
	int r = 0;

	if (!sc)
		return -ENOMEM;
	scan_init(sc, &vm->mem);
	for (uint64_t pg = 0; pg <= npages; pg++) {
		bool data = pg < npages && page_has_data(sc, pg, npages);

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
			break;
		stored += e.npages;
		e.npages = 0;
	}
	if (sc->pagemap_fd >= 0)
		close(sc->pagemap_fd);
	if (r < 0)
		return r;
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
	/* Kept for a later save, which looks up the file's holes (without it
	 * that save reads every page). */
	if (!vm->mem.file_backed) {
		int dup = fcntl(fd, F_DUPFD_CLOEXEC, 3);

		if (dup >= 0) {
			vm->mem.file_backed = true;
			vm->mem.file_fd = dup;
			vm->mem.file_off = mem_off;
		}
	}
	return 0;
}
