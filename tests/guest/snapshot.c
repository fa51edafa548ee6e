/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test=snapshot: set up state worth keeping (a memory pattern, interrupt
 * routing, APs counting, values in the callee-saved and XMM registers),
 * ask the VMM for a snapshot through the test device, and check that all
 * of it is still there afterwards: in the VM that was saved (status DONE)
 * and in a VM restored from the file (status RESTORED) alike.
 *
 * Command line: snap_fill=SIZE (default 16M) bytes of RAM from 32 MiB get
 * the pattern (one qword at each end of every page, and every qword of the
 * first 64 KiB), clipped to mem_expect.
 */
#include "guest.h"
#include "hw.h"

#define PATTERN_BASE (32 * MiB)
#define DENSE_BYTES (64 * 1024)
#define CR4_OSFXSR (1ULL << 9)
#define CR4_OSXMMEXCPT (1ULL << 10)

struct snap_regs {
	uint64_t rbx, rbp, r12, r13, r14, r15;
	uint64_t xmm[16][2];
	uint64_t spins;
	uint32_t status;
	uint32_t pad;
};

_Static_assert(__builtin_offsetof(struct snap_regs, spins) == 304, "layout of snapshot-point.S");
_Static_assert(__builtin_offsetof(struct snap_regs, status) == 312, "layout of snapshot-point.S");

uint32_t snapshot_point(const struct snap_regs *in, struct snap_regs *out);

static uint64_t pattern(uint64_t gpa)
{
	uint64_t x = gpa * 0x9e3779b97f4a7c15ULL;

	return x ^ (x >> 29) ^ 0x5eed5eed00000000ULL;
}

static uint64_t fill_end(void)
{
	char buf[32];
	uint64_t fill = 16 * MiB, mem = 0;

	if (cmdline_get("snap_fill", buf, sizeof(buf)) && !parse_size(buf, &fill))
		fill = 16 * MiB;
	if (!cmdline_get("mem_expect", buf, sizeof(buf)) || !parse_size(buf, &mem))
		mem = 64 * MiB;
	if (mem > 3 * GiB)
		mem = 3 * GiB;
	uint64_t end = PATTERN_BASE + fill;
	return end > mem ? mem : end;
}

static void pattern_fill(uint64_t end)
{
	for (uint64_t a = PATTERN_BASE; a < PATTERN_BASE + DENSE_BYTES && a < end; a += 8)
		*(volatile uint64_t *)a = pattern(a);
	for (uint64_t a = PATTERN_BASE + DENSE_BYTES; a < end; a += 4096) {
		*(volatile uint64_t *)a = pattern(a);
		*(volatile uint64_t *)(a + 4088) = pattern(a + 4088);
	}
}

static uint64_t pattern_check(uint64_t end)
{
	uint64_t bad = 0;

	for (uint64_t a = PATTERN_BASE; a < PATTERN_BASE + DENSE_BYTES && a < end; a += 8)
		bad += *(volatile uint64_t *)a != pattern(a);
	for (uint64_t a = PATTERN_BASE + DENSE_BYTES; a < end; a += 4096) {
		bad += *(volatile uint64_t *)a != pattern(a);
		bad += *(volatile uint64_t *)(a + 4088) != pattern(a + 4088);
	}
	return bad;
}

static void regs_init(struct snap_regs *r)
{
	uint64_t *w = &r->rbx;

	memset(r, 0, sizeof(*r));
	for (int i = 0; i < 6; i++)
		w[i] = 0x1111111111111111ULL * (uint64_t)(i + 1) ^ 0x0123456789abcdefULL;
	for (int i = 0; i < 16; i++) {
		r->xmm[i][0] = 0xa5a5000000000000ULL | (uint64_t)i << 8 | 0x11;
		r->xmm[i][1] = 0x5a5a000000000000ULL | (uint64_t)i << 8 | 0x22;
	}
}

/* Waits until every AP's counter moved on from what it was now. */
static bool aps_counting(void)
{
	uint64_t before[MAX_CPUS];
	struct deadline d;
	bool all;

	for (uint32_t i = 1; i < ncpus_started; i++)
		before[i] = ap_count[i];
	deadline_start(&d, 4000000000ULL);
	do {
		all = true;
		for (uint32_t i = 1; i < ncpus_started; i++)
			all &= ap_count[i] != before[i];
	} while (!all && !deadline_passed(&d));
	return all;
}

static void check_after(const struct snap_regs *in, const struct snap_regs *out, uint64_t end, uint64_t tsc_before,
                        uint32_t gsi, uint32_t bsp)
{
	const char *where = out->status == KVRUN_SNAPSHOT_RESTORED ? "restored VM" : "saved VM";

	tap_ok(!memcmp(&in->rbx, &out->rbx, 6 * 8), "snapshot: rbx, rbp, r12-r15 kept in the %s", where);
	tap_ok(!memcmp(in->xmm, out->xmm, sizeof(in->xmm)), "snapshot: xmm0-xmm15 kept in the %s", where);
	uint64_t bad = pattern_check(end);
	tap_ok(bad == 0, "snapshot: memory pattern 0x%lx-0x%lx intact (%lu bad qwords)", (uint64_t)PATTERN_BASE, end,
	       bad);
	uint64_t tsc = rdtsc();
	tap_ok(tsc > tsc_before, "snapshot: TSC went on (0x%lx -> 0x%lx)", tsc_before, tsc);
	tap_ok(irq_test_raise(bsp), "snapshot: test interrupt delivered to the BSP after the snapshot");
	if (ncpus_started > 1) {
		irq_test_route(gsi, cpu_apic_ids[1]);
		tap_ok(irq_test_raise(cpu_apic_ids[1]), "snapshot: test interrupt delivered to AP %u", cpu_apic_ids[1]);
		irq_test_route(gsi, bsp);
		tap_ok(aps_counting(), "snapshot: %u APs still counting", ncpus_started - 1);
	}
}

uint32_t snapshot_take(void)
{
	static struct snap_regs in, out;

	__asm__ volatile("mov %0, %%cr4" : : "r"(read_cr(4) | CR4_OSFXSR | CR4_OSXMMEXCPT));
	regs_init(&in);
	return snapshot_point(&in, &out);
}

void check_snapshot(void)
{
	static struct snap_regs in, out;
	uint32_t gsi = inl(KVRUN_PORT_TEST_IRQ), bsp = mmio_read32(LAPIC_BASE + 0x20) >> 24;
	uint64_t end = fill_end(), tsc_before;

	/* SSE on, so that the XMM registers are live state to save. */
	uint64_t cr4 = read_cr(4) | CR4_OSFXSR | CR4_OSXMMEXCPT;
	__asm__ volatile("mov %0, %%cr4" : : "r"(cr4));
	irq_test_init();
	irq_test_route(gsi, bsp);
	ap_counting = true;
	ncpus_started = 1;
	if (inl(KVRUN_PORT_TEST_NCPUS) > 1)
		check_smp();
	tap_ok(irq_test_raise(bsp), "snapshot: test interrupt delivered before the snapshot");
	pattern_fill(end);
	tap_ok(pattern_check(end) == 0, "snapshot: memory pattern written 0x%lx-0x%lx", (uint64_t)PATTERN_BASE, end);
	regs_init(&in);
	tsc_before = rdtsc();
	tap_diag("snapshot: requesting a snapshot");
	uint32_t status = snapshot_point(&in, &out);
	tap_diag("snapshot: status %u after %lu polls: running in the %s", status, out.spins,
	         status == KVRUN_SNAPSHOT_RESTORED ? "restored VM" : "saved VM");
	if (!tap_ok(status == KVRUN_SNAPSHOT_DONE || status == KVRUN_SNAPSHOT_RESTORED,
	            "snapshot: the VMM took the snapshot (status %u)", status))
		return;
	check_after(&in, &out, end, tsc_before, gsi, bsp);
}
