/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ACPI and MP table builders (vmm/acpi.c, vmm/mptable.c) with fuzzed
 * inputs: CPU count and APIC ids, virtio-mmio devices (address, size, GSI),
 * sleep and reset registers, flags, the guest address and the size of the
 * buffer (allocated exactly, so that AddressSanitizer sees a write past
 * it). Tables that were built must be whole: every checksum right, every
 * table inside the bytes reported, the DSDT's AML readable
 * (tests/unit/acpi/aml-reader.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include "aml-reader.h"
#include "fuzz.h"
#include "vmm/acpi.h"
#include "vmm/mptable.h"

#define MP_RAM (1u << 20)

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void check_table(const uint8_t *buf, size_t size, uint64_t gpa, uint64_t at, const char *what)
{
	size_t off = at - gpa, len;

	if (at < gpa || off > size || size - off < 36)
		goto bad;
	len = le32(buf + off + 4);
	if (len < 36 || len > size - off || acpi_checksum(buf + off, len) != 0)
		goto bad;
	return;
bad:
	fprintf(stderr, "ACPI: %s at 0x%llx is not a whole table\n", what, (unsigned long long)at);
	abort();
}

static void acpi(struct fz *f)
{
	static struct acpi_virtio_mmio dev[ACPI_MAX_VIRTIO_MMIO + 2];
	static uint32_t ids[ACPI_MAX_CPUS + 2];
	static struct aml_reader r;
	struct acpi_config cfg = {0};
	struct acpi_layout l;
	uint8_t flags = fz_u8(f), *buf;
	uint64_t gpa = flags & 1 ? fz_u64(f) : ACPI_TABLES_GPA + (fz_u8(f) & 0xf0);
	size_t len = fz_u16(f) + (flags & 2 ? 0 : 4096);

	cfg.ncpus = fz_u8(f);
	if (flags & 4) {
		for (unsigned int i = 0; i < cfg.ncpus && i < ACPI_MAX_CPUS + 2; i++)
			ids[i] = fz_u8(f);
		cfg.apic_ids = ids;
	}
	cfg.nr_virtio = fz_u8(f) % (ACPI_MAX_VIRTIO_MMIO + 2);
	for (unsigned int i = 0; i < cfg.nr_virtio; i++) {
		dev[i].base = flags & 8 ? fz_u64(f) : 0xd0000000ULL + fz_u16(f) * 0x1000ULL;
		dev[i].size = flags & 8 ? fz_u32(f) : 0x1000;
		dev[i].gsi = fz_u8(f) % 32;
	}
	cfg.virtio = dev;
	cfg.sleep_space = fz_u8(f) % 3;
	cfg.sleep_addr = fz_u64(f);
	cfg.reset_reg = flags & 16;
	cfg.cmos_rtc = flags & 32;
	cfg.com1 = flags & 64;
	cfg.irq0_to_gsi2 = flags & 128;
	buf = malloc(len ? len : 1);
	if (!buf)
		abort();
	if (acpi_build_tables(&cfg, gpa, buf, len, &l) == 0) {
		if (l.size > len || l.rsdp != gpa || acpi_checksum(buf, 20) != 0 || acpi_checksum(buf, 36) != 0)
			abort();
		check_table(buf, l.size, gpa, l.xsdt, "XSDT");
		check_table(buf, l.size, gpa, l.fadt, "FADT");
		check_table(buf, l.size, gpa, l.madt, "MADT");
		check_table(buf, l.size, gpa, l.dsdt, "DSDT");
		if (!aml_read(&r, buf + (l.dsdt - gpa), le32(buf + (l.dsdt - gpa) + 4))) {
			fprintf(stderr, "DSDT: %s\n", r.why);
			abort();
		}
	}
	free(buf);
}

static void mp(struct fz *f)
{
	uint8_t *ram = calloc(1, MP_RAM);
	struct guest_mem mem;
	unsigned int ncpus = fz_u16(f);
	uint64_t gpa = fz_u8(f) & 1 ? fz_u32(f) : 0x9fc00;

	if (!ram)
		abort();
	guest_mem_init_buffer(&mem, ram, MP_RAM);
	if (mptable_write(&mem, gpa, ncpus) == 0) {
		const uint8_t *p = ram + gpa;

		/* The floating pointer, then the table it points to. */
		if (mptable_size(ncpus) > MPTABLE_MAX_SIZE || memcmp(p, "_MP_", 4) || acpi_checksum(p, 16) != 0)
			abort();
		if (le32(p + 4) >= MP_RAM || memcmp(ram + le32(p + 4), "PCMP", 4))
			abort();
	}
	free(ram);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = {data, size};

	if (fz_u8(&f) & 1)
		mp(&f);
	else
		acpi(&f);
	return 0;
}
