/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The vsock device of `kvrun boot --vsock PATH`: virtio-vsock for guest CID
 * 3 with its unix-socket backend at PATH (docs/virtio.md), placed after the
 * disks in the virtio-mmio window.
 */
#ifndef KVRUN_RUNTIME_BOOT_VSOCK_H
#define KVRUN_RUNTIME_BOOT_VSOCK_H

#include "vmm/acpi.h"
#include "vmm/irq.h"

struct vm;
struct virtio_vsock;

#define BOOT_VSOCK_GUEST_CID 3

struct boot_vsock {
	struct virtio_vsock *vsock;
	struct irq_line line;
	int notify_fd;
	struct acpi_virtio_mmio where;
};

/* Create the device as virtio-mmio device number n (0-based) listening on
 * uds_path, and attach it to vm. Fills *v (zeroed by the caller); on
 * failure *v holds what was made, for boot_vsock_free(). */
int boot_vsock_attach(struct vm *vm, unsigned int n, const char *uds_path, struct boot_vsock *v);

/* After the vCPUs and the event loop stopped (vm_wait()); removes the
 * socket file. */
void boot_vsock_free(struct vm *vm, struct boot_vsock *v);

#endif
