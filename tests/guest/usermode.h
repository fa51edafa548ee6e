/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CPL3 for the test guest's data-path benchmarks (usermode.c,
 * usermode.S): the guest's own GDT (user code and data, a TSS), page
 * tables that give user access only to the ranges named with
 * user_map(), and a call into CPL3 that comes back with the function's
 * result (through a #UD at a known address). Code at CPL3 runs with interrupts off and
 * without port I/O (MMIO only); it runs natively where a host emulates
 * only the guest's CPL0 code.
 */
#ifndef KVRUN_TEST_GUEST_USERMODE_H
#define KVRUN_TEST_GUEST_USERMODE_H

#include <stdbool.h>
#include <stdint.h>

/* Mark [start, start + len) user-accessible (in 2 MiB pages, below 4
 * GiB); call before user_mode_init(). False when outside. */
bool user_map(uint64_t start, uint64_t len);
/* Load the GDT, TSS, page tables and the return gate. The image itself
 * (code, data, stacks) is always user-accessible. */
void user_mode_init(void);
/* Run fn(arg) at CPL3 on the user stack; returns its result. */
uint64_t user_run(uint64_t (*fn)(void *), void *arg);
/* Whether the CPU is at CPL3 now (CS's RPL). */
bool user_mode_now(void);

#endif
