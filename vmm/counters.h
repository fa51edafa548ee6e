/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kvrun's own counters of the work a VM's data path costs: userspace
 * exits by reason, doorbells (ioeventfd signals), interrupts raised
 * (irqfd) and suppressed, requests and frames. One set per process (a
 * monitor owns one VM), bumped with relaxed atomics from any thread;
 * readers take differences (vm-stats.h). Alongside KVM's own statistics
 * they give the cost per operation.
 */
#ifndef KVRUN_VMM_COUNTERS_H
#define KVRUN_VMM_COUNTERS_H

#include <stdatomic.h>
#include <stdint.h>

enum vmm_counter {
	/* KVM_RUN returns to userspace, by exit reason (vcpu.c). */
	VMM_EXIT_IO,
	VMM_EXIT_MMIO,
	VMM_EXIT_HLT,
	VMM_EXIT_INTR, /* a kick (signal) */
	VMM_EXIT_OTHER,
	/* Doorbells: ioeventfd reads that found the counter set, and the
	 * guest writes they stood for (the counter's value). */
	VMM_DOORBELL_WAKEUPS,
	VMM_DOORBELL_SIGNALS,
	/* Queue notifications taken on a vCPU thread (no ioeventfd). */
	VMM_NOTIFY_EXITS,
	/* Interrupt lines raised (an irqfd write each), and used-buffer
	 * interrupts the driver's suppression (EVENT_IDX, NO_INTERRUPT)
	 * spared. */
	VMM_IRQ_RAISED,
	VMM_IRQ_SUPPRESSED,
	/* Device work: passes over a queue, requests, block requests merged
	 * into a neighbour's I/O, block transfers cut in two halves moved at
	 * once (the second on the disk's helper thread), network frames,
	 * vsock packets. */
	VMM_QUEUE_PASSES,
	VMM_BLK_REQUESTS,
	VMM_BLK_MERGED,
	VMM_BLK_SPLIT,
	VMM_NET_TX_FRAMES,
	VMM_NET_RX_FRAMES,
	VMM_VSOCK_TX_PACKETS,
	VMM_VSOCK_RX_PACKETS,
	VMM_NR_COUNTERS
};

extern _Atomic uint64_t vmm_counters[VMM_NR_COUNTERS];

static inline void vmm_count(enum vmm_counter c, uint64_t n)
{
	atomic_fetch_add_explicit(&vmm_counters[c], n, memory_order_relaxed);
}

static inline uint64_t vmm_counter_get(enum vmm_counter c)
{
	return atomic_load_explicit(&vmm_counters[c], memory_order_relaxed);
}

/* "exit_io", "doorbell_signals", ...: the name in reports. */
const char *vmm_counter_name(enum vmm_counter c);

#endif
