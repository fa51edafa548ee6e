/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "common/test-bench.h"
#include "vmm/test-bench.h"
#include "vmm/test-device.h"
#include "vmm/vm.h"

#define TEST_PORT_BASE KVRUN_PORT_TEST_EXIT
#define TEST_PORT_LEN (KVRUN_PORT_TEST_SNAPSHOT + 4 - KVRUN_PORT_TEST_EXIT)
#define MMIO_ECHO_OFFSET (KVRUN_MMIO_TEST_SIZE / 2)

static uint64_t le_value(const void *data, uint32_t len)
{
	uint64_t v = 0;

	memcpy(&v, data, len < sizeof(v) ? len : sizeof(v));
	return v;
}

static void put_value(void *data, uint32_t len, uint64_t v)
{
	memset(data, 0, len);
	memcpy(data, &v, len < sizeof(v) ? len : sizeof(v));
}

static void test_port_read(void *opaque, uint64_t offset, void *data, uint32_t len)
{
	struct test_device *td = opaque;
	uint64_t port = TEST_PORT_BASE + offset;

	if (port == KVRUN_PORT_TEST_IRQ)
		put_value(data, len, td->irq.gsi);
	else if (port == KVRUN_PORT_TEST_NCPUS)
		put_value(data, len, td->vm->ncpus);
	else if (port == KVRUN_PORT_TEST_SNAPSHOT)
		put_value(data, len, __atomic_load_n(&td->snap_status, __ATOMIC_ACQUIRE));
	else
		memset(data, 0xff, len);
}

/* The vCPU that asked cannot pause the others: the event loop takes the
 * snapshot. A request while one is pending is dropped. */
static void test_snapshot_request(struct test_device *td)
{
	uint32_t expected = __atomic_load_n(&td->snap_status, __ATOMIC_ACQUIRE);
	uint64_t one = 1;

	if (expected == KVRUN_SNAPSHOT_PENDING)
		return;
	if (!td->snapshot_cb) {
		test_device_set_snapshot_status(td, KVRUN_SNAPSHOT_FAILED);
		return;
	}
	test_device_set_snapshot_status(td, KVRUN_SNAPSHOT_PENDING);
	if (write(td->snap_fd, &one, sizeof(one)) < 0) {
		log_debug("test device: snapshot request: %s", strerror(errno));
		test_device_set_snapshot_status(td, KVRUN_SNAPSHOT_FAILED);
	}
}

void test_device_set_snapshot_status(struct test_device *td, uint32_t status)
{
	__atomic_store_n(&td->snap_status, status, __ATOMIC_RELEASE);
}

void test_device_set_bench_fd(struct test_device *td, int fd)
{
	td->bench_fd = fd;
}

void test_device_on_snapshot(struct test_device *td, void (*cb)(struct test_device *, void *), void *opaque)
{
	td->snapshot_cb = cb;
	td->snapshot_opaque = opaque;
}

static void test_port_write(void *opaque, uint64_t offset, const void *data, uint32_t len)
{
	struct test_device *td = opaque;
	uint64_t port = TEST_PORT_BASE + offset;
	uint64_t one = 1;

	if (port == KVRUN_PORT_TEST_EXIT) {
		vm_stop(td->vm, VM_EXIT_GUEST, (int)(uint32_t)le_value(data, len));
	} else if (port == KVRUN_PORT_TEST_IRQ) {
		/* Raised from the event loop, as a device backend would. */
		if (write(td->kick_fd, &one, sizeof(one)) < 0)
			log_debug("test device: kick: %s", strerror(errno));
	} else if (port == KVRUN_PORT_TEST_SNAPSHOT) {
		test_snapshot_request(td);
	}
}

static const struct bus_dev_ops test_port_ops = {.read = test_port_read, .write = test_port_write};

void test_device_mmio_read(struct test_device *td, uint64_t offset, void *data, uint32_t len)
{
	uint64_t v;

	if (offset >= MMIO_ECHO_OFFSET) {
		pthread_mutex_lock(&td->lock);
		v = td->slots[(offset - MMIO_ECHO_OFFSET) / 8];
		pthread_mutex_unlock(&td->lock);
	} else {
		v = (uint32_t)offset ^ 0x5a5a5a5aU;
	}
	put_value(data, len, v);
}

void test_device_mmio_write(struct test_device *td, uint64_t offset, const void *data, uint32_t len)
{
	/* Writes anywhere in the window land in the slot of (offset mod half),
	 * read back at that offset + 0x800. */
	pthread_mutex_lock(&td->lock);
	td->slots[(offset % MMIO_ECHO_OFFSET) / 8] = le_value(data, len);
	pthread_mutex_unlock(&td->lock);
}

static void mmio_read(void *opaque, uint64_t offset, void *data, uint32_t len)
{
	test_device_mmio_read(opaque, offset, data, len);
}

static void mmio_write(void *opaque, uint64_t offset, const void *data, uint32_t len)
{
	test_device_mmio_write(opaque, offset, data, len);
}

static const struct bus_dev_ops test_mmio_ops = {.read = mmio_read, .write = mmio_write};

static void bench_read(void *opaque, uint64_t offset, void *data, uint32_t len)
{
	put_value(data, len, offset == 0 && len == 4 ? KVRUN_BENCH_MAGIC : 0);
}

static void bench_write(void *opaque, uint64_t offset, const void *data, uint32_t len)
{
	struct test_device *td = opaque;

	if (offset == 0 && len == 4)
		test_bench_mark(&td->bench, td->vm, td->bench_fd, (uint32_t)le_value(data, len));
}

static const struct bus_dev_ops test_bench_ops = {.read = bench_read, .write = bench_write};

static void kick_handler(int fd, uint32_t revents, void *opaque)
{
	struct test_device *td = opaque;
	uint64_t n;

	if (read(fd, &n, sizeof(n)) == sizeof(n))
		irq_line_raise(&td->irq);
}

static void snapshot_handler(int fd, uint32_t revents, void *opaque)
{
	struct test_device *td = opaque;
	uint64_t n;

	if (read(fd, &n, sizeof(n)) == sizeof(n) && td->snapshot_cb)
		td->snapshot_cb(td, td->snapshot_opaque);
}

int test_device_create(struct vm *vm, struct test_device **ret)
{
	struct test_device *td;
	int r;

	td = calloc(1, sizeof(*td));
	if (!td)
		return -ENOMEM;
	td->vm = vm;
	td->irq.fd = -1;
	td->kick_fd = td->snap_fd = td->bench_fd = -1;
	pthread_mutex_init(&td->lock, NULL);
	td->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	td->snap_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (td->kick_fd < 0 || td->snap_fd < 0) {
		r = err_setsys(-errno, "eventfd");
		goto fail;
	}
	r = vm_irq_line_new(vm, &td->irq);
	if (r < 0)
		goto fail;
	r = bus_register(&vm->pio, TEST_PORT_BASE, TEST_PORT_LEN, &test_port_ops, td);
	if (r >= 0)
		r = bus_register(&vm->mmio, KVRUN_MMIO_TEST_BASE, KVRUN_MMIO_TEST_SIZE, &test_mmio_ops, td);
	if (r >= 0)
		r = bus_register(&vm->mmio, KVRUN_MMIO_TEST_BENCH, KVRUN_MMIO_TEST_BENCH_SIZE, &test_bench_ops, td);
	if (r < 0) {
		r = err_setsys(r, "registering the test device");
		goto fail;
	}
	r = event_loop_add(vm->loop, td->kick_fd, EPOLLIN, kick_handler, td);
	if (r >= 0)
		r = event_loop_add(vm->loop, td->snap_fd, EPOLLIN, snapshot_handler, td);
	if (r < 0) {
		r = err_setsys(r, "watching the test device");
		goto fail;
	}
	*ret = td;
	return 0;
fail:
	test_device_free(td);
	return r;
}

void test_device_free(struct test_device *td)
{
	if (!td)
		return;
	bus_unregister(&td->vm->pio, TEST_PORT_BASE);
	bus_unregister(&td->vm->mmio, KVRUN_MMIO_TEST_BASE);
	bus_unregister(&td->vm->mmio, KVRUN_MMIO_TEST_BENCH);
	if (td->kick_fd >= 0) {
		event_loop_remove(td->vm->loop, td->kick_fd);
		close(td->kick_fd);
	}
	if (td->snap_fd >= 0) {
		event_loop_remove(td->vm->loop, td->snap_fd);
		close(td->snap_fd);
	}
	vm_irq_line_free(td->vm, &td->irq);
	test_bench_free(td->bench);
	pthread_mutex_destroy(&td->lock);
	free(td);
}
