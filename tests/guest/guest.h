/* SPDX-License-Identifier: Apache-2.0 */
/* Shared declarations of the freestanding test guest: TAP over the 8250,
 * the boot state captured at entry, and the scenarios. */
#ifndef KVRUN_TEST_GUEST_H
#define KVRUN_TEST_GUEST_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/debug-port.h"

#define MiB (1024ULL * 1024)
#define GiB (1024ULL * MiB)

#define LAPIC_BASE 0xfee00000ULL
#define IOAPIC_BASE 0xfec00000ULL
#define MAX_CPUS 64

/* Written by entry.S before anything else runs. */
struct entry_state {
	uint64_t rsi;
	uint64_t rflags;
	uint64_t rsp;
	uint16_t cs, ds, es, ss;
};
extern struct entry_state entry_state;

/* console.c: 8250 output, a small printf, TAP. */
void con_putc(char c);
void con_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void con_vprintf(const char *fmt, va_list ap);
bool tap_ok(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tap_skip(const char *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints the plan and ends the VM through the test exit port: 0 when every
 * check passed, 1 otherwise. */
__attribute__((noreturn)) void tap_finish(void);
/* The plan line alone, and whether every check so far passed (for a
 * scenario that ends the VM some other way). */
void tap_plan(void);
bool tap_all_passed(void);
__attribute__((noreturn)) void guest_exit(uint32_t code);
__attribute__((noreturn)) void halt_forever(void);

/* main.c: the kernel command line from boot_params. */
const char *cmdline(void);
/* Copies the value of "key=" into buf (NUL-terminated); false if absent. */
bool cmdline_get(const char *key, char *buf, size_t size);
bool parse_size(const char *s, uint64_t *ret);

/* Bounded waits: the deadline is in TSC ticks and an iteration cap, so a
 * missing event ends the check instead of hanging the guest. */
struct deadline {
	uint64_t tsc_end;
	uint64_t spins_left;
};
void deadline_start(struct deadline *d, uint64_t tsc_ticks);
bool deadline_passed(struct deadline *d);

/* Scenarios (each prints its own TAP lines). */
void check_entry_state(void);
void check_boot_params(void);
void check_ports(void);
void check_mmio(void);
void check_smp(void);
void check_irq(void);
void check_snapshot(void);
/* Asks the VMM for a snapshot (test device) and returns its status:
 * KVRUN_SNAPSHOT_DONE in the saved VM, _RESTORED in one restored from it. */
uint32_t snapshot_take(void);
__attribute__((noreturn)) void check_acpi(void);
void check_virtio_blk(void);
void check_virtio_blk_bad(void);
void check_virtio_vsock(void);
void check_virtio_balloon(void);
void check_fake_init(void);
void check_virtio_fs(void);
__attribute__((noreturn)) void do_reset(void);
__attribute__((noreturn)) void do_triple_fault(void);

/* smp.c: APs online after check_smp(), and their APIC ids. */
extern volatile uint32_t ap_online;
extern uint32_t cpu_apic_ids[MAX_CPUS];
extern uint32_t ncpus_started;
/* Set before check_smp(): APs count in ap_count[index] instead of halting. */
extern bool ap_counting;
extern volatile uint64_t ap_count[MAX_CPUS];

/* irq.c / entry.S */
struct idt_ptr {
	uint16_t limit;
	uint64_t base;
} __attribute__((packed));
void irq_ap_setup(void);
/* The IDT (a stub per vector into isr_dispatch()) loaded, and one gate
 * replaced by handler. */
void idt_init(void);
void idt_set_gate(unsigned int vector, void (*handler)(void));
/* For other scenarios: IDT and LAPIC up, the test line routed to an APIC
 * id, and one raise of it that waits (interrupts on) for its delivery. */
void irq_test_init(void);
void irq_test_route(uint32_t gsi, uint32_t apic_id);
bool irq_test_raise(uint32_t apic_id);
void lapic_enable(void);
/* The UART's IRQ 4 through the IOAPIC with the PIC left unprogrammed. */
void check_serial_irq_hw_reduced(void);
extern char isr_table[];
void ap_main(void);

void *memcpy(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);

#endif
