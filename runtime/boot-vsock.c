/* SPDX-License-Identifier: Apache-2.0 */
/* The virtio-vsock device for `kvrun boot` (the attach sequence of
 * docs/virtio.md). */
#include <unistd.h>

#include "common/error.h"
#include "runtime/boot-vsock.h"
#include "virtio/mmio.h"
#include "virtio/vsock/vsock.h"
#include "common/debug-port.h"
#include "vmm/vm.h"

int boot_vsock_attach(struct vm *vm, unsigned int n, const char *uds_path, struct boot_vsock *v)
{
	uint64_t addr = KVRUN_MMIO_VIRTIO_BASE + (uint64_t)n * KVRUN_MMIO_VIRTIO_STRIDE;
	struct virtio_mmio *m;
	int r;

	v->line.fd = -1;
	v->notify_fd = -1;
	r = virtio_vsock_new(&vm->mem, vm->loop, BOOT_VSOCK_GUEST_CID, uds_path, &v->vsock);
	if (r < 0)
		return err_prefix(r, "--vsock %s", uds_path);
	m = virtio_vsock_mmio(v->vsock);
	r = vm_irq_line_new(vm, &v->line);
	if (r < 0)
		return err_setsys(r, "no interrupt line for vsock");
	virtio_mmio_set_irq(m, &v->line);
	r = bus_register(&vm->mmio, addr, VIRTIO_MMIO_SIZE, &virtio_mmio_bus_ops, m);
	if (r < 0)
		return err_setsys(r, "registering vsock at 0x%llx", (unsigned long long)addr);
	v->notify_fd = vm_ioeventfd_add(vm, addr + VIRTIO_MMIO_QUEUE_NOTIFY, 4, false, false, 0);
	if (v->notify_fd < 0)
		return err_setsys(v->notify_fd, "ioeventfd for vsock");
	r = virtio_mmio_add_notify_fd(m, vm->loop, v->notify_fd, VIRTIO_MMIO_ALL_QUEUES);
	if (r < 0)
		return err_setsys(r, "watching the vsock doorbell");
	v->where = (struct acpi_virtio_mmio){.base = addr, .size = VIRTIO_MMIO_SIZE, .gsi = v->line.gsi};
	return 0;
}

void boot_vsock_free(struct vm *vm, struct boot_vsock *v)
{
	virtio_vsock_free(v->vsock);
	v->vsock = NULL;
	if (v->notify_fd >= 0)
		close(v->notify_fd);
	v->notify_fd = -1;
	if (v->line.fd >= 0)
		vm_irq_line_free(vm, &v->line);
	v->line.fd = -1;
}
