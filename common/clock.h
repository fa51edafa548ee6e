/* SPDX-License-Identifier: Apache-2.0 */
/* Monotonic time for deadlines. */
#ifndef KVRUN_COMMON_CLOCK_H
#define KVRUN_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in milliseconds. */
static inline int64_t clock_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left until deadline_ms (clock_now_ms() time), at least 0. */
static inline int clock_left_ms(int64_t deadline_ms)
{
	int64_t left = deadline_ms - clock_now_ms();

	return left <= 0 ? 0 : left > INT32_MAX ? INT32_MAX : (int)left;
}

#endif
