/* SPDX-License-Identifier: Apache-2.0 */
/*
 * VM snapshots: the whole state of a paused VM (vCPUs, in-kernel irqchip,
 * PIT and clock, the VMM's devices, guest RAM) in one file, and a restore
 * that maps guest RAM from that file copy-on-write, so pages are read only
 * when the guest touches them. docs/snapshot.md describes the format.
 *
 * Taking a snapshot (any thread but a vCPU thread):
 *
 *   vm_pause(vm);
 *   vm_snapshot_save(vm, path, devs, ndevs, &stats);
 *   vm_resume(vm);           or vm_stop() to end the VM there
 *
 * Restoring, in a fresh process or a fresh struct vm:
 *
 *   vm_snapshot_open(path, 0, &snap);        every check happens here
 *   vm_snapshot_config(snap, &cfg);          vCPU count and RAM size
 *   vm_create(&cfg, &vm);
 *   (create the same devices, in the same order, as the snapshotted VM)
 *   vm_snapshot_restore(snap, vm, devs, ndevs);
 *   vm_snapshot_close(snap);
 *   vm_start(vm);                            the guest continues
 *
 * Devices take part through struct snapshot_dev: each saves its state into
 * its own named section and loads it back. A snapshot whose devices do not
 * match the restoring VM's (by name) is refused.
 */
#ifndef KVRUN_VMM_SNAPSHOT_H
#define KVRUN_VMM_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/snap-buf.h"

struct vm;
struct vm_config;

#define SNAPSHOT_FORMAT_VERSION 1
#define SNAPSHOT_NAME_MAX 16 /* section names, NUL included */

/* A device's part of a snapshot. name is its section name (< 16 bytes,
 * unique in a VM). save appends the state to out; load gets back exactly
 * what save wrote and returns 0 or a negative errno with err_set(). Both
 * run while the vCPUs are paused (or not yet started). */
struct snapshot_dev {
	const char *name;
	int (*save)(void *opaque, struct snap_buf *out);
	int (*load)(void *opaque, const void *data, size_t len);
	void *opaque;
};

struct snapshot_stats {
	uint64_t save_us; /* inside vm_snapshot_save() */
	uint64_t file_bytes; /* bytes written to the file (holes excluded) */
	uint64_t mem_pages; /* non-zero guest pages stored */
};

/* Write the state of vm (paused with vm_pause(), or not started) and of
 * devs to path. The file appears complete or not at all: it is written
 * under a temporary name in the same directory and renamed at the end.
 * Guest RAM is scanned for non-zero pages, which alone are written, at their
 * offset in a sparse RAM image (zero pages stay holes). ret_stats may be
 * NULL. */
int vm_snapshot_save(struct vm *vm, const char *path, const struct snapshot_dev *devs, unsigned int ndevs,
                     struct snapshot_stats *ret_stats);

/* The same into fd, a regular file open for writing (emptied first; the
 * caller keeps it, and names, syncs and closes it): for a process that may
 * not create files. On failure fd holds no usable snapshot. */
int vm_snapshot_save_fd(struct vm *vm, int fd, const struct snapshot_dev *devs, unsigned int ndevs,
                        struct snapshot_stats *ret_stats);

/* Skip the checksum of guest RAM in vm_snapshot_open() (it reads every
 * stored page once): for snapshot files the caller wrote itself and trusts,
 * such as templates. Everything else is still checked. */
#define SNAPSHOT_OPEN_TRUST_MEMORY 0x1

struct vm_snapshot;

/* Open and check a snapshot: magic, format version, the kvrun build that
 * wrote it, the host CPU (vendor, KVM's CPUID table, XSAVE size), the file
 * size, and every section's crc32. Any mismatch is -EINVAL (or -EIO,
 * -ENOENT...) with a message naming the problem. *ret is owned by the
 * caller (vm_snapshot_close). */
int vm_snapshot_open(const char *path, unsigned int flags, struct vm_snapshot **ret);
void vm_snapshot_close(struct vm_snapshot *s);

/* The VM shape the snapshot needs (ncpus, mem_size) for vm_create(). */
void vm_snapshot_config(const struct vm_snapshot *s, struct vm_config *ret);

/* Whether the snapshot holds a section for device name. */
bool vm_snapshot_has_device(const struct vm_snapshot *s, const char *name);

/* The saved bytes of device name (checked against their crc32 by
 * vm_snapshot_open()), for a runtime that must make the device as it was
 * before loading it: *ret points into s (valid until vm_snapshot_close).
 * Returns 0, or -ENOENT when there is no such device section. */
int vm_snapshot_device_data(const struct vm_snapshot *s, const char *name, const void **ret, size_t *ret_len);

/* Load s into vm, which vm_create() made with vm_snapshot_config() and
 * which is not started: guest RAM is mapped from the file (MAP_PRIVATE),
 * then the irqchip, PIT, each vCPU, devs and the KVM clock are loaded. The
 * VM then runs from where it was saved after vm_start(). On failure vm is
 * unusable (vm_free it). s may be closed afterwards. */
int vm_snapshot_restore(struct vm_snapshot *s, struct vm *vm, const struct snapshot_dev *devs, unsigned int ndevs);

#endif
