/* SPDX-License-Identifier: Apache-2.0 */
/* The test guest's virtio-vsock driver pieces, shared by the virtio-vsock
 * scenario (virtio-vsock.c) and fake-init (fake-init.c). */
#ifndef KVRUN_TEST_GUEST_VSOCK_H
#define KVRUN_TEST_GUEST_VSOCK_H

#include "virtio.h"

#define VS_REQUEST 1
#define VS_RESPONSE 2
#define VS_RST 3
#define VS_SHUTDOWN 4
#define VS_RW 5
#define VS_CREDIT_UPDATE 6
#define VS_CREDIT_REQUEST 7
#define VS_TYPE_STREAM 1
#define VS_HOST_CID 2
#define VS_GUEST_CID 3
#define VS_BUF_ALLOC 65536
#define VS_RX_BUFS 8
#define VS_RX_SIZE 2048
#define VS_RX_BASE 0x830000ULL
#define VS_TX_ADDR 0x840000ULL

struct vs_hdr {
	uint64_t src_cid, dst_cid;
	uint32_t src_port, dst_port, len;
	uint16_t type, op;
	uint32_t flags, buf_alloc, fwd_cnt;
} __attribute__((packed));

/* One stream as the guest sees it. */
struct vs_stream {
	uint32_t local, peer;
	uint32_t fwd_cnt; /* bytes we received */
	uint32_t tx_cnt; /* bytes we sent */
	uint32_t peer_buf_alloc, peer_fwd; /* the host's last credit */
};

/* Posts rx buffer i (of VS_RX_BUFS) to the device. */
void vs_post_rx(struct vdev *d, uint16_t i);
/* Sends one packet of op on stream s with len bytes of data. */
bool vs_send(struct vdev *d, struct vs_stream *s, uint16_t op, uint32_t flags, const void *data, uint32_t len);
/* Next packet from the device into *h and data (up to VS_RX_SIZE), within
 * ticks of the TSC; the rx buffer goes straight back to the device. */
bool vs_recv(struct vdev *d, struct vs_hdr *h, uint8_t *data, uint64_t ticks);

#endif
