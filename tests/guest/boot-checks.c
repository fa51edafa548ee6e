/* SPDX-License-Identifier: Apache-2.0 */
/* Checks of what the VMM set up before the first instruction: the 64-bit
 * entry state, boot_params with its e820 map, and plain port exits. Also the
 * scenarios that end the VM in a way other than the exit port. */
#include "guest.h"
#include "hw.h"

#define E820_RAM 1
#define UNCLAIMED_PORT 0x510
#define COM1_PORT 0x3f8
#define COM1_SCRATCH 0x3ff

struct e820_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t type;
} __attribute__((packed));

extern char __bss_end[];

static uint8_t bp8(uint32_t off)
{
	return *(volatile uint8_t *)(entry_state.rsi + off);
}

static uint16_t bp16(uint32_t off)
{
	return *(volatile uint16_t *)(entry_state.rsi + off);
}

static uint32_t bp32(uint32_t off)
{
	return *(volatile uint32_t *)(entry_state.rsi + off);
}

static bool boot_params_sane(void)
{
	return entry_state.rsi >= 0x1000 && entry_state.rsi < 0x100000;
}

void check_entry_state(void)
{
	uint64_t cr0 = read_cr(0), cr4 = read_cr(4), efer = rdmsr(0xc0000080);
	struct entry_state *e = &entry_state;

	tap_ok(e->cs == 0x10, "entry: CS is 0x10 (got 0x%x)", e->cs);
	tap_ok(e->ds == 0x18 && e->es == 0x18 && e->ss == 0x18, "entry: DS/ES/SS are 0x18 (got 0x%x/0x%x/0x%x)", e->ds,
	       e->es, e->ss);
	tap_ok((cr0 & 0x80000001) == 0x80000001, "entry: CR0 has PE and PG (0x%lx)", cr0);
	tap_ok(cr4 & 0x20, "entry: CR4 has PAE (0x%lx)", cr4);
	tap_ok((efer & 0x500) == 0x500, "entry: EFER has LME and LMA (0x%lx)", efer);
	tap_ok(!(e->rflags & 0x200) && (e->rflags & 2), "entry: RFLAGS has IF clear, bit 1 set (0x%lx)", e->rflags);
	if (!tap_ok(boot_params_sane(), "entry: RSI points at boot_params below 1 MiB (0x%lx)", e->rsi))
		return;
	tap_ok(bp16(0x1fe) == 0xaa55, "boot_params: boot_flag is 0xaa55 (0x%x)", bp16(0x1fe));
	tap_ok(bp32(0x202) == 0x53726448, "boot_params: header is \"HdrS\" (0x%x)", bp32(0x202));
}

static uint64_t parse_mem_expect(void)
{
	char buf[24];
	uint64_t v;

	if (!cmdline_get("mem_expect", buf, sizeof(buf)) || !parse_size(buf, &v))
		return 0;
	return v;
}

static bool overlaps(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

static bool ram_covers(const struct e820_entry *e, unsigned int n, uint64_t addr, uint64_t len)
{
	for (unsigned int i = 0; i < n; i++)
		if (e[i].type == E820_RAM && addr >= e[i].addr && addr + len <= e[i].addr + e[i].size)
			return true;
	return false;
}

static void check_e820(void)
{
	unsigned int n = bp8(0x1e8);
	const struct e820_entry *e = (const struct e820_entry *)(entry_state.rsi + 0x2d0);
	uint64_t total = 0, expect = parse_mem_expect();
	bool disjoint = true, clear_of_devices = true;

	if (!tap_ok(n >= 1 && n <= 128, "e820: %u entries", n))
		return;
	for (unsigned int i = 0; i < n; i++) {
		tap_diag("e820 %u: 0x%lx-0x%lx type %u", i, e[i].addr, e[i].addr + e[i].size - 1, e[i].type);
		for (unsigned int j = 0; j < i; j++)
			if (overlaps(e[i].addr, e[i].size, e[j].addr, e[j].size))
				disjoint = false;
		if (e[i].type != E820_RAM)
			continue;
		total += e[i].size;
		if (overlaps(e[i].addr, e[i].size, KVRUN_MMIO_TEST_BASE, KVRUN_MMIO_TEST_SIZE) ||
		    overlaps(e[i].addr, e[i].size, LAPIC_BASE, 0x1000) ||
		    overlaps(e[i].addr, e[i].size, IOAPIC_BASE, 0x1000))
			clear_of_devices = false;
	}
	tap_ok(disjoint, "e820: entries do not overlap");
	tap_ok(clear_of_devices, "e820: no RAM over the LAPIC, IOAPIC or test MMIO window");
	tap_ok(ram_covers(e, n, 0, 0x1000), "e820: RAM at 0");
	tap_ok(ram_covers(e, n, 0x100000, 0x1000), "e820: RAM at 1 MiB");
	tap_ok(ram_covers(e, n, 0x1000000, (uint64_t)(uintptr_t)__bss_end - 0x1000000),
	       "e820: RAM under the loaded guest image");
	if (!expect) {
		tap_skip("no mem_expect= on the command line", "e820: RAM total 0x%lx", total);
		return;
	}
	/* Only the legacy hole (640 KiB - 1 MiB) may be missing. */
	tap_ok(total <= expect && total >= expect - MiB, "e820: RAM total 0x%lx matches mem_expect 0x%lx", total,
	       expect);
}

void check_boot_params(void)
{
	if (!boot_params_sane())
		return;
	uint32_t ptr = bp32(0x228), size = bp32(0x238);
	const char *cl = cmdline();

	tap_ok(ptr >= 0x1000 && ptr < 0x100000, "boot_params: cmd_line_ptr 0x%x below 1 MiB", ptr);
	tap_ok(cl == (const char *)(uintptr_t)ptr && strlen(cl) <= size && strlen(cl) > 0,
	       "boot_params: command line of %u bytes fits cmdline_size %u", (unsigned int)strlen(cl), size);
	tap_diag("cmdline: %s", cl);
	char buf[32];
	tap_ok(cmdline_get("test", buf, sizeof(buf)), "boot_params: command line has test=");
	tap_ok(bp16(0x206) >= 0x0200, "boot_params: boot protocol version 0x%x", bp16(0x206));
	check_e820();
}

/* String I/O: one exit carries several items (kvm_run io.count > 1). */
static void check_string_io(void)
{
	static const char msg[] = "# string-io: rep outsb reached the console\n";
	uint8_t buf[8];
	const void *src = msg;
	void *dst = buf;
	size_t n = sizeof(msg) - 1;

	__asm__ volatile("rep outsb" : "+S"(src), "+c"(n) : "d"(COM1_PORT) : "memory");
	memset(buf, 0, sizeof(buf));
	n = sizeof(buf);
	__asm__ volatile("rep insb" : "+D"(dst), "+c"(n) : "d"(UNCLAIMED_PORT) : "memory");
	bool all_ones = true;
	for (size_t i = 0; i < sizeof(buf); i++)
		all_ones &= buf[i] == 0xff;
	tap_ok(all_ones, "port: rep insb from an unclaimed port fills all ones");
}

void check_ports(void)
{
	uint8_t b = inb(UNCLAIMED_PORT);
	uint16_t w = inw(UNCLAIMED_PORT);
	uint32_t l = inl(UNCLAIMED_PORT);

	tap_ok(b == 0xff && w == 0xffff && l == 0xffffffff, "port: unclaimed port 0x%x reads all ones (0x%x 0x%x 0x%x)",
	       UNCLAIMED_PORT, b, w, l);
	outl(UNCLAIMED_PORT, 0x12345678);
	l = inl(UNCLAIMED_PORT);
	tap_ok(l == 0xffffffff, "port: a write to an unclaimed port is dropped (0x%x)", l);

	outb(COM1_SCRATCH, 0xa5);
	b = inb(COM1_SCRATCH);
	outb(COM1_SCRATCH, 0x5a);
	uint8_t b2 = inb(COM1_SCRATCH);
	tap_ok(b == 0xa5 && b2 == 0x5a, "port: 8250 scratch register keeps what was written (0x%x 0x%x)", b, b2);

	check_string_io();

	uint32_t ncpus = inl(KVRUN_PORT_TEST_NCPUS);
	tap_ok(ncpus >= 1 && ncpus <= MAX_CPUS, "port: test device reports %u vCPUs", ncpus);
	uint32_t gsi = inl(KVRUN_PORT_TEST_IRQ);
	tap_ok(gsi < 24, "port: test device interrupt line is GSI %u", gsi);
}

/* reset_via=cf9 uses the PCI reset control register (0xcf9 <- 0x06, a
 * hard reset) instead of the i8042 pulse. */
void do_reset(void)
{
	struct deadline d;
	char via[8];

	if (cmdline_get("reset_via", via, sizeof(via)) && !memcmp(via, "cf9", 4)) {
		tap_diag("resetting through port 0xcf9");
		outb(0xcf9, 0x06);
	} else {
		tap_diag("resetting through the i8042");
		outb(0x64, 0xfe);
	}
	deadline_start(&d, 2000000000ULL);
	while (!deadline_passed(&d))
		cpu_relax();
	tap_ok(false, "the reset ended the VM");
	tap_finish();
}

void do_triple_fault(void)
{
	struct idt_ptr empty = {0, 0};

	tap_diag("loading an empty IDT and raising #UD");
	__asm__ volatile("lidt %0; ud2" : : "m"(empty));
	tap_ok(false, "the exception ended the VM");
	tap_finish();
}
