/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vhost-net: the kernel serves a virtio-net device's rx/tx queues straight
 * from a TAP. One /dev/vhost-net fd per queue pair. Internal to virtio/net.
 * Not exercised on hosts without /dev/vhost-net (see docs/networking.md).
 */
#ifndef KVRUN_VIRTIO_NET_VHOST_H
#define KVRUN_VIRTIO_NET_VHOST_H

#include <stdint.h>

#include "virtio/virtqueue.h"
#include "vmm/mem.h"

struct net_vhost;

/* Open /dev/vhost-net once per pair and VHOST_SET_OWNER. -ENOENT (no
 * message) when the device node does not exist. */
int net_vhost_open(unsigned int pairs, struct net_vhost **ret);

/* The virtio features vhost can serve (VHOST_GET_FEATURES). */
uint64_t net_vhost_features(const struct net_vhost *v);

/* Program pair p: memory table, features, rings of rx (vqs[0]) and tx
 * (vqs[1]), kick and call eventfds of each, and the TAP as backend. */
int net_vhost_start_pair(struct net_vhost *v, unsigned int p, const struct guest_mem *mem, uint64_t features,
                         struct virtq *vqs, const int kick[2], const int call[2], int tap_fd);

/* Detach the TAP of every pair (the rings are no longer touched). */
void net_vhost_stop(struct net_vhost *v);

void net_vhost_free(struct net_vhost *v);

#endif
