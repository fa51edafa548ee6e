/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The test device of vmm/debug-port.h (`kvrun boot --test-device`): exit
 * port, interrupt port, vCPU count port and the MMIO test window.
 */
#ifndef KVRUN_VMM_TEST_DEVICE_H
#define KVRUN_VMM_TEST_DEVICE_H

#include <pthread.h>
#include <stdint.h>

#include "vmm/debug-port.h"
#include "vmm/irq.h"

struct vm;

struct test_device {
	struct vm *vm;
	struct irq_line irq;
	int kick_fd; /* vCPU -> event loop: "raise the test interrupt" */
	pthread_mutex_t lock;
	uint64_t slots[KVRUN_MMIO_TEST_SIZE / 2 / 8];
};

/* Register the ports and the MMIO window, allocate the interrupt line and
 * watch the kick eventfd on the VM's event loop. *ret is owned by the caller:
 * test_device_free() after the VM stopped. */
int test_device_create(struct vm *vm, struct test_device **ret);
void test_device_free(struct test_device *td);

/* MMIO window semantics, exposed for unit tests. */
void test_device_mmio_read(struct test_device *td, uint64_t offset, void *data, uint32_t len);
void test_device_mmio_write(struct test_device *td, uint64_t offset, const void *data, uint32_t len);

#endif
