/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TAP devices for virtio-net: opening one (with the virtio-net header and,
 * for several queue pairs, one fd per pair), and the backend that hands the
 * device those fds and applies the offloads the guest negotiated.
 */
#ifndef KVRUN_VIRTIO_NET_TAP_H
#define KVRUN_VIRTIO_NET_TAP_H

#include <stdint.h>

#include "virtio/net/backend.h"

/* Create (or attach to) TAP name in the calling thread's network namespace
 * and open nr_queues fds on it (IFF_TAP | IFF_NO_PI | IFF_VNET_HDR, plus
 * IFF_MULTI_QUEUE when nr_queues > 1), each non-blocking, close-on-exec,
 * with a 12-byte vnet header (virtio_net_hdr_v1). The device disappears
 * when the last fd is closed. Returns 0 and the fds in fds[0..nr_queues)
 * (owned by the caller), or -errno with err_set() context. */
int net_tap_open(const char *name, unsigned int nr_queues, int *fds);

/* The TUN_F_* offload flags that match negotiated virtio-net features:
 * what the guest accepts from us (GUEST_CSUM, GUEST_TSO4/6, GUEST_UFO,
 * GUEST_ECN). */
unsigned int net_tap_offload_flags(uint64_t features);

/* Apply net_tap_offload_flags(features) to a TAP fd (TUNSETOFFLOAD). When
 * the kernel refuses UFO (removed in some kernels) it is retried without. */
int net_tap_set_offload(int fd, uint64_t features);

/* A backend over TAP fds; on success it owns them (closed by its free). */
int net_tap_backend_new(const int *fds, unsigned int nr_queues, struct net_backend **ret);

#endif
