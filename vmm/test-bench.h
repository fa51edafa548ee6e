/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The benchmark marks of the test device (common/test-bench.h): at a BEGIN
 * and an END mark from the guest the VM's statistics are sampled
 * (vm-stats.h); on END one JSON line goes to the bench fd with the
 * guest's figures, the host time between the marks, the guest's TSC rate
 * and what the loop cost in exits, doorbells and interrupts.
 */
#ifndef KVRUN_VMM_TEST_BENCH_H
#define KVRUN_VMM_TEST_BENCH_H

#include <stdint.h>

struct vm;
struct test_bench;

/* A mark the guest wrote at gpa (on a vCPU thread): the statistics of vm
 * are opened on first use into *bench (NULL until then); lines go to fd. */
void test_bench_mark(struct test_bench **bench, struct vm *vm, int fd, uint64_t gpa);
/* Accepts NULL. */
void test_bench_free(struct test_bench *bench);

#endif
