/* SPDX-License-Identifier: Apache-2.0 */
/* Between the files of the snapshot code (snapshot.c, snapshot-mem.c,
 * vcpu-state.c, vm-state.c); not for device or runtime code. */
#ifndef KVRUN_VMM_SNAPSHOT_INT_H
#define KVRUN_VMM_SNAPSHOT_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm/snapshot.h"

struct vm;
struct vcpu;

#define SNAP_MAGIC "KVRUNSNP"
#define SNAP_HEADER_AREA 4096ULL
#define SNAP_MAX_SECTIONS 64

#define SNAP_SEC_DEVICE 0x1 /* a device's state (name is the device's) */
#define SNAP_SEC_MEMORY 0x2 /* guest RAM: crc covers the pages in memmap */

struct snap_section {
	char name[SNAPSHOT_NAME_MAX];
	uint64_t offset, length;
	uint32_t crc, flags;
};

struct snap_header {
	char magic[8];
	uint32_t version;
	uint32_t header_size;
	char build[64];
	char cpu_vendor[16];
	uint32_t cpuid_nent, cpuid_crc; /* KVM_GET_SUPPORTED_CPUID */
	uint32_t xsave_size, ncpus;
	uint64_t mem_size;
	uint64_t file_size;
	uint32_t nr_sections, reserved;
	struct snap_section sections[SNAP_MAX_SECTIONS];
	uint32_t header_crc; /* crc32 of everything above */
	uint32_t pad;
};

_Static_assert(sizeof(struct snap_header) <= SNAP_HEADER_AREA, "header fits its page");

struct vm_snapshot {
	int fd;
	struct snap_header h;
	uint8_t *data[SNAP_MAX_SECTIONS]; /* contents of every section but memory */
	char path[256];
};

/* "kvrun VERSION COMMIT" of this binary. */
const char *snap_build(void);
/* crc32 (zlib) of a buffer. */
uint32_t crc_of(const void *p, size_t n);
/* Fill the host fields of h (CPU vendor, KVM CPUID table, XSAVE size). */
void snap_host_fill(const struct vm *vm, struct snap_header *h);

/* What the host's KVM offers for vCPU state, found once per VM. */
struct vcpu_state_caps {
	uint32_t xsave_size; /* bytes for KVM_GET/SET_XSAVE(2); 0: KVM_GET/SET_FPU */
	bool xcrs, debugregs;
	uint32_t nmsrs;
	uint32_t *msrs; /* indices KVM_GET_MSRS reads on this host (malloc'd) */
};

/* Probe the caps; the MSR list is KVM_GET_MSR_INDEX_LIST filtered to what
 * KVM_GET_MSRS returns on vCPU 0. */
int vcpu_state_caps_probe(struct vm *vm, struct vcpu_state_caps *ret);
/* Only the XSAVE size (for the header check, no vCPU needed). */
uint32_t vcpu_state_xsave_size(int kvm_fd);
void vcpu_state_caps_free(struct vcpu_state_caps *c);

int vcpu_state_save(struct vcpu *v, const struct vcpu_state_caps *caps, struct snap_buf *out);
int vcpu_state_load(struct vcpu *v, uint32_t xsave_size, const void *data, size_t len);

/* In-kernel irqchip (PIC master, PIC slave, IOAPIC), PIT, KVM clock. */
int vm_state_save_irqchip(struct vm *vm, struct snap_buf *out);
int vm_state_load_irqchip(struct vm *vm, const void *data, size_t len);
int vm_state_save_pit(struct vm *vm, struct snap_buf *out);
int vm_state_load_pit(struct vm *vm, const void *data, size_t len);
int vm_state_save_clock(struct vm *vm, struct snap_buf *out);
int vm_state_load_clock(struct vm *vm, const void *data, size_t len);

/* Guest RAM: scan for non-zero pages and write them at their offset from
 * mem_off (page aligned) in fd; the map of stored pages (extents of
 * struct snap_extent) goes to map, their crc32 to *ret_crc. */
struct snap_extent {
	uint64_t first_page, npages; /* pages from the start of guest RAM */
};
int snap_mem_write(struct vm *vm, int fd, uint64_t mem_off, struct snap_buf *map, uint32_t *ret_crc,
                   uint64_t *ret_bytes, uint64_t *ret_pages);
/* crc32 of the stored pages listed in map (read with pread from fd). */
int snap_mem_crc(int fd, uint64_t mem_off, uint64_t mem_size, const void *map, size_t map_len, uint32_t *ret_crc);
/* Map guest RAM from fd at mem_off, MAP_PRIVATE over vm's RAM mapping. */
int snap_mem_map(struct vm *vm, int fd, uint64_t mem_off);

#endif
