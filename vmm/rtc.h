/* SPDX-License-Identifier: Apache-2.0 */
/* The CMOS clock (ports 0x70/0x71), a part of the platform (platform.h). */
#ifndef KVRUN_VMM_RTC_H
#define KVRUN_VMM_RTC_H

#include <stddef.h>
#include <stdint.h>

struct vm;
struct rtc;
struct snap_buf;
struct tm;

/* Register the clock on vm->pio. *ret is owned by the caller (rtc_free,
 * which accepts NULL, after the VM stopped). */
int rtc_create(struct vm *vm, struct rtc **ret);
void rtc_free(struct rtc *rtc);

/* The value of CMOS register reg for time tm (unit tests). */
uint8_t rtc_time_register(uint8_t reg, const struct tm *tm);

/* Snapshot state: the CMOS index and NVRAM (the time is the host's). */
int rtc_state_save(struct rtc *rtc, struct snap_buf *out);
int rtc_state_load(struct rtc *rtc, const void *data, size_t len);

#endif
