/* SPDX-License-Identifier: Apache-2.0 */
#include "vmm/counters.h"

_Atomic uint64_t vmm_counters[VMM_NR_COUNTERS];

static const char *const names[VMM_NR_COUNTERS] = {
    [VMM_EXIT_IO] = "exit_io",
    [VMM_EXIT_MMIO] = "exit_mmio",
    [VMM_EXIT_HLT] = "exit_hlt",
    [VMM_EXIT_INTR] = "exit_intr",
    [VMM_EXIT_OTHER] = "exit_other",
    [VMM_DOORBELL_WAKEUPS] = "doorbell_wakeups",
    [VMM_DOORBELL_SIGNALS] = "doorbell_signals",
    [VMM_NOTIFY_EXITS] = "notify_exits",
    [VMM_IRQ_RAISED] = "irq_raised",
    [VMM_IRQ_SUPPRESSED] = "irq_suppressed",
    [VMM_QUEUE_PASSES] = "queue_passes",
    [VMM_BLK_REQUESTS] = "blk_requests",
    [VMM_BLK_MERGED] = "blk_merged",
    [VMM_BLK_SPLIT] = "blk_split",
    [VMM_NET_TX_FRAMES] = "net_tx_frames",
    [VMM_NET_RX_FRAMES] = "net_rx_frames",
    [VMM_VSOCK_TX_PACKETS] = "vsock_tx_packets",
    [VMM_VSOCK_RX_PACKETS] = "vsock_rx_packets",
};

const char *vmm_counter_name(enum vmm_counter c)
{
	return (unsigned int)c < VMM_NR_COUNTERS && names[c] ? names[c] : "unknown";
}
