/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The test guest's benchmark marks (tests/guest/bench*.c), reported
 * through the test device's bench register (KVRUN_MMIO_TEST_BENCH,
 * common/debug-port.h). Freestanding: included by the test guest.
 *
 * The guest writes the guest-physical address (below 4 GiB) of a struct
 * kvrun_bench_mark to the register, with phase BEGIN right before its timed
 * loop and END right after it. The VMM takes its clock and the exit
 * counters (KVM's statistics, its own) at each, and on END writes one
 * JSON line with the guest's figures and the differences
 * (`kvrun boot --bench-out FILE`).
 */
#ifndef KVRUN_COMMON_TEST_BENCH_H
#define KVRUN_COMMON_TEST_BENCH_H

#include <stdint.h>

#define KVRUN_BENCH_MAGIC 0x4b56424eU /* "KVBN" */
#define KVRUN_BENCH_BEGIN 1
#define KVRUN_BENCH_END 2
#define KVRUN_BENCH_NAME 48

struct kvrun_bench_mark {
	uint32_t magic;
	uint32_t phase;
	char name[KVRUN_BENCH_NAME]; /* NUL-terminated workload name */
	uint64_t ops; /* requests, frames or messages completed */
	uint64_t bytes; /* payload bytes moved */
	uint64_t cycles; /* rdtsc ticks of the timed loop, in the guest */
	uint64_t kicks; /* doorbell writes the guest made */
	uint64_t errors; /* requests that failed or data that did not match */
	uint64_t queue_depth;
	uint64_t block_size;
};

#endif
