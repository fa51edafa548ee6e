/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdint.h>

#include "tap.h"
#include "vmm/mem.h"

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

TAP_MAIN()
