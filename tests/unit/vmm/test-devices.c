/* SPDX-License-Identifier: Apache-2.0 */
/* Register semantics of the test device's MMIO window and of the CMOS
 * clock, without a VM. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "tap.h"
#include "vmm/platform.h"
#include "vmm/test-device.h"

TEST(test_window_reads)
{
	struct test_device td = {0};
	uint32_t v32 = 0;
	uint64_t v64 = 0;
	uint8_t v8 = 0;

	pthread_mutex_init(&td.lock, NULL);
	test_device_mmio_read(&td, 0x10, &v32, 4);
	is_int(v32, 0x10 ^ 0x5a5a5a5a);
	test_device_mmio_read(&td, 0x7fc, &v32, 4);
	is_int(v32, 0x7fc ^ 0x5a5a5a5a);
	test_device_mmio_read(&td, 0x4, &v8, 1);
	is_int(v8, (0x4 ^ 0x5a5a5a5a) & 0xff);
	test_device_mmio_read(&td, 0x8, &v64, 8);
	ok(v64 == (0x8 ^ 0x5a5a5a5aULL), "8-byte read: pattern in the low half, zero above");
	pthread_mutex_destroy(&td.lock);
}

TEST(test_window_echo_slots)
{
	struct test_device td = {0};
	uint32_t w = 0xdeadbeef, v = 0;
	uint64_t w64 = 0x0102030405060708ULL, v64 = 0;

	pthread_mutex_init(&td.lock, NULL);
	test_device_mmio_write(&td, 0x20, &w, 4);
	test_device_mmio_read(&td, 0x820, &v, 4);
	is_int(v, 0xdeadbeef);
	test_device_mmio_write(&td, 0x7f8, &w64, 8);
	test_device_mmio_read(&td, 0xff8, &v64, 8);
	ok(v64 == w64, "last slot holds 8 bytes");
	w = 1;
	test_device_mmio_write(&td, 0x28, &w, 4);
	test_device_mmio_read(&td, 0x820, &v, 4);
	is_int(v, 0xdeadbeef); /* neighbouring slot untouched */
	/* A write in the upper half lands in the same slot as its mirror. */
	w = 77;
	test_device_mmio_write(&td, 0x830, &w, 4);
	test_device_mmio_read(&td, 0x830, &v, 4);
	is_int(v, 77);
	pthread_mutex_destroy(&td.lock);
}

TEST(cmos_clock_bcd)
{
	struct tm tm = {
	    .tm_sec = 59, .tm_min = 7, .tm_hour = 23, .tm_mday = 31, .tm_mon = 11, .tm_year = 126, .tm_wday = 1};

	is_int(rtc_time_register(0x00, &tm), 0x59);
	is_int(rtc_time_register(0x02, &tm), 0x07);
	is_int(rtc_time_register(0x04, &tm), 0x23);
	is_int(rtc_time_register(0x06, &tm), 0x02);
	is_int(rtc_time_register(0x07, &tm), 0x31);
	is_int(rtc_time_register(0x08, &tm), 0x12);
	is_int(rtc_time_register(0x09, &tm), 0x26);
	is_int(rtc_time_register(0x32, &tm), 0x20);
	is_int(rtc_time_register(0x0a, &tm) & 0x80, 0); /* never "update in progress" */
	is_int(rtc_time_register(0x0b, &tm), 0x02); /* 24 h, BCD */
	is_int(rtc_time_register(0x0d, &tm), 0x80); /* valid */
}

TAP_MAIN()
