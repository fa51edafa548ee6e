/* SPDX-License-Identifier: Apache-2.0 */
/* virtio-vsock packet header and constants (virtio 1.2, 5.10.6). */
#ifndef KVRUN_VIRTIO_VSOCK_PACKET_H
#define KVRUN_VIRTIO_VSOCK_PACKET_H

#include <stdint.h>

#define VSOCK_HOST_CID 2

/* Per-connection receive buffer advertised to the guest (buf_alloc). */
#define VSOCK_BUF_ALLOC (256u * 1024)

#define VSOCK_TYPE_STREAM 1

enum vsock_op {
	VSOCK_OP_INVALID = 0,
	VSOCK_OP_REQUEST = 1,
	VSOCK_OP_RESPONSE = 2,
	VSOCK_OP_RST = 3,
	VSOCK_OP_SHUTDOWN = 4,
	VSOCK_OP_RW = 5,
	VSOCK_OP_CREDIT_UPDATE = 6,
	VSOCK_OP_CREDIT_REQUEST = 7,
};

/* SHUTDOWN flags: the sender will receive / send no more. */
#define VSOCK_SHUTDOWN_RCV 1u
#define VSOCK_SHUTDOWN_SEND 2u

struct vsock_hdr {
	uint64_t src_cid;
	uint64_t dst_cid;
	uint32_t src_port;
	uint32_t dst_port;
	uint32_t len;
	uint16_t type;
	uint16_t op;
	uint32_t flags;
	uint32_t buf_alloc;
	uint32_t fwd_cnt;
} __attribute__((packed));

_Static_assert(sizeof(struct vsock_hdr) == 44, "vsock header is 44 bytes");

/* Largest payload one packet may carry (Linux uses 64 KiB). */
#define VSOCK_MAX_PKT_LEN (64u * 1024)

#endif
