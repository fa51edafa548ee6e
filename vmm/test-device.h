/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The test device of common/debug-port.h (`kvrun boot --test-device`): exit
 * port, interrupt port, vCPU count port and the MMIO test window.
 */
#ifndef KVRUN_VMM_TEST_DEVICE_H
#define KVRUN_VMM_TEST_DEVICE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "common/debug-port.h"
#include "vmm/irq.h"

struct vm;

struct test_device {
	struct vm *vm;
	struct irq_line irq;
	int kick_fd; /* vCPU -> event loop: "raise the test interrupt" */
	pthread_mutex_t lock;
	uint64_t slots[KVRUN_MMIO_TEST_SIZE / 2 / 8];
	/* Snapshot requests (KVRUN_PORT_TEST_SNAPSHOT): snap_status is what
	 * the port reads; a request runs snapshot_cb on the event loop. */
	uint32_t snap_status;
	int snap_fd;
	void (*snapshot_cb)(struct test_device *td, void *opaque);
	void *snapshot_opaque;
	/* Benchmark marks (KVRUN_MMIO_TEST_BENCH, test-bench.c): JSON lines
	 * to bench_fd (borrowed; -1: marks are ignored). */
	int bench_fd;
	struct test_bench *bench;
};

/* Register the ports and the MMIO window, allocate the interrupt line and
 * watch the kick eventfd on the VM's event loop. *ret is owned by the caller:
 * test_device_free() after the VM stopped. */
int test_device_create(struct vm *vm, struct test_device **ret);
void test_device_free(struct test_device *td);

/* MMIO window semantics, exposed for unit tests. */
void test_device_mmio_read(struct test_device *td, uint64_t offset, void *data, uint32_t len);
void test_device_mmio_write(struct test_device *td, uint64_t offset, const void *data, uint32_t len);

/* Run cb(td, opaque) on the event loop when the guest asks for a snapshot
 * (without one, requests read back KVRUN_SNAPSHOT_FAILED). */
void test_device_on_snapshot(struct test_device *td, void (*cb)(struct test_device *, void *), void *opaque);
/* What the snapshot port reads from now on (KVRUN_SNAPSHOT_*). */
void test_device_set_snapshot_status(struct test_device *td, uint32_t status);

/* Write a JSON line per benchmark the guest marks to fd (borrowed, kept
 * open by the caller until test_device_free). */
void test_device_set_bench_fd(struct test_device *td, int fd);

struct snap_buf;
/* Snapshot state: the MMIO slots, the snapshot status and the GSI (which
 * must be the same in the restoring VM). */
int test_device_state_save(void *td, struct snap_buf *out);
int test_device_state_load(void *td, const void *data, size_t len);

#endif
