/* SPDX-License-Identifier: Apache-2.0 */
/* Interrupts: an IDT with a stub per vector, the LAPIC enabled through its
 * SVR, the legacy PIC masked, and the test device's line routed through the
 * IOAPIC to TEST_VECTOR on the BSP, then (with APs online) on an AP. */
#include "guest.h"
#include "hw.h"

#define TEST_VECTOR 0x40
#define SERIAL_VECTOR 0x41
#define SERIAL_GSI 4
#define COM1_IER 0x3f9
#define COM1_IIR 0x3fa
#define SPURIOUS_VECTOR 0xff

#define LAPIC_ID 0x20
#define LAPIC_TPR 0x80
#define LAPIC_EOI 0xb0
#define LAPIC_SVR 0xf0
#define LAPIC_LVT_LINT0 0x350

struct idt_gate {
	uint16_t off_lo, sel;
	uint8_t ist, attr;
	uint16_t off_mid;
	uint32_t off_hi, zero;
} __attribute__((packed));

struct isr_frame {
	uint64_t r11, r10, r9, r8, rdi, rsi, rdx, rcx, rax;
	uint64_t vector, error, rip, cs, rflags, rsp, ss;
};

extern char isr_stubs[];

static struct idt_gate idt[256] __attribute__((aligned(16)));
static bool idt_ready;
static volatile uint32_t irq_count[256]; /* test interrupts, by APIC id */
static volatile uint32_t spurious_count;
static volatile uint32_t other_count;
static volatile uint32_t serial_count;
static volatile uint8_t serial_iir;

void isr_dispatch(struct isr_frame *f);
void isr_dispatch(struct isr_frame *f)
{
	if (f->vector < 32) {
		tap_ok(false, "unexpected exception %lu (error 0x%lx) at rip 0x%lx", f->vector, f->error, f->rip);
		tap_finish();
	}
	if (f->vector == SPURIOUS_VECTOR) {
		spurious_count++;
		return;
	}
	if (f->vector == TEST_VECTOR) {
		irq_count[(mmio_read32(LAPIC_BASE + LAPIC_ID) >> 24) & 0xff]++;
	} else if (f->vector == SERIAL_VECTOR) {
		/* Reading IIR acknowledges THR-empty; IER=0 keeps the console
		 * from raising more. */
		serial_iir = inb(COM1_IIR);
		outb(COM1_IER, 0);
		serial_count++;
	} else {
		other_count++;
	}
	mmio_write32(LAPIC_BASE + LAPIC_EOI, 0);
}

static void idt_load(void)
{
	struct idt_ptr p = {sizeof(idt) - 1, (uint64_t)(uintptr_t)idt};

	if (!idt_ready) {
		uint16_t cs = read_seg(cs);
		for (int v = 0; v < 256; v++) {
			uint64_t h = (uint64_t)(uintptr_t)(isr_stubs + 16 * v);
			idt[v] =
			    (struct idt_gate){(uint16_t)h, cs, 0, 0x8e, (uint16_t)(h >> 16), (uint32_t)(h >> 32), 0};
		}
		idt_ready = true;
	}
	__asm__ volatile("lidt %0" : : "m"(p));
}

void lapic_enable(void)
{
	/* The 8259s would otherwise deliver ISA lines as ExtINT on low
	 * vectors, which look like exceptions. */
	outb(0x21, 0xff);
	outb(0xa1, 0xff);
	mmio_write32(LAPIC_BASE + LAPIC_LVT_LINT0, 1 << 16);
	mmio_write32(LAPIC_BASE + LAPIC_TPR, 0);
	mmio_write32(LAPIC_BASE + LAPIC_SVR, 0x100 | SPURIOUS_VECTOR);
}

void irq_ap_setup(void)
{
	idt_load();
	mmio_write32(LAPIC_BASE + LAPIC_TPR, 0);
	mmio_write32(LAPIC_BASE + LAPIC_SVR, 0x100 | SPURIOUS_VECTOR);
}

static void ioapic_write(uint32_t reg, uint32_t v)
{
	mmio_write32(IOAPIC_BASE, reg);
	mmio_write32(IOAPIC_BASE + 0x10, v);
}

static uint32_t ioapic_read(uint32_t reg)
{
	mmio_write32(IOAPIC_BASE, reg);
	return mmio_read32(IOAPIC_BASE + 0x10);
}

/* Edge-triggered, fixed delivery, physical destination, unmasked. */
static void ioapic_route_vector(uint32_t gsi, uint32_t apic_id, uint32_t vector)
{
	ioapic_write(0x10 + 2 * gsi, 1 << 16);
	ioapic_write(0x11 + 2 * gsi, apic_id << 24);
	ioapic_write(0x10 + 2 * gsi, vector);
}

static void ioapic_route(uint32_t gsi, uint32_t apic_id)
{
	ioapic_route_vector(gsi, apic_id, TEST_VECTOR);
}

/* The 8250 raises IRQ 4 once THR-empty interrupts are enabled while the
 * transmitter is empty, as Linux's serial driver expects. */
static void check_serial_irq(uint32_t bsp)
{
	struct deadline d;

	ioapic_route_vector(SERIAL_GSI, bsp, SERIAL_VECTOR);
	irq_enable();
	outb(COM1_IER, 0x02);
	deadline_start(&d, 4000000000ULL);
	while (!serial_count && !deadline_passed(&d))
		cpu_relax();
	irq_disable();
	outb(COM1_IER, 0);
	ioapic_write(0x10 + 2 * SERIAL_GSI, 1 << 16);
	tap_ok(serial_count && (serial_iir & 0x0f) == 0x02, "irq: 8250 THR-empty interrupt on GSI 4 (IIR 0x%x)",
	       serial_iir);
}

/* Raises the test line (the VMM does it from its event loop, through an
 * irqfd) and waits, interrupts on, until apic_id counted one more. */
static bool raise_and_wait(uint32_t apic_id)
{
	struct deadline d;
	uint32_t before = irq_count[apic_id];

	irq_enable();
	outl(KVRUN_PORT_TEST_IRQ, 1);
	deadline_start(&d, 4000000000ULL);
	while (irq_count[apic_id] == before && !deadline_passed(&d))
		cpu_relax();
	irq_disable();
	return irq_count[apic_id] != before;
}

void check_irq(void)
{
	uint32_t gsi = inl(KVRUN_PORT_TEST_IRQ);
	uint32_t ver = ioapic_read(1), pins = ((ver >> 16) & 0xff) + 1;
	uint32_t bsp = mmio_read32(LAPIC_BASE + LAPIC_ID) >> 24;

	idt_load();
	lapic_enable();
	tap_ok(pins >= 16 && pins <= 240, "irq: IOAPIC has %u pins (version 0x%x)", pins, ver);
	if (!tap_ok(gsi < pins, "irq: test line GSI %u is an IOAPIC pin", gsi))
		return;
	ioapic_route(gsi, bsp);
	uint32_t low = ioapic_read(0x10 + 2 * gsi);
	tap_ok((low & 0x1ffff) == TEST_VECTOR, "irq: redirection entry %u reads back (0x%x)", gsi, low);
	tap_ok(raise_and_wait(bsp), "irq: test line delivered to the BSP (APIC id %u)", bsp);
	bool again = raise_and_wait(bsp);
	tap_ok(again, "irq: delivered again after EOI (%u so far)", irq_count[bsp]);
	tap_ok(other_count == 0, "irq: no other vectors arrived (%u, %u spurious)", other_count, spurious_count);
	check_serial_irq(bsp);

	if (!ap_online && inl(KVRUN_PORT_TEST_NCPUS) > 1)
		check_smp();
	if (ap_online) {
		uint32_t ap = cpu_apic_ids[1];
		ioapic_route(gsi, ap);
		tap_ok(raise_and_wait(ap), "irq: test line delivered to the AP with APIC id %u", ap);
		ioapic_route(gsi, bsp);
	}
	ioapic_write(0x10 + 2 * gsi, 1 << 16);
}

void check_serial_irq_hw_reduced(void)
{
	uint32_t bsp = mmio_read32(LAPIC_BASE + LAPIC_ID) >> 24;

	/* As a hardware-reduced ACPI guest does: the LAPIC on, the 8259 and
	 * LINT0 as the VMM left them. An ExtINT from the unprogrammed PIC
	 * would arrive as vector 4 and end the test in isr_dispatch(). */
	idt_load();
	mmio_write32(LAPIC_BASE + LAPIC_TPR, 0);
	mmio_write32(LAPIC_BASE + LAPIC_SVR, 0x100 | SPURIOUS_VECTOR);
	check_serial_irq(bsp);
	tap_ok(other_count == 0, "irq: no other vectors arrived (%u, %u spurious)", other_count, spurious_count);
}

void idt_init(void)
{
	idt_load();
}

void idt_set_gate(unsigned int vector, void (*handler)(void))
{
	uint64_t h = (uint64_t)(uintptr_t)handler;

	idt_load();
	idt[vector & 0xff] =
	    (struct idt_gate){(uint16_t)h, read_seg(cs), 0, 0x8e, (uint16_t)(h >> 16), (uint32_t)(h >> 32), 0};
}

void irq_test_init(void)
{
	idt_load();
	lapic_enable();
}

void irq_test_route(uint32_t gsi, uint32_t apic_id)
{
	ioapic_route(gsi, apic_id);
}

bool irq_test_raise(uint32_t apic_id)
{
	return raise_and_wait(apic_id);
}
