/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "tap.h"
#include "vmm/bus.h"

struct fake_dev {
	uint64_t last_off;
	uint32_t last_len;
	uint8_t last_data[8];
	int reads, writes;
};

static void fake_read(void *opaque, uint64_t offset, void *data, uint32_t len)
{
	struct fake_dev *d = opaque;

	d->reads++;
	d->last_off = offset;
	d->last_len = len;
	memset(data, (int)(0x10 + offset), len);
}

static void fake_write(void *opaque, uint64_t offset, const void *data, uint32_t len)
{
	struct fake_dev *d = opaque;

	d->writes++;
	d->last_off = offset;
	d->last_len = len;
	memcpy(d->last_data, data, len);
}

static const struct bus_dev_ops fake_ops = {.read = fake_read, .write = fake_write};

TEST(overlaps_refused)
{
	struct bus b;
	struct fake_dev d = {0};

	bus_init(&b, "test");
	is_int(bus_register(&b, 0x1000, 0x100, &fake_ops, &d), 0);
	is_int(bus_register(&b, 0x1000, 0x100, &fake_ops, &d), -EEXIST);
	is_int(bus_register(&b, 0x10ff, 1, &fake_ops, &d), -EEXIST);
	is_int(bus_register(&b, 0xf00, 0x101, &fake_ops, &d), -EEXIST);
	is_int(bus_register(&b, 0x800, 0x1000, &fake_ops, &d), -EEXIST);
	is_int(bus_register(&b, 0xf00, 0x100, &fake_ops, &d), 0);
	is_int(bus_register(&b, 0x1100, 0x10, &fake_ops, &d), 0);
	is_int(bus_register(&b, 0x2000, 0, &fake_ops, &d), -EINVAL);
	is_int(bus_register(&b, UINT64_MAX - 1, 4, &fake_ops, &d), -EINVAL);
	is_int(b.nr, 3);
	ok(b.ranges[0].base < b.ranges[1].base && b.ranges[1].base < b.ranges[2].base, "ranges sorted");
	is_int(bus_unregister(&b, 0x1000), 0);
	is_int(bus_unregister(&b, 0x1000), -ENOENT);
	is_int(bus_register(&b, 0x1000, 0x100, &fake_ops, &d), 0);
	bus_destroy(&b);
}

TEST(dispatch)
{
	struct bus b;
	struct fake_dev d1 = {0}, d2 = {0};
	uint32_t v = 0;
	uint8_t w[4] = {1, 2, 3, 4};

	bus_init(&b, "test");
	bus_register(&b, 0x3f8, 8, &fake_ops, &d1);
	bus_register(&b, 0xd0000000, 0x1000, &fake_ops, &d2);
	for (int i = 0; i < 50; i++)
		bus_register(&b, 0x10000 + i * 0x100, 0x10, &fake_ops, &d2);
	is_int(bus_read(&b, 0x3fd, &v, 1), 0);
	is_int(d1.last_off, 5);
	is_int(v & 0xff, 0x15);
	is_int(bus_write(&b, 0xd0000010, w, 4), 0);
	is_int(d2.last_off, 0x10);
	is_int(d2.last_len, 4);
	ok(memcmp(d2.last_data, w, 4) == 0, "write data passed through");
	is_int(bus_write(&b, 0x10000 + 31 * 0x100 + 4, w, 2), 0);
	is_int(d2.last_off, 4);
	is_int(d1.reads, 1);
	bus_destroy(&b);
}

TEST(unclaimed_reads_all_ones)
{
	struct bus b;
	struct fake_dev d = {0};
	uint64_t v = 0;

	bus_init(&b, "test");
	bus_register(&b, 0x100, 8, &fake_ops, &d);
	is_int(bus_read(&b, 0x50, &v, 8), -ENOENT);
	ok(v == UINT64_MAX, "unclaimed read gives all ones");
	v = 0;
	/* An access straddling the end of a range is not the device's. */
	is_int(bus_read(&b, 0x106, &v, 4), -ENOENT);
	ok(v == 0xffffffff, "straddling read gives all ones");
	is_int(bus_write(&b, 0x108, &v, 1), -ENOENT);
	is_int(d.reads + d.writes, 0);
	bus_destroy(&b);
}

TAP_MAIN()
