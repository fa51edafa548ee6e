/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "virtio/vsock/uds.h"
#include "virtio/vsock/vsock-dev.h"
#include "virtio/vsock/vsock.h"
#include "vmm/counters.h"

#define VIRTIO_VSOCK_EVENT_TRANSPORT_RESET 0

static struct virtio_vsock *to_vsock(struct virtio_mmio *m)
{
	return m->dev;
}

static bool vsock_usable(struct virtio_vsock *v)
{
	return v->running && !v->paused && virtio_mmio_active(&v->mmio);
}

/* One tx chain: a 44-byte header, then hdr.len bytes of payload. */
static int vsock_tx_one(struct virtio_vsock *v, struct virtq_req *req)
{
	struct iovec payload[VIRTQ_MAX_SEGS];
	struct vsock_hdr hdr;
	unsigned int n;

	if (req->nr_in || req->out_len < sizeof(hdr))
		return -EINVAL;
	iov_to_buf(req->iov, req->nr_out, 0, &hdr, sizeof(hdr));
	if (hdr.len > VSOCK_MAX_PKT_LEN || hdr.len > req->out_len - sizeof(hdr))
		return -EINVAL;
	n = iov_slice(req->iov, req->nr_out, sizeof(hdr), hdr.len, payload, VIRTQ_MAX_SEGS, NULL);
	vsock_uds_send(v->uds, &hdr, payload, n);
	return 0;
}

/* Packets each queue moves per turn of the event loop: a driver that
 * keeps its tx ring full, or a flood of host data, cannot hold the loop
 * (and the device lock) for longer; the rest waits for a kick we send
 * ourselves, after the loop's other work. */
#define VSOCK_BUDGET 256

static void vsock_process_tx(struct virtio_vsock *v)
{
	struct virtq *vq = &v->mmio.vqs[VSOCK_TX];
	unsigned int budget = VSOCK_BUDGET;
	int r = 0;

	do {
		virtq_disable_notify(vq);
		while (budget && (r = virtq_pop(vq, &v->req)) > 0) {
			r = vsock_tx_one(v, &v->req);
			if (r < 0)
				break;
			vmm_count(VMM_VSOCK_TX_PACKETS, 1);
			virtq_push(vq, v->req.head, 0);
			budget--;
		}
		if (r < 0) {
			virtio_mmio_set_broken(&v->mmio);
			return;
		}
		if (!budget) {
			vsock_kick(v);
			break;
		}
	} while (virtq_enable_notify(vq));
	virtio_mmio_notify_used(&v->mmio, vq);
}

/* Fill rx buffers while the backend has packets. Returns 0, or -EINVAL
 * when the driver gave an unusable buffer. */
static int vsock_rx_fill(struct virtio_vsock *v, struct virtq *vq)
{
	struct iovec payload[VIRTQ_MAX_SEGS];
	struct virtq_req *req = &v->req;
	struct vsock_hdr hdr;
	unsigned int n;
	int r;

	for (unsigned int budget = VSOCK_BUDGET; vsock_uds_has_rx(v->uds); budget--) {
		if (!budget) {
			vsock_kick(v);
			return 0;
		}
		r = virtq_pop(vq, req);
		if (r < 0)
			return r;
		if (r == 0) {
			/* Out of buffers: ask for a kick when more arrive. */
			if (!virtq_enable_notify(vq))
				return 0;
			continue;
		}
		if (req->nr_out || req->in_len < sizeof(hdr))
			return -EINVAL;
		n = iov_slice(req->iov, req->nr_in, sizeof(hdr), req->in_len - sizeof(hdr), payload, VIRTQ_MAX_SEGS,
		              NULL);
		if (!vsock_uds_recv(v->uds, &hdr, payload, n)) {
			virtq_unpop(vq);
			return 0;
		}
		iov_from_buf(req->iov, req->nr_in, 0, &hdr, sizeof(hdr));
		vmm_count(VMM_VSOCK_RX_PACKETS, 1);
		virtq_push(vq, req->head, (uint32_t)sizeof(hdr) + hdr.len);
	}
	return 0;
}

static void vsock_process_rx(struct virtio_vsock *v)
{
	struct virtq *vq = &v->mmio.vqs[VSOCK_RX];

	if (!vsock_usable(v))
		return;
	if (vsock_rx_fill(v, vq) < 0) {
		virtio_mmio_set_broken(&v->mmio);
		return;
	}
	virtio_mmio_notify_used(&v->mmio, vq);
}

/* Called by the backend, lock held. */
static void vsock_rx_ready(void *opaque)
{
	vsock_process_rx(opaque);
}

void vsock_send_reset_event(struct virtio_vsock *v)
{
	struct virtq *vq = &v->mmio.vqs[VSOCK_EVENT];
	uint32_t id = VIRTIO_VSOCK_EVENT_TRANSPORT_RESET;
	int r;

	r = virtq_pop(vq, &v->req);
	if (r == 0) {
		/* No buffer yet: the driver's next kick of the event queue
		 * brings us back here. */
		virtq_enable_notify(vq);
		return;
	}
	if (r < 0 || v->req.nr_out || v->req.in_len < sizeof(id)) {
		virtio_mmio_set_broken(&v->mmio);
		return;
	}
	iov_from_buf(v->req.iov, v->req.nr_in, 0, &id, sizeof(id));
	virtq_push(vq, v->req.head, sizeof(id));
	__atomic_store_n(&v->event_pending, false, __ATOMIC_RELEASE);
	virtio_mmio_notify_used(&v->mmio, vq);
}

static void vsock_kick_handler(int fd, uint32_t revents, void *opaque)
{
	struct virtio_vsock *v = opaque;
	uint64_t count;

	if (read(fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
		return;
	pthread_mutex_lock(&v->lock);
	if (v->reset_pending) {
		vsock_uds_reset(v->uds);
		v->reset_pending = false;
	}
	if (vsock_usable(v)) {
		if (v->event_pending)
			vsock_send_reset_event(v);
		vsock_process_tx(v);
		vsock_process_rx(v);
	}
	pthread_mutex_unlock(&v->lock);
}

void vsock_kick(struct virtio_vsock *v)
{
	uint64_t one = 1;

	if (write(v->kick_fd, &one, sizeof(one)) < 0)
		log_debug("vsock: kick: %m");
}

static void vsock_queue_notify(struct virtio_mmio *m, uint32_t q)
{
	/* The event queue matters only while an event waits for a buffer. */
	if (q != VSOCK_EVENT || __atomic_load_n(&to_vsock(m)->event_pending, __ATOMIC_ACQUIRE))
		vsock_kick(to_vsock(m));
}

static int vsock_activate(struct virtio_mmio *m)
{
	struct virtio_vsock *v = to_vsock(m);

	pthread_mutex_lock(&v->lock);
	v->running = true;
	pthread_mutex_unlock(&v->lock);
	vsock_kick(v);
	return 0;
}

static void vsock_reset(struct virtio_mmio *m)
{
	struct virtio_vsock *v = to_vsock(m);

	pthread_mutex_lock(&v->lock);
	v->running = false;
	/* Streams belong to the loop thread: it drops them on its next turn. */
	v->reset_pending = true;
	pthread_mutex_unlock(&v->lock);
	vsock_kick(v);
}

static void vsock_config_read(struct virtio_mmio *m, uint32_t off, void *data, uint32_t len)
{
	memcpy(data, (const uint8_t *)&to_vsock(m)->guest_cid + off, len);
}

static const struct virtio_dev_ops vsock_ops = {
    .config_read = vsock_config_read,
    .activate = vsock_activate,
    .queue_notify = vsock_queue_notify,
    .reset = vsock_reset,
};

int virtio_vsock_new(const struct guest_mem *mem, struct event_loop *loop, uint64_t guest_cid, const char *uds_path,
                     bool host_listener, struct virtio_vsock **ret)
{
	struct virtio_mmio_info info = {
	    .device_id = VIRTIO_ID_VSOCK,
	    .nr_queues = 3,
	    .queue_max = VSOCK_QUEUE_SIZE,
	    .features = VIRTIO_BIT(VIRTIO_F_RING_EVENT_IDX) | VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC),
	    .config_size = sizeof(uint64_t),
	};
	struct virtio_vsock *v;
	int r;

	/* 0-2 are reserved (hypervisor, local, host); the top of the range too. */
	if (guest_cid < 3 || guest_cid >= UINT32_MAX)
		return err_set(-EINVAL, "invalid vsock guest CID %llu", (unsigned long long)guest_cid);
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->guest_cid = guest_cid;
	v->loop = loop;
	v->kick_fd = -1;
	r = pthread_mutex_init(&v->lock, NULL);
	if (r) {
		free(v);
		return -r;
	}
	r = virtio_mmio_init(&v->mmio, mem, &info, &vsock_ops, v);
	if (r < 0)
		goto fail;
	v->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (v->kick_fd < 0) {
		r = err_setsys(-errno, "vsock eventfd");
		goto fail;
	}
	r = event_loop_add(loop, v->kick_fd, EPOLLIN, vsock_kick_handler, v);
	if (r < 0)
		goto fail;
	v->kick_watched = true;
	r = vsock_uds_new(loop, uds_path, guest_cid, host_listener, &v->lock, vsock_rx_ready, v, &v->uds);
	if (r < 0)
		goto fail;
	*ret = v;
	return 0;
fail:
	virtio_vsock_free(v);
	return r;
}

struct virtio_mmio *virtio_vsock_mmio(struct virtio_vsock *v)
{
	return &v->mmio;
}

unsigned int virtio_vsock_nr_conns(struct virtio_vsock *v)
{
	unsigned int n;

	pthread_mutex_lock(&v->lock);
	n = vsock_uds_nr_conns(v->uds);
	pthread_mutex_unlock(&v->lock);
	return n;
}

void virtio_vsock_free(struct virtio_vsock *v)
{
	if (!v)
		return;
	vsock_uds_free(v->uds);
	if (v->kick_watched)
		event_loop_remove(v->loop, v->kick_fd);
	if (v->kick_fd >= 0)
		close(v->kick_fd);
	virtio_mmio_destroy(&v->mmio);
	pthread_mutex_destroy(&v->lock);
	free(v);
}
