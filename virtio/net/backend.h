/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What virtio-net needs from the host side of a link: one file descriptor
 * per queue pair that carries whole frames, each prefixed with a 12-byte
 * struct virtio_net_hdr_v1 (readv() returns one frame, writev() sends one),
 * and a way to tell it which offloads the guest accepts. A TAP opened with
 * IFF_VNET_HDR is exactly this; tests use datagram socketpairs.
 */
#ifndef KVRUN_VIRTIO_NET_BACKEND_H
#define KVRUN_VIRTIO_NET_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#define NET_MAX_QUEUE_PAIRS 4

struct net_backend;

struct net_backend_ops {
	/* The guest negotiated features (VIRTIO_NET_F_* bits): the backend
	 * may hand it frames with those offloads. */
	int (*set_offload)(struct net_backend *b, uint64_t features);
	/* Only queues [0, nr) carry frames (the guest's active pairs); may be
	 * NULL. */
	int (*set_active)(struct net_backend *b, unsigned int nr);
	/* Close the fds and free b. */
	void (*free)(struct net_backend *b);
};

struct net_backend {
	const struct net_backend_ops *ops;
	unsigned int nr_queues; /* queue pairs, <= NET_MAX_QUEUE_PAIRS */
	int fds[NET_MAX_QUEUE_PAIRS]; /* non-blocking */
	bool is_tap; /* vhost-net can serve it */
	bool ufo; /* takes UDP fragmentation offload both ways */
};

#endif
