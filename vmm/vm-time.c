/* SPDX-License-Identifier: Apache-2.0 */
/* Timestamps for the VM's timing logs: CLOCK_MONOTONIC now, and at the
 * start of this process. */
#include <time.h>

#include "vmm/vm.h"

static uint64_t process_start_ns;

uint64_t vm_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The earliest point this process can observe without changing main():
 * constructors run after the dynamic loader, before main(). */
__attribute__((constructor(101))) static void record_process_start(void)
{
	process_start_ns = vm_now_ns();
}

uint64_t vm_process_start_ns(void)
{
	return process_start_ns;
}
