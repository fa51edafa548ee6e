/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host side of virtio-vsock: guest streams spliced to unix sockets, in
 * Firecracker's scheme.
 *   - A guest connect to host port P is connected to the unix socket
 *     "<uds_path>_P" (a host process listens there).
 *   - A host process connects to "<uds_path>" (this backend listens there),
 *     writes "CONNECT <P>\n" and, once the guest accepted on port P, reads
 *     "OK <host_port>\n"; the stream is then spliced to the guest.
 *
 * Everything runs on the event loop thread, under the device lock given at
 * creation. Sockets are non-blocking; data from the guest is buffered only
 * up to the credit advertised to it, data to the guest is read from a
 * socket only when the guest has credit and rx buffers.
 */
#ifndef KVRUN_VIRTIO_VSOCK_UDS_H
#define KVRUN_VIRTIO_VSOCK_UDS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "virtio/vsock/packet.h"
#include "vmm/event-loop.h"

/* Most connections (including ones waiting to deliver an RST). */
#define VSOCK_MAX_CONNS 1024

struct vsock_uds;

/* Guest connects to port P reach "<uds_path>_P"; with listen, host
 * streams come through a listener on uds_path (a stale socket file there
 * is replaced). lock is the device lock, taken around every event-loop
 * handler; rx_ready(opaque) is called with it held whenever packets for
 * the guest became pending. */
int vsock_uds_new(struct event_loop *loop, const char *uds_path, uint64_t guest_cid, bool listen, pthread_mutex_t *lock,
                  void (*rx_ready)(void *opaque), void *opaque, struct vsock_uds **ret);
/* Close every connection and the listener, unlink it, free. Accepts NULL. */
void vsock_uds_free(struct vsock_uds *u);

/* A packet from the guest (tx queue); payload is hdr->len bytes of guest
 * memory in iov[0..n). Never fails: bad packets are answered with RST or
 * dropped. Caller holds the lock. */
void vsock_uds_send(struct vsock_uds *u, const struct vsock_hdr *hdr, const struct iovec *iov, unsigned int n);

/* Whether a packet for the guest may be pending. */
bool vsock_uds_has_rx(struct vsock_uds *u);

/* Produce the next packet for the guest: header into *hdr, payload (hdr->len
 * bytes) written into iov[0..n). Returns false when nothing is pending.
 * Caller holds the lock. */
bool vsock_uds_recv(struct vsock_uds *u, struct vsock_hdr *hdr, const struct iovec *iov, unsigned int n);

/* Device reset: drop every connection (the host ends see EOF). The
 * listener stays. Caller holds the lock. */
void vsock_uds_reset(struct vsock_uds *u);

/* A stream as both ends name it: the host's port and the guest's. */
struct vsock_port_pair {
	uint32_t host_port, guest_port;
};

/* The streams the guest knows of (every connection past its handshake),
 * up to max of them into pairs: for a snapshot. Returns how many there
 * are. Caller holds the lock. */
unsigned int vsock_uds_streams(const struct vsock_uds *u, struct vsock_port_pair *pairs, unsigned int max);

/* The streams of a saved VM (vsock_uds_streams() of the device that saved
 * it), which this backend never had: a packet of one from the restored
 * guest is dropped, not answered with RST, as the transport reset event
 * ends them in the guest. An RST that the guest takes before that event
 * would end a stream it had just opened again (Linux handles the event
 * and rx packets in separate work items). A new REQUEST on a pair
 * forgets it. Caller holds the lock. 0 or -ENOMEM. */
int vsock_uds_forget_streams(struct vsock_uds *u, const struct vsock_port_pair *pairs, unsigned int n);

/* Number of live connections (for tests and stats). */
unsigned int vsock_uds_nr_conns(const struct vsock_uds *u);

#endif
