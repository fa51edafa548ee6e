/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One vsock stream between a guest port and a host unix socket: its state
 * machine and credit-based flow control (virtio 1.2, 5.10.6.3). Internal to
 * the unix-socket backend.
 */
#ifndef KVRUN_VIRTIO_VSOCK_CONN_H
#define KVRUN_VIRTIO_VSOCK_CONN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/uio.h>

#include "virtio/vsock/packet.h"

struct vsock_uds;
struct vsock_conn;

enum conn_state {
	CONN_HANDSHAKE, /* host socket accepted, reading "CONNECT <port>\n" */
	CONN_CONNECTING, /* REQUEST sent to the guest, waiting for RESPONSE */
	CONN_ESTABLISHED,
	CONN_CLOSED, /* socket gone; an RST for the guest may be pending */
};

/* Control packets waiting for an rx buffer. */
#define CONN_P_REQUEST 0x01u
#define CONN_P_RESPONSE 0x02u
#define CONN_P_RST 0x04u
#define CONN_P_SHUTDOWN 0x08u
#define CONN_P_CREDIT_UPDATE 0x10u
#define CONN_P_CREDIT_REQUEST 0x20u

/* What a connection asks of the backend that owns it (uds.c), so that
 * connections never call into the backend's file. */
struct vsock_conn_ops {
	uint64_t (*guest_cid)(const struct vsock_uds *u);
	/* A host port no other connection uses, for a host-initiated stream. */
	uint32_t (*alloc_port)(struct vsock_uds *u);
	/* Change the epoll interest of c->fd (adding it to the loop if needed). */
	int (*watch)(struct vsock_uds *u, struct vsock_conn *c, uint32_t events);
	void (*unwatch)(struct vsock_uds *u, struct vsock_conn *c);
	/* c may have packets for the guest: queue it for the rx queue. */
	void (*rx_queue)(struct vsock_uds *u, struct vsock_conn *c);
};

struct vsock_conn {
	struct vsock_uds *u;
	const struct vsock_conn_ops *ops; /* of u */
	TAILQ_ENTRY(vsock_conn) link; /* all connections */
	TAILQ_ENTRY(vsock_conn) rx_link; /* connections with rx work */
	bool rx_queued;
	enum conn_state state;
	int fd;
	bool watched; /* fd is on the event loop */
	uint32_t events; /* current epoll interest */
	uint32_t local_port; /* host side */
	uint32_t peer_port; /* guest side */
	uint32_t pending; /* CONN_P_* */
	uint32_t shutdown_flags;
	/* Host socket. */
	bool sock_readable; /* data or EOF to read */
	bool sock_eof; /* EOF read and reported */
	bool sock_hup; /* the host end is fully closed */
	bool sock_shut_wr; /* shutdown(SHUT_WR) done after guest SEND shutdown */
	uint32_t peer_shutdown;
	/* Host to guest credit: what the guest told us. */
	uint32_t peer_buf_alloc, peer_fwd_cnt, tx_cnt;
	/* Guest to host: bytes received, bytes written to the socket, and
	 * the fwd_cnt the guest last saw. */
	uint32_t rx_cnt, fwd_cnt, fwd_cnt_sent;
	/* Guest bytes the socket did not take yet (ring, VSOCK_BUF_ALLOC). */
	uint8_t *buf;
	uint32_t buf_head, buf_len;
	/* CONNECT line. */
	char line[32];
	unsigned int line_len;
};

/* Close the socket, cancel everything and queue an RST for the guest. */
void conn_reset(struct vsock_conn *c);

/* A packet from the guest for this connection. */
void conn_recv_pkt(struct vsock_conn *c, const struct vsock_hdr *h, const struct iovec *iov, unsigned int n);
/* Socket events from the event loop. */
void conn_sock_event(struct vsock_conn *c, uint32_t revents);
/* Fill the next packet for the guest; false when the connection has none. */
bool conn_produce(struct vsock_conn *c, struct vsock_hdr *h, const struct iovec *iov, unsigned int n);
/* Whether conn_produce() may have something (control packet or data the
 * guest has credit for). */
bool conn_has_rx(const struct vsock_conn *c);
/* Re-evaluate epoll interest and rx queueing after a state change. */
void conn_update(struct vsock_conn *c);

#endif
