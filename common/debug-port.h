/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Port I/O addresses kvrun reserves for talking to its own guests. Plain
 * constants, safe to include from freestanding guest code (tests/guest) and
 * from guest-init.
 */
#ifndef KVRUN_COMMON_DEBUG_PORT_H
#define KVRUN_COMMON_DEBUG_PORT_H

/* Boot-time marker: the guest's first action (guest-init, the test guest)
 * is a 1-byte write of any value here; the VMM records the time since its
 * own start (Firecracker's boot timer does the same over MMIO). Always on. */
#define KVRUN_PORT_BOOT_MARKER 0x06f0

/* Test device, present only with `kvrun boot --test-device`. */
/* 32-bit write: the VM ends now, the result is "guest exit" with this code. */
#define KVRUN_PORT_TEST_EXIT 0x06f4
/* 32-bit read: the GSI (IOAPIC pin) of the test interrupt line.
 * 32-bit write of any value: the VMM raises that line through its irqfd
 * from the event-loop thread (not from the vCPU thread that exited). */
#define KVRUN_PORT_TEST_IRQ 0x06f8
/* 32-bit read: number of vCPUs the VMM created. */
#define KVRUN_PORT_TEST_NCPUS 0x06fc
/* 32-bit write of any value: ask for a snapshot of the VM now (`kvrun boot
 * --snapshot-on-port FILE`); it is taken from the event loop with every
 * vCPU paused. 32-bit read: the state of the last request, below. A guest
 * spins reading it while PENDING; DONE means it runs on in the VM that was
 * saved, RESTORED that it runs in a VM restored from the file. */
#define KVRUN_PORT_TEST_SNAPSHOT 0x0700
#define KVRUN_SNAPSHOT_NONE 0
#define KVRUN_SNAPSHOT_PENDING 1
#define KVRUN_SNAPSHOT_DONE 2
#define KVRUN_SNAPSHOT_RESTORED 3
#define KVRUN_SNAPSHOT_FAILED 4

/* MMIO window of the test device (4 KiB): reads return the offset's low 32
 * bits XOR 0x5a5a5a5a, writes are remembered per 8-byte slot and read back
 * at offset + 0x800. Used to test MMIO exits. */
#define KVRUN_MMIO_TEST_BASE 0xd0000000ULL
#define KVRUN_MMIO_TEST_SIZE 0x1000

/* The test device's benchmark register (4 KiB window, MMIO so that code
 * at CPL3 reaches it where port I/O would need IOPL): a 32-bit write of
 * the guest-physical address of a benchmark mark (common/test-bench.h),
 * which the VMM reads at once; a 32-bit read returns KVRUN_BENCH_MAGIC. */
#define KVRUN_MMIO_TEST_BENCH 0xcffff000ULL
#define KVRUN_MMIO_TEST_BENCH_SIZE 0x1000

/* virtio-mmio devices live from here up, 4 KiB apart. */
#define KVRUN_MMIO_VIRTIO_BASE 0xd0001000ULL
#define KVRUN_MMIO_VIRTIO_STRIDE 0x1000

#endif
