/* SPDX-License-Identifier: Apache-2.0 */
/* The test guest's main: picks the scenario from "test=" on the kernel
 * command line and runs its checks. Scenarios:
 *   basic       entry state, boot_params, e820, port exits
 *   mmio        MMIO exits and the test window
 *   smp         MP table and AP start-up
 *   irq         IOAPIC -> LAPIC delivery of the test interrupt line
 *   all         all of the above
 *   snapshot    asks for a snapshot mid-run and checks what survived it
 *               (memory pattern, registers, interrupts, APs counting)
 *   poweroff    ends through the test exit port with exit_code=N (0)
 *   reset       i8042 reset (port 0x64 <- 0xfe), or reset_via=cf9
 *   triplefault exception with an empty IDT
 *   spin        loops forever
 *   acpi        finds and checks the ACPI tables (acpi_virtio=N devices
 *               expected in the DSDT), then powers off through the FADT
 *               sleep register (or resets through RESET_REG with
 *               acpi_action=reset)
 *   virtio-blk, virtio-blk-bad, virtio-vsock, virtio-fs, virtio-balloon
 *               kvrun's virtio devices (virtio-blk.c, virtio-vsock.c,
 *               virtio-fs.c, virtio-balloon.c)
 *   fake-init   just enough of guest-init for a container's VM monitor:
 *               create, start, exec, signals; stall=1: part of a frame and
 *               silence (fake-init.c)
 *   bench       data-path benchmarks driven from CPL3 (bench.h) */
#include "bench.h"
#include "guest.h"
#include "hw.h"

static const char *cmdline_ptr = "";

void *memcpy(void *dst, const void *src, size_t n)
{
	__asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
	return dst;
}

void *memset(void *dst, int c, size_t n)
{
	void *d = dst;

	__asm__ volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(c) : "memory");
	return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const uint8_t *x = a, *y = b;

	for (size_t i = 0; i < n; i++)
		if (x[i] != y[i])
			return x[i] - y[i];
	return 0;
}

size_t strlen(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

const char *cmdline(void)
{
	return cmdline_ptr;
}

bool cmdline_get(const char *key, char *buf, size_t size)
{
	size_t klen = strlen(key);
	const char *p = cmdline_ptr;

	while (*p) {
		while (*p == ' ')
			p++;
		const char *tok = p;
		while (*p && *p != ' ')
			p++;
		if ((size_t)(p - tok) > klen && !memcmp(tok, key, klen) && tok[klen] == '=') {
			size_t n = 0;
			for (const char *v = tok + klen + 1; v < p && n + 1 < size; v++)
				buf[n++] = *v;
			buf[n] = 0;
			return true;
		}
	}
	return false;
}

bool parse_size(const char *s, uint64_t *ret)
{
	uint64_t v = 0;

	if (*s < '0' || *s > '9')
		return false;
	while (*s >= '0' && *s <= '9')
		v = v * 10 + (uint64_t)(*s++ - '0');
	switch (*s) {
	case 'G':
		v *= GiB;
		s++;
		break;
	case 'M':
		v *= MiB;
		s++;
		break;
	case 'K':
		v *= 1024;
		s++;
		break;
	}
	if (*s)
		return false;
	*ret = v;
	return true;
}

void deadline_start(struct deadline *d, uint64_t tsc_ticks)
{
	d->tsc_end = rdtsc() + tsc_ticks;
	/* Emulated CPL0 code runs ~1 us per instruction, native code far
	 * faster: the spin cap is only a backstop for a stuck TSC. */
	d->spins_left = 50000000;
}

bool deadline_passed(struct deadline *d)
{
	if (!d->spins_left--)
		return true;
	return rdtsc() > d->tsc_end;
}

static bool streq(const char *a, const char *b)
{
	return !memcmp(a, b, strlen(b) + 1);
}

/* Reads the command line now, so every scenario can use it; its own check
 * is in check_boot_params(). */
/* Set by the PVH entry (pvh.S), which has no boot_params. */
extern uint64_t pvh_cmdline;

static void cmdline_init(uint64_t bp)
{
	if (!bp && pvh_cmdline >= 0x1000 && pvh_cmdline < 4 * GiB) {
		cmdline_ptr = (const char *)(uintptr_t)pvh_cmdline;
		return;
	}
	if (bp < 0x1000 || bp > 0x100000)
		return;
	uint32_t ptr = *(volatile uint32_t *)(bp + 0x228);
	if (ptr >= 0x1000)
		cmdline_ptr = (const char *)(uintptr_t)ptr;
}

static __attribute__((noreturn)) void spin(void)
{
	tap_diag("spinning");
	for (;;)
		__asm__ volatile("" ::: "memory");
}

static __attribute__((noreturn)) void power_off(void)
{
	char buf[16];
	uint64_t code = 0;

	if (cmdline_get("exit_code", buf, sizeof(buf)) && !parse_size(buf, &code))
		code = 0xff;
	tap_diag("powering off with exit code %u", (unsigned int)code);
	guest_exit((uint32_t)code);
}

void guest_main(uint64_t boot_params);
void guest_main(uint64_t boot_params)
{
	char test[32];

	outb(KVRUN_PORT_BOOT_MARKER, 1);
	cmdline_init(boot_params);
	if (!cmdline_get("test", test, sizeof(test))) {
		tap_diag("no test= on the command line, running basic");
		memcpy(test, "basic", 6);
	}
	tap_diag("kvrun test guest: test=%s", test);
	tap_diag("command line: %s", cmdline());

	if (streq(test, "poweroff"))
		power_off();
	if (streq(test, "reset"))
		do_reset();
	if (streq(test, "triplefault"))
		do_triple_fault();
	if (streq(test, "spin"))
		spin();
	if (streq(test, "acpi"))
		check_acpi();

	bool all = streq(test, "all");
	bool known = false;
	if (all || streq(test, "basic")) {
		check_entry_state();
		check_boot_params();
		check_ports();
		known = true;
	}
	if (all || streq(test, "mmio")) {
		check_mmio();
		known = true;
	}
	if (all || streq(test, "smp")) {
		check_smp();
		known = true;
	}
	if (all || streq(test, "irq")) {
		check_irq();
		known = true;
	}
	if (streq(test, "virtio-blk") || streq(test, "virtio-blk-bad") || streq(test, "virtio-vsock")) {
		if (test[7] == 'v')
			check_virtio_vsock();
		else if (test[10])
			check_virtio_blk_bad();
		else
			check_virtio_blk();
		known = true;
	}
	if (streq(test, "virtio-fs")) {
		check_virtio_fs();
		known = true;
	}
	if (streq(test, "virtio-balloon")) {
		check_virtio_balloon();
		known = true;
	}
	if (streq(test, "bench")) {
		bench_blk();
		bench_net();
		bench_vsock();
		known = true;
	}
	if (streq(test, "snapshot")) {
		check_snapshot();
		known = true;
	}
	if (streq(test, "fake-init")) {
		check_fake_init();
		known = true;
	}
	tap_ok(known, "scenario '%s' is known", test);
	tap_finish();
}
