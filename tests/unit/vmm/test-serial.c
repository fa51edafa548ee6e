/* SPDX-License-Identifier: Apache-2.0 */
/* The 8250 register model, driven the way Linux's 8250 driver probes it. */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "vmm/serial.h"

static int irq_level = -1, irq_changes;

static void set_irq(void *opaque, bool level)
{
	irq_level = level;
	irq_changes++;
}

static void out(struct serial *s, unsigned int reg, uint8_t v)
{
	serial_ops.write(s, reg, &v, 1);
}

static uint8_t in(struct serial *s, unsigned int reg)
{
	uint8_t v = 0;

	serial_ops.read(s, reg, &v, 1);
	return v;
}

TEST(probe_sequence)
{
	struct serial s;

	serial_init(&s, -1, set_irq, NULL);
	/* autoconfig(): IER test */
	out(&s, 1, 0);
	is_int(in(&s, 1) & 0x0f, 0);
	out(&s, 1, 0x0f);
	is_int(in(&s, 1) & 0x0f, 0x0f);
	out(&s, 1, 0);
	/* scratch register */
	out(&s, 7, 0xa5);
	is_int(in(&s, 7), 0xa5);
	out(&s, 7, 0x5a);
	is_int(in(&s, 7), 0x5a);
	/* loopback: MCR = LOOP | RTS | OUT2 -> MSR = CTS | DCD */
	out(&s, 4, 0x10 | 0x0a);
	is_int(in(&s, 6) & 0xf0, 0x90);
	out(&s, 4, 0x10 | 0x05);
	is_int(in(&s, 6) & 0xf0, 0x60);
	/* loopback data comes back */
	out(&s, 0, 'x');
	ok(in(&s, 5) & 0x01, "data ready in loopback");
	is_int(in(&s, 0), 'x');
	ok(!(in(&s, 5) & 0x01), "data ready cleared by reading RBR");
	out(&s, 4, 0);
	is_int(in(&s, 6) & 0xf0, 0xb0);
	/* FIFO: IIR bits 7:6 identify a 16550A */
	out(&s, 2, 0x01);
	is_int(in(&s, 2) & 0xc0, 0xc0);
	out(&s, 2, 0);
	is_int(in(&s, 2) & 0xc0, 0);
	/* LSR: transmitter empty */
	is_int(in(&s, 5) & 0x60, 0x60);
	/* divisor latch */
	out(&s, 3, 0x80);
	out(&s, 0, 0x01);
	out(&s, 1, 0x00);
	is_int(in(&s, 0), 0x01);
	out(&s, 3, 0x03);
	is_int(in(&s, 3), 0x03);
	serial_destroy(&s);
}

TEST(thre_interrupt)
{
	struct serial s;

	irq_level = -1;
	serial_init(&s, -1, set_irq, NULL);
	is_int(in(&s, 2) & 0x0f, 0x01); /* no interrupt */
	out(&s, 1, 0x02); /* IER.THRI with THR empty */
	is_int(irq_level, 1);
	is_int(in(&s, 2) & 0x0f, 0x02); /* THRI, acknowledged by this read */
	is_int(irq_level, 0);
	is_int(in(&s, 2) & 0x0f, 0x01);
	out(&s, 0, 'a'); /* transmit: THR empty again */
	is_int(irq_level, 1);
	is_int(in(&s, 2) & 0x0f, 0x02);
	out(&s, 1, 0);
	is_int(irq_level, 0);
	serial_destroy(&s);
}

TEST(output_to_fd)
{
	struct serial s;
	int p[2];
	char buf[64] = {0};
	const char *msg = "hello\nworld";

	if (pipe(p) < 0)
		return;
	serial_init(&s, p[1], set_irq, NULL);
	for (const char *c = msg; *c; c++)
		out(&s, 0, (uint8_t)*c);
	serial_flush(&s);
	close(p[1]);
	is_int(read(p[0], buf, sizeof(buf) - 1), (long long)strlen(msg));
	ok(strcmp(buf, msg) == 0, "console output matches what the guest wrote");
	close(p[0]);
	serial_destroy(&s);

	/* Output off: registers still work, nothing written. */
	serial_init(&s, -1, set_irq, NULL);
	out(&s, 0, 'z');
	is_int(s.buf_len, 0);
	serial_destroy(&s);
}

TAP_MAIN()
