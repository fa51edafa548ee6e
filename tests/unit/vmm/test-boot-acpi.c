/* SPDX-License-Identifier: Apache-2.0 */
/* How boot_linux() tells a kernel about its devices: the composed command
 * line (virtio_mmio.device= and acpi=off without ACPI) and the ACPI tables
 * it builds at BOOT_ACPI_START. No KVM. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "vmm/acpi.h"
#include "vmm/boot.h"

#define MIB (1ULL << 20)

static const struct acpi_virtio_mmio devs[2] = {
    {.base = 0xd0001000, .size = 0x1000, .gsi = 5},
    {.base = 0xd0002000, .size = 0x1000, .gsi = 6},
};

static char *compose(const char *base, bool acpi, unsigned int n)
{
	struct boot_config c = {.cmdline = base, .use_acpi = acpi, .virtio = devs, .nr_virtio = n};
	char *s = NULL;

	if (boot_cmdline_compose(&c, &s) < 0)
		return NULL;
	return s;
}

TEST(cmdline_without_acpi)
{
	char *s = compose("console=ttyS0", false, 2);

	/* devices as fragments, then acpi=off */
	is_str(s, "console=ttyS0 virtio_mmio.device=4K@0xd0001000:5 virtio_mmio.device=4K@0xd0002000:6 acpi=off");
	free(s);
	s = compose(NULL, false, 0);
	/* empty command line: just acpi=off */
	is_str(s, "acpi=off");
	free(s);
	s = compose("console=ttyS0 acpi=force", false, 1);
	/* an acpi= word of the caller's is kept and none added */
	is_str(s, "console=ttyS0 acpi=force virtio_mmio.device=4K@0xd0001000:5");
	free(s);
	s = compose("noacpi=x", false, 0);
	/* 'noacpi=' is not an acpi= word */
	is_str(s, "noacpi=x acpi=off");
	free(s);
}

TEST(cmdline_largest_fragments)
{
	struct acpi_virtio_mmio big[BOOT_MAX_VIRTIO_MMIO];
	struct boot_config c = {.cmdline = "x", .virtio = big, .nr_virtio = BOOT_MAX_VIRTIO_MMIO};
	char *s = NULL;

	for (unsigned int i = 0; i < BOOT_MAX_VIRTIO_MMIO; i++)
		big[i] = (struct acpi_virtio_mmio){.base = UINT64_MAX, .size = UINT64_MAX, .gsi = UINT32_MAX};
	is_int(boot_cmdline_compose(&c, &s), 0);
	/* "x" + 64 x " virtio_mmio.device=18014398509481983K@0xffffffffffffffff:4294967295" + " acpi=off" */
	is_int((long long)(s ? strlen(s) : 0), 1 + 64 * 68 + 9);
	free(s);
}

TEST(cmdline_with_acpi)
{
	char *s = compose("console=ttyS0 quiet", true, 2);

	/* with ACPI the command line is the caller's alone */
	is_str(s, "console=ttyS0 quiet");
	free(s);
}

TEST(cmdline_too_many_devices)
{
	struct boot_config c = {.nr_virtio = BOOT_MAX_VIRTIO_MMIO + 1, .virtio = devs};
	char *s = NULL;

	/* more devices than BOOT_MAX_VIRTIO_MMIO: -EINVAL */
	is_int(boot_cmdline_compose(&c, &s), -EINVAL);
	ok(s == NULL, "nothing returned");
	c.nr_virtio = 1;
	c.virtio = NULL;
	/* devices counted but no array: -EINVAL */
	is_int(boot_cmdline_compose(&c, &s), -EINVAL);
}

static const uint8_t *find(const uint8_t *p, size_t len, const void *what, size_t n)
{
	for (size_t i = 0; i + n <= len; i++)
		if (!memcmp(p + i, what, n))
			return p + i;
	return NULL;
}

TEST(acpi_tables_in_guest_memory)
{
	struct boot_config c = {.use_acpi = true, .acpi_com1 = true, .virtio = devs, .nr_virtio = 2};
	static const uint8_t com1[4] = {0x41, 0xd0, 0x05, 0x01};
	struct guest_mem m;
	uint64_t rsdp = 0;
	uint8_t *area;
	uint32_t dsdt_len;
	const uint8_t *dsdt;

	guest_mem_init(&m, 16 * MIB);
	/* tables built for 3 vCPUs and 2 devices */
	is_int(boot_acpi_tables(&m, &c, 3, &rsdp), 0);
	/* RSDP at the start of the reserved area */
	is_int((int)rsdp, (int)BOOT_ACPI_START);
	area = guest_mem_ptr(&m, BOOT_ACPI_START, BOOT_ACPI_END - BOOT_ACPI_START);
	ok(area && !memcmp(area, "RSD PTR ", 8) && acpi_checksum(area, 20) == 0, "RSDP signature and checksum");
	dsdt = find(area, BOOT_ACPI_END - BOOT_ACPI_START, "DSDT", 4);
	ok(dsdt != NULL, "a DSDT in the area");
	if (dsdt) {
		memcpy(&dsdt_len, dsdt + 4, 4);
		ok(acpi_checksum(dsdt, dsdt_len) == 0, "DSDT checksum");
		ok(find(dsdt, dsdt_len, "LNRO0005", 8) != NULL, "virtio-mmio device in the DSDT");
		ok(find(dsdt, dsdt_len, com1, 4) != NULL, "COM1 in the DSDT (acpi_com1)");
	}
	guest_mem_destroy(&m);

	guest_mem_init(&m, 16 * MIB);
	c.acpi_com1 = false;
	/* tables without COM1 */
	is_int(boot_acpi_tables(&m, &c, 1, &rsdp), 0);
	area = guest_mem_ptr(&m, BOOT_ACPI_START, BOOT_ACPI_END - BOOT_ACPI_START);
	dsdt = find(area, BOOT_ACPI_END - BOOT_ACPI_START, "DSDT", 4);
	if (dsdt) {
		memcpy(&dsdt_len, dsdt + 4, 4);
		ok(find(dsdt, dsdt_len, com1, 4) == NULL, "no COM1 without acpi_com1");
	} else {
		ok(false, "no COM1 without acpi_com1 (no DSDT)");
	}
	c.virtio = &(const struct acpi_virtio_mmio){.base = 0xd0001000, .size = 0x1000, .gsi = 40};
	c.nr_virtio = 1;
	/* a GSI past the IOAPIC's pins is refused */
	is_int(boot_acpi_tables(&m, &c, 1, &rsdp), -EINVAL);
	guest_mem_destroy(&m);

	guest_mem_init(&m, 512 * 1024);
	c.virtio = devs;
	/* no RAM at 0xe0000: -EFAULT */
	is_int(boot_acpi_tables(&m, &c, 1, &rsdp), -EFAULT);
	guest_mem_destroy(&m);
}

TAP_MAIN()
