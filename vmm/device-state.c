/* SPDX-License-Identifier: Apache-2.0 */
/* Snapshot state of the VMM's own devices: the UART and the test device
 * (the CMOS clock's is in rtc.c, beside its private struct). Each is a
 * fixed little struct, checked for its exact length on load. */
#include <errno.h>
#include <string.h>

#include "common/error.h"
#include "vmm/serial.h"
#include "vmm/snapshot.h"
#include "vmm/test-device.h"

struct serial_state {
	uint8_t ier, lcr, mcr, lsr, msr, scr, dll, dlm, fcr, rbr;
	uint8_t thr_ipending, irq_level;
	uint32_t buf_len;
	char buf[256];
};

_Static_assert(sizeof(((struct serial *)0)->buf) == sizeof(((struct serial_state *)0)->buf), "same line buffer");

int serial_state_save(void *opaque, struct snap_buf *out)
{
	struct serial *s = opaque;
	struct serial_state st;

	memset(&st, 0, sizeof(st));
	pthread_mutex_lock(&s->lock);
	st = (struct serial_state){s->ier, s->lcr, s->mcr, s->lsr,          s->msr,       s->scr,    s->dll,
	                           s->dlm, s->fcr, s->rbr, s->thr_ipending, s->irq_level, s->buf_len};
	memcpy(st.buf, s->buf, sizeof(st.buf));
	pthread_mutex_unlock(&s->lock);
	return snap_buf_put(out, &st, sizeof(st));
}

int serial_state_load(void *opaque, const void *data, size_t len)
{
	struct serial *s = opaque;
	struct serial_state st;

	if (len != sizeof(st))
		return err_set(-EBADMSG, "UART state has %zu bytes, expected %zu", len, sizeof(st));
	memcpy(&st, data, sizeof(st));
	if (st.buf_len > sizeof(st.buf))
		return err_set(-EBADMSG, "UART state: line buffer length %u", st.buf_len);
	pthread_mutex_lock(&s->lock);
	s->ier = st.ier;
	s->lcr = st.lcr;
	s->mcr = st.mcr;
	s->lsr = st.lsr;
	s->msr = st.msr;
	s->scr = st.scr;
	s->dll = st.dll;
	s->dlm = st.dlm;
	s->fcr = st.fcr;
	s->rbr = st.rbr;
	s->thr_ipending = st.thr_ipending;
	s->irq_level = st.irq_level;
	s->buf_len = st.buf_len;
	memcpy(s->buf, st.buf, sizeof(s->buf));
	/* The irqchip already holds the line's level; drive it the same. */
	if (s->set_irq)
		s->set_irq(s->irq_opaque, s->irq_level);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

struct test_device_state {
	uint64_t slots[KVRUN_MMIO_TEST_SIZE / 2 / 8];
	uint32_t snap_status;
	uint32_t gsi;
};

int test_device_state_save(void *opaque, struct snap_buf *out)
{
	struct test_device *td = opaque;
	struct test_device_state st;

	memset(&st, 0, sizeof(st));
	pthread_mutex_lock(&td->lock);
	memcpy(st.slots, td->slots, sizeof(st.slots));
	pthread_mutex_unlock(&td->lock);
	st.snap_status = __atomic_load_n(&td->snap_status, __ATOMIC_ACQUIRE);
	st.gsi = td->irq.gsi;
	return snap_buf_put(out, &st, sizeof(st));
}

int test_device_state_load(void *opaque, const void *data, size_t len)
{
	struct test_device *td = opaque;
	struct test_device_state st;

	if (len != sizeof(st))
		return err_set(-EBADMSG, "test device state has %zu bytes, expected %zu", len, sizeof(st));
	memcpy(&st, data, sizeof(st));
	/* The guest programmed its IOAPIC for the saved GSI. */
	if (st.gsi != td->irq.gsi)
		return err_set(-EINVAL, "test device had GSI %u, now %u", st.gsi, td->irq.gsi);
	pthread_mutex_lock(&td->lock);
	memcpy(td->slots, st.slots, sizeof(td->slots));
	pthread_mutex_unlock(&td->lock);
	__atomic_store_n(&td->snap_status, st.snap_status, __ATOMIC_RELEASE);
	return 0;
}
