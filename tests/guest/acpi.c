/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test=acpi: what an ACPI guest finds, read the way the ACPI 6.5 spec lays
 * the tables out (not the way vmm/acpi.c writes them): the RSDP by the
 * BIOS-area scan and through boot_params.acpi_rsdp_addr, the checksums of
 * RSDP, XSDT, FADT, MADT and DSDT, the hardware-reduced FADT, one MADT
 * local APIC per vCPU, the DSDT's devices and \_S5, LINT0 masked, and the
 * UART's IRQ 4 arriving through the IOAPIC only, with the 8259 left
 * unprogrammed as a hardware-reduced Linux leaves it. Then the
 * guest ends the VM through the FADT's sleep control register with the S5
 * sleep type from \_S5 (acpi_action=reset: through RESET_REG), so the
 * VMM's exit status says whether it understood the write.
 */
#include "guest.h"
#include "hw.h"

#define BP_ACPI_RSDP_ADDR 0x070
#define BIOS_SCAN_START 0xe0000ULL
#define BIOS_SCAN_END 0x100000ULL
#define FADT_FLAGS 112
#define FADT_RESET_REG 116
#define FADT_RESET_VALUE 128
#define FADT_DSDT 40
#define FADT_X_DSDT 140
#define FADT_SLEEP_CONTROL 244
#define FADT_SLEEP_STATUS 256
#define FADT_HW_REDUCED (1u << 20)
#define FADT_RESET_REG_SUP (1u << 10)
#define GAS_SPACE_IO 1
#define SLP_EN 0x20
#define LAPIC_LVT0 0x350
#define LVT_MASKED 0x10000u

struct acpi_found {
	const uint8_t *xsdt, *fadt, *madt, *dsdt;
};

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return le32(p) | (uint64_t)le32(p + 4) << 32;
}

static uint8_t sum(const uint8_t *p, uint32_t len)
{
	uint8_t s = 0;

	while (len--)
		s += *p++;
	return s;
}

/* A table at addr below 4 GiB whose header has sig, a sane length and a
 * zero checksum; NULL (and a failed check) otherwise. */
static const uint8_t *table_at(uint64_t addr, const char *sig)
{
	const uint8_t *t = (const uint8_t *)(uintptr_t)addr;
	uint32_t len;

	if (!tap_ok(addr >= 0x1000 && addr < 0x100000000ULL, "acpi: %s at 0x%lx is in low memory", sig,
	            (unsigned long)addr))
		return NULL;
	len = le32(t + 4);
	if (!tap_ok(!memcmp(t, sig, 4) && len >= 36 && len < 0x10000, "acpi: %s signature and length (%u)", sig, len))
		return NULL;
	if (!tap_ok(sum(t, len) == 0, "acpi: %s checksum", sig))
		return NULL;
	return t;
}

/* The RSDP by the spec's scan of the BIOS area (16-byte steps). */
static const uint8_t *rsdp_scan(void)
{
	for (uint64_t a = BIOS_SCAN_START; a < BIOS_SCAN_END; a += 16) {
		const uint8_t *p = (const uint8_t *)(uintptr_t)a;

		if (!memcmp(p, "RSD PTR ", 8) && sum(p, 20) == 0)
			return p;
	}
	return NULL;
}

static bool find_rsdp(struct acpi_found *f)
{
	const uint8_t *rsdp = rsdp_scan();
	uint64_t bp_rsdp = *(volatile uint64_t *)(entry_state.rsi + BP_ACPI_RSDP_ADDR);

	if (!tap_ok(rsdp != NULL, "acpi: RSDP found by scanning 0xe0000-0xfffff"))
		return false;
	tap_ok(bp_rsdp == (uint64_t)(uintptr_t)rsdp, "acpi: boot_params.acpi_rsdp_addr 0x%lx is the RSDP at 0x%lx",
	       (unsigned long)bp_rsdp, (unsigned long)(uintptr_t)rsdp);
	if (!tap_ok(rsdp[15] >= 2 && le32(rsdp + 20) >= 36, "acpi: RSDP revision %u with an XSDT", rsdp[15]))
		return false;
	tap_ok(sum(rsdp, le32(rsdp + 20)) == 0, "acpi: RSDP extended checksum");
	f->xsdt = table_at(le64(rsdp + 24), "XSDT");
	return f->xsdt != NULL;
}

static void find_tables(struct acpi_found *f)
{
	uint32_t n = (le32(f->xsdt + 4) - 36) / 8;

	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *t = (const uint8_t *)(uintptr_t)le64(f->xsdt + 36 + 8 * i);

		if (!memcmp(t, "FACP", 4))
			f->fadt = table_at((uintptr_t)t, "FACP");
		else if (!memcmp(t, "APIC", 4))
			f->madt = table_at((uintptr_t)t, "APIC");
	}
	tap_ok(f->fadt && f->madt, "acpi: XSDT lists the FADT and the MADT (%u entries)", n);
	if (f->fadt) {
		uint64_t x = le64(f->fadt + FADT_X_DSDT);

		f->dsdt = table_at(x ? x : le32(f->fadt + FADT_DSDT), "DSDT");
	}
}

static void check_madt(const uint8_t *madt)
{
	uint32_t ncpus = inl(KVRUN_PORT_TEST_NCPUS), lapics = 0, ioapics = 0, len = le32(madt + 4);
	uint32_t off = 44;

	while (off + 2 <= len && madt[off + 1] >= 2 && off + madt[off + 1] <= len) {
		const uint8_t *e = madt + off;

		if (e[0] == 0 && (le32(e + 4) & 1)) /* processor local APIC, enabled */
			lapics++;
		else if (e[0] == 1)
			ioapics++;
		off += e[1];
	}
	tap_ok(off == len, "acpi: MADT entries fill the table exactly (%u of %u bytes)", off, len);
	tap_ok(le32(madt + 36) == LAPIC_BASE, "acpi: MADT local APIC address 0x%x", le32(madt + 36));
	tap_ok(lapics == ncpus, "acpi: MADT has %u enabled local APICs for %u vCPUs", lapics, ncpus);
	tap_ok(ioapics == 1, "acpi: MADT has %u IOAPIC", ioapics);
}

static unsigned int count_bytes(const uint8_t *p, uint32_t len, const void *what, uint32_t n)
{
	unsigned int c = 0;

	for (uint32_t i = 0; i + n <= len; i++)
		if (!memcmp(p + i, what, n))
			c++;
	return c;
}

/* SLP_TYPa of \_S5: Name (_S5_, Package (n) { typ, ... }). -1 if absent. */
static int s5_type(const uint8_t *dsdt, uint32_t len)
{
	for (uint32_t i = 0; i + 10 <= len; i++) {
		const uint8_t *p = dsdt + i;

		if (memcmp(p, "_S5_", 4) || p[4] != 0x12 || (p[5] & 0xc0))
			continue;
		/* p[5]: one-byte PkgLength, p[6]: NumElements, p[7]: first. */
		if (p[7] == 0x0a) /* BytePrefix */
			return p[8];
		if (p[7] == 0x00 || p[7] == 0x01) /* ZeroOp, OneOp */
			return p[7];
		return -1;
	}
	return -1;
}

static int check_dsdt(const uint8_t *dsdt)
{
	static const uint8_t com1_eisa[4] = {0x41, 0xd0, 0x05, 0x01}; /* PNP0501 */
	uint32_t len = le32(dsdt + 4);
	uint64_t want = 0;
	char buf[16];
	unsigned int n;
	int typ;

	if (cmdline_get("acpi_virtio", buf, sizeof(buf)) && !parse_size(buf, &want))
		want = 0xffff;
	n = count_bytes(dsdt, len, "LNRO0005", 8);
	tap_ok(n == want, "acpi: DSDT describes %u virtio-mmio devices (LNRO0005), %u expected", n, (unsigned int)want);
	tap_ok(count_bytes(dsdt, len, com1_eisa, 4) == 1, "acpi: DSDT describes COM1 (PNP0501)");
	typ = s5_type(dsdt, len);
	tap_ok(typ >= 0 && typ < 8, "acpi: DSDT has \\_S5 with SLP_TYP %d", typ);
	return typ;
}

static void check_fadt(const uint8_t *fadt)
{
	uint32_t flags = le32(fadt + FADT_FLAGS);

	tap_ok(flags & FADT_HW_REDUCED, "acpi: FADT says HW_REDUCED_ACPI (flags 0x%x)", flags);
	tap_ok(fadt[FADT_SLEEP_CONTROL] == GAS_SPACE_IO && le64(fadt + FADT_SLEEP_CONTROL + 4) != 0,
	       "acpi: FADT sleep control register is an I/O port (0x%lx)",
	       (unsigned long)le64(fadt + FADT_SLEEP_CONTROL + 4));
	tap_ok(!memcmp(fadt + FADT_SLEEP_CONTROL, fadt + FADT_SLEEP_STATUS, 12),
	       "acpi: FADT sleep status register is the same byte");
	tap_ok((flags & FADT_RESET_REG_SUP) && fadt[FADT_RESET_REG] == GAS_SPACE_IO,
	       "acpi: FADT has an I/O RESET_REG (value 0x%x)", fadt[FADT_RESET_VALUE]);
}

void check_acpi(void)
{
	struct acpi_found f = {0};
	uint32_t lvt0 = mmio_read32(LAPIC_BASE + LAPIC_LVT0);
	char action[16] = "poweroff";
	int typ = -1;
	uint16_t port;

	cmdline_get("acpi_action", action, sizeof(action));
	/* The VMM masks LINT0 for ACPI boots (the 8259 stays unprogrammed). */
	tap_ok(lvt0 & LVT_MASKED, "acpi: LINT0 masked on the boot vCPU (LVT0 0x%x)", lvt0);
	if (find_rsdp(&f))
		find_tables(&f);
	if (f.madt)
		check_madt(f.madt);
	if (f.dsdt)
		typ = check_dsdt(f.dsdt);
	if (f.fadt)
		check_fadt(f.fadt);
	check_serial_irq_hw_reduced();
	if (!f.fadt || typ < 0 || !tap_all_passed())
		tap_finish(); /* exit code 1 */
	tap_plan();
	if (!memcmp(action, "reset", 6)) {
		port = (uint16_t)le64(f.fadt + FADT_RESET_REG + 4);
		tap_diag("writing 0x%x to RESET_REG 0x%x", f.fadt[FADT_RESET_VALUE], port);
		outb(port, f.fadt[FADT_RESET_VALUE]);
	} else {
		port = (uint16_t)le64(f.fadt + FADT_SLEEP_CONTROL + 4);
		tap_diag("writing SLP_TYP %d | SLP_EN to the sleep control register 0x%x", typ, port);
		outb(port, (uint8_t)((typ << 2) | SLP_EN));
	}
	/* Still here: the VMM ignored the write. Exit code 3 says so. */
	tap_diag("the VM is still running after the write");
	guest_exit(3);
}
