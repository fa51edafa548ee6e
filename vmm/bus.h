/* SPDX-License-Identifier: Apache-2.0 */
/*
 * MMIO and port-I/O buses. Devices register an address range with callbacks;
 * overlapping ranges are refused. A guest access to an unclaimed address is
 * logged at debug level, reads return all ones, and the VMM carries on.
 * Callbacks run on the vCPU thread that exited; a device that shares state
 * with other threads does its own locking.
 */
#ifndef KVRUN_VMM_BUS_H
#define KVRUN_VMM_BUS_H

#include <pthread.h>
#include <stdint.h>

struct bus_dev_ops {
	/* offset is relative to the registered base; len is 1, 2, 4 or 8. */
	void (*read)(void *opaque, uint64_t offset, void *data, uint32_t len);
	void (*write)(void *opaque, uint64_t offset, const void *data, uint32_t len);
};

struct bus_range {
	uint64_t base;
	uint64_t len;
	const struct bus_dev_ops *ops;
	void *opaque;
};

struct bus {
	struct bus_range *ranges; /* sorted by base */
	unsigned int nr, cap;
	pthread_rwlock_t lock;
	const char *name; /* "mmio" or "pio", for messages */
};

int bus_init(struct bus *b, const char *name);
void bus_destroy(struct bus *b);

/* -EEXIST when [base, base + len) overlaps a registered range; -EINVAL for
 * len == 0 or a wrapping range. */
int bus_register(struct bus *b, uint64_t base, uint64_t len, const struct bus_dev_ops *ops, void *opaque);
int bus_unregister(struct bus *b, uint64_t base);

/* Dispatch one access. Returns 0 when a device handled it, -ENOENT when no
 * range claims addr (reads then fill data with 0xff). */
int bus_read(struct bus *b, uint64_t addr, void *data, uint32_t len);
int bus_write(struct bus *b, uint64_t addr, const void *data, uint32_t len);

#endif
