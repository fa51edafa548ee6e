/* SPDX-License-Identifier: Apache-2.0 */
/* SMP: find the MP table the VMM wrote, compare its CPUs with the test
 * device's count, and start every AP with INIT-SIPI-SIPI through the xAPIC.
 * APs are started one at a time, so each finds its index and stack in
 * ap_boot_index without any locking. */
#include "guest.h"
#include "hw.h"
#include "trampoline.h"

#define MP_PROC 0
#define MP_BUS 1
#define MP_IOAPIC 2
#define MP_IOINT 3
#define MP_LINT 4

struct mpf {
	char sig[4];
	uint32_t physptr;
	uint8_t length, rev, checksum, feature[5];
} __attribute__((packed));

struct mpc {
	char sig[4];
	uint16_t length;
	uint8_t rev, checksum;
	char oem[8], product[12];
	uint32_t oem_ptr;
	uint16_t oem_size, count;
	uint32_t lapic;
	uint16_t ext_length;
	uint8_t ext_checksum, reserved;
} __attribute__((packed));

struct mp_cpus {
	unsigned int n;
	uint32_t apic_id[MAX_CPUS];
	int bsp; /* index into apic_id, -1 if none flagged */
	uint32_t ioapic_addr;
	bool ok;
};

volatile uint32_t ap_online;
bool ap_counting;
volatile uint64_t ap_count[MAX_CPUS];
uint32_t cpu_apic_ids[MAX_CPUS];
uint32_t ncpus_started;

static volatile uint32_t ap_boot_index;
static volatile uint32_t ap_cpuid_id[MAX_CPUS];
static volatile uint32_t ap_lapic_id[MAX_CPUS];
static bool smp_done;

static char ap_stacks[MAX_CPUS][4096] __attribute__((section(".stacks"), aligned(16)));

static uint8_t sum8(const void *p, size_t n)
{
	const volatile uint8_t *b = p;
	uint8_t s = 0;

	for (size_t i = 0; i < n; i++)
		s += b[i];
	return s;
}

static const struct mpf *mpf_scan(uint64_t start, uint64_t end)
{
	for (uint64_t a = start; a + 16 <= end; a += 16) {
		const struct mpf *f = (const struct mpf *)(uintptr_t)a;
		if (!memcmp(f->sig, "_MP_", 4) && f->length == 1 && !sum8(f, 16))
			return f;
	}
	return NULL;
}

static void mp_parse(const struct mpc *c, struct mp_cpus *out)
{
	const uint8_t *p = (const uint8_t *)(c + 1), *end = (const uint8_t *)c + c->length;

	out->bsp = -1;
	for (unsigned int i = 0; i < c->count && p < end; i++) {
		switch (p[0]) {
		case MP_PROC:
			if ((p[3] & 1) && out->n < MAX_CPUS) {
				if (p[3] & 2)
					out->bsp = (int)out->n;
				out->apic_id[out->n++] = p[1];
			}
			p += 20;
			break;
		case MP_IOAPIC:
			out->ioapic_addr = *(const uint32_t *)(p + 4);
			p += 8;
			break;
		case MP_BUS:
		case MP_IOINT:
		case MP_LINT:
			p += 8;
			break;
		default:
			tap_diag("MP table: unknown entry type %u", p[0]);
			return;
		}
	}
	out->ok = p == end;
}

static bool mp_find(struct mp_cpus *out)
{
	const struct mpf *f = mpf_scan(0x9fc00, 0xa0000);

	if (!f)
		f = mpf_scan(0xf0000, 0x100000);
	if (!tap_ok(f != NULL, "smp: MP floating pointer found (0x%lx)", (uint64_t)(uintptr_t)f))
		return false;
	const struct mpc *c = (const struct mpc *)(uintptr_t)f->physptr;
	bool good = f->physptr >= 0x1000 && f->physptr < 0x100000 && !memcmp(c->sig, "PCMP", 4) &&
	            c->length >= sizeof(*c) && !sum8(c, c->length);
	if (!tap_ok(good, "smp: MP config table at 0x%x has PCMP and a valid checksum", f->physptr))
		return false;
	mp_parse(c, out);
	tap_ok(out->ok, "smp: MP table has %u entries that fill its %u bytes", c->count, c->length);
	tap_ok(c->lapic == LAPIC_BASE, "smp: MP table LAPIC address 0x%x", c->lapic);
	tap_ok(out->ioapic_addr == IOAPIC_BASE, "smp: MP table IOAPIC address 0x%x", out->ioapic_addr);
	return out->ok;
}

/* The trampoline page must not hold anything of the VMM's that is still in
 * use: boot_params, the command line, the GDT or the page tables. */
static bool tramp_page_free(void)
{
	struct idt_ptr gdtr;
	uint64_t used[8];
	unsigned int n = 0;

	__asm__ volatile("sgdt %0" : "=m"(gdtr));
	used[n++] = entry_state.rsi;
	used[n++] = (uint64_t)(uintptr_t)cmdline();
	used[n++] = gdtr.base;
	uint64_t pml4 = read_cr(3) & ~0xfffULL;
	used[n++] = pml4;
	uint64_t pdpt = *(volatile uint64_t *)pml4 & 0x000ffffffffff000ULL;
	used[n++] = pdpt;
	for (int i = 0; i < 3; i++)
		used[n++] = *(volatile uint64_t *)(pdpt + 8 * i) & 0x000ffffffffff000ULL;
	for (unsigned int i = 0; i < n; i++) {
		if ((used[i] & ~0xfffULL) == TRAMP_BASE) {
			tap_diag("page 0x%x is in use by the VMM's setup (0x%lx)", TRAMP_BASE, used[i]);
			return false;
		}
	}
	return true;
}

void ap_main(void)
{
	uint32_t idx = ap_boot_index, a, b, c, d;

	cpuid(1, &a, &b, &c, &d);
	ap_cpuid_id[idx] = b >> 24;
	ap_lapic_id[idx] = mmio_read32(LAPIC_BASE + 0x20) >> 24;
	irq_ap_setup();
	__atomic_fetch_add(&ap_online, 1, __ATOMIC_SEQ_CST);
	/* The snapshot test watches the APs go on counting, interrupts on. */
	if (ap_counting)
		for (;;) {
			ap_count[idx]++;
			__asm__ volatile("sti; pause" ::: "memory");
		}
	/* Stay available for the interrupt test. */
	for (;;)
		__asm__ volatile("sti; hlt; cli" ::: "memory");
}

static void icr_send(uint32_t apic_id, uint32_t low)
{
	struct deadline d;

	mmio_write32(LAPIC_BASE + 0x310, apic_id << 24);
	mmio_write32(LAPIC_BASE + 0x300, low);
	deadline_start(&d, 100000000ULL);
	while ((mmio_read32(LAPIC_BASE + 0x300) & (1 << 12)) && !deadline_passed(&d))
		cpu_relax();
}

static bool ap_start(uint32_t idx, uint32_t apic_id)
{
	struct deadline d;
	uint32_t before = ap_online;

	ap_boot_index = idx;
	*(volatile uint64_t *)(TRAMP_BASE + (tramp_stack - tramp_start)) =
	    (uint64_t)(uintptr_t)&ap_stacks[idx][sizeof(ap_stacks[idx]) - 8];
	icr_send(apic_id, 0x4500); /* INIT */
	icr_send(apic_id, 0x4600 | (TRAMP_BASE >> 12)); /* SIPI */
	icr_send(apic_id, 0x4600 | (TRAMP_BASE >> 12)); /* SIPI again, as the MP spec says */
	deadline_start(&d, 4000000000ULL);
	while (ap_online == before && !deadline_passed(&d))
		cpu_relax();
	return ap_online != before;
}

static void start_aps(const struct mp_cpus *mp, uint32_t bsp_id)
{
	unsigned int idx = 1;
	bool all_up = true;

	memcpy((void *)TRAMP_BASE, tramp_start, (size_t)(tramp_end - tramp_start));
	*(volatile uint64_t *)(TRAMP_BASE + (tramp_cr3 - tramp_start)) = read_cr(3);
	*(volatile uint64_t *)(TRAMP_BASE + (tramp_entry - tramp_start)) = (uint64_t)(uintptr_t)ap_main;
	cpu_apic_ids[0] = bsp_id;
	for (unsigned int i = 0; i < mp->n; i++) {
		if (mp->apic_id[i] == bsp_id)
			continue;
		bool up = ap_start(idx, mp->apic_id[i]);
		all_up &= up;
		if (!tap_ok(up, "smp: AP with APIC id %u came online", mp->apic_id[i]))
			continue;
		tap_ok(ap_lapic_id[idx] == mp->apic_id[i] && ap_cpuid_id[idx] == mp->apic_id[i],
		       "smp: AP %u: LAPIC ID %u and CPUID APIC id %u agree", mp->apic_id[i], ap_lapic_id[idx],
		       ap_cpuid_id[idx]);
		cpu_apic_ids[idx++] = mp->apic_id[i];
	}
	ncpus_started = idx;
	tap_ok(all_up && ap_online == mp->n - 1, "smp: %u of %u APs online (atomic counter)", ap_online, mp->n - 1);
}

static bool ids_distinct(const struct mp_cpus *mp)
{
	for (unsigned int i = 0; i < mp->n; i++)
		for (unsigned int j = 0; j < i; j++)
			if (mp->apic_id[i] == mp->apic_id[j])
				return false;
	return true;
}

void check_smp(void)
{
	struct mp_cpus mp = {0};
	uint32_t a, b, c, d;

	if (smp_done)
		return;
	smp_done = true;
	ncpus_started = 1;
	if (!mp_find(&mp))
		return;
	uint32_t ncpus = inl(KVRUN_PORT_TEST_NCPUS);
	tap_ok(mp.n == ncpus, "smp: MP table lists %u CPUs, the VMM created %u", mp.n, ncpus);
	tap_ok(ids_distinct(&mp), "smp: APIC ids in the MP table are distinct");

	uint64_t apic_base = rdmsr(0x1b);
	tap_ok((apic_base & 0xfffff900ULL) == (LAPIC_BASE | 0x900), "smp: IA32_APIC_BASE 0x%lx (BSP, enabled, xAPIC)",
	       apic_base);
	uint32_t bsp_id = mmio_read32(LAPIC_BASE + 0x20) >> 24;
	cpuid(1, &a, &b, &c, &d);
	tap_ok(mp.bsp >= 0 && mp.apic_id[mp.bsp] == bsp_id && (b >> 24) == bsp_id,
	       "smp: BSP LAPIC ID %u matches the MP table's BSP and CPUID (%u)", bsp_id, b >> 24);
	if (mp.n < 2)
		return;
	if (!tap_ok(tramp_page_free(), "smp: AP start page 0x%x is free", TRAMP_BASE))
		return;
	lapic_enable();
	start_aps(&mp, bsp_id);
}
