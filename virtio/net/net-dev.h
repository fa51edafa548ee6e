/* SPDX-License-Identifier: Apache-2.0 */
/* The virtio-net device's state, shared by net.c (device, transport,
 * vhost) and datapath.c (userspace queues). Internal to virtio/net. */
#ifndef KVRUN_VIRTIO_NET_NET_DEV_H
#define KVRUN_VIRTIO_NET_NET_DEV_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "virtio/mmio.h"
#include "virtio/net/backend.h"
#include "virtio/net/net.h"

/* Most chains one received frame may span (MRG_RXBUF), and the most
 * buffers one readv() fills. */
#define NET_RX_MAX_CHAINS 64
#define NET_RX_MAX_IOV 1024
/* Frames handled per queue per turn, so one busy queue cannot starve the
 * others or the rest of the loop. */
#define NET_BUDGET 64
/* Sent tx chains are published to the driver this many at a time. */
#define NET_TX_FLUSH 16

struct net_config_space {
	uint8_t mac[6];
	uint16_t status;
	uint16_t max_virtqueue_pairs;
	uint16_t mtu;
} __attribute__((packed));

struct net_vhost;

struct virtio_net {
	struct virtio_mmio mmio;
	struct event_loop *loop;
	struct net_backend *be;
	struct net_config_space config;
	unsigned int pairs, active_pairs;
	size_t max_frame; /* without the vnet header, when the guest takes no GSO */
	int kick_fd; /* vCPU threads hand kicks to the loop through it */
	uint32_t pending; /* atomic: queues kicked since the loop last looked */
	/* Under lock: the loop's handlers and the transport's reset. */
	pthread_mutex_t lock;
	bool running;
	bool paused; /* virtio_net_pause(): the loop leaves the queues alone */
	bool watched[NET_MAX_QUEUE_PAIRS];
	int watch_fd[NET_MAX_QUEUE_PAIRS]; /* the backend fd watched for pair p */
	bool rx_wanted[NET_MAX_QUEUE_PAIRS]; /* rx buffers may be there: read the backend */
	bool tx_blocked[NET_MAX_QUEUE_PAIRS]; /* backend full: wait for EPOLLOUT */
	uint32_t watch_events[NET_MAX_QUEUE_PAIRS];
	struct virtio_net_stats stats;
	/* vhost-net, when used. */
	struct net_vhost *vhost;
	bool vhost_running;
	int vhost_kick[2 * NET_MAX_QUEUE_PAIRS], vhost_call[2 * NET_MAX_QUEUE_PAIRS];
	uint32_t vhost_kick_borrowed;
	/* With MRG_RXBUF a frame is read into the buffers an ordinary frame
	 * needs plus this staging area (GSO_FRAME_MAX bytes per pair), so that
	 * small frames do not take (and give back) the 17 buffers a 64 KiB
	 * one needs; what spilled over is copied into further buffers, or the
	 * whole frame waits here (rx_staged bytes) until the guest adds some. */
	uint8_t *rx_staging[NET_MAX_QUEUE_PAIRS];
	size_t rx_staged[NET_MAX_QUEUE_PAIRS];
	/* Scratch for the loop thread. */
	struct virtq_req req;
	struct iovec rx_iov[NET_RX_MAX_IOV + 1];
	uint16_t rx_heads[NET_RX_MAX_CHAINS];
	uint32_t rx_caps[NET_RX_MAX_CHAINS];
	uint16_t rx_seen_avail;
};

/* Serve the queues whose bits are set in queues (bit q: queue q). Lock
 * held, device running. */
void net_process(struct virtio_net *n, uint32_t queues);
/* Set epoll interest of pair p's backend fd from rx_wanted/tx_blocked. */
void net_update_watch(struct virtio_net *n, unsigned int p);
/* Hand kicks of queues to the loop thread. */
void net_kick(struct virtio_net *n, uint32_t queues);
/* The event-loop handler of a backend fd (opaque: the device). */
void net_backend_event(int fd, uint32_t revents, void *opaque);

#endif
