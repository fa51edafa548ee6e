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
#include "virtio/balloon/balloon-dev.h"
#include "virtio/balloon/balloon.h"

#define BALLOON_PAGE (1ULL << VIRTIO_BALLOON_PFN_SHIFT)
/* Entries read from one inflate or deflate buffer (Linux sends 256); the
 * rest of a longer one is skipped, so a buffer's cost is bounded. */
#define BALLOON_MAX_PFNS 4096
#define ATOMIC_LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define ATOMIC_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

static struct virtio_balloon *to_balloon(struct virtio_mmio *m)
{
	return m->dev;
}

static bool balloon_usable(struct virtio_balloon *b)
{
	return b->running && !b->paused && virtio_mmio_active(&b->mmio);
}

void balloon_roles(uint64_t features, enum balloon_role roles[BALLOON_NR_QUEUES])
{
	unsigned int q = 2;

	roles[BALLOON_Q_INFLATE] = BALLOON_ROLE_INFLATE;
	roles[BALLOON_Q_DEFLATE] = BALLOON_ROLE_DEFLATE;
	roles[2] = roles[3] = BALLOON_ROLE_NONE;
	if (features & VIRTIO_BIT(VIRTIO_BALLOON_F_STATS_VQ))
		roles[q++] = BALLOON_ROLE_STATS;
	if (features & VIRTIO_BIT(VIRTIO_BALLOON_F_PAGE_REPORTING))
		roles[q++] = BALLOON_ROLE_REPORTING;
}

/* Give back [gpa, gpa + len), which must be guest RAM of one region: the
 * range comes from the guest and is checked here, whatever the discard
 * function does. Lock held. */
static int give_back(struct virtio_balloon *b, uint64_t gpa, uint64_t len)
{
	int r;

	if (!len)
		return 0;
	if (!guest_mem_ptr(b->mmio.mem, gpa, len))
		return -EFAULT;
	if (b->opts.discard)
		r = b->opts.discard(b->opts.opaque, gpa, len);
	else
		r = guest_mem_discard(b->mmio.mem, gpa, len);
	if (r < 0) {
		b->counters.discard_errors++;
		log_debug("virtio-balloon: giving back 0x%llx+0x%llx: %s", (unsigned long long)gpa,
		          (unsigned long long)len, strerror(-r));
	}
	return r;
}

/* Inflate: every entry a 4 KiB page to give back. Consecutive pages are
 * given back as one range; a page outside RAM is skipped. */
static void inflate_pfns(struct virtio_balloon *b, const uint32_t *pfns, size_t n, uint64_t *run_gpa, uint64_t *run_len)
{
	const struct guest_mem *mem = b->mmio.mem;

	for (size_t i = 0; i < n; i++) {
		uint64_t gpa = (uint64_t)pfns[i] << VIRTIO_BALLOON_PFN_SHIFT;

		if (!guest_mem_ptr(mem, gpa, BALLOON_PAGE)) {
			b->counters.skipped_pfns++;
			continue;
		}
		b->counters.inflated_pages++;
		if (*run_len && gpa == *run_gpa + *run_len && guest_mem_ptr(mem, *run_gpa, *run_len + BALLOON_PAGE)) {
			*run_len += BALLOON_PAGE;
			continue;
		}
		give_back(b, *run_gpa, *run_len);
		*run_gpa = gpa;
		*run_len = BALLOON_PAGE;
	}
}

/* One inflate or deflate buffer: an array of 32-bit page frame numbers,
 * driver to device. Bytes short of a whole entry are ignored. */
static int balloon_pfns(struct virtio_balloon *b, const struct virtq_req *req, bool inflate)
{
	size_t total = req->out_len / sizeof(uint32_t), off = 0;
	uint64_t run_gpa = 0, run_len = 0;
	uint32_t pfns[256];

	if (req->nr_in)
		return -EINVAL;
	if (total > BALLOON_MAX_PFNS) {
		b->counters.skipped_pfns += total - BALLOON_MAX_PFNS;
		total = BALLOON_MAX_PFNS;
	}
	if (!inflate) {
		/* A deflated page comes back when the guest touches it. */
		b->counters.deflated_pages += total;
		return 0;
	}
	while (off < total) {
		size_t n = total - off < 256 ? total - off : 256;

		iov_to_buf(req->iov, req->nr_out, off * sizeof(uint32_t), pfns, n * sizeof(uint32_t));
		inflate_pfns(b, pfns, n, &run_gpa, &run_len);
		off += n;
	}
	give_back(b, run_gpa, run_len);
	return 0;
}

/* One free page report: device-writable buffers, each a free range. */
static int balloon_report(struct virtio_balloon *b, const struct virtq_req *req)
{
	if (req->nr_out)
		return -EINVAL;
	for (unsigned int i = 0; i < req->nr_in; i++) {
		uint64_t gpa;

		/* virtq_pop() mapped it from guest RAM: it is found again. */
		if (guest_mem_gpa(b->mmio.mem, req->iov[i].iov_base, req->iov[i].iov_len, &gpa) < 0)
			return -EINVAL;
		if (give_back(b, gpa, req->iov[i].iov_len) == 0)
			b->counters.reported_bytes += req->iov[i].iov_len;
	}
	return 0;
}

static int serve_chain(struct virtio_balloon *b, struct virtq *vq, enum balloon_role role)
{
	switch (role) {
	case BALLOON_ROLE_INFLATE:
		return balloon_pfns(b, &b->req, true);
	case BALLOON_ROLE_DEFLATE:
		return balloon_pfns(b, &b->req, false);
	case BALLOON_ROLE_REPORTING:
		return balloon_report(b, &b->req);
	case BALLOON_ROLE_STATS:
		return balloon_stats_take(b, vq, &b->req);
	default:
		return -EINVAL;
	}
}

/* Serve queue q: each chain is handled, then used with nothing written (a
 * statistics buffer is kept instead). Lock held. */
static void balloon_process(struct virtio_balloon *b, unsigned int q)
{
	struct virtq *vq = &b->mmio.vqs[q];
	enum balloon_role role = b->roles[q];
	unsigned int budget = BALLOON_BUDGET;
	int r = 0;

	if (role == BALLOON_ROLE_NONE || !virtq_usable(vq))
		return;
	do {
		virtq_disable_notify(vq);
		while (budget && (r = virtq_pop(vq, &b->req)) > 0) {
			budget--;
			r = serve_chain(b, vq, role);
			if (r < 0)
				break;
			if (role != BALLOON_ROLE_STATS)
				virtq_push(vq, b->req.head, 0);
		}
		if (r < 0) {
			virtio_mmio_set_broken(&b->mmio);
			return;
		}
		if (!budget) {
			balloon_kick(b);
			break;
		}
	} while (virtq_enable_notify(vq));
	virtio_mmio_notify_used(&b->mmio, vq);
}

static void balloon_kick_handler(int fd, uint32_t revents, void *opaque)
{
	struct virtio_balloon *b = opaque;
	uint64_t count;

	if (read(fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
		return;
	pthread_mutex_lock(&b->lock);
	for (unsigned int q = 0; q < BALLOON_NR_QUEUES && balloon_usable(b); q++)
		balloon_process(b, q);
	pthread_mutex_unlock(&b->lock);
}

void balloon_kick(struct virtio_balloon *b)
{
	uint64_t one = 1;

	if (write(b->kick_fd, &one, sizeof(one)) < 0)
		log_debug("virtio-balloon: kick: %m");
}

static void balloon_queue_notify(struct virtio_mmio *m, uint32_t q)
{
	(void)q;
	balloon_kick(to_balloon(m));
}

static int balloon_activate(struct virtio_mmio *m)
{
	struct virtio_balloon *b = to_balloon(m);

	pthread_mutex_lock(&b->lock);
	balloon_roles(m->driver_features, b->roles);
	b->running = true;
	pthread_mutex_unlock(&b->lock);
	balloon_kick(b);
	return 0;
}

static void balloon_reset(struct virtio_mmio *m)
{
	struct virtio_balloon *b = to_balloon(m);

	pthread_mutex_lock(&b->lock);
	b->running = false;
	b->stats_held = false;
	balloon_roles(0, b->roles);
	pthread_mutex_unlock(&b->lock);
}

static void balloon_config_read(struct virtio_mmio *m, uint32_t off, void *data, uint32_t len)
{
	struct virtio_balloon *b = to_balloon(m);
	struct balloon_config cfg = {.num_pages = ATOMIC_LOAD(&b->num_pages), .actual = ATOMIC_LOAD(&b->actual)};

	memcpy(data, (const uint8_t *)&cfg + off, len);
}

/* Only actual is the driver's to write (num_pages is the device's;
 * poison_val and the hint command id belong to features not offered). */
static void balloon_config_write(struct virtio_mmio *m, uint32_t off, const void *data, uint32_t len)
{
	struct virtio_balloon *b = to_balloon(m);
	struct balloon_config cfg = {.actual = ATOMIC_LOAD(&b->actual)};

	memcpy((uint8_t *)&cfg + off, data, len);
	ATOMIC_STORE(&b->actual, cfg.actual);
}

static const struct virtio_dev_ops balloon_ops = {
    .config_read = balloon_config_read,
    .config_write = balloon_config_write,
    .activate = balloon_activate,
    .queue_notify = balloon_queue_notify,
    .reset = balloon_reset,
};

static int balloon_setup(struct virtio_balloon *b, const struct guest_mem *mem)
{
	struct virtio_mmio_info info = {
	    .device_id = VIRTIO_ID_BALLOON,
	    .nr_queues = BALLOON_NR_QUEUES,
	    .queue_max = BALLOON_QUEUE_SIZE,
	    .features = VIRTIO_BIT(VIRTIO_BALLOON_F_STATS_VQ) | VIRTIO_BIT(VIRTIO_BALLOON_F_DEFLATE_ON_OOM) |
	                VIRTIO_BIT(VIRTIO_BALLOON_F_PAGE_REPORTING) | VIRTIO_BIT(VIRTIO_F_RING_EVENT_IDX) |
	                VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC),
	    .config_size = sizeof(struct balloon_config),
	};
	int r;

	r = virtio_mmio_init(&b->mmio, mem, &info, &balloon_ops, b);
	if (r < 0)
		return err_setsys(r, "virtio-balloon transport");
	b->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (b->kick_fd < 0)
		return err_setsys(-errno, "virtio-balloon eventfd");
	r = event_loop_add(b->loop, b->kick_fd, EPOLLIN, balloon_kick_handler, b);
	if (r < 0)
		return err_setsys(r, "virtio-balloon: watching its eventfd");
	b->kick_watched = true;
	return 0;
}

int virtio_balloon_new(const struct guest_mem *mem, struct event_loop *loop, const struct virtio_balloon_opts *opts,
                       struct virtio_balloon **ret)
{
	struct virtio_balloon *b = calloc(1, sizeof(*b));
	int r;

	if (!b)
		return -ENOMEM;
	b->loop = loop;
	b->kick_fd = -1;
	if (opts)
		b->opts = *opts;
	r = pthread_mutex_init(&b->lock, NULL);
	if (r) {
		free(b);
		return -r;
	}
	r = balloon_setup(b, mem);
	if (r < 0) {
		virtio_balloon_free(b);
		return r;
	}
	*ret = b;
	return 0;
}

struct virtio_mmio *virtio_balloon_mmio(struct virtio_balloon *b)
{
	return &b->mmio;
}

void virtio_balloon_set_target(struct virtio_balloon *b, uint32_t pages)
{
	ATOMIC_STORE(&b->num_pages, pages);
	/* A driver not yet running reads num_pages when it starts. */
	if (virtio_mmio_active(&b->mmio))
		virtio_mmio_config_changed(&b->mmio);
}

void virtio_balloon_counters(struct virtio_balloon *b, struct virtio_balloon_counters *ret)
{
	pthread_mutex_lock(&b->lock);
	*ret = b->counters;
	pthread_mutex_unlock(&b->lock);
	ret->target = ATOMIC_LOAD(&b->num_pages);
	ret->actual = ATOMIC_LOAD(&b->actual);
}

void virtio_balloon_free(struct virtio_balloon *b)
{
	if (!b)
		return;
	if (b->kick_watched)
		event_loop_remove(b->loop, b->kick_fd);
	if (b->kick_fd >= 0)
		close(b->kick_fd);
	virtio_mmio_destroy(&b->mmio);
	pthread_mutex_destroy(&b->lock);
	free(b);
}
