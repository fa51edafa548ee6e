/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "virtio/blk/blk-dev.h"
#include "virtio/blk/blk.h"

/* Requests handled per turn of the worker (it holds the device lock for a
 * turn). */
#define BLK_BATCH_MAX (2 * BLK_QUEUE_SIZE)

/* A parsed request: data buffers and where the status byte goes. */
struct blk_io {
	struct iovec data[VIRTQ_MAX_SEGS];
	unsigned int nr_data;
	size_t len;
	uint8_t *status;
};

static struct virtio_blk *to_blk(struct virtio_mmio *m)
{
	return m->dev;
}

/* Transfer exactly len bytes at off, resuming after short transfers. */
static int blk_rw(struct virtio_blk *b, bool write, const struct iovec *iov, unsigned int n, size_t len, uint64_t off)
{
	struct iovec rest[VIRTQ_MAX_SEGS];
	size_t done = 0;

	while (done < len) {
		unsigned int nr = iov_slice(iov, n, done, len - done, rest, VIRTQ_MAX_SEGS, NULL);
		ssize_t r = write ? b->backend->ops->pwritev(b->backend, rest, (int)nr, off + done)
		                  : b->backend->ops->preadv(b->backend, rest, (int)nr, off + done);

		if (r == -EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? (int)r : -EIO; /* 0: the image shrank */
		done += (size_t)r;
	}
	return 0;
}

/* 5.2.6.2: data must be whole sectors inside the disk. */
static bool blk_in_bounds(struct virtio_blk *b, uint64_t sector, size_t len)
{
	uint64_t cap = b->config.capacity;

	return len % SECTOR_SIZE == 0 && sector <= cap && len / SECTOR_SIZE <= cap - sector;
}

static uint8_t blk_do_io(struct virtio_blk *b, const struct virtio_blk_outhdr *hdr, struct blk_io *io)
{
	bool write = hdr->type == VIRTIO_BLK_T_OUT;

	if (write && b->backend->read_only)
		return VIRTIO_BLK_S_IOERR;
	if (!blk_in_bounds(b, hdr->sector, io->len))
		return VIRTIO_BLK_S_IOERR;
	if (blk_rw(b, write, io->data, io->nr_data, io->len, hdr->sector * SECTOR_SIZE) < 0)
		return VIRTIO_BLK_S_IOERR;
	/* Without FLUSH negotiated the disk must be write-through (5.2.5.1). */
	if (write && !virtio_mmio_has_feature(&b->mmio, VIRTIO_BLK_F_FLUSH) && b->backend->ops->flush(b->backend) < 0)
		return VIRTIO_BLK_S_IOERR;
	return VIRTIO_BLK_S_OK;
}

/* Run one request; *ret_written gets the bytes written into the chain
 * (data and status byte, less than 4 GiB as the chain is). Returns 0, or
 * -EINVAL when the chain cannot carry a request (the driver is broken). */
static int blk_handle(struct virtio_blk *b, struct virtq_req *req, uint32_t *ret_written)
{
	const struct iovec *in = req->iov + req->nr_out;
	struct virtio_blk_outhdr hdr;
	struct iovec st;
	struct blk_io io;
	uint32_t written = 1;
	size_t n;

	if (req->out_len < sizeof(hdr) || req->in_len < 1)
		return -EINVAL;
	iov_to_buf(req->iov, req->nr_out, 0, &hdr, sizeof(hdr));
	iov_slice(in, req->nr_in, req->in_len - 1, 1, &st, 1, NULL);
	io.status = st.iov_base;
	if (hdr.type == VIRTIO_BLK_T_IN || hdr.type == VIRTIO_BLK_T_GET_ID) {
		io.nr_data = iov_slice(in, req->nr_in, 0, req->in_len - 1, io.data, VIRTQ_MAX_SEGS, &io.len);
	} else {
		io.nr_data = iov_slice(req->iov, req->nr_out, sizeof(hdr), req->out_len - sizeof(hdr), io.data,
		                       VIRTQ_MAX_SEGS, &io.len);
	}
	switch (hdr.type) {
	case VIRTIO_BLK_T_IN:
		*io.status = blk_do_io(b, &hdr, &io);
		/* io.len < in_len: no overflow. */
		if (*io.status == VIRTIO_BLK_S_OK)
			written += (uint32_t)io.len;
		break;
	case VIRTIO_BLK_T_OUT:
		*io.status = blk_do_io(b, &hdr, &io);
		break;
	case VIRTIO_BLK_T_FLUSH:
		*io.status = b->backend->ops->flush(b->backend) < 0 ? VIRTIO_BLK_S_IOERR : VIRTIO_BLK_S_OK;
		break;
	case VIRTIO_BLK_T_GET_ID:
		n = iov_from_buf(io.data, io.nr_data, 0, b->id, sizeof(b->id));
		written += (uint32_t)n;
		*io.status = VIRTIO_BLK_S_OK;
		break;
	default:
		*io.status = VIRTIO_BLK_S_UNSUPP;
		break;
	}
	*ret_written = written;
	return 0;
}

void blk_lock(struct virtio_blk *b)
{
	__atomic_add_fetch(&b->lock_waiters, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&b->lock);
	__atomic_sub_fetch(&b->lock_waiters, 1, __ATOMIC_SEQ_CST);
}

void blk_unlock(struct virtio_blk *b)
{
	pthread_cond_broadcast(&b->lock_turn);
	pthread_mutex_unlock(&b->lock);
}

static bool blk_lock_wanted(struct virtio_blk *b)
{
	return __atomic_load_n(&b->lock_waiters, __ATOMIC_SEQ_CST) > 0;
}

/* Drain the queue: pop many, push many, one interrupt decision. A driver
 * that refills the ring as fast as it is drained would keep the worker
 * here, holding the device lock that its own reset waits for: after
 * BLK_BATCH_MAX requests, or as soon as another thread wants the lock,
 * the worker lets go and kicks itself to go on. */
static void blk_process(struct virtio_blk *b)
{
	struct virtq *vq = &b->mmio.vqs[0];
	unsigned int budget = BLK_BATCH_MAX;
	uint32_t len;
	int r = 0;

	do {
		virtq_disable_notify(vq);
		while (budget && !blk_lock_wanted(b) && (r = virtq_pop(vq, &b->req)) > 0) {
			r = blk_handle(b, &b->req, &len);
			if (r < 0)
				break;
			virtq_push(vq, b->req.head, len);
			budget--;
		}
		if (r < 0) {
			virtio_mmio_set_broken(&b->mmio);
			break;
		}
		if (!budget || blk_lock_wanted(b)) {
			blk_kick(b);
			break;
		}
	} while (virtq_enable_notify(vq));
	virtio_mmio_notify_used(&b->mmio, vq);
}

static void *blk_worker(void *arg)
{
	struct virtio_blk *b = arg;
	uint64_t v;

	for (;;) {
		if (read(b->kick_fd, &v, sizeof(v)) < 0 && errno != EINTR)
			break;
		if (__atomic_load_n(&b->stop, __ATOMIC_ACQUIRE))
			break;
		pthread_mutex_lock(&b->lock);
		/* blk_lock() callers first (cond_wait lets go of the lock). */
		while (blk_lock_wanted(b))
			pthread_cond_wait(&b->lock_turn, &b->lock);
		if (b->running && !b->paused && virtio_mmio_active(&b->mmio))
			blk_process(b);
		pthread_mutex_unlock(&b->lock);
	}
	return NULL;
}

void blk_kick(struct virtio_blk *b)
{
	uint64_t one = 1;

	/* Fails only when the counter is saturated: a kick is pending. */
	if (write(b->kick_fd, &one, sizeof(one)) < 0)
		log_debug("virtio-blk: kick: %m");
}

static void blk_queue_notify(struct virtio_mmio *m, uint32_t q)
{
	blk_kick(to_blk(m));
}

static int blk_activate(struct virtio_mmio *m)
{
	struct virtio_blk *b = to_blk(m);

	blk_lock(b);
	b->running = true;
	blk_unlock(b);
	/* Buffers may have been queued before DRIVER_OK. */
	blk_kick(b);
	return 0;
}

static void blk_reset(struct virtio_mmio *m)
{
	struct virtio_blk *b = to_blk(m);

	/* Waits for the batch in flight: afterwards the queue is untouched. */
	blk_lock(b);
	b->running = false;
	blk_unlock(b);
}

static void blk_config_read(struct virtio_mmio *m, uint32_t off, void *data, uint32_t len)
{
	memcpy(data, (const uint8_t *)&to_blk(m)->config + off, len);
}

static const struct virtio_dev_ops blk_ops = {
    .config_read = blk_config_read,
    .activate = blk_activate,
    .queue_notify = blk_queue_notify,
    .reset = blk_reset,
};

static int blk_start(struct virtio_blk *b, const struct guest_mem *mem, const char *id)
{
	struct virtio_mmio_info info = {
	    .device_id = VIRTIO_ID_BLOCK,
	    .nr_queues = 1,
	    .queue_max = BLK_QUEUE_SIZE,
	    .features = VIRTIO_BIT(VIRTIO_F_RING_EVENT_IDX) | VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC) |
	                VIRTIO_BIT(VIRTIO_BLK_F_SEG_MAX) | VIRTIO_BIT(VIRTIO_BLK_F_BLK_SIZE) |
	                VIRTIO_BIT(VIRTIO_BLK_F_FLUSH) | (b->offer_ro ? VIRTIO_BIT(VIRTIO_BLK_F_RO) : 0),
	    .config_size = sizeof(struct virtio_blk_config),
	};
	int r;

	/* 5.2.6: zero-padded, without a NUL when 20 bytes long. */
	if (id)
		memcpy(b->id, id, strnlen(id, sizeof(b->id)));
	b->config.capacity = b->backend->size / SECTOR_SIZE;
	/* Two descriptors of each chain carry the header and the status. */
	b->config.seg_max = VIRTQ_MAX_SEGS - 2;
	b->config.blk_size = SECTOR_SIZE;
	r = virtio_mmio_init(&b->mmio, mem, &info, &blk_ops, b);
	if (r < 0)
		return err_set(r, "virtio-blk transport");
	r = pthread_mutex_init(&b->lock, NULL);
	if (!r) {
		r = pthread_cond_init(&b->lock_turn, NULL);
		if (r)
			pthread_mutex_destroy(&b->lock);
	}
	if (r)
		return err_set(-r, "virtio-blk lock");
	b->kick_fd = eventfd(0, EFD_CLOEXEC);
	if (b->kick_fd < 0)
		return err_setsys(-errno, "virtio-blk eventfd");
	r = pthread_create(&b->worker, NULL, blk_worker, b);
	if (r)
		return err_set(-r, "virtio-blk worker thread");
	b->worker_started = true;
	return 0;
}

static int blk_new(const struct guest_mem *mem, struct blk_backend *backend, const char *id, bool offer_ro,
                   struct virtio_blk **ret)
{
	struct virtio_blk *b = calloc(1, sizeof(*b));
	int r;

	if (!b) {
		blk_backend_close(backend);
		return -ENOMEM;
	}
	b->backend = backend;
	b->offer_ro = offer_ro;
	b->kick_fd = -1;
	r = blk_start(b, mem, id);
	if (r < 0) {
		virtio_blk_free(b);
		return r;
	}
	*ret = b;
	return 0;
}

int virtio_blk_new_backend(const struct guest_mem *mem, struct blk_backend *backend, const char *id,
                           struct virtio_blk **ret)
{
	return blk_new(mem, backend, id, backend->read_only, ret);
}

int virtio_blk_new(const struct guest_mem *mem, const struct virtio_blk_opts *opts, struct virtio_blk **ret)
{
	struct blk_backend *backend;
	int r;

	r = blk_open(opts->path, opts->base, opts->read_only, &backend);
	if (r < 0)
		return r;
	return blk_new(mem, backend, opts->id, opts->read_only && !opts->offer_writable, ret);
}

struct virtio_mmio *virtio_blk_mmio(struct virtio_blk *b)
{
	return &b->mmio;
}

uint64_t virtio_blk_capacity(const struct virtio_blk *b)
{
	return b->config.capacity;
}

void virtio_blk_free(struct virtio_blk *b)
{
	if (!b)
		return;
	if (b->worker_started) {
		__atomic_store_n(&b->stop, true, __ATOMIC_RELEASE);
		blk_kick(b);
		pthread_join(b->worker, NULL);
		pthread_cond_destroy(&b->lock_turn);
		pthread_mutex_destroy(&b->lock);
		virtio_mmio_destroy(&b->mmio);
	}
	if (b->kick_fd >= 0)
		close(b->kick_fd);
	blk_backend_close(b->backend);
	free(b);
}
