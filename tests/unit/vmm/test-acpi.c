/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ACPI table builder: checksums, lengths and pointers of every table, the
 * MADT for several vCPU counts, the FADT's flags and registers, the DSDT's
 * AML decoded back, PkgLength encodings, bad configs and the sleep register.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "vmm/acpi.h"
#include "aml-reader.h"
#include "common/error.h"
#include "tap.h"

#define GPA 0xe0000ULL
#define BUF_SIZE ACPI_TABLES_MAX_SIZE

static uint8_t buf[BUF_SIZE];

static uint64_t le(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Host pointer for a GPA inside the built tables, NULL when outside. */
static const uint8_t *at(uint64_t gpa, size_t len, const struct acpi_layout *l)
{
	if (gpa < GPA || gpa - GPA > l->size || len > l->size - (gpa - GPA))
		return NULL;
	return buf + (gpa - GPA);
}

static const struct acpi_virtio_mmio devs[] = {
    {0xd0000000, 0x1000, 5},
    {0xd0001000, 0x1000, 6},
    {0xd0002000, 0x1000, 7},
};

static struct acpi_config base_config(unsigned int ncpus)
{
	return (struct acpi_config){
	    .ncpus = ncpus,
	    .virtio = devs,
	    .nr_virtio = 3,
	    .sleep_space = ACPI_GAS_SPACE_IO,
	    .sleep_addr = 0x3c0,
	};
}

static int build(const struct acpi_config *cfg, struct acpi_layout *l)
{
	memset(buf, 0xa5, sizeof(buf)); /* garbage, to catch unwritten fields */
	return acpi_build_tables(cfg, GPA, buf, sizeof(buf), l);
}

/* A table at gpa with signature sig, a sane length and a zero checksum. */
static const uint8_t *check_table(uint64_t gpa, const char *sig, const struct acpi_layout *l)
{
	const uint8_t *t = at(gpa, 36, l);
	uint32_t len;

	if (!ok(t != NULL, "%s at %#llx is inside the tables", sig, (unsigned long long)gpa))
		return NULL;
	ok(memcmp(t, sig, 4) == 0, "%s signature", sig);
	len = (uint32_t)le(t + 4, 4);
	if (!ok(len >= 36 && at(gpa, len, l) != NULL, "%s length %u fits", sig, len))
		return NULL;
	is_int(acpi_checksum(t, len), 0);
	ok(memcmp(t + 10, "KVRUN ", 6) == 0, "%s OEM id", sig);
	return t;
}

TEST(rsdp_and_table_chain)
{
	struct acpi_config cfg = base_config(2);
	struct acpi_layout l;
	const uint8_t *r, *x, *f;

	is_int(build(&cfg, &l), 0);
	is_int(l.rsdp, GPA);
	ok(l.size > 0 && l.size < 4096, "tables use %zu bytes", l.size);
	r = buf;
	ok(memcmp(r, "RSD PTR ", 8) == 0, "RSDP signature");
	is_int(acpi_checksum(r, 20), 0);
	is_int(acpi_checksum(r, 36), 0);
	is_int(r[15], 2);
	is_int(le(r + 16, 4), 0);
	is_int(le(r + 20, 4), 36);
	is_int(le(r + 24, 8), l.xsdt);
	ok(l.xsdt % 8 == 0 && l.fadt % 8 == 0 && l.madt % 8 == 0 && l.dsdt % 8 == 0, "tables 8-byte aligned");

	x = check_table(l.xsdt, "XSDT", &l);
	if (x) {
		is_int(le(x + 4, 4), 36 + 16);
		is_int(le(x + 36, 8), l.fadt);
		is_int(le(x + 44, 8), l.madt);
	}
	f = check_table(l.fadt, "FACP", &l);
	if (f)
		is_int(le(f + 140, 8), l.dsdt);
	check_table(l.madt, "APIC", &l);
	check_table(l.dsdt, "DSDT", &l);
}

TEST(madt_cpus)
{
	static const unsigned int counts[] = {1, 2, 4, 16};

	for (unsigned int c = 0; c < 4; c++) {
		struct acpi_config cfg = base_config(counts[c]);
		struct acpi_layout l;
		const uint8_t *t, *e, *end;
		unsigned int lapics = 0, ioapics = 0, nmis = 0, isos = 0;
		int ids_ok = 1;

		is_int(build(&cfg, &l), 0);
		t = check_table(l.madt, "APIC", &l);
		if (!t)
			continue;
		is_int(le(t + 36, 4), 0xfee00000);
		is_int(le(t + 40, 4), 1);
		end = t + le(t + 4, 4);
		for (e = t + 44; e < end; e += e[1]) {
			if (!ok(e[1] >= 2 && e + e[1] <= end, "MADT entry length %u", e[1]))
				break;
			switch (e[0]) {
			case 0:
				ids_ok &= e[1] == 8 && e[2] == lapics && e[3] == lapics && le(e + 4, 4) == 1;
				lapics++;
				break;
			case 1:
				ioapics++;
				is_int(e[1], 12);
				is_int(le(e + 4, 4), 0xfec00000);
				is_int(le(e + 8, 4), 0);
				break;
			case 2:
				isos++;
				break;
			case 4:
				nmis++;
				is_int(e[1], 6);
				is_int(e[2], 0xff);
				is_int(e[5], 1);
				break;
			default:
				ok(0, "unexpected MADT entry type %u", e[0]);
			}
		}
		is_int(lapics, counts[c]);
		ok(ids_ok, "%u local APICs: UIDs and ids 0..n-1, enabled", counts[c]);
		is_int(ioapics, 1);
		is_int(nmis, 1);
		is_int(isos, 0);
	}
}

TEST(madt_apic_ids_and_override)
{
	static const uint32_t ids[] = {0, 2, 4, 6};
	struct acpi_config cfg = base_config(4);
	struct acpi_layout l;
	const uint8_t *t, *e;

	cfg.apic_ids = ids;
	cfg.irq0_to_gsi2 = true;
	is_int(build(&cfg, &l), 0);
	t = check_table(l.madt, "APIC", &l);
	if (!t)
		return;
	e = t + 44;
	for (unsigned int i = 0; i < 4; i++, e += 8) {
		is_int(e[0], 0);
		is_int(e[2], i);
		is_int(e[3], ids[i]);
	}
	e += 12; /* IOAPIC */
	is_int(e[0], 2);
	is_int(e[1], 10);
	is_int(e[3], 0);
	is_int(le(e + 4, 4), 2);
	is_int(e[10], 4); /* then the NMI entry */
}

TEST(fadt)
{
	struct acpi_config cfg = base_config(1);
	struct acpi_layout l;
	const uint8_t *f;
	int legacy_zero = 1;

	is_int(build(&cfg, &l), 0);
	f = check_table(l.fadt, "FACP", &l);
	if (!f)
		return;
	is_int(le(f + 4, 4), 276);
	is_int(f[8], 6);
	ok(le(f + 112, 4) & (1u << 20), "HW_REDUCED_ACPI set");
	ok(!(le(f + 112, 4) & (1u << 10)), "no RESET_REG_SUP without reset_reg");
	for (unsigned int i = 36; i < 109; i++)
		legacy_zero &= f[i] == 0;
	ok(legacy_zero, "legacy fields (FIRMWARE_CTRL..CENTURY, SCI, PM blocks) are zero");
	is_int(le(f + 132, 8), 0);
	is_int(le(f + 109, 2), (1 << 2) | (1 << 3) | (1 << 5)); /* no VGA, MSI, CMOS RTC */
	for (unsigned int i = 148; i < 244; i++)
		legacy_zero &= f[i] == 0;
	ok(legacy_zero, "X_PM1/X_GPE blocks are zero");
	/* SLEEP_CONTROL_REG and SLEEP_STATUS_REG: I/O byte at 0x3c0. */
	for (unsigned int off = 244; off <= 256; off += 12) {
		is_int(f[off], ACPI_GAS_SPACE_IO);
		is_int(f[off + 1], 8);
		is_int(f[off + 2], 0);
		is_int(f[off + 3], 1);
		is_int(le(f + off + 4, 8), 0x3c0);
	}

	cfg.reset_reg = true;
	cfg.cmos_rtc = true;
	cfg.sleep_space = ACPI_GAS_SPACE_MEMORY;
	cfg.sleep_addr = 0xfed00000;
	is_int(build(&cfg, &l), 0);
	f = check_table(l.fadt, "FACP", &l);
	if (!f)
		return;
	ok(le(f + 112, 4) & (1u << 10), "RESET_REG_SUP with reset_reg");
	is_int(le(f + 109, 2), (1 << 2) | (1 << 3)); /* CMOS RTC present */
	is_int(f[116], ACPI_GAS_SPACE_MEMORY);
	is_int(le(f + 120, 8), 0xfed00000);
	is_int(f[128], ACPI_RESET_VALUE);
	is_int(f[244], ACPI_GAS_SPACE_MEMORY);
	is_int(le(f + 248, 8), 0xfed00000);
}

/* Check the decoded DSDT of a config with n devices built from devs-like
 * entries base 0xd0000000 + i * 0x1000, GSI 5 + i. */
static void check_dsdt(const struct acpi_config *cfg, const struct acpi_layout *l, unsigned int want_pkglen)
{
	static struct aml_reader r;
	const uint8_t *t = check_table(l->dsdt, "DSDT", l);
	const struct aml_obj *o;

	if (!t)
		return;
	if (!ok(aml_read(&r, t, le(t + 4, 4)), "DSDT AML parses"))
		printf("#   %s\n", r.why);
	o = aml_find(&r, "\\_SB_");
	ok(o && o->kind == AML_SCOPE, "Scope (\\_SB)");
	is_int(r.max_pkglen_bytes, want_pkglen);
	for (unsigned int i = 0; i < cfg->nr_virtio; i++) {
		const struct acpi_virtio_mmio *d = &cfg->virtio[i];
		char path[64];
		const uint8_t *b;

		snprintf(path, sizeof(path), "\\_SB_.VR%02X", i);
		o = aml_find(&r, path);
		ok(o && o->kind == AML_DEVICE, "Device %s", path);
		snprintf(path, sizeof(path), "\\_SB_.VR%02X._HID", i);
		o = aml_find(&r, path);
		if (ok(o && o->kind == AML_STR, "%s is a string", path))
			is_str(o->str, "LNRO0005");
		snprintf(path, sizeof(path), "\\_SB_.VR%02X._UID", i);
		o = aml_find(&r, path);
		if (ok(o && o->kind == AML_INT, "%s is an integer", path))
			is_int(o->val, i);
		snprintf(path, sizeof(path), "\\_SB_.VR%02X._CRS", i);
		o = aml_find(&r, path);
		if (!ok(o && o->kind == AML_BUF && o->buf_len == 23, "%s is a 23-byte buffer", path))
			continue;
		b = o->buf;
		/* Memory32Fixed (ReadWrite, base, size) */
		is_int(b[0], 0x86);
		is_int(le(b + 1, 2), 9);
		is_int(b[3], 1);
		is_int(le(b + 4, 4), d->base);
		is_int(le(b + 8, 4), d->size);
		/* Interrupt (ResourceConsumer, Edge, ActiveHigh, Exclusive) {gsi} */
		is_int(b[12], 0x89);
		is_int(le(b + 13, 2), 6);
		is_int(b[15], 0x03);
		is_int(b[16], 1);
		is_int(le(b + 17, 4), d->gsi);
		/* EndTag */
		is_int(b[21], 0x79);
	}
	o = aml_find(&r, "\\_S5_");
	if (ok(o && o->kind == AML_PKG && o->pkg_n == 4, "\\_S5 is a 4-element package")) {
		is_int(o->pkg[0], ACPI_S5_SLP_TYP);
		is_int(o->pkg[1], ACPI_S5_SLP_TYP);
	}
	is_int(r.n, 2 + 4 * cfg->nr_virtio + (cfg->com1 ? 4 : 0));
}

/* EISA id back to text: 3 letters of 5 bits, 4 hex digits, big endian. */
static void eisa_decode(uint32_t stored, char out[8])
{
	uint32_t v = __builtin_bswap32(stored);
	static const char hex[] = "0123456789ABCDEF";

	out[0] = (char)('@' + ((v >> 26) & 0x1f));
	out[1] = (char)('@' + ((v >> 21) & 0x1f));
	out[2] = (char)('@' + ((v >> 16) & 0x1f));
	for (int i = 0; i < 4; i++)
		out[3 + i] = hex[(v >> (12 - 4 * i)) & 0xf];
	out[7] = 0;
}

TEST(dsdt_com1)
{
	static const uint8_t crs[] = {0x47, 0x01, 0xf8, 0x03, 0xf8, 0x03, 0x00, 0x08, 0x22, 0x10, 0x00, 0x79, 0x00};
	static struct aml_reader r;
	struct acpi_config cfg = base_config(1);
	struct acpi_layout l;
	const struct aml_obj *o;
	const uint8_t *t;
	char id[8];

	cfg.com1 = true;
	is_int(build(&cfg, &l), 0);
	check_dsdt(&cfg, &l, 2);
	t = buf + (l.dsdt - GPA);
	if (!ok(aml_read(&r, t, le(t + 4, 4)), "DSDT AML parses"))
		return;
	o = aml_find(&r, "\\_SB_.COM1");
	ok(o && o->kind == AML_DEVICE, "Device (\\_SB.COM1)");
	o = aml_find(&r, "\\_SB_.COM1._HID");
	if (ok(o && o->kind == AML_INT, "COM1 _HID is an EISA id")) {
		is_int(o->val, 0x0105d041);
		eisa_decode((uint32_t)o->val, id);
		is_str(id, "PNP0501");
	}
	o = aml_find(&r, "\\_SB_.COM1._UID");
	ok(o && o->kind == AML_INT && o->val == 1, "COM1 _UID 1");
	o = aml_find(&r, "\\_SB_.COM1._CRS");
	if (ok(o && o->kind == AML_BUF && o->buf_len == sizeof(crs), "COM1 _CRS is %zu bytes", sizeof(crs)))
		ok(memcmp(o->buf, crs, sizeof(crs)) == 0,
		   "COM1 _CRS: IO (Decode16, 0x3f8, 0x3f8, 0, 8), IRQNoFlags {4}");
}

TEST(dsdt_aml)
{
	struct acpi_config cfg = base_config(1);
	struct acpi_layout l;

	is_int(build(&cfg, &l), 0);
	check_dsdt(&cfg, &l, 2); /* 3 devices: the \_SB scope needs 2 bytes */

	cfg.nr_virtio = 0;
	is_int(build(&cfg, &l), 0);
	check_dsdt(&cfg, &l, 1);
}

TEST(dsdt_many_devices)
{
	static struct acpi_virtio_mmio many[ACPI_MAX_VIRTIO_MMIO];
	struct acpi_config cfg = base_config(1);
	struct acpi_layout l;

	for (unsigned int i = 0; i < ACPI_MAX_VIRTIO_MMIO; i++)
		many[i] = (struct acpi_virtio_mmio){0xd0000000 + i * 0x1000ULL, 0x1000, 5 + i % 19};
	cfg.virtio = many;
	cfg.nr_virtio = ACPI_MAX_VIRTIO_MMIO;
	is_int(build(&cfg, &l), 0);
	check_dsdt(&cfg, &l, 2); /* under 4 KiB: 3- and 4-byte forms are tested below */
}

/* Decode what acpi_aml_pkglen() wrote, with the test's own reader. */
static size_t decode_pkglen(const uint8_t *enc, size_t n, size_t body)
{
	/* Only the PkgLength bytes are read; end says how much follows. */
	struct aml_reader r = {.p = enc, .end = n + body};

	return aml_pkg_end(&r);
}

TEST(pkglen_encodings)
{
	static const struct {
		size_t body;
		size_t bytes;
	} cases[] = {
	    {0, 1}, {62, 1}, {63, 2}, {100, 2}, {4093, 2}, {4094, 3}, {1048572, 3}, {1048573, 4}, {(1u << 28) - 5, 4},
	};
	uint8_t enc[4];

	for (unsigned int i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = acpi_aml_pkglen(enc, cases[i].body);

		is_int(n, cases[i].bytes);
		is_int(decode_pkglen(enc, n, cases[i].body), n + cases[i].body);
	}
	is_int(acpi_aml_pkglen(enc, (1u << 28) - 4), 0);
}

TEST(bad_configs)
{
	static const uint32_t big_id[] = {255};
	static const struct acpi_virtio_mmio high = {0x100000000ULL, 0x1000, 5};
	static const struct acpi_virtio_mmio pin = {0xd0000000, 0x1000, 24};
	struct acpi_config cfg;
	struct acpi_layout l = {.size = 12345};

	cfg = base_config(0);
	is_int(build(&cfg, &l), -EINVAL);
	cfg = base_config(ACPI_MAX_CPUS + 1);
	is_int(build(&cfg, &l), -EINVAL);
	cfg = base_config(1);
	cfg.apic_ids = big_id;
	is_int(build(&cfg, &l), -EINVAL);
	cfg = base_config(1);
	cfg.virtio = &high;
	cfg.nr_virtio = 1;
	is_int(build(&cfg, &l), -EINVAL);
	cfg.virtio = &pin;
	is_int(build(&cfg, &l), -EINVAL);
	cfg = base_config(1);
	cfg.sleep_space = 7;
	is_int(build(&cfg, &l), -EINVAL);
	cfg = base_config(1);
	is_int(acpi_build_tables(&cfg, GPA + 8, buf, sizeof(buf), &l), -EINVAL);
	is_int(l.size, 12345);
	cfg = base_config(ACPI_MAX_CPUS);
	is_int(acpi_build_tables(&cfg, GPA, buf, 200, &l), -ENOSPC);
	is_int(acpi_build_tables(&cfg, GPA, buf, 0, &l), -ENOSPC);
	is_int(l.size, 12345);
	/* Exactly the size it needs is enough. */
	is_int(acpi_build_tables(&cfg, GPA, buf, sizeof(buf), &l), 0);
	size_t need = l.size;
	is_int(acpi_build_tables(&cfg, GPA, buf, need, &l), 0);
	is_int(acpi_build_tables(&cfg, GPA, buf, need - 1, &l), -ENOSPC);
}

/* Found by fuzz-boot-tables: tables at the top of the address space were
 * built with pointers that wrapped past 2^64 (the MADT at "0xc0"). */
TEST(gpa_range_wraps)
{
	struct acpi_config cfg = base_config(2);
	struct acpi_layout l = {.size = 12345};

	is_int(acpi_build_tables(&cfg, 0xffffffffffffff00ULL, buf, sizeof(buf), &l), -EINVAL);
	ok(strstr(err_msg(), "wrap") != NULL, "the error says why: %s", err_msg());
	is_int(l.size, 12345);
	is_int(acpi_build_tables(&cfg, UINT64_MAX - sizeof(buf) + 1 + 16, buf, sizeof(buf), &l), -EINVAL);
	/* The last range that fits. */
	is_int(acpi_build_tables(&cfg, (UINT64_MAX - sizeof(buf) + 1) & ~15ULL, buf, sizeof(buf), &l), 0);
	ok(l.madt > l.rsdp && l.dsdt > l.rsdp && l.size <= sizeof(buf), "no pointer wrapped");
}

static int events[4];

static void on_event(void *opaque, enum acpi_sleep_event ev)
{
	(void)opaque;
	events[ev]++;
}

TEST(sleep_register)
{
	struct acpi_sleep_dev dev = {.event = on_event};
	uint8_t v, out[4] = {1, 1, 1, 1};

	/* What Linux writes for S5: (5 << 2) | SLP_EN. */
	is_int(acpi_sleep_reg_write((ACPI_S5_SLP_TYP << 2) | ACPI_SLP_EN), ACPI_SLEEP_POWER_OFF);
	is_int(acpi_sleep_reg_write(0x34), ACPI_SLEEP_POWER_OFF);
	is_int(acpi_sleep_reg_write(0x80), ACPI_SLEEP_NONE); /* WAK_STS clear */
	is_int(acpi_sleep_reg_write(ACPI_S5_SLP_TYP << 2), ACPI_SLEEP_NONE);
	is_int(acpi_sleep_reg_write((3 << 2) | ACPI_SLP_EN), ACPI_SLEEP_NONE);
	is_int(acpi_sleep_reg_write(ACPI_RESET_VALUE), ACPI_SLEEP_RESET);
	is_int(acpi_sleep_reg_write(0), ACPI_SLEEP_NONE);

	v = 0x80;
	acpi_sleep_dev_ops.write(&dev, 0, &v, 1);
	is_int(events[ACPI_SLEEP_POWER_OFF] + events[ACPI_SLEEP_RESET], 0);
	v = 0x34;
	acpi_sleep_dev_ops.write(&dev, 0, &v, 1);
	is_int(events[ACPI_SLEEP_POWER_OFF], 1);
	v = ACPI_RESET_VALUE;
	acpi_sleep_dev_ops.write(&dev, 0, &v, 1);
	is_int(events[ACPI_SLEEP_RESET], 1);
	acpi_sleep_dev_ops.write(NULL, 0, &v, 1); /* no device: ignored */
	acpi_sleep_dev_ops.read(&dev, 0, out, 4);
	is_int(le(out, 4), 0);
}

TAP_MAIN()
