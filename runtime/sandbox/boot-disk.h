/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Disks of `kvrun boot --disk PATH[,ro]`: a virtio-blk device per image at
 * KVRUN_MMIO_VIRTIO_BASE + n * KVRUN_MMIO_VIRTIO_STRIDE with its own GSI,
 * described to the boot code as struct acpi_virtio_mmio (DSDT or command
 * line, see struct boot_config).
 */
#ifndef KVRUN_RUNTIME_BOOT_DISK_H
#define KVRUN_RUNTIME_BOOT_DISK_H

#include <stdbool.h>

#include "vmm/acpi.h"
#include "vmm/irq.h"

struct vm;
struct virtio_blk;

#define BOOT_DISK_MAX 8

struct boot_disk {
	struct virtio_blk *blk;
	struct irq_line line;
	int notify_fd;
	struct acpi_virtio_mmio where;
};

/* Parse "PATH[,ro]" into *ret_path (pointing into a strdup'd copy the
 * caller frees through *ret_path) and *ret_ro. -EINVAL for an empty path or
 * an unknown option. */
int boot_disk_parse(const char *arg, char **ret_path, bool *ret_ro);

/* Create disk number n (0-based) from path and attach it to vm: virtio-blk,
 * an interrupt line, the MMIO window and a doorbell ioeventfd. Fills *d
 * (zeroed by the caller); on failure *d holds what was made, for
 * boot_disk_free(). */
int boot_disk_attach(struct vm *vm, unsigned int n, const char *path, bool read_only, struct boot_disk *d);

/* After the vCPUs and the event loop stopped (vm_wait()). */
void boot_disk_free(struct vm *vm, struct boot_disk *d);

#endif
