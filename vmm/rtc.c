/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Minimal MC146818 CMOS clock (ports 0x70/0x71): the time of day from the
 * host's clock in BCD, 24-hour mode, never "update in progress". Without
 * it Linux spins for about a second at boot waiting for the UIP bit of an
 * absent chip (reads of 0xff), at emulated-CPL0 speed on slow hosts.
 * No alarms, no interrupts, no NVRAM beyond a scratch array.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/error.h"
#include "vmm/rtc.h"
#include "vmm/snap-buf.h"
#include "vmm/vm.h"

#define RTC_PORT 0x70
#define RTC_SECONDS 0x00
#define RTC_MINUTES 0x02
#define RTC_HOURS 0x04
#define RTC_DAY_OF_WEEK 0x06
#define RTC_DAY_OF_MONTH 0x07
#define RTC_MONTH 0x08
#define RTC_YEAR 0x09
#define RTC_REG_A 0x0a
#define RTC_REG_B 0x0b
#define RTC_REG_C 0x0c
#define RTC_REG_D 0x0d
#define RTC_CENTURY 0x32

#define RTC_REG_A_DEFAULT 0x26 /* 32.768 kHz base, 1024 Hz rate, UIP clear */
#define RTC_REG_B_24H 0x02
#define RTC_REG_D_VRT 0x80 /* battery good */

struct rtc {
	pthread_mutex_t lock;
	uint8_t index;
	uint8_t cmos[128];
};

static uint8_t bcd(int v)
{
	return (uint8_t)(((v / 10) << 4) | (v % 10));
}

uint8_t rtc_time_register(uint8_t reg, const struct tm *tm)
{
	switch (reg) {
	case RTC_SECONDS:
		return bcd(tm->tm_sec);
	case RTC_MINUTES:
		return bcd(tm->tm_min);
	case RTC_HOURS:
		return bcd(tm->tm_hour);
	case RTC_DAY_OF_WEEK:
		return bcd(tm->tm_wday + 1);
	case RTC_DAY_OF_MONTH:
		return bcd(tm->tm_mday);
	case RTC_MONTH:
		return bcd(tm->tm_mon + 1);
	case RTC_YEAR:
		return bcd(tm->tm_year % 100);
	case RTC_CENTURY:
		return bcd(19 + tm->tm_year / 100);
	case RTC_REG_A:
		return RTC_REG_A_DEFAULT;
	case RTC_REG_B:
		return RTC_REG_B_24H;
	case RTC_REG_C:
		return 0;
	case RTC_REG_D:
		return RTC_REG_D_VRT;
	}
	return 0xff;
}

static bool is_time_register(uint8_t reg)
{
	return reg <= RTC_REG_D || reg == RTC_CENTURY;
}

static void rtc_read(void *opaque, uint64_t offset, void *data, uint32_t len)
{
	struct rtc *rtc = opaque;
	uint8_t *out = data;

	memset(data, 0, len);
	pthread_mutex_lock(&rtc->lock);
	if (offset == 0) {
		out[0] = rtc->index;
	} else if (is_time_register(rtc->index)) {
		struct tm tm;
		time_t now = time(NULL);

		gmtime_r(&now, &tm);
		out[0] = rtc_time_register(rtc->index, &tm);
	} else {
		out[0] = rtc->cmos[rtc->index];
	}
	pthread_mutex_unlock(&rtc->lock);
}

static void rtc_write(void *opaque, uint64_t offset, const void *data, uint32_t len)
{
	struct rtc *rtc = opaque;
	uint8_t v = *(const uint8_t *)data;

	pthread_mutex_lock(&rtc->lock);
	if (offset == 0)
		rtc->index = v & 0x7f; /* bit 7 is the NMI mask */
	else if (!is_time_register(rtc->index))
		rtc->cmos[rtc->index] = v;
	pthread_mutex_unlock(&rtc->lock);
}

static const struct bus_dev_ops rtc_ops = {.read = rtc_read, .write = rtc_write};

int rtc_create(struct vm *vm, struct rtc **ret)
{
	struct rtc *rtc = calloc(1, sizeof(*rtc));
	int r;

	if (!rtc)
		return -ENOMEM;
	pthread_mutex_init(&rtc->lock, NULL);
	r = bus_register(&vm->pio, RTC_PORT, 2, &rtc_ops, rtc);
	if (r < 0) {
		free(rtc);
		return err_setsys(r, "registering the CMOS clock at 0x%x", RTC_PORT);
	}
	*ret = rtc;
	return 0;
}

void rtc_free(struct rtc *rtc)
{
	if (!rtc)
		return;
	pthread_mutex_destroy(&rtc->lock);
	free(rtc);
}

/* The time registers are the host's clock; the index and NVRAM are state. */
struct rtc_state {
	uint8_t index;
	uint8_t cmos[128];
};

_Static_assert(sizeof(((struct rtc *)0)->cmos) == sizeof(((struct rtc_state *)0)->cmos), "same NVRAM");

int rtc_state_save(struct rtc *rtc, struct snap_buf *out)
{
	struct rtc_state st;

	pthread_mutex_lock(&rtc->lock);
	st.index = rtc->index;
	for (size_t i = 0; i < sizeof(st.cmos); i++)
		st.cmos[i] = rtc->cmos[i];
	pthread_mutex_unlock(&rtc->lock);
	return snap_buf_put(out, &st, sizeof(st));
}

int rtc_state_load(struct rtc *rtc, const void *data, size_t len)
{
	struct rtc_state st;

	if (len != sizeof(st))
		return err_set(-EBADMSG, "CMOS state has %zu bytes, expected %zu", len, sizeof(st));
	memcpy(&st, data, sizeof(st));
	pthread_mutex_lock(&rtc->lock);
	rtc->index = st.index & 0x7f;
	for (size_t i = 0; i < sizeof(st.cmos); i++)
		rtc->cmos[i] = st.cmos[i];
	pthread_mutex_unlock(&rtc->lock);
	return 0;
}
