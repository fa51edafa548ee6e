/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tap.h"
#include "vmm/mem.h"

/* Resident pages of [p, p + len), page aligned. */
static size_t resident(const void *p, size_t len)
{
	size_t n = len / GUEST_MEM_PAGE, count = 0;
	unsigned char *vec = calloc(n, 1);

	if (!vec || mincore((void *)p, len, vec) < 0) {
		free(vec);
		return (size_t)-1;
	}
	for (size_t i = 0; i < n; i++)
		count += vec[i] & 1;
	free(vec);
	return count;
}

TEST(bounds)
{
	static uint8_t buf[8192];
	struct guest_mem m;
	uint32_t v = 0x12345678, r = 0;

	guest_mem_init_buffer(&m, buf, sizeof(buf));
	ok(guest_mem_ptr(&m, 0, 8192) == buf, "whole range");
	ok(guest_mem_ptr(&m, 8192, 0) == buf + 8192, "empty range at end");
	ok(guest_mem_ptr(&m, 8191, 2) == NULL, "one byte past end");
	ok(guest_mem_ptr(&m, 8193, 0) == NULL, "start past end");
	ok(guest_mem_ptr(&m, UINT64_MAX, 2) == NULL, "wrapping range");
	ok(guest_mem_ptr(&m, 4, UINT64_MAX) == NULL, "huge length");
	is_int(guest_mem_write(&m, 100, &v, 4), 0);
	is_int(guest_mem_read(&m, 100, &r, 4), 0);
	is_int(r, 0x12345678);
	is_int(guest_mem_read(&m, 8190, &r, 4), -EFAULT);
}

TEST(split_layout)
{
	struct guest_mem m;
	uint64_t size = GUEST_MEM_32BIT_GAP_START + (64ULL << 20);

	is_int(guest_mem_init(&m, size), 0);
	is_int(m.nr_regions, 2);
	ok(guest_mem_ptr(&m, GUEST_MEM_32BIT_GAP_START - 4096, 4096) != NULL, "last low page");
	ok(guest_mem_ptr(&m, GUEST_MEM_32BIT_GAP_START, 1) == NULL, "gap is not RAM");
	ok(guest_mem_ptr(&m, GUEST_MEM_32BIT_GAP_END, 4096) != NULL, "first high page");
	ok(guest_mem_ptr(&m, GUEST_MEM_32BIT_GAP_END + (64ULL << 20), 1) == NULL, "past high end");
	ok(guest_mem_ptr(&m, GUEST_MEM_32BIT_GAP_START - 4, 8) == NULL, "range across the gap");
	guest_mem_destroy(&m);
	is_int(guest_mem_init(&m, 12345), -EINVAL);
}

TEST(lazy_and_aligned)
{
	struct guest_mem m;
	uint64_t size = 1ULL << 30;
	uint8_t *p;

	is_int(guest_mem_init(&m, size), 0);
	ok((uintptr_t)m.mapping % GUEST_MEM_HUGE_PAGE == 0, "RAM starts on a 2 MiB boundary");
	is_int(resident(m.mapping, size), 0);
	p = guest_mem_ptr(&m, 300ULL << 20, 4096);
	memset(p, 0x5a, 4096);
	ok(resident(m.mapping, size) >= 1, "a written page is resident");
	ok(resident(m.mapping, size) <= GUEST_MEM_HUGE_PAGE / GUEST_MEM_PAGE, "and at most its huge page");
	guest_mem_destroy(&m);
}

TEST(discard_anonymous)
{
	struct guest_mem m;
	uint64_t block = 64ULL << 20, gpa;
	uint8_t *p;

	is_int(guest_mem_init(&m, 256ULL << 20), 0);
	p = guest_mem_ptr(&m, block, GUEST_MEM_HUGE_PAGE);
	memset(p, 0xa5, GUEST_MEM_HUGE_PAGE);
	is_int(resident(p, GUEST_MEM_HUGE_PAGE), GUEST_MEM_HUGE_PAGE / GUEST_MEM_PAGE);
	is_int(guest_mem_gpa(&m, p + 8192, 4096, &gpa), 0);
	ok(gpa == block + 8192, "host pointer back to its guest address");

	/* No whole page in the range: nothing goes. */
	is_int(guest_mem_discard(&m, block + 100, 4000), 0);
	ok(p[100] == 0xa5 && p[4095] == 0xa5, "a partial page is kept");
	/* Whole pages inside an unaligned range go, the partial ones stay. */
	is_int(guest_mem_discard(&m, block + 4000, 8192 + 200), 0);
	ok(p[4000] == 0xa5 && p[4095] == 0xa5, "the partial first page is kept");
	ok(p[4096] == 0 && p[12287] == 0, "the two whole pages inside are zero again");
	ok(p[12288] == 0xa5 && p[16383] == 0xa5, "the partial last page is kept");
	/* The whole block. */
	is_int(guest_mem_discard(&m, block, GUEST_MEM_HUGE_PAGE), 0);
	is_int(resident(p, GUEST_MEM_HUGE_PAGE), 0);
	ok(p[0] == 0 && p[GUEST_MEM_HUGE_PAGE - 1] == 0, "a discarded block reads as zeros");
	guest_mem_destroy(&m);
}

TEST(discard_refuses_what_is_not_ram)
{
	static uint8_t buf[16384];
	struct guest_mem m, b;
	uint64_t gpa;

	is_int(guest_mem_init(&m, 64ULL << 20), 0);
	memset(m.mapping + (64ULL << 20) - 4096, 0x11, 4096);
	is_int(guest_mem_discard(&m, (64ULL << 20) - 4096, 8192), -EFAULT);
	is_int(guest_mem_discard(&m, 64ULL << 20, 4096), -EFAULT);
	is_int(guest_mem_discard(&m, UINT64_MAX - 4095, 8192), -EFAULT);
	is_int(guest_mem_discard(&m, 4096, UINT64_MAX), -EFAULT);
	ok(m.mapping[(64ULL << 20) - 1] == 0x11, "nothing given back on a refused range");
	is_int(guest_mem_gpa(&m, m.mapping + (64ULL << 20) - 4096, 4097, &gpa), -EFAULT);
	is_int(guest_mem_gpa(&m, buf, 1, &gpa), -EFAULT);
	guest_mem_destroy(&m);

	guest_mem_init_buffer(&b, buf, sizeof(buf));
	is_int(guest_mem_discard(&b, 0, 4096), -EOPNOTSUPP);
}

TEST(discard_across_the_gap)
{
	struct guest_mem m;
	uint64_t size = GUEST_MEM_32BIT_GAP_START + (16ULL << 20);

	is_int(guest_mem_init(&m, size), 0);
	is_int(guest_mem_discard(&m, GUEST_MEM_32BIT_GAP_START - 4096, 8192), -EFAULT);
	is_int(guest_mem_discard(&m, GUEST_MEM_32BIT_GAP_START, 4096), -EFAULT);
	is_int(guest_mem_discard(&m, GUEST_MEM_32BIT_GAP_END, 16ULL << 20), 0);
	guest_mem_destroy(&m);
}

/* RAM mapped from a snapshot file (MAP_PRIVATE, as vmm/snapshot-mem.c
 * maps it): a discarded page the guest had written reads the file's
 * content again, and the file keeps it. */
TEST(discard_private_file_mapping)
{
	char path[] = "/tmp/kvrun-test-mem-XXXXXX";
	uint64_t size = 8ULL << 20;
	uint8_t page[4096], *p;
	struct guest_mem m;
	int fd = mkstemp(path);

	ok(fd >= 0, "temporary file");
	if (fd < 0)
		return;
	unlink(path);
	memset(page, 0x77, sizeof(page));
	ok(ftruncate(fd, (off_t)size) == 0 && pwrite(fd, page, sizeof(page), 1 << 20) == (ssize_t)sizeof(page),
	   "file with one data page");
	is_int(guest_mem_init(&m, size), 0);
	p = mmap(m.mapping, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED | MAP_NORESERVE, fd, 0);
	ok(p == m.mapping, "RAM mapped from the file in place");
	memset(p + (1 << 20), 0x33, 4096);
	memset(p + (2 << 20), 0x44, 4096);
	is_int(guest_mem_discard(&m, 1 << 20, 4096), 0);
	ok(p[1 << 20] == 0x77, "the private copy is gone: the file's page is back");
	ok(p[2 << 20] == 0x44, "a page past the range is kept");
	is_int(guest_mem_discard(&m, 2 << 20, 4096), 0);
	ok(p[2 << 20] == 0, "a page over a hole of the file reads zero again");
	ok(pread(fd, page, sizeof(page), 1 << 20) == (ssize_t)sizeof(page) && page[0] == 0x77 && page[4095] == 0x77,
	   "the file is unchanged");
	guest_mem_destroy(&m);
	close(fd);
}

TAP_MAIN()
