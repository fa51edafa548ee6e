/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ACPI table builder (see acpi.h). Layout inside the caller's buffer:
 *   RSDP (36 bytes, padded to 48) | XSDT | DSDT | FADT | MADT
 * each table 8-byte aligned. The RSDP and XSDT sizes are fixed, so they
 * are reserved first and filled in last, once the other tables' addresses
 * are known. Multi-byte fields are written little endian byte by byte so
 * that nothing depends on the host's byte order or on struct packing.
 */
#include <errno.h>
#include <string.h>

#include "common/error.h"
#include "vmm/acpi.h"

#define ACPI_HEADER_LEN 36
#define RSDP_LEN 36
#define FADT_LEN 276 /* revision 6 */
#define FADT_REVISION 6
#define FADT_MINOR 5 /* ACPI 6.5 */
#define MADT_REVISION 5
#define DSDT_REVISION 2 /* 64-bit AML integers */

/* FADT flags and IA-PC boot architecture flags. */
#define FADT_F_PWR_BUTTON (1u << 4) /* no fixed power button */
#define FADT_F_SLP_BUTTON (1u << 5) /* no fixed sleep button */
#define FADT_F_RESET_REG_SUP (1u << 10)
#define FADT_F_HEADLESS (1u << 12)
#define FADT_F_HW_REDUCED_ACPI (1u << 20)
#define IAPC_VGA_NOT_PRESENT (1u << 2)
#define IAPC_MSI_NOT_SUPPORTED (1u << 3)
#define IAPC_CMOS_RTC_NOT_PRESENT (1u << 5)

/* MADT structure types. */
#define MADT_LOCAL_APIC 0
#define MADT_IO_APIC 1
#define MADT_INT_SRC_OVERRIDE 2
#define MADT_LOCAL_APIC_NMI 4
#define MADT_PCAT_COMPAT 1u /* a dual 8259 is present (KVM_CREATE_IRQCHIP) */

/* AML opcodes and resource descriptors used by the DSDT. */
#define AML_ZERO 0x00
#define AML_ONE 0x01
#define AML_NAME 0x08
#define AML_BYTE 0x0a
#define AML_WORD 0x0b
#define AML_DWORD 0x0c
#define AML_STRING 0x0d
#define AML_QWORD 0x0e
#define AML_SCOPE 0x10
#define AML_BUFFER 0x11
#define AML_PACKAGE 0x12
#define AML_EXT 0x5b
#define AML_EXT_DEVICE 0x82
#define AML_ROOT '\\'
#define RES_IRQ_NOFLAGS 0x22 /* small IRQ descriptor, 2 bytes: edge, high, exclusive */
#define RES_IO 0x47 /* small I/O port descriptor, 7 bytes */
#define RES_MEMORY32_FIXED 0x86
#define RES_EXT_IRQ 0x89
#define RES_END_TAG 0x79
#define RES_IRQ_CONSUMER 0x01
#define RES_IRQ_EDGE 0x02 /* bit 2 clear: active high; bit 3 clear: exclusive */

static const char oem_id[6] = {'K', 'V', 'R', 'U', 'N', ' '};
static const char oem_table_id[8] = {'K', 'V', 'R', 'U', 'N', 'V', 'M', ' '};

/* Bytes appended to the caller's buffer; overflow is sticky and checked
 * once at the end, so the builders stay straight-line. */
struct acpi_buf {
	uint8_t *p;
	size_t cap, len;
	bool overflow;
};

static void put_le(uint8_t *p, uint64_t v, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Reserve n zeroed bytes; returns NULL (and marks overflow) when full. */
static uint8_t *buf_reserve(struct acpi_buf *b, size_t n)
{
	uint8_t *p;

	if (b->overflow || n > b->cap - b->len) {
		b->overflow = true;
		return NULL;
	}
	p = b->p + b->len;
	memset(p, 0, n);
	b->len += n;
	return p;
}

static void buf_le(struct acpi_buf *b, uint64_t v, unsigned int n)
{
	uint8_t *p = buf_reserve(b, n);

	if (p)
		put_le(p, v, n);
}

static void buf_bytes(struct acpi_buf *b, const void *src, size_t n)
{
	uint8_t *p = buf_reserve(b, n);

	if (p)
		memcpy(p, src, n);
}

static void buf_align(struct acpi_buf *b, size_t a)
{
	if (b->len % a)
		buf_reserve(b, a - b->len % a);
}

uint8_t acpi_checksum(const void *p, size_t len)
{
	const uint8_t *s = p;
	uint8_t sum = 0;

	for (size_t i = 0; i < len; i++)
		sum += s[i];
	return sum;
}

/* Standard 36-byte description header; the length and checksum are set by
 * header_finish() once the table is complete. */
static void header_init(uint8_t *t, const char sig[4], uint8_t revision)
{
	memcpy(t, sig, 4);
	t[8] = revision;
	memcpy(t + 10, oem_id, sizeof(oem_id));
	memcpy(t + 16, oem_table_id, sizeof(oem_table_id));
	put_le(t + 24, 1, 4); /* OEM revision */
	memcpy(t + 28, "KVRN", 4); /* creator id */
	put_le(t + 32, 1, 4); /* creator revision */
}

static void header_finish(uint8_t *t, size_t len)
{
	put_le(t + 4, len, 4);
	t[9] = 0;
	t[9] = (uint8_t)-acpi_checksum(t, len);
}

/* Generic Address Structure for a one-byte register. */
static void put_gas8(uint8_t *p, uint8_t space, uint64_t addr)
{
	p[0] = space;
	p[1] = 8; /* register bit width */
	p[2] = 0; /* bit offset */
	p[3] = 1; /* access size: byte */
	put_le(p + 4, addr, 8);
}

size_t acpi_aml_pkglen(uint8_t out[4], size_t body)
{
	/* The encoded length counts the PkgLength bytes themselves. A one-byte
	 * form holds 6 bits; longer forms hold 4 bits in the lead byte plus 8
	 * per following byte, whose count goes in the lead byte's bits 7-6. */
	if (body + 1 <= 0x3f) {
		out[0] = (uint8_t)(body + 1);
		return 1;
	}
	for (size_t n = 2; n <= 4; n++) {
		size_t total = body + n;

		if (total >= (size_t)1 << (4 + 8 * (n - 1)))
			continue;
		out[0] = (uint8_t)(((n - 1) << 6) | (total & 0x0f));
		for (size_t i = 1; i < n; i++)
			out[i] = (uint8_t)(total >> (4 + 8 * (i - 1)));
		return n;
	}
	return 0;
}

/* Open a package: remember where its body starts. aml_close() later moves
 * the body up to make room for the PkgLength, whose size depends on it. */
static size_t aml_open(struct acpi_buf *b)
{
	return b->len;
}

static void aml_close(struct acpi_buf *b, size_t start)
{
	uint8_t enc[4];
	size_t body = b->len - start, n = acpi_aml_pkglen(enc, body);

	if (b->overflow)
		return;
	if (n == 0 || !buf_reserve(b, n)) {
		b->overflow = true;
		return;
	}
	memmove(b->p + start + n, b->p + start, body);
	memcpy(b->p + start, enc, n);
}

static void aml_integer(struct acpi_buf *b, uint64_t v)
{
	if (v <= 1) {
		buf_le(b, v ? AML_ONE : AML_ZERO, 1);
	} else if (v <= 0xff) {
		buf_le(b, AML_BYTE, 1);
		buf_le(b, v, 1);
	} else if (v <= 0xffff) {
		buf_le(b, AML_WORD, 1);
		buf_le(b, v, 2);
	} else if (v <= 0xffffffff) {
		buf_le(b, AML_DWORD, 1);
		buf_le(b, v, 4);
	} else {
		buf_le(b, AML_QWORD, 1);
		buf_le(b, v, 8);
	}
}

/* Name (seg, ...): seg is a 4-character NameSeg; the value follows. */
static void aml_name(struct acpi_buf *b, const char seg[4])
{
	buf_le(b, AML_NAME, 1);
	buf_bytes(b, seg, 4);
}

static void aml_string(struct acpi_buf *b, const char *s)
{
	buf_le(b, AML_STRING, 1);
	buf_bytes(b, s, strlen(s) + 1);
}

/* _CRS of one virtio-mmio device: its register window and its interrupt. */
static void aml_virtio_crs(struct acpi_buf *b, const struct acpi_virtio_mmio *d)
{
	size_t pkg;

	aml_name(b, "_CRS");
	buf_le(b, AML_BUFFER, 1);
	pkg = aml_open(b);
	aml_integer(b, 12 + 9 + 2); /* buffer size */
	buf_le(b, RES_MEMORY32_FIXED, 1);
	buf_le(b, 9, 2);
	buf_le(b, 1, 1); /* read/write */
	buf_le(b, d->base, 4);
	buf_le(b, d->size, 4);
	buf_le(b, RES_EXT_IRQ, 1);
	buf_le(b, 6, 2);
	buf_le(b, RES_IRQ_CONSUMER | RES_IRQ_EDGE, 1);
	buf_le(b, 1, 1); /* one interrupt */
	buf_le(b, d->gsi, 4);
	buf_le(b, RES_END_TAG, 1);
	buf_le(b, 0, 1); /* checksum 0: "treat as correct" */
	aml_close(b, pkg);
}

static void aml_virtio_device(struct acpi_buf *b, const struct acpi_virtio_mmio *d, unsigned int uid)
{
	static const char hex[] = "0123456789ABCDEF";
	const char seg[4] = {'V', 'R', hex[(uid >> 4) & 0xf], hex[uid & 0xf]};
	size_t pkg;

	buf_le(b, AML_EXT, 1);
	buf_le(b, AML_EXT_DEVICE, 1);
	pkg = aml_open(b);
	buf_bytes(b, seg, 4);
	aml_name(b, "_HID");
	aml_string(b, "LNRO0005");
	aml_name(b, "_UID");
	aml_integer(b, uid);
	aml_virtio_crs(b, d);
	aml_close(b, pkg);
}

/* EISA id compression: three letters of 5 bits and four hex digits, stored
 * big endian ("PNP0501" -> bytes 41 d0 05 01). */
static uint32_t eisa_id(const char id[7])
{
	uint32_t v = (uint32_t)(id[0] - '@') << 26 | (uint32_t)(id[1] - '@') << 21 | (uint32_t)(id[2] - '@') << 16;

	for (int i = 3; i < 7; i++)
		v |= (uint32_t)(id[i] <= '9' ? id[i] - '0' : id[i] - 'A' + 10) << (4 * (6 - i));
	return __builtin_bswap32(v);
}

/* Device (COM1) { _HID PNP0501, _UID 1, _CRS { IO 0x3f8/8, IRQNoFlags {4} } } */
static void aml_com1(struct acpi_buf *b)
{
	size_t dev, buf;

	buf_le(b, AML_EXT, 1);
	buf_le(b, AML_EXT_DEVICE, 1);
	dev = aml_open(b);
	buf_bytes(b, "COM1", 4);
	aml_name(b, "_HID");
	buf_le(b, AML_DWORD, 1);
	buf_le(b, eisa_id("PNP0501"), 4);
	aml_name(b, "_UID");
	aml_integer(b, 1);
	aml_name(b, "_CRS");
	buf_le(b, AML_BUFFER, 1);
	buf = aml_open(b);
	aml_integer(b, 8 + 3 + 2);
	buf_le(b, RES_IO, 1);
	buf_le(b, 1, 1); /* 16-bit decode */
	buf_le(b, 0x3f8, 2); /* minimum base */
	buf_le(b, 0x3f8, 2); /* maximum base */
	buf_le(b, 0, 1); /* alignment */
	buf_le(b, 8, 1); /* length */
	buf_le(b, RES_IRQ_NOFLAGS, 1);
	buf_le(b, 1u << 4, 2); /* IRQ 4 */
	buf_le(b, RES_END_TAG, 1);
	buf_le(b, 0, 1);
	aml_close(b, buf);
	aml_close(b, dev);
}

static void build_dsdt(struct acpi_buf *b, const struct acpi_config *cfg)
{
	size_t start = b->len, pkg;
	uint8_t *t;

	buf_reserve(b, ACPI_HEADER_LEN);

	/* Scope (\_SB) { [Device (COM1) {...}] Device (VRnn) {...} ... } */
	buf_le(b, AML_SCOPE, 1);
	pkg = aml_open(b);
	buf_le(b, AML_ROOT, 1);
	buf_bytes(b, "_SB_", 4);
	if (cfg->com1)
		aml_com1(b);
	for (unsigned int i = 0; i < cfg->nr_virtio; i++)
		aml_virtio_device(b, &cfg->virtio[i], i);
	aml_close(b, pkg);

	/* Name (\_S5, Package () { S5, S5, 0, 0 }): SLP_TYPa and SLP_TYPb. */
	buf_le(b, AML_NAME, 1);
	buf_le(b, AML_ROOT, 1);
	buf_bytes(b, "_S5_", 4);
	buf_le(b, AML_PACKAGE, 1);
	pkg = aml_open(b);
	buf_le(b, 4, 1);
	aml_integer(b, ACPI_S5_SLP_TYP);
	aml_integer(b, ACPI_S5_SLP_TYP);
	aml_integer(b, 0);
	aml_integer(b, 0);
	aml_close(b, pkg);

	if (b->overflow)
		return;
	/* aml_close() may have moved bytes, but not the header before them. */
	t = b->p + start;
	header_init(t, "DSDT", DSDT_REVISION);
	header_finish(t, b->len - start);
}

static void build_fadt(struct acpi_buf *b, const struct acpi_config *cfg, uint64_t dsdt)
{
	uint32_t flags = FADT_F_HW_REDUCED_ACPI | FADT_F_PWR_BUTTON | FADT_F_SLP_BUTTON | FADT_F_HEADLESS;
	uint8_t *t = buf_reserve(b, FADT_LEN);

	if (!t)
		return;
	header_init(t, "FACP", FADT_REVISION);
	/* Every legacy (fixed hardware) field stays zero: no SCI, SMI, PM1,
	 * PM timer or GPE blocks exist in hardware-reduced mode. */
	put_le(t + 109, IAPC_VGA_NOT_PRESENT | IAPC_MSI_NOT_SUPPORTED | (cfg->cmos_rtc ? 0 : IAPC_CMOS_RTC_NOT_PRESENT),
	       2);
	if (cfg->reset_reg) {
		flags |= FADT_F_RESET_REG_SUP;
		put_gas8(t + 116, cfg->sleep_space, cfg->sleep_addr);
		t[128] = ACPI_RESET_VALUE;
	}
	put_le(t + 112, flags, 4);
	t[131] = FADT_MINOR;
	put_le(t + 140, dsdt, 8); /* X_DSDT */
	put_gas8(t + 244, cfg->sleep_space, cfg->sleep_addr); /* SLEEP_CONTROL_REG */
	put_gas8(t + 256, cfg->sleep_space, cfg->sleep_addr); /* SLEEP_STATUS_REG */
	put_le(t + 268, 0, 8); /* hypervisor vendor identity: none */
	header_finish(t, FADT_LEN);
}

static size_t madt_len(const struct acpi_config *cfg)
{
	return ACPI_HEADER_LEN + 8 + 8 * cfg->ncpus + 12 + (cfg->irq0_to_gsi2 ? 10 : 0) + 6;
}

static void build_madt(struct acpi_buf *b, const struct acpi_config *cfg)
{
	size_t len = madt_len(cfg);
	uint8_t *t = buf_reserve(b, len), *e;

	if (!t)
		return;
	header_init(t, "APIC", MADT_REVISION);
	put_le(t + 36, ACPI_LAPIC_ADDR, 4);
	put_le(t + 40, MADT_PCAT_COMPAT, 4);
	e = t + 44;
	for (unsigned int i = 0; i < cfg->ncpus; i++, e += 8) {
		e[0] = MADT_LOCAL_APIC;
		e[1] = 8;
		e[2] = (uint8_t)i; /* ACPI processor UID */
		e[3] = (uint8_t)(cfg->apic_ids ? cfg->apic_ids[i] : i);
		put_le(e + 4, 1, 4); /* enabled */
	}
	e[0] = MADT_IO_APIC;
	e[1] = 12;
	e[2] = 0; /* IOAPIC id: KVM's IOAPIC resets to 0 */
	put_le(e + 4, ACPI_IOAPIC_ADDR, 4);
	put_le(e + 8, 0, 4); /* GSI base */
	e += 12;
	if (cfg->irq0_to_gsi2) {
		e[0] = MADT_INT_SRC_OVERRIDE;
		e[1] = 10;
		e[2] = 0; /* ISA */
		e[3] = 0; /* IRQ0 */
		put_le(e + 4, 2, 4);
		put_le(e + 8, 0, 2); /* polarity and trigger of the bus */
		e += 10;
	}
	e[0] = MADT_LOCAL_APIC_NMI;
	e[1] = 6;
	e[2] = 0xff; /* all processors */
	put_le(e + 3, 0, 2); /* flags: conforms to the bus */
	e[5] = 1; /* LINT1 */
	header_finish(t, len);
}

static void fill_xsdt(uint8_t *t, uint64_t fadt, uint64_t madt)
{
	header_init(t, "XSDT", 1);
	put_le(t + 36, fadt, 8);
	put_le(t + 44, madt, 8);
	header_finish(t, ACPI_HEADER_LEN + 16);
}

static void fill_rsdp(uint8_t *r, uint64_t xsdt)
{
	memcpy(r, "RSD PTR ", 8);
	memcpy(r + 9, oem_id, sizeof(oem_id));
	r[15] = 2; /* revision: ACPI 2.0+, XSDT valid */
	put_le(r + 16, 0, 4); /* no RSDT */
	put_le(r + 20, RSDP_LEN, 4);
	put_le(r + 24, xsdt, 8);
	r[8] = (uint8_t)-acpi_checksum(r, 20); /* ACPI 1.0 part */
	r[32] = (uint8_t)-acpi_checksum(r, RSDP_LEN); /* whole structure */
}

static int check_config(const struct acpi_config *cfg, uint64_t gpa, size_t len)
{
	if (gpa % 16)
		return err_set(-EINVAL, "ACPI tables at %#llx: not 16-byte aligned", (unsigned long long)gpa);
	/* The tables point at each other by GPA: none may wrap past 2^64. */
	if (len && gpa > UINT64_MAX - (len - 1))
		return err_set(-EINVAL, "ACPI tables at %#llx: %zu bytes wrap around the address space",
		               (unsigned long long)gpa, len);
	if (cfg->ncpus < 1 || cfg->ncpus > ACPI_MAX_CPUS)
		return err_set(-EINVAL, "ACPI: %u vCPUs (1..%d)", cfg->ncpus, ACPI_MAX_CPUS);
	for (unsigned int i = 0; cfg->apic_ids && i < cfg->ncpus; i++)
		if (cfg->apic_ids[i] > 254)
			return err_set(-EINVAL, "ACPI: APIC id %u needs x2APIC", cfg->apic_ids[i]);
	if (cfg->nr_virtio > ACPI_MAX_VIRTIO_MMIO || (cfg->nr_virtio && !cfg->virtio))
		return err_set(-EINVAL, "ACPI: %u virtio-mmio devices (max %d)", cfg->nr_virtio, ACPI_MAX_VIRTIO_MMIO);
	for (unsigned int i = 0; i < cfg->nr_virtio; i++) {
		const struct acpi_virtio_mmio *d = &cfg->virtio[i];

		if (d->size == 0 || d->size > UINT32_MAX || d->base > UINT32_MAX || d->size > UINT32_MAX - d->base + 1)
			return err_set(-EINVAL, "ACPI: virtio-mmio %#llx+%#llx is not below 4 GiB",
			               (unsigned long long)d->base, (unsigned long long)d->size);
		if (d->gsi >= ACPI_IOAPIC_PINS)
			return err_set(-EINVAL, "ACPI: virtio-mmio GSI %u is not an IOAPIC pin", d->gsi);
	}
	if (cfg->sleep_space != ACPI_GAS_SPACE_IO && cfg->sleep_space != ACPI_GAS_SPACE_MEMORY)
		return err_set(-EINVAL, "ACPI: sleep register space %u", cfg->sleep_space);
	if (cfg->sleep_addr == 0 || (cfg->sleep_space == ACPI_GAS_SPACE_IO && cfg->sleep_addr > 0xffff))
		return err_set(-EINVAL, "ACPI: sleep register address %#llx", (unsigned long long)cfg->sleep_addr);
	return 0;
}

int acpi_build_tables(const struct acpi_config *cfg, uint64_t gpa, void *buf, size_t len,
                      struct acpi_layout *ret_layout)
{
	struct acpi_buf b = {.p = buf, .cap = len};
	struct acpi_layout l = {.rsdp = gpa};
	size_t xsdt_off, dsdt_off, fadt_off, madt_off;
	int r;

	r = check_config(cfg, gpa, len);
	if (r < 0)
		return r;
	buf_reserve(&b, RSDP_LEN);
	buf_align(&b, 16);
	xsdt_off = b.len;
	buf_reserve(&b, ACPI_HEADER_LEN + 16);
	buf_align(&b, 8);
	dsdt_off = b.len;
	build_dsdt(&b, cfg);
	buf_align(&b, 8);
	fadt_off = b.len;
	build_fadt(&b, cfg, gpa + dsdt_off);
	buf_align(&b, 8);
	madt_off = b.len;
	build_madt(&b, cfg);
	if (b.overflow)
		return err_set(-ENOSPC, "ACPI tables do not fit in %zu bytes", len);

	fill_xsdt(b.p + xsdt_off, gpa + fadt_off, gpa + madt_off);
	fill_rsdp(b.p, gpa + xsdt_off);
	l.xsdt = gpa + xsdt_off;
	l.dsdt = gpa + dsdt_off;
	l.fadt = gpa + fadt_off;
	l.madt = gpa + madt_off;
	l.size = b.len;
	*ret_layout = l;
	return 0;
}

enum acpi_sleep_event acpi_sleep_reg_write(uint8_t value)
{
	if (value & ACPI_SLP_EN) {
		if (((value & ACPI_SLP_TYP_MASK) >> ACPI_SLP_TYP_SHIFT) == ACPI_S5_SLP_TYP)
			return ACPI_SLEEP_POWER_OFF;
		return ACPI_SLEEP_NONE; /* S1-S4 are not offered by the DSDT */
	}
	if (value == ACPI_RESET_VALUE)
		return ACPI_SLEEP_RESET;
	return ACPI_SLEEP_NONE; /* e.g. WAK_STS clear written before sleeping */
}

static void sleep_dev_read(void *opaque, uint64_t offset, void *data, uint32_t len)
{
	/* WAK_STS never set: the VM ends instead of waking. */
	memset(data, 0, len);
}

static void sleep_dev_write(void *opaque, uint64_t offset, const void *data, uint32_t len)
{
	const struct acpi_sleep_dev *dev = opaque;
	enum acpi_sleep_event ev;

	if (offset != 0 || len == 0)
		return;
	ev = acpi_sleep_reg_write(*(const uint8_t *)data);
	if (ev != ACPI_SLEEP_NONE && dev && dev->event)
		dev->event(dev->opaque, ev);
}

const struct bus_dev_ops acpi_sleep_dev_ops = {
    .read = sleep_dev_read,
    .write = sleep_dev_write,
};
