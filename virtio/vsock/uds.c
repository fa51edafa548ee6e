/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "common/unix-socket.h"
#include "virtio/vsock/conn.h"
#include "virtio/vsock/uds.h"

/* Host ports handed to host-initiated streams (Firecracker's range). */
#define UDS_FIRST_LOCAL_PORT (1u << 30)

struct vsock_uds {
	struct event_loop *loop;
	char *path;
	int listen_fd;
	uint64_t guest_cid;
	pthread_mutex_t *lock;
	void (*rx_ready)(void *opaque);
	void *opaque;
	TAILQ_HEAD(, vsock_conn) conns;
	TAILQ_HEAD(, vsock_conn) rxq;
	unsigned int nr_conns;
	uint32_t next_port;
	/* vsock_uds_forget_streams(): the saved VM's streams. */
	struct vsock_port_pair *saved;
	unsigned int n_saved;
};

static uint64_t uds_guest_cid(const struct vsock_uds *u)
{
	return u->guest_cid;
}

unsigned int vsock_uds_nr_conns(const struct vsock_uds *u)
{
	return u->nr_conns;
}

static struct vsock_conn *uds_lookup(struct vsock_uds *u, uint32_t local_port, uint32_t peer_port)
{
	struct vsock_conn *c;

	TAILQ_FOREACH(c, &u->conns, link)
	{
		if (c->state != CONN_CLOSED && c->state != CONN_HANDSHAKE && c->local_port == local_port &&
		    c->peer_port == peer_port)
			return c;
	}
	return NULL;
}

static uint32_t uds_alloc_port(struct vsock_uds *u)
{
	struct vsock_conn *c;
	bool used;

	do {
		if (++u->next_port < UDS_FIRST_LOCAL_PORT)
			u->next_port = UDS_FIRST_LOCAL_PORT;
		used = false;
		TAILQ_FOREACH(c, &u->conns, link)
		{
			if (c->state != CONN_HANDSHAKE && c->local_port == u->next_port)
				used = true;
		}
	} while (used);
	return u->next_port;
}

static void uds_rx_queue(struct vsock_uds *u, struct vsock_conn *c)
{
	if (c->rx_queued)
		return;
	TAILQ_INSERT_TAIL(&u->rxq, c, rx_link);
	c->rx_queued = true;
}

static void uds_rx_dequeue(struct vsock_uds *u, struct vsock_conn *c)
{
	if (!c->rx_queued)
		return;
	TAILQ_REMOVE(&u->rxq, c, rx_link);
	c->rx_queued = false;
}

static void uds_unwatch(struct vsock_uds *u, struct vsock_conn *c)
{
	if (!c->watched)
		return;
	event_loop_remove(u->loop, c->fd);
	c->watched = false;
}

static void uds_conn_free(struct vsock_uds *u, struct vsock_conn *c)
{
	uds_rx_dequeue(u, c);
	if (c->fd >= 0) {
		uds_unwatch(u, c);
		close(c->fd);
	}
	TAILQ_REMOVE(&u->conns, c, link);
	u->nr_conns--;
	free(c->buf);
	free(c);
}

/* Free a connection that is closed and owes the guest nothing. */
static void uds_reap(struct vsock_uds *u, struct vsock_conn *c)
{
	if (c->state == CONN_CLOSED && !c->pending)
		uds_conn_free(u, c);
}

static void uds_conn_handler(int fd, uint32_t revents, void *opaque)
{
	struct vsock_conn *c = opaque;
	struct vsock_uds *u = c->u;

	pthread_mutex_lock(u->lock);
	conn_sock_event(c, revents);
	uds_reap(u, c);
	if (!TAILQ_EMPTY(&u->rxq))
		u->rx_ready(u->opaque);
	pthread_mutex_unlock(u->lock);
}

static int uds_watch(struct vsock_uds *u, struct vsock_conn *c, uint32_t events)
{
	int r;

	if (c->watched)
		r = event_loop_modify(u->loop, c->fd, events);
	else
		r = event_loop_add(u->loop, c->fd, events, uds_conn_handler, c);
	if (r < 0)
		return r;
	c->watched = true;
	c->events = events;
	return 0;
}

static const struct vsock_conn_ops conn_ops = {
    .guest_cid = uds_guest_cid,
    .alloc_port = uds_alloc_port,
    .watch = uds_watch,
    .unwatch = uds_unwatch,
    .rx_queue = uds_rx_queue,
};

static struct vsock_conn *uds_conn_new(struct vsock_uds *u, int fd, enum conn_state state)
{
	struct vsock_conn *c;

	if (u->nr_conns >= VSOCK_MAX_CONNS)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->u = u;
	c->ops = &conn_ops;
	c->fd = fd;
	c->state = state;
	TAILQ_INSERT_TAIL(&u->conns, c, link);
	u->nr_conns++;
	return c;
}

/* Answer a packet that belongs to no connection with an RST (5.10.6.3). */
static void uds_reply_rst(struct vsock_uds *u, const struct vsock_hdr *h)
{
	struct vsock_conn *c;

	if (h->op == VSOCK_OP_RST)
		return;
	c = uds_conn_new(u, -1, CONN_CLOSED);
	if (!c)
		return; /* too many: the guest is flooding us, drop */
	c->local_port = h->dst_port;
	c->peer_port = h->src_port;
	c->pending = CONN_P_RST;
	uds_rx_queue(u, c);
}

unsigned int vsock_uds_streams(const struct vsock_uds *u, struct vsock_port_pair *pairs, unsigned int max)
{
	const struct vsock_conn *c;
	unsigned int n = 0;

	TAILQ_FOREACH(c, &u->conns, link)
	{
		if (c->state == CONN_HANDSHAKE)
			continue;
		if (n < max)
			pairs[n] = (struct vsock_port_pair){c->local_port, c->peer_port};
		n++;
	}
	return n;
}

int vsock_uds_forget_streams(struct vsock_uds *u, const struct vsock_port_pair *pairs, unsigned int n)
{
	struct vsock_port_pair *p;

	if (!n)
		return 0;
	p = reallocarray(u->saved, u->n_saved + n, sizeof(*p));
	if (!p)
		return -ENOMEM;
	memcpy(p + u->n_saved, pairs, n * sizeof(*p));
	u->saved = p;
	u->n_saved += n;
	return 0;
}

/* Whether h belongs to a stream of the saved VM; a REQUEST opens a new
 * stream on its ports, which are no longer the saved one's. */
static bool uds_saved_stream(struct vsock_uds *u, const struct vsock_hdr *h)
{
	for (unsigned int i = 0; i < u->n_saved; i++) {
		if (u->saved[i].host_port != h->dst_port || u->saved[i].guest_port != h->src_port)
			continue;
		if (h->op == VSOCK_OP_REQUEST) {
			u->saved[i] = u->saved[--u->n_saved];
			return false;
		}
		return true;
	}
	return false;
}

/* Guest REQUEST to host port P: connect to "<path>_P". */
static void uds_guest_connect(struct vsock_uds *u, const struct vsock_hdr *h)
{
	char path[PATH_MAX];
	struct vsock_conn *c;
	int fd = -ENAMETOOLONG;

	if (snprintf(path, sizeof(path), "%s_%u", u->path, h->dst_port) < (int)sizeof(path))
		fd = unix_connect(path, SOCK_NONBLOCK, NULL);
	if (fd < 0) {
		log_debug("vsock: guest connect to port %u: %s", h->dst_port, strerror(-fd));
		uds_reply_rst(u, h);
		return;
	}
	c = uds_conn_new(u, fd, CONN_ESTABLISHED);
	if (!c) {
		close(fd);
		uds_reply_rst(u, h);
		return;
	}
	c->local_port = h->dst_port;
	c->peer_port = h->src_port;
	c->peer_buf_alloc = h->buf_alloc;
	c->peer_fwd_cnt = h->fwd_cnt;
	c->pending = CONN_P_RESPONSE;
	conn_update(c);
}

void vsock_uds_send(struct vsock_uds *u, const struct vsock_hdr *h, const struct iovec *iov, unsigned int n)
{
	struct vsock_conn *c;

	/* 5.10.6.2: the guest may only speak as itself, to the host. */
	if (h->src_cid != u->guest_cid || h->dst_cid != VSOCK_HOST_CID) {
		log_debug("vsock: dropping packet %llu -> %llu", (unsigned long long)h->src_cid,
		          (unsigned long long)h->dst_cid);
		return;
	}
	if (h->type != VSOCK_TYPE_STREAM) {
		uds_reply_rst(u, h);
		return;
	}
	c = uds_lookup(u, h->dst_port, h->src_port);
	if (!c && uds_saved_stream(u, h)) {
		log_debug("vsock: port %u: a packet of the saved VM's stream from guest port %u dropped", h->dst_port,
		          h->src_port);
		return;
	}
	if (!c) {
		if (h->op == VSOCK_OP_REQUEST)
			uds_guest_connect(u, h);
		else
			uds_reply_rst(u, h);
		return;
	}
	conn_recv_pkt(c, h, iov, n);
	uds_reap(u, c);
}

bool vsock_uds_has_rx(struct vsock_uds *u)
{
	return !TAILQ_EMPTY(&u->rxq);
}

bool vsock_uds_recv(struct vsock_uds *u, struct vsock_hdr *hdr, const struct iovec *iov, unsigned int n)
{
	struct vsock_conn *c;

	while ((c = TAILQ_FIRST(&u->rxq))) {
		bool got = conn_produce(c, hdr, iov, n);

		/* Requeued at the tail when it has more: round robin. */
		uds_rx_dequeue(u, c);
		if (c->state == CONN_CLOSED && !c->pending)
			uds_conn_free(u, c);
		else
			conn_update(c);
		if (got)
			return true;
	}
	return false;
}

void vsock_uds_reset(struct vsock_uds *u)
{
	struct vsock_conn *c;

	while ((c = TAILQ_FIRST(&u->conns)))
		uds_conn_free(u, c);
}

static void uds_listen_handler(int fd, uint32_t revents, void *opaque)
{
	struct vsock_uds *u = opaque;
	struct vsock_conn *c;
	int cfd;

	pthread_mutex_lock(u->lock);
	while ((cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		c = uds_conn_new(u, cfd, CONN_HANDSHAKE);
		if (!c) {
			close(cfd);
			continue;
		}
		conn_update(c);
	}
	pthread_mutex_unlock(u->lock);
}

static int uds_listen(const char *path)
{
	struct stat st;

	/* Only a socket left by an earlier run is stale; anything else at
	 * path is someone's file. */
	if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode))
		return err_set(-EEXIST, "vsock socket path %s exists and is not a socket", path);
	if (unlink(path) < 0 && errno != ENOENT)
		return err_setsys(-errno, "remove stale %s", path);
	return unix_listen(path, 64);
}

int vsock_uds_new(struct event_loop *loop, const char *uds_path, uint64_t guest_cid, bool listen, pthread_mutex_t *lock,
                  void (*rx_ready)(void *opaque), void *opaque, struct vsock_uds **ret)
{
	struct vsock_uds *u = calloc(1, sizeof(*u));
	int r;

	if (!u)
		return -ENOMEM;
	TAILQ_INIT(&u->conns);
	TAILQ_INIT(&u->rxq);
	u->loop = loop;
	u->guest_cid = guest_cid;
	u->lock = lock;
	u->rx_ready = rx_ready;
	u->opaque = opaque;
	u->listen_fd = -1;
	u->path = strdup(uds_path);
	if (!u->path) {
		vsock_uds_free(u);
		return -ENOMEM;
	}
	if (!listen) {
		*ret = u;
		return 0;
	}
	r = uds_listen(uds_path);
	if (r < 0) {
		vsock_uds_free(u);
		return r;
	}
	u->listen_fd = r;
	r = event_loop_add(loop, u->listen_fd, EPOLLIN, uds_listen_handler, u);
	if (r < 0) {
		vsock_uds_free(u);
		return err_set(r, "watch %s", uds_path);
	}
	*ret = u;
	return 0;
}

void vsock_uds_free(struct vsock_uds *u)
{
	if (!u)
		return;
	vsock_uds_reset(u);
	if (u->listen_fd >= 0) {
		event_loop_remove(u->loop, u->listen_fd);
		close(u->listen_fd);
		unlink(u->path);
	}
	free(u->saved);
	free(u->path);
	free(u);
}
