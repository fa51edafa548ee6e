/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "virtio/virtqueue.h"
#include "virtio/vsock/conn.h"

static uint32_t conn_peer_credit(const struct vsock_conn *c)
{
	uint32_t in_flight = c->tx_cnt - c->peer_fwd_cnt;

	/* A peer claiming to have forwarded more than we sent gets nothing
	 * more than its buffer either. */
	return in_flight >= c->peer_buf_alloc ? 0 : c->peer_buf_alloc - in_flight;
}

static bool conn_can_read_sock(const struct vsock_conn *c)
{
	return c->state == CONN_ESTABLISHED && c->sock_readable && !(c->peer_shutdown & VSOCK_SHUTDOWN_RCV);
}

bool conn_has_rx(const struct vsock_conn *c)
{
	return c->pending || (conn_can_read_sock(c) && conn_peer_credit(c) > 0);
}

static uint32_t conn_events(const struct vsock_conn *c)
{
	uint32_t ev = 0;

	switch (c->state) {
	case CONN_HANDSHAKE:
		return EPOLLIN;
	case CONN_ESTABLISHED:
		/* EPOLLIN is off while readable data waits for rx buffers or
		 * credit: level-triggered epoll would spin otherwise. */
		if (!c->sock_readable && !c->sock_eof && !(c->peer_shutdown & VSOCK_SHUTDOWN_RCV))
			ev |= EPOLLIN;
		if (c->buf_len)
			ev |= EPOLLOUT;
		return ev;
	default:
		return 0;
	}
}

void conn_update(struct vsock_conn *c)
{
	if (c->fd >= 0 && !c->sock_hup && (!c->watched || conn_events(c) != c->events)) {
		if (c->ops->watch(c->u, c, conn_events(c)) < 0)
			conn_reset(c);
	}
	if (conn_has_rx(c))
		c->ops->rx_queue(c->u, c);
}

void conn_reset(struct vsock_conn *c)
{
	if (c->fd >= 0) {
		c->ops->unwatch(c->u, c);
		close(c->fd);
		c->fd = -1;
	}
	/* The guest never heard of a connection still in handshake. */
	c->pending = c->state == CONN_HANDSHAKE ? 0 : CONN_P_RST;
	c->state = CONN_CLOSED;
	free(c->buf);
	c->buf = NULL;
	c->buf_len = 0;
	if (c->pending)
		c->ops->rx_queue(c->u, c);
}

/* Both directions are finished and flushed: close with an RST, which is
 * how the guest learns the stream is gone (5.10.6.4). */
static void conn_maybe_finish(struct vsock_conn *c)
{
	/* sock_eof, not sock_hup: what the host wrote before closing must
	 * still reach the guest. */
	bool guest_done = (c->peer_shutdown & VSOCK_SHUTDOWN_SEND) && c->sock_eof;
	bool both = c->peer_shutdown == (VSOCK_SHUTDOWN_RCV | VSOCK_SHUTDOWN_SEND);

	if (c->state == CONN_ESTABLISHED && c->buf_len == 0 && (guest_done || both))
		conn_reset(c);
}

/* Tell the guest about freed buffer space before it runs out of credit:
 * once half of what it may send is unacknowledged. */
static void conn_maybe_credit_update(struct vsock_conn *c)
{
	if (c->fwd_cnt != c->fwd_cnt_sent && c->rx_cnt - c->fwd_cnt_sent >= VSOCK_BUF_ALLOC / 2)
		c->pending |= CONN_P_CREDIT_UPDATE;
}

static void conn_after_flush(struct vsock_conn *c)
{
	if (c->buf_len == 0 && (c->peer_shutdown & VSOCK_SHUTDOWN_SEND) && !c->sock_shut_wr && c->fd >= 0) {
		shutdown(c->fd, SHUT_WR);
		c->sock_shut_wr = true;
	}
	conn_maybe_credit_update(c);
	conn_maybe_finish(c);
}

/* Write buffered guest data to the socket. */
static void conn_flush(struct vsock_conn *c)
{
	uint32_t first = c->buf_len < VSOCK_BUF_ALLOC - c->buf_head ? c->buf_len : VSOCK_BUF_ALLOC - c->buf_head;
	struct iovec iov[2] = {{c->buf + c->buf_head, first}, {c->buf, c->buf_len - first}};
	struct msghdr msg = {.msg_iov = iov, .msg_iovlen = iov[1].iov_len ? 2 : 1};
	ssize_t w;

	if (!c->buf_len)
		return;
	w = sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (w < 0) {
		if (errno != EAGAIN && errno != EINTR)
			conn_reset(c);
		return;
	}
	c->buf_head = (c->buf_head + (uint32_t)w) % VSOCK_BUF_ALLOC;
	c->buf_len -= (uint32_t)w;
	c->fwd_cnt += (uint32_t)w;
	conn_after_flush(c);
}

static int conn_buffer(struct vsock_conn *c, const struct iovec *iov, unsigned int n, size_t skip, size_t len)
{
	uint32_t tail, first;

	if (!c->buf) {
		c->buf = malloc(VSOCK_BUF_ALLOC);
		if (!c->buf)
			return -ENOMEM;
		c->buf_head = 0;
	}
	tail = (c->buf_head + c->buf_len) % VSOCK_BUF_ALLOC;
	first = len < VSOCK_BUF_ALLOC - tail ? (uint32_t)len : VSOCK_BUF_ALLOC - tail;
	iov_to_buf(iov, n, skip, c->buf + tail, first);
	iov_to_buf(iov, n, skip + first, c->buf, len - first);
	c->buf_len += (uint32_t)len;
	return 0;
}

/* RW payload from the guest: straight to the socket when nothing is
 * queued, the rest into the buffer the guest's credit covers. */
static void conn_guest_data(struct vsock_conn *c, const struct iovec *iov, unsigned int n, uint32_t len)
{
	struct iovec sl[VIRTQ_MAX_SEGS];
	struct msghdr msg = {.msg_iov = sl};
	ssize_t w = 0;

	if ((c->peer_shutdown & VSOCK_SHUTDOWN_SEND) || c->sock_hup || len > VSOCK_BUF_ALLOC - c->buf_len) {
		log_debug("vsock: port %u: data after shutdown or beyond credit", c->peer_port);
		conn_reset(c);
		return;
	}
	c->rx_cnt += len;
	if (c->buf_len == 0 && len) {
		msg.msg_iovlen = iov_slice(iov, n, 0, len, sl, VIRTQ_MAX_SEGS, NULL);
		w = sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && errno != EAGAIN && errno != EINTR) {
			conn_reset(c);
			return;
		}
		if (w < 0)
			w = 0;
		c->fwd_cnt += (uint32_t)w;
	}
	if ((uint32_t)w < len && conn_buffer(c, iov, n, (size_t)w, len - (size_t)w) < 0) {
		conn_reset(c);
		return;
	}
	conn_maybe_credit_update(c);
}

static void conn_got_response(struct vsock_conn *c)
{
	char ok[32];
	int l;

	if (c->state != CONN_CONNECTING) {
		conn_reset(c);
		return;
	}
	c->state = CONN_ESTABLISHED;
	l = snprintf(ok, sizeof(ok), "OK %u\n", c->local_port);
	/* A fresh socket always has room for a dozen bytes. */
	if (send(c->fd, ok, (size_t)l, MSG_NOSIGNAL | MSG_DONTWAIT) != l)
		conn_reset(c);
}

void conn_recv_pkt(struct vsock_conn *c, const struct vsock_hdr *h, const struct iovec *iov, unsigned int n)
{
	c->peer_buf_alloc = h->buf_alloc;
	c->peer_fwd_cnt = h->fwd_cnt;
	if (h->op == VSOCK_OP_RST) {
		conn_reset(c);
		c->pending = 0; /* never answer an RST */
		return;
	}
	if (c->state == CONN_CONNECTING && h->op != VSOCK_OP_RESPONSE) {
		conn_reset(c);
		return;
	}
	switch (h->op) {
	case VSOCK_OP_RESPONSE:
		conn_got_response(c);
		break;
	case VSOCK_OP_RW:
		conn_guest_data(c, iov, n, h->len);
		break;
	case VSOCK_OP_CREDIT_UPDATE:
		break; /* the credit fields were taken above */
	case VSOCK_OP_CREDIT_REQUEST:
		c->pending |= CONN_P_CREDIT_UPDATE;
		break;
	case VSOCK_OP_SHUTDOWN:
		c->peer_shutdown |= h->flags & (VSOCK_SHUTDOWN_RCV | VSOCK_SHUTDOWN_SEND);
		conn_after_flush(c);
		break;
	default: /* REQUEST on a live connection, INVALID, unknown */
		conn_reset(c);
		break;
	}
	if (c->state != CONN_CLOSED)
		conn_update(c);
}

static void conn_fill_hdr(struct vsock_conn *c, struct vsock_hdr *h, enum vsock_op op)
{
	*h = (struct vsock_hdr){
	    .src_cid = VSOCK_HOST_CID,
	    .dst_cid = c->ops->guest_cid(c->u),
	    .src_port = c->local_port,
	    .dst_port = c->peer_port,
	    .type = VSOCK_TYPE_STREAM,
	    .op = op,
	    .buf_alloc = VSOCK_BUF_ALLOC,
	    .fwd_cnt = c->fwd_cnt,
	};
	c->fwd_cnt_sent = c->fwd_cnt;
}

/* Read socket data into the guest's rx buffer, within its credit. */
static bool conn_produce_data(struct vsock_conn *c, struct vsock_hdr *h, const struct iovec *iov, unsigned int n)
{
	uint32_t credit = conn_peer_credit(c);
	struct iovec sl[VIRTQ_MAX_SEGS];
	size_t cap = credit < VSOCK_MAX_PKT_LEN ? credit : VSOCK_MAX_PKT_LEN;
	unsigned int nr;
	ssize_t r;

	if (!conn_can_read_sock(c) || credit == 0)
		return false;
	nr = iov_slice(iov, n, 0, cap, sl, VIRTQ_MAX_SEGS, &cap);
	if (cap == 0)
		return false;
	r = readv(c->fd, sl, (int)nr);
	if (r > 0) {
		conn_fill_hdr(c, h, VSOCK_OP_RW);
		h->len = (uint32_t)r;
		c->tx_cnt += (uint32_t)r;
		/* Out of credit: ask the guest to tell us when it has read. */
		if (conn_peer_credit(c) == 0)
			c->pending |= CONN_P_CREDIT_REQUEST;
		return true;
	}
	if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
		c->sock_readable = false;
		return false;
	}
	if (r < 0) {
		conn_reset(c);
		return conn_produce(c, h, iov, n);
	}
	/* EOF: the host end will send no more. */
	c->sock_readable = false;
	c->sock_eof = true;
	conn_fill_hdr(c, h, VSOCK_OP_SHUTDOWN);
	h->flags = VSOCK_SHUTDOWN_SEND | (c->sock_hup ? VSOCK_SHUTDOWN_RCV : 0);
	conn_maybe_finish(c);
	return true;
}

bool conn_produce(struct vsock_conn *c, struct vsock_hdr *h, const struct iovec *iov, unsigned int n)
{
	static const struct {
		uint32_t bit;
		enum vsock_op op;
	} order[] = {
	    {CONN_P_RST, VSOCK_OP_RST},
	    {CONN_P_REQUEST, VSOCK_OP_REQUEST},
	    {CONN_P_RESPONSE, VSOCK_OP_RESPONSE},
	    {CONN_P_SHUTDOWN, VSOCK_OP_SHUTDOWN},
	    {CONN_P_CREDIT_UPDATE, VSOCK_OP_CREDIT_UPDATE},
	    {CONN_P_CREDIT_REQUEST, VSOCK_OP_CREDIT_REQUEST},
	};

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		if (!(c->pending & order[i].bit))
			continue;
		c->pending &= ~order[i].bit;
		conn_fill_hdr(c, h, order[i].op);
		if (order[i].op == VSOCK_OP_SHUTDOWN)
			h->flags = c->shutdown_flags;
		if (order[i].op == VSOCK_OP_RST)
			c->pending = 0;
		return true;
	}
	return conn_produce_data(c, h, iov, n);
}

/* Read "CONNECT <port>\n" one byte at a time, so that nothing after the
 * line is consumed before the stream is spliced. */
static int conn_read_line(struct vsock_conn *c)
{
	char ch, *end;
	unsigned long port;

	for (;;) {
		ssize_t r = recv(c->fd, &ch, 1, MSG_DONTWAIT);

		if (r < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -errno;
		if (r == 0)
			return -ECONNRESET;
		if (ch == '\n')
			break;
		if (c->line_len >= sizeof(c->line) - 1)
			return -EINVAL;
		c->line[c->line_len++] = ch;
	}
	c->line[c->line_len] = '\0';
	if (c->line_len && c->line[c->line_len - 1] == '\r')
		c->line[--c->line_len] = '\0';
	if (strncmp(c->line, "CONNECT ", 8) != 0 || c->line[8] < '0' || c->line[8] > '9')
		return -EINVAL;
	errno = 0;
	port = strtoul(c->line + 8, &end, 10);
	if (errno || *end || port > UINT32_MAX)
		return -EINVAL;
	c->peer_port = (uint32_t)port;
	c->local_port = c->ops->alloc_port(c->u);
	c->state = CONN_CONNECTING;
	c->pending |= CONN_P_REQUEST;
	return 1;
}

void conn_sock_event(struct vsock_conn *c, uint32_t revents)
{
	if (c->state == CONN_HANDSHAKE) {
		if (conn_read_line(c) < 0) {
			log_debug("vsock: bad or missing CONNECT line from host socket");
			conn_reset(c);
		}
	} else if (revents & EPOLLERR) {
		conn_reset(c);
	} else if (revents & EPOLLHUP && (c->state == CONN_CONNECTING || c->buf_len)) {
		conn_reset(c); /* nobody left to take what we owe the host */
	} else {
		if (revents & EPOLLOUT)
			conn_flush(c);
		if (c->state == CONN_ESTABLISHED && (revents & (EPOLLIN | EPOLLHUP)))
			c->sock_readable = true;
		if (c->state == CONN_ESTABLISHED && (revents & EPOLLHUP)) {
			/* Fully closed: reported whatever the interest, so
			 * stop watching; data still queued is read out. */
			c->sock_hup = true;
			c->ops->unwatch(c->u, c);
			if (c->sock_eof) {
				c->shutdown_flags = VSOCK_SHUTDOWN_RCV | VSOCK_SHUTDOWN_SEND;
				c->pending |= CONN_P_SHUTDOWN;
			}
			conn_maybe_finish(c);
		}
	}
	if (c->state != CONN_CLOSED)
		conn_update(c);
}
