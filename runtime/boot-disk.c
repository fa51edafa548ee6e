/* SPDX-License-Identifier: Apache-2.0 */
/* virtio-blk disks for `kvrun boot` (the attach sequence of docs/virtio.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "runtime/boot-disk.h"
#include "virtio/blk/blk.h"
#include "virtio/mmio.h"
#include "common/debug-port.h"
#include "vmm/vm.h"

int boot_disk_parse(const char *arg, char **ret_path, bool *ret_ro)
{
	_cleanup_free_ char *path = strdup(arg);
	char *comma;
	bool ro = false;

	if (!path)
		return -ENOMEM;
	comma = strrchr(path, ',');
	if (comma) {
		if (strcmp(comma + 1, "ro") != 0)
			return err_set(-EINVAL, "--disk %s: unknown option '%s' (only ro)", arg, comma + 1);
		*comma = '\0';
		ro = true;
	}
	if (!*path)
		return err_set(-EINVAL, "--disk: empty path");
	*ret_path = TAKE_PTR(path);
	*ret_ro = ro;
	return 0;
}

int boot_disk_attach(struct vm *vm, unsigned int n, const char *path, bool read_only, struct boot_disk *d)
{
	uint64_t addr = KVRUN_MMIO_VIRTIO_BASE + (uint64_t)n * KVRUN_MMIO_VIRTIO_STRIDE;
	char id[VIRTIO_BLK_ID_BYTES + 1];
	struct virtio_mmio *m;
	int r;

	d->line.fd = -1;
	d->notify_fd = -1;
	snprintf(id, sizeof(id), "kvrun-disk%u", n);
	r = virtio_blk_new(&vm->mem, &(struct virtio_blk_opts){.path = path, .read_only = read_only, .id = id},
	                   &d->blk);
	if (r < 0)
		return err_prefix(r, "--disk %s", path);
	m = virtio_blk_mmio(d->blk);
	r = vm_irq_line_new(vm, &d->line);
	if (r < 0)
		return err_setsys(r, "no interrupt line for disk %s", path);
	virtio_mmio_set_irq(m, &d->line);
	r = bus_register(&vm->mmio, addr, VIRTIO_MMIO_SIZE, &virtio_mmio_bus_ops, m);
	if (r < 0)
		return err_setsys(r, "registering disk %s at 0x%llx", path, (unsigned long long)addr);
	/* Kicks through the event loop instead of a vCPU exit each. */
	d->notify_fd = vm_ioeventfd_add(vm, addr + VIRTIO_MMIO_QUEUE_NOTIFY, 4, false, false, 0);
	if (d->notify_fd < 0)
		return err_setsys(d->notify_fd, "ioeventfd for disk %s", path);
	r = virtio_mmio_add_notify_fd(m, vm->loop, d->notify_fd, VIRTIO_MMIO_ALL_QUEUES);
	if (r < 0)
		return err_setsys(r, "watching the doorbell of disk %s", path);
	d->where = (struct acpi_virtio_mmio){.base = addr, .size = VIRTIO_MMIO_SIZE, .gsi = d->line.gsi};
	return 0;
}

void boot_disk_free(struct vm *vm, struct boot_disk *d)
{
	virtio_blk_free(d->blk);
	d->blk = NULL;
	if (d->notify_fd >= 0)
		close(d->notify_fd);
	d->notify_fd = -1;
	if (d->line.fd >= 0)
		vm_irq_line_free(vm, &d->line);
	d->line.fd = -1;
}
