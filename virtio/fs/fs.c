/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The virtio-fs device: queue 0 is the high-priority queue (FORGET,
 * BATCH_FORGET, INTERRUPT), queues 1..n the request queues. A pool of
 * workers takes chains off any queue (high priority first), runs each with
 * the FUSE server outside the device lock, and returns it with the reply
 * length. The notify path (vCPU or event loop) only sets a flag and wakes
 * a worker.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/error.h"
#include "common/log.h"
#include "virtio/fs/fs.h"
#include "virtio/mmio-state.h"

struct virtio_fs_config {
	uint8_t tag[VIRTIO_FS_TAG_MAX];
	uint32_t num_request_queues;
} __attribute__((packed));

struct fs_dev_worker {
	struct virtio_fs *fs;
	struct fs_worker *w;
	pthread_t thread;
	bool started;
	int (*init)(void *opaque); /* fs_server_opts' thread_init */
	void *init_opaque;
	bool ready; /* past init, whose result is init_err */
	int init_err;
	unsigned int q; /* of the chain in req */
	struct virtq_req req;
};

/* A chain whose reply comes later (a waiting lock): where it goes. */
struct fs_ticket {
	struct virtio_fs *fs;
	unsigned int q, nout;
	uint16_t head;
	struct iovec out[];
};

struct virtio_fs {
	struct virtio_mmio mmio;
	struct fs_server *server;
	struct virtio_fs_config config;
	char tag[VIRTIO_FS_TAG_MAX + 1];
	pthread_mutex_t lock; /* the queues and the flags below */
	pthread_cond_t work; /* kicked, activated, resumed or stopping */
	pthread_cond_t idle; /* inflight dropped to 0 */
	pthread_cond_t ready; /* a worker is past its thread_init */
	bool running; /* activated and not reset */
	bool paused, stop;
	bool kicked; /* chains may be waiting */
	unsigned int inflight; /* requests between pop and push */
	unsigned int nqueues, next_q;
	unsigned int nworkers;
	struct fs_dev_worker *workers;
	/* virtio_fs_attach() of a prestarted device: the server the first
	 * worker makes with its own credentials (a jail's file server
	 * capabilities, which the attaching thread may lack), and how it
	 * went. */
	const struct fs_server_opts *pending;
	struct fs_server *pending_server;
	bool pending_done;
	int pending_err;
	char pending_msg[256];
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
	return fs->server && fs->running && !fs->paused && fs->kicked && virtio_mmio_active(&fs->mmio);
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
static void wait_idle(struct virtio_fs *fs)
{
	while (fs->inflight)
		pthread_cond_wait(&fs->idle, &fs->lock);
}

static void fs_reset(struct virtio_mmio *m)
{
	struct virtio_fs *fs = to_fs(m);
	struct fs_server *server;

	pthread_mutex_lock(&fs->lock);
	server = fs->server;
	pthread_mutex_unlock(&fs->lock);
	/* A SETLKW waiting for a lock would hold the reset forever. */
	if (server)
		fs_server_cancel_waits(server, true);
	pthread_mutex_lock(&fs->lock);
	fs->running = false;
	fs->kicked = false;
	wait_idle(fs);
	pthread_mutex_unlock(&fs->lock);
	/* The driver starts again with INIT: nothing it knew stays open. */
	if (server) {
		fs_server_reset(server);
		fs_server_cancel_waits(server, false);
	}
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

static int check_workers(const char *tag, uint32_t workers)
{
	if (workers < 1 || workers > VIRTIO_FS_MAX_WORKERS)
		return err_set(-EINVAL, "virtio-fs '%s': %u workers (1 to %d)", tag, workers, VIRTIO_FS_MAX_WORKERS);
	return 0;
}

static int check_opts(const struct virtio_fs_opts *o)
{
	size_t len = o->tag ? strlen(o->tag) : 0;

	if (len == 0 || len > VIRTIO_FS_TAG_MAX)
		return err_set(-EINVAL, "virtio-fs: the tag must be 1 to %d bytes, got '%s'", VIRTIO_FS_TAG_MAX,
		               o->tag ? o->tag : "");
	if (o->request_queues < 1 || o->request_queues > VIRTIO_FS_MAX_REQUEST_QUEUES)
		return err_set(-EINVAL, "virtio-fs '%s': %u request queues (1 to %d)", o->tag, o->request_queues,
		               VIRTIO_FS_MAX_REQUEST_QUEUES);
	return 0;
}

/* Stop and join the workers (none may be running a request). */
static void stop_workers(struct virtio_fs *fs)
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

static int start_workers(struct virtio_fs *fs, struct fs_server *server, const struct fs_server_opts *o)
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
static int fs_start(struct virtio_fs *fs, const struct guest_mem *mem, const struct virtio_fs_opts *o)
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

/* The first worker makes the server (make_server()); it is then the
 * device's. */
static int attach_prestarted(struct virtio_fs *fs, const struct fs_server_opts *server)
{
	int r;

	pthread_mutex_lock(&fs->lock);
	fs->pending = server;
	fs->pending_done = false;
	pthread_cond_broadcast(&fs->work);
	while (!fs->pending_done)
		pthread_cond_wait(&fs->ready, &fs->lock);
	r = fs->pending_err;
	if (r >= 0) {
		/* Chains queued before (there should be none) are taken now. */
		fs->server = TAKE_PTR(fs->pending_server);
		fs->kicked = true;
		pthread_cond_broadcast(&fs->work);
	}
	pthread_mutex_unlock(&fs->lock);
	return r < 0 ? err_set(r, "virtio-fs '%s': %s", fs->tag, fs->pending_msg) : 0;
}

int virtio_fs_attach(struct virtio_fs *fs, const struct fs_server_opts *server, uint32_t workers)
{
	struct fs_server *s;
	int r;

	r = check_workers(fs->tag, workers);
	if (r < 0)
		return r;
	if (fs->server)
		return err_set(-EBUSY, "virtio-fs '%s': it shares %s already", fs->tag, fs_server_root(fs->server));
	if (fs->workers)
		return attach_prestarted(fs, server);
	r = fs_server_new(server, &s);
	if (r < 0)
		return err_prefix(r, "virtio-fs '%s'", fs->tag);
	fs->nworkers = workers;
	r = start_workers(fs, s, server);
	if (r < 0) {
		stop_workers(fs);
		fs_server_free(s);
		return r;
	}
	/* Chains the driver queued before (it should not: nothing mounted
	 * the tag yet) are taken now. */
	pthread_mutex_lock(&fs->lock);
	fs->server = s;
	fs->kicked = true;
	pthread_cond_broadcast(&fs->work);
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

int virtio_fs_prestart(struct virtio_fs *fs, uint32_t workers, int (*thread_init)(void *opaque), void *opaque)
{
	struct fs_server_opts o = {.thread_init = thread_init, .thread_opaque = opaque};
	int r = check_workers(fs->tag, workers);

	if (r < 0)
		return r;
	if (fs->server || fs->workers)
		return err_set(-EBUSY, "virtio-fs '%s': its workers are there already", fs->tag);
	fs->nworkers = workers;
	r = start_workers(fs, NULL, &o);
	if (r < 0)
		stop_workers(fs);
	return r;
}

bool virtio_fs_attached(struct virtio_fs *fs)
{
	bool r;

	pthread_mutex_lock(&fs->lock);
	r = fs->server != NULL;
	pthread_mutex_unlock(&fs->lock);
	return r;
}

const char *virtio_fs_tag(const struct virtio_fs *fs)
{
	return fs->tag;
}

int virtio_fs_new_detached(const struct guest_mem *mem, const struct virtio_fs_opts *opts, struct virtio_fs **ret)
{
	struct virtio_fs *fs;
	int r;

	r = check_opts(opts);
	if (r < 0)
		return r;
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	pthread_mutex_init(&fs->lock, NULL);
	pthread_cond_init(&fs->work, NULL);
	pthread_cond_init(&fs->idle, NULL);
	pthread_cond_init(&fs->ready, NULL);
	r = fs_start(fs, mem, opts);
	if (r < 0) {
		virtio_fs_free(fs);
		return r;
	}
	*ret = fs;
	return 0;
}

int virtio_fs_new(const struct guest_mem *mem, const struct virtio_fs_opts *opts, struct virtio_fs **ret)
{
	struct virtio_fs *fs;
	int r;

	r = check_opts(opts);
	if (r >= 0)
		r = check_workers(opts->tag, opts->workers);
	if (r >= 0)
		r = virtio_fs_new_detached(mem, opts, &fs);
	if (r < 0)
		return r;
	r = virtio_fs_attach(fs, &opts->server, opts->workers);
	if (r < 0) {
		virtio_fs_free(fs);
		return r;
	}
	*ret = fs;
	return 0;
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
		wait_idle(fs);
	else
		pthread_cond_broadcast(&fs->work);
	pthread_mutex_unlock(&fs->lock);
}

#define FS_STATE_MAGIC 0x31534656u /* "VFS1" */

/* A detached device's state besides the transport: what it was made
 * with, which the restoring runtime must make again. */
struct fs_state {
	uint32_t magic;
	uint32_t request_queues;
	char tag[VIRTIO_FS_TAG_MAX];
	uint8_t pad[4];
};

int virtio_fs_state_save(void *opaque, struct snap_buf *out)
{
	struct virtio_fs *fs = opaque;
	struct fs_state st;

	if (virtio_fs_attached(fs))
		return err_set(-EOPNOTSUPP,
		               "virtio-fs '%s' (sharing %s): a VM with a shared directory cannot be saved: the guest's "
		               "open files, locks and looked-up inodes are host descriptors of this process",
		               fs->tag, fs_server_root(fs->server));
	memset(&st, 0, sizeof(st));
	st.magic = FS_STATE_MAGIC;
	st.request_queues = fs->config.num_request_queues;
	memcpy(st.tag, fs->config.tag, sizeof(st.tag));
	snap_buf_put(out, &st, sizeof(st));
	if (out->err)
		return out->err;
	return virtio_mmio_state_save(&fs->mmio, out);
}

int virtio_fs_state_load(void *opaque, const void *data, size_t len)
{
	struct virtio_fs *fs = opaque;
	struct snap_reader rd = {.p = data, .len = len};
	struct fs_state st;

	if (virtio_fs_attached(fs))
		return err_set(-EOPNOTSUPP, "virtio-fs '%s': only a device without a shared directory is restored",
		               fs->tag);
	if (snap_get(&rd, &st, sizeof(st)) < 0)
		return err_set(-EBADMSG, "virtio-fs '%s': state too short", fs->tag);
	if (st.magic != FS_STATE_MAGIC)
		return err_set(-EINVAL, "virtio-fs '%s': not a virtio-fs state", fs->tag);
	if (memcmp(st.tag, fs->config.tag, sizeof(st.tag)) != 0)
		return err_set(-EINVAL, "virtio-fs '%s': saved with the tag '%.*s'", fs->tag, VIRTIO_FS_TAG_MAX,
		               st.tag);
	if (st.request_queues != fs->config.num_request_queues)
		return err_set(-EINVAL, "virtio-fs '%s': saved with %u request queues, this device has %u", fs->tag,
		               st.request_queues, fs->config.num_request_queues);
	return virtio_mmio_state_load_last(&fs->mmio, &rd, "virtio-fs");
}

void virtio_fs_free(struct virtio_fs *fs)
{
	if (!fs)
		return;
	if (fs->server)
		fs_server_cancel_waits(fs->server, true);
	stop_workers(fs);
	if (fs->mmio.ops)
		virtio_mmio_destroy(&fs->mmio);
	fs_server_free(fs->server);
	pthread_cond_destroy(&fs->work);
	pthread_cond_destroy(&fs->idle);
	pthread_cond_destroy(&fs->ready);
	pthread_mutex_destroy(&fs->lock);
	free(fs);
}
