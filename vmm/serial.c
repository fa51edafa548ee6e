/* SPDX-License-Identifier: Apache-2.0 */
/*
 * 16550A register model, enough for Linux's 8250 driver: scratch register,
 * loopback (MCR bit 4 mirrors the modem control outputs into MSR), FIFO
 * identification in IIR, THR-empty interrupts. Characters are transmitted
 * the moment they are written, so THR is always empty.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/fileio.h"
#include "vmm/irq.h"
#include "vmm/serial.h"
#include "vmm/vm.h"

#define UART_RX 0 /* in: receive buffer (DLAB=0) */
#define UART_TX 0 /* out: transmit holding (DLAB=0) */
#define UART_IER 1 /* interrupt enable (DLAB=0) */
#define UART_IIR 2 /* in: interrupt identification */
#define UART_FCR 2 /* out: FIFO control */
#define UART_LCR 3
#define UART_MCR 4
#define UART_LSR 5
#define UART_MSR 6
#define UART_SCR 7

#define UART_IER_RDI 0x01
#define UART_IER_THRI 0x02
#define UART_IER_RLSI 0x04
#define UART_IER_MSI 0x08

#define UART_IIR_NO_INT 0x01
#define UART_IIR_MSI 0x00
#define UART_IIR_THRI 0x02
#define UART_IIR_RDI 0x04
#define UART_IIR_FIFO_ENABLED 0xc0

#define UART_FCR_ENABLE_FIFO 0x01
#define UART_FCR_CLEAR_RCVR 0x02

#define UART_LCR_DLAB 0x80

#define UART_MCR_DTR 0x01
#define UART_MCR_RTS 0x02
#define UART_MCR_OUT1 0x04
#define UART_MCR_OUT2 0x08
#define UART_MCR_LOOP 0x10

#define UART_LSR_DR 0x01
#define UART_LSR_THRE 0x20
#define UART_LSR_TEMT 0x40

#define UART_MSR_DCTS 0x01
#define UART_MSR_DDSR 0x02
#define UART_MSR_TERI 0x04
#define UART_MSR_DDCD 0x08
#define UART_MSR_CTS 0x10
#define UART_MSR_DSR 0x20
#define UART_MSR_RI 0x40
#define UART_MSR_DCD 0x80
#define UART_MSR_DELTA 0x0f

void serial_init(struct serial *s, int out_fd, void (*set_irq)(void *, bool), void *irq_opaque)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	s->lsr = UART_LSR_THRE | UART_LSR_TEMT;
	s->msr = UART_MSR_DCD | UART_MSR_DSR | UART_MSR_CTS;
	s->dll = 12; /* 9600 baud */
	s->out_fd = out_fd;
	s->set_irq = set_irq;
	s->irq_opaque = irq_opaque;
}

static uint8_t serial_iir(const struct serial *s)
{
	uint8_t fifo = (s->fcr & UART_FCR_ENABLE_FIFO) ? UART_IIR_FIFO_ENABLED : 0;

	if ((s->ier & UART_IER_RDI) && (s->lsr & UART_LSR_DR))
		return fifo | UART_IIR_RDI;
	if ((s->ier & UART_IER_THRI) && s->thr_ipending)
		return fifo | UART_IIR_THRI;
	if ((s->ier & UART_IER_MSI) && (s->msr & UART_MSR_DELTA))
		return fifo | UART_IIR_MSI;
	return fifo | UART_IIR_NO_INT;
}

static void serial_update_irq(struct serial *s)
{
	bool level = !(serial_iir(s) & UART_IIR_NO_INT);

	if (level != s->irq_level && s->set_irq)
		s->set_irq(s->irq_opaque, level);
	s->irq_level = level;
}

void serial_flush(struct serial *s)
{
	if (s->out_fd >= 0 && s->buf_len)
		write_all(s->out_fd, s->buf, s->buf_len);
	s->buf_len = 0;
}

static void serial_tx(struct serial *s, uint8_t c)
{
	if (s->on_mark && (s->mark_next || c == 0x1e)) {
		if (s->mark_next)
			s->on_mark(s->mark_opaque, (uint8_t)(c - 0x40));
		s->mark_next = !s->mark_next;
	} else if (s->mcr & UART_MCR_LOOP) {
		s->rbr = c;
		s->lsr |= UART_LSR_DR;
	} else if (s->out_fd >= 0) {
		s->buf[s->buf_len++] = (char)c;
		if (c == '\n' || s->buf_len == sizeof(s->buf))
			serial_flush(s);
	}
	/* Sent at once: THR empty again, which is an interrupt source. */
	s->thr_ipending = true;
}

/* Loopback wires DTR->DSR, RTS->CTS, OUT1->RI, OUT2->DCD. */
static uint8_t loopback_msr(uint8_t mcr)
{
	return (uint8_t)(((mcr & UART_MCR_DTR) ? UART_MSR_DSR : 0) | ((mcr & UART_MCR_RTS) ? UART_MSR_CTS : 0) |
	                 ((mcr & UART_MCR_OUT1) ? UART_MSR_RI : 0) | ((mcr & UART_MCR_OUT2) ? UART_MSR_DCD : 0));
}

static void serial_write_reg(struct serial *s, uint64_t reg, uint8_t v)
{
	bool dlab = s->lcr & UART_LCR_DLAB;

	switch (reg) {
	case UART_TX:
		if (dlab) {
			s->dll = v;
			break;
		}
		s->thr_ipending = false;
		serial_tx(s, v);
		break;
	case UART_IER:
		if (dlab) {
			s->dlm = v;
			break;
		}
		/* Enabling THRI while THR is empty raises the interrupt. */
		if (!(s->ier & UART_IER_THRI) && (v & UART_IER_THRI))
			s->thr_ipending = true;
		s->ier = v & 0x0f;
		break;
	case UART_FCR:
		s->fcr = v & (UART_FCR_ENABLE_FIFO | 0xc0);
		if (v & UART_FCR_CLEAR_RCVR)
			s->lsr &= ~UART_LSR_DR;
		break;
	case UART_LCR:
		s->lcr = v;
		break;
	case UART_MCR:
		s->mcr = v & 0x1f;
		s->msr = (s->mcr & UART_MCR_LOOP) ? loopback_msr(s->mcr) : (UART_MSR_DCD | UART_MSR_DSR | UART_MSR_CTS);
		break;
	case UART_SCR:
		s->scr = v;
		break;
	default: /* LSR, MSR: read-only */
		break;
	}
}

static uint8_t serial_read_reg(struct serial *s, uint64_t reg)
{
	bool dlab = s->lcr & UART_LCR_DLAB;
	uint8_t v;

	switch (reg) {
	case UART_RX:
		if (dlab)
			return s->dll;
		s->lsr &= ~UART_LSR_DR;
		return s->rbr;
	case UART_IER:
		return dlab ? s->dlm : s->ier;
	case UART_IIR:
		v = serial_iir(s);
		/* Reading IIR acknowledges a THR-empty interrupt. */
		if ((v & 0x0f) == UART_IIR_THRI)
			s->thr_ipending = false;
		return v;
	case UART_LCR:
		return s->lcr;
	case UART_MCR:
		return s->mcr;
	case UART_LSR:
		return s->lsr;
	case UART_MSR:
		v = s->msr;
		s->msr &= ~UART_MSR_DELTA;
		return v;
	case UART_SCR:
		return s->scr;
	}
	return 0xff;
}

static void serial_read(void *opaque, uint64_t offset, void *data, uint32_t len)
{
	struct serial *s = opaque;
	uint8_t *out = data;

	pthread_mutex_lock(&s->lock);
	out[0] = serial_read_reg(s, offset);
	serial_update_irq(s);
	pthread_mutex_unlock(&s->lock);
	/* Wider accesses are not a thing on an 8250: fill the rest. */
	if (len > 1)
		memset(out + 1, 0, len - 1);
}

static void serial_write(void *opaque, uint64_t offset, const void *data, uint32_t len)
{
	struct serial *s = opaque;

	pthread_mutex_lock(&s->lock);
	serial_write_reg(s, offset, *(const uint8_t *)data);
	serial_update_irq(s);
	pthread_mutex_unlock(&s->lock);
}

const struct bus_dev_ops serial_ops = {.read = serial_read, .write = serial_write};

void serial_destroy(struct serial *s)
{
	serial_flush(s);
	pthread_mutex_destroy(&s->lock);
}

static void serial_kvm_set_irq(void *opaque, bool level)
{
	vm_irq_set_level(opaque, SERIAL_COM1_IRQ, level);
}

int serial_create(struct vm *vm, int out_fd, struct serial **ret)
{
	struct serial *s = malloc(sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	serial_init(s, out_fd, serial_kvm_set_irq, vm);
	r = bus_register(&vm->pio, SERIAL_COM1_BASE, 8, &serial_ops, s);
	if (r < 0) {
		serial_destroy(s);
		free(s);
		return err_setsys(r, "registering the UART at 0x%x", SERIAL_COM1_BASE);
	}
	*ret = s;
	return 0;
}

void serial_free(struct serial *s)
{
	if (!s)
		return;
	serial_destroy(s);
	free(s);
}
