/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "virtio/blk/blk-dev.h"
#include "virtio/blk/blk.h"
#include "vmm/counters.h"

/* Requests handled per turn of the worker (it holds the device lock for a
 * turn). */
#define BLK_BATCH_MAX (2 * BLK_QUEUE_SIZE)

static struct virtio_blk *to_blk(struct virtio_mmio *m)
{
	return m->dev;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* After a pass of few requests emptied the queue, watch the ring a little
 * while (kicks still suppressed) before going back to sleep: a driver
 * keeping a request or two in flight adds the next within microseconds,
 * and finding it here spares it a doorbell exit and us a wakeup. Deeper
 * queues amortise their kick over the pass already (one per pass of 32 at
 * depth 32), and a worker spinning there would only take CPU from the
 * vCPU that feeds it. */
static bool blk_poll(struct virtio_blk *b, struct virtq *vq)
{
	uint64_t end = mono_ns() + b->poll_ns;

	if (!b->poll_ns)
		return false;
	do {
		if (virtq_avail_pending(vq))
			return true;
		__builtin_ia32_pause();
	} while (mono_ns() < end);
	return false;
}

/* $name, a number up to max, times unit; dflt when unset or not such a
 * number. */
static uint64_t env_scaled(const char *name, unsigned long max, uint64_t unit, uint64_t dflt)
{
	const char *s = getenv(name);
	char *end;
	unsigned long v;

	if (!s || !*s)
		return dflt;
	v = strtoul(s, &end, 10);
	return *end || v > max ? dflt : v * unit;
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

/* Drain the queue: pop many, push many, one interrupt decision per pass.
 * A driver that refills the ring as fast as it is drained would keep the
 * worker here, holding the device lock that its own reset waits for:
 * after BLK_BATCH_MAX requests, or as soon as another thread wants the
 * lock, the worker lets go and kicks itself to go on. */
static void blk_process(struct virtio_blk *b)
{
	struct virtq *vq = &b->mmio.vqs[0];
	unsigned int budget = BLK_BATCH_MAX, n;
	int r;

	for (;;) {
		vmm_count(VMM_QUEUE_PASSES, 1);
		virtq_disable_notify(vq);
		r = blk_pass(b, vq, budget, &n);
		if (r < 0) {
			virtio_mmio_set_broken(&b->mmio);
			break;
		}
		budget -= n;
		if (!budget || blk_lock_wanted(b)) {
			blk_kick(b);
			break;
		}
		virtio_mmio_notify_used(&b->mmio, vq);
		if (!(n <= BLK_POLL_MAX_PASS && blk_poll(b, vq)) && !virtq_enable_notify(vq))
			break;
	}
	virtio_mmio_notify_used(&b->mmio, vq);
}

/* Wait for a kick from the VMM or from the guest's doorbell; false when
 * waiting failed for good. */
static bool blk_wait(struct virtio_blk *b)
{
	struct pollfd p[2] = {{.fd = b->kick_fd, .events = POLLIN},
	                      {.fd = __atomic_load_n(&b->doorbell_fd, __ATOMIC_ACQUIRE), .events = POLLIN}};
	uint64_t v;

	if (poll(p, 2, -1) < 0)
		return errno == EINTR;
	if ((p[0].revents & POLLIN) && read(b->kick_fd, &v, sizeof(v)) < 0 && errno != EINTR && errno != EAGAIN)
		return false;
	if ((p[1].revents & POLLIN) && read(p[1].fd, &v, sizeof(v)) == sizeof(v)) {
		vmm_count(VMM_DOORBELL_WAKEUPS, 1);
		vmm_count(VMM_DOORBELL_SIGNALS, v);
	}
	return true;
}

static void *blk_worker(void *arg)
{
	struct virtio_blk *b = arg;

	for (;;) {
		if (!blk_wait(b))
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

void virtio_blk_set_doorbell(struct virtio_blk *b, int fd)
{
	__atomic_store_n(&b->doorbell_fd, fd, __ATOMIC_RELEASE);
	/* The worker may sleep in poll() without it: wake it to wait on it. */
	blk_kick(b);
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
	/* $KVRUN_BLK_POLL_US: 0 turns the polling off. */
	b->poll_ns = env_scaled("KVRUN_BLK_POLL_US", 10000, 1000, BLK_POLL_NS);
	/* $KVRUN_BLK_SPLIT_KIB: 0, transfers are never split. */
	b->split_min = (size_t)env_scaled("KVRUN_BLK_SPLIT_KIB", 1024 * 1024, 1024, BLK_SPLIT_MIN);
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
	b->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (b->kick_fd < 0)
		return err_setsys(-errno, "virtio-blk eventfd");
	r = blk_helper_start(b);
	if (r < 0)
		return err_set(r, "virtio-blk helper thread");
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
	b->kick_fd = b->doorbell_fd = -1;
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
	/* After the worker: no transfer is in flight. */
	blk_helper_stop(b);
	if (b->kick_fd >= 0)
		close(b->kick_fd);
	blk_backend_close(b->backend);
	free(b);
}
