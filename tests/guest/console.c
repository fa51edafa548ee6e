/* SPDX-License-Identifier: Apache-2.0 */
/* Output over the 8250 at 0x3f8 and the TAP bookkeeping. Every byte is one
 * port exit (plus one for the LSR), so messages stay short. */
#include "guest.h"
#include "hw.h"

#define COM1 0x3f8
#define LSR_THRE 0x20

static unsigned int tap_n;
static unsigned int tap_failed;

void con_putc(char c)
{
	/* A VMM's THR is always empty; the bound keeps a broken LSR from
	 * hanging the guest. */
	for (int i = 0; i < 1000 && !(inb(COM1 + 5) & LSR_THRE); i++)
		cpu_relax();
	outb(COM1, (uint8_t)c);
}

static void put_str(const char *s)
{
	while (*s)
		con_putc(*s++);
}

static void put_num(uint64_t v, unsigned int base, int width, char pad)
{
	char buf[24];
	int n = 0;

	do {
		buf[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v && n < (int)sizeof(buf));
	while (width-- > n)
		con_putc(pad);
	while (n)
		con_putc(buf[--n]);
}

/* Supports %s %c %d %u %x with optional 0-padding width and l/ll. */
void con_vprintf(const char *fmt, va_list ap)
{
	for (; *fmt; fmt++) {
		if (*fmt != '%') {
			con_putc(*fmt);
			continue;
		}
		fmt++;
		char pad = ' ';
		int width = 0, lng = 0;
		if (*fmt == '0')
			pad = '0';
		while (*fmt >= '0' && *fmt <= '9')
			width = width * 10 + (*fmt++ - '0');
		while (*fmt == 'l') {
			lng++;
			fmt++;
		}
		switch (*fmt) {
		case 's':
			put_str(va_arg(ap, const char *));
			break;
		case 'c':
			con_putc((char)va_arg(ap, int));
			break;
		case 'd': {
			int64_t v = lng ? va_arg(ap, int64_t) : va_arg(ap, int);
			if (v < 0) {
				con_putc('-');
				v = -v;
			}
			put_num((uint64_t)v, 10, width, pad);
			break;
		}
		case 'u':
			put_num(lng ? va_arg(ap, uint64_t) : va_arg(ap, unsigned int), 10, width, pad);
			break;
		case 'x':
			put_num(lng ? va_arg(ap, uint64_t) : va_arg(ap, unsigned int), 16, width, pad);
			break;
		case '%':
			con_putc('%');
			break;
		default:
			con_putc('?');
			break;
		}
	}
}

void con_printf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	con_vprintf(fmt, ap);
	va_end(ap);
}

bool tap_ok(bool cond, const char *fmt, ...)
{
	va_list ap;

	tap_n++;
	if (!cond)
		tap_failed++;
	con_printf("%sok %u - ", cond ? "" : "not ", tap_n);
	va_start(ap, fmt);
	con_vprintf(fmt, ap);
	va_end(ap);
	con_putc('\n');
	return cond;
}

void tap_skip(const char *why, const char *fmt, ...)
{
	va_list ap;

	tap_n++;
	con_printf("ok %u - ", tap_n);
	va_start(ap, fmt);
	con_vprintf(fmt, ap);
	va_end(ap);
	con_printf(" # SKIP %s\n", why);
}

void tap_diag(const char *fmt, ...)
{
	va_list ap;

	con_printf("# ");
	va_start(ap, fmt);
	con_vprintf(fmt, ap);
	va_end(ap);
	con_putc('\n');
}

void tap_plan(void)
{
	con_printf("1..%u\n", tap_n);
}

bool tap_all_passed(void)
{
	return tap_failed == 0;
}

void tap_finish(void)
{
	con_printf("1..%u\n", tap_n);
	guest_exit(tap_failed ? 1 : 0);
}

void halt_forever(void)
{
	for (;;)
		__asm__ volatile("cli; hlt" ::: "memory");
}

void guest_exit(uint32_t code)
{
	outl(KVRUN_PORT_TEST_EXIT, code);
	/* Only reached without --test-device. */
	halt_forever();
}
