/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The virtio-fs device: queue 0 is the high-priority queue (FORGET,
 * BATCH_FORGET, INTERRUPT), queues 1..n the request queues. A pool of
 * workers takes chains off any queue (high priority first), runs each with
 * the FUSE server outside the device lock, and returns it with the reply
 * length. The notify path (vCPU or event loop) only sets a flag and wakes
 * a worker. The device's life (made, attached, detached, saved, freed)
 * is slot.c's.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "virtio/fs/fs-int.h"

/* A chain whose reply comes later (a waiting lock): where it goes. */
struct fs_ticket {
	struct virtio_fs *fs;
	unsigned int q, nout;
	uint16_t head;
	struct iovec out[];
};

static struct virtio_fs *to_fs(struct virtio_mmio *m)
{
	return m->dev;
}

void virtio_fs_opts_default(struct virtio_fs_opts *o)
{
	memset(o, 0, sizeof(*o));
	fs_server_opts_default(&o->server);
	o->request_queues = 1;
	o->workers = 4;
}

/* Under the lock: the next chain of any queue, the high-priority queue
 * first, then the request queues in turn. 1 and *ret_q, 0 when all are
 * empty, -EIO when the driver broke a queue. */
static int pop_any(struct virtio_fs *fs, struct virtq_req *req, unsigned int *ret_q)
{
	int r = virtq_pop(&fs->mmio.vqs[0], req);

	if (r != 0) {
		*ret_q = 0;
		return r;
	}
	for (unsigned int i = 0; i < fs->nqueues - 1; i++) {
		unsigned int q = 1 + (fs->next_q + i) % (fs->nqueues - 1);

		r = virtq_pop(&fs->mmio.vqs[q], req);
		if (r != 0) {
			fs->next_q = q % (fs->nqueues - 1);
			*ret_q = q;
			return r;
		}
	}
	return 0;
}

/* Under the lock, with every queue empty: ask for kicks again; true when
 * chains came in meanwhile. */
static bool rearm(struct virtio_fs *fs)
{
	bool more = false;

	for (unsigned int q = 0; q < fs->nqueues; q++)
		more |= virtq_enable_notify(&fs->mmio.vqs[q]);
	return more;
}

static bool any_avail(const struct virtio_fs *fs)
{
	for (unsigned int q = 0; q < fs->nqueues; q++)
		if (virtq_has_avail(&fs->mmio.vqs[q]))
			return true;
	return false;
}

static bool can_work(const struct virtio_fs *fs)
{
	return fs->server && fs->running && !fs->paused && !fs->holding && fs->kicked && virtio_mmio_active(&fs->mmio);
}

/* The server keeps the request: note where its reply goes (the guest's
 * buffers stay put). It still counts as in flight. */
static void *fs_defer(void *opaque)
{
	struct fs_dev_worker *wk = opaque;
	struct fs_ticket *t = malloc(sizeof(*t) + wk->req.nr_in * sizeof(struct iovec));

	if (!t)
		return NULL;
	t->fs = wk->fs;
	t->q = wk->q;
	t->head = wk->req.head;
	t->nout = wk->req.nr_in;
	memcpy(t->out, wk->req.iov + wk->req.nr_out, t->nout * sizeof(struct iovec));
	return t;
}

/* On the server's thread: the deferred reply, returned unless a reset
 * came first. */
static void fs_complete(void *token, const void *reply, size_t len)
{
	struct fs_ticket *t = token;
	struct virtio_fs *fs = t->fs;

	pthread_mutex_lock(&fs->lock);
	if (fs->running) {
		len = iov_from_buf(t->out, t->nout, 0, reply, len);
		virtq_push(&fs->mmio.vqs[t->q], t->head, (uint32_t)len);
		virtio_mmio_notify_used(&fs->mmio, &fs->mmio.vqs[t->q]);
	}
	if (--fs->inflight == 0)
		pthread_cond_broadcast(&fs->idle);
	pthread_mutex_unlock(&fs->lock);
	free(t);
}

/* Under the lock, after a request or a reset: the guest's unmount (the
 * server no longer mounted) is told once. The last request to end sees
 * how its session ended up. */
static void note_session(struct virtio_fs *fs, bool mounted)
{
	if (fs->session && !mounted && fs->unmounted)
		fs->unmounted(fs->unmounted_opaque);
	fs->session = mounted;
}

/* One chain: run it unlocked, return it locked. */
static void run_one(struct fs_dev_worker *wk, unsigned int q)
{
	struct virtio_fs *fs = wk->fs;
	struct virtq_req *req = &wk->req;
	struct fs_request fr = {.in = req->iov,
	                        .nin = req->nr_out,
	                        .out = req->iov + req->nr_out,
	                        .nout = req->nr_in,
	                        .defer = fs_defer,
	                        .complete = fs_complete,
	                        .opaque = wk};
	size_t len;

	fs->inflight++;
	/* Another worker takes the next chain meanwhile, if there is one (a
	 * driver with one request at a time keeps one worker, not two).
	 * Otherwise ask for kicks again now: the next chain, which may be the
	 * one this request waits for (an unlock), must wake a worker. */
	if (any_avail(fs) || rearm(fs))
		pthread_cond_signal(&fs->work);
	pthread_mutex_unlock(&fs->lock);
	wk->q = q;
	len = fs_server_run(fs->server, wk->w, &fr);
	pthread_mutex_lock(&fs->lock);
	if (len == FS_DEFERRED)
		return; /* fs_complete() returns it */
	if (fs->running) {
		virtq_push(&fs->mmio.vqs[q], req->head, (uint32_t)len);
		virtio_mmio_notify_used(&fs->mmio, &fs->mmio.vqs[q]);
	}
	note_session(fs, fs_server_mounted(fs->server));
	if (--fs->inflight == 0)
		pthread_cond_broadcast(&fs->idle);
}

/* In the first worker of a prestarted device: the server for o and each
 * worker's state for it, into fs->pending_server (or pending_err and
 * pending_msg). */
static void make_server(struct virtio_fs *fs, const struct fs_server_opts *o)
{
	struct fs_server *srv = NULL;
	int r;

	err_clear();
	r = fs_server_new(o, &srv);
	for (unsigned int i = 0; r >= 0 && i < fs->nworkers; i++)
		r = fs_worker_new(srv, &fs->workers[i].w);
	if (r < 0) {
		snprintf(fs->pending_msg, sizeof(fs->pending_msg), "%s", err_msg()[0] ? err_msg() : strerror(-r));
		for (unsigned int i = 0; i < fs->nworkers; i++) {
			fs_worker_free(fs->workers[i].w);
			fs->workers[i].w = NULL;
		}
		fs_server_free(srv);
		srv = NULL;
	}
	fs->pending_err = r < 0 ? r : 0;
	fs->pending_server = srv;
}

static void *worker_main(void *arg)
{
	struct fs_dev_worker *wk = arg;
	struct virtio_fs *fs = wk->fs;
	unsigned int q;
	int r;

	pthread_setname_np(pthread_self(), VIRTIO_FS_WORKER_NAME);
	r = wk->init ? wk->init(wk->init_opaque) : 0;
	/* This thread's own umask (the client applied its own already):
	 * CLONE_FS unshared, so the rest of the process keeps its umask. */
	if (r >= 0 && unshare(CLONE_FS) == 0)
		umask(0);
	pthread_mutex_lock(&fs->lock);
	wk->init_err = r;
	wk->ready = true;
	pthread_cond_broadcast(&fs->ready);
	if (r < 0) {
		pthread_mutex_unlock(&fs->lock);
		return NULL;
	}
	for (;;) {
		while (!fs->stop && !can_work(fs) && !(fs->pending && wk == fs->workers))
			pthread_cond_wait(&fs->work, &fs->lock);
		if (fs->stop)
			break;
		if (fs->pending && wk == fs->workers) {
			const struct fs_server_opts *o = fs->pending;

			fs->pending = NULL;
			pthread_mutex_unlock(&fs->lock);
			make_server(fs, o);
			pthread_mutex_lock(&fs->lock);
			fs->pending_done = true;
			pthread_cond_broadcast(&fs->ready);
			continue;
		}
		r = pop_any(fs, &wk->req, &q);
		if (r > 0) {
			run_one(wk, q);
		} else if (r < 0) {
			virtio_mmio_set_broken(&fs->mmio);
			fs->kicked = false;
		} else if (!rearm(fs)) {
			fs->kicked = false;
		}
	}
	pthread_mutex_unlock(&fs->lock);
	return NULL;
}

static void fs_wake(struct virtio_fs *fs)
{
	pthread_mutex_lock(&fs->lock);
	fs->kicked = true;
	pthread_cond_signal(&fs->work);
	pthread_mutex_unlock(&fs->lock);
}

static void fs_queue_notify(struct virtio_mmio *m, uint32_t q)
{
	fs_wake(to_fs(m));
}

static int fs_activate(struct virtio_mmio *m)
{
	struct virtio_fs *fs = to_fs(m);

	pthread_mutex_lock(&fs->lock);
	fs->running = true;
	pthread_mutex_unlock(&fs->lock);
	/* Chains may have been queued before DRIVER_OK. */
	fs_wake(fs);
	return 0;
}

/* Under the lock: until no request runs. */
void fs_dev_wait_idle(struct virtio_fs *fs)
{
	while (fs->inflight)
		pthread_cond_wait(&fs->idle, &fs->lock);
}

static void fs_reset(struct virtio_mmio *m)
{
	struct virtio_fs *fs = to_fs(m);
	struct fs_server *server;

	pthread_mutex_lock(&fs->admin);
	pthread_mutex_lock(&fs->lock);
	server = fs->server;
	pthread_mutex_unlock(&fs->lock);
	/* A SETLKW waiting for a lock would hold the reset forever. */
	if (server)
		fs_server_cancel_waits(server, true);
	pthread_mutex_lock(&fs->lock);
	fs->running = false;
	fs->kicked = false;
	fs_dev_wait_idle(fs);
	pthread_mutex_unlock(&fs->lock);
	/* The driver starts again with INIT: nothing it knew stays open. */
	if (server) {
		fs_server_reset(server);
		fs_server_cancel_waits(server, false);
	}
	pthread_mutex_lock(&fs->lock);
	note_session(fs, false);
	pthread_mutex_unlock(&fs->lock);
	pthread_mutex_unlock(&fs->admin);
}

static void fs_config_read(struct virtio_mmio *m, uint32_t off, void *data, uint32_t len)
{
	memcpy(data, (const uint8_t *)&to_fs(m)->config + off, len);
}

static const struct virtio_dev_ops fs_ops = {
    .config_read = fs_config_read,
    .activate = fs_activate,
    .queue_notify = fs_queue_notify,
    .reset = fs_reset,
};

/* Stop and join the workers (none may be running a request). */
void fs_dev_stop_workers(struct virtio_fs *fs)
{
	pthread_mutex_lock(&fs->lock);
	fs->stop = true;
	pthread_cond_broadcast(&fs->work);
	pthread_mutex_unlock(&fs->lock);
	for (unsigned int i = 0; fs->workers && i < fs->nworkers; i++) {
		if (fs->workers[i].started)
			pthread_join(fs->workers[i].thread, NULL);
		fs_worker_free(fs->workers[i].w);
	}
	free(fs->workers);
	fs->workers = NULL;
	pthread_mutex_lock(&fs->lock);
	fs->stop = false;
	pthread_mutex_unlock(&fs->lock);
}

/* Each worker past its thread_init (fs_server_opts): what it set up is
 * there before the device is attached. The first failure, if any. */
static int wait_ready(struct virtio_fs *fs)
{
	int r = 0;

	pthread_mutex_lock(&fs->lock);
	for (unsigned int i = 0; i < fs->nworkers; i++) {
		struct fs_dev_worker *wk = &fs->workers[i];

		while (wk->started && !wk->ready)
			pthread_cond_wait(&fs->ready, &fs->lock);
		if (r >= 0 && wk->init_err < 0)
			r = err_set(wk->init_err, "virtio-fs '%s': worker thread setup: %s", fs->tag,
			            strerror(-wk->init_err));
	}
	pthread_mutex_unlock(&fs->lock);
	return r;
}

int fs_dev_start_workers(struct virtio_fs *fs, struct fs_server *server, const struct fs_server_opts *o)
{
	int r;

	fs->workers = calloc(fs->nworkers, sizeof(*fs->workers));
	if (!fs->workers)
		return -ENOMEM;
	for (unsigned int i = 0; i < fs->nworkers; i++) {
		struct fs_dev_worker *wk = &fs->workers[i];

		wk->fs = fs;
		wk->init = o->thread_init;
		wk->init_opaque = o->thread_opaque;
		/* Prestarted (no server yet): virtio_fs_attach() gives it one. */
		r = server ? fs_worker_new(server, &wk->w) : 0;
		if (r < 0)
			return r;
		r = pthread_create(&wk->thread, NULL, worker_main, wk);
		if (r)
			return err_set(-r, "virtio-fs '%s': worker thread", fs->tag);
		wk->started = true;
	}
	return wait_ready(fs);
}

/* The transport and its config space: a device without a server yet. */
int fs_dev_start(struct virtio_fs *fs, const struct guest_mem *mem, const struct virtio_fs_opts *o)
{
	struct virtio_mmio_info info = {
	    .device_id = VIRTIO_ID_FS,
	    .nr_queues = 1 + o->request_queues,
	    .queue_max = VIRTIO_FS_QUEUE_SIZE,
	    .features = VIRTIO_BIT(VIRTIO_F_RING_EVENT_IDX) | VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC),
	    .config_size = sizeof(struct virtio_fs_config),
	};
	int r;

	snprintf(fs->tag, sizeof(fs->tag), "%s", o->tag);
	/* 5.11.4: UTF-8, NUL-padded, no NUL when 36 bytes long. */
	memcpy(fs->config.tag, o->tag, strlen(o->tag));
	fs->config.num_request_queues = o->request_queues;
	fs->nqueues = info.nr_queues;
	r = virtio_mmio_init(&fs->mmio, mem, &info, &fs_ops, fs);
	if (r < 0)
		return err_set(r, "virtio-fs '%s': transport", o->tag);
	return 0;
}

const char *virtio_fs_tag(const struct virtio_fs *fs)
{
	return fs->tag;
}

struct virtio_mmio *virtio_fs_mmio(struct virtio_fs *fs)
{
	return &fs->mmio;
}

struct fs_server *virtio_fs_server(struct virtio_fs *fs)
{
	return fs->server;
}

void virtio_fs_pause(struct virtio_fs *fs, bool paused)
{
	pthread_mutex_lock(&fs->lock);
	fs->paused = paused;
	if (paused)
		fs_dev_wait_idle(fs);
	else
		pthread_cond_broadcast(&fs->work);
	pthread_mutex_unlock(&fs->lock);
}
