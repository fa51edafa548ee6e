/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A virtio-fs device's life: made with a shared directory or without one
 * (a slot), given one (attach, its workers started then or prestarted),
 * the directory taken away again once the guest has unmounted it
 * (detach: a pod's slot freed for its next app container), saved and
 * restored while it has none, freed. The engine (queues, workers, reset)
 * is fs.c's.
 *
 * A pod's slot: attached to a directory, mounted by the guest (INIT),
 * unmounted (DESTROY), detached (the server and everything it held
 * closed), attached to another directory; its workers stay between
 * attaches when they were prestarted (a jailed process makes no thread
 * that could serve files).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "virtio/fs/fs-int.h"
#include "virtio/mmio-state.h"

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

static int attach_locked(struct virtio_fs *fs, const struct fs_server_opts *server, uint32_t workers)
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
	r = fs_dev_start_workers(fs, s, server);
	if (r < 0) {
		fs_dev_stop_workers(fs);
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

int virtio_fs_attach(struct virtio_fs *fs, const struct fs_server_opts *server, uint32_t workers)
{
	int r;

	pthread_mutex_lock(&fs->admin);
	r = attach_locked(fs, server, workers);
	pthread_mutex_unlock(&fs->admin);
	return r;
}

/* The workers' state for the server goes with it; prestarted workers
 * stay for the next attach, others are stopped (the next attach starts
 * as many as it asks for). No request runs. */
static void drop_workers(struct virtio_fs *fs)
{
	if (!fs->prestarted) {
		fs_dev_stop_workers(fs);
		return;
	}
	for (unsigned int i = 0; i < fs->nworkers; i++) {
		fs_worker_free(fs->workers[i].w);
		fs->workers[i].w = NULL;
	}
}

/* Under the admin lock, with a server: hold the queues until no request
 * runs; true (and the server taken off the device) when the guest has it
 * unmounted then. A request already taken (an INIT) may mount it while we
 * wait; a lock waiting for its owner would hold the wait forever, so
 * waits are cancelled meanwhile (only a session begun since has any). */
static bool take_server(struct virtio_fs *fs, struct fs_server *server)
{
	bool taken;

	pthread_mutex_lock(&fs->lock);
	fs->holding = true;
	pthread_mutex_unlock(&fs->lock);
	fs_server_cancel_waits(server, true);
	pthread_mutex_lock(&fs->lock);
	fs_dev_wait_idle(fs);
	taken = !fs_server_mounted(server);
	if (taken) {
		fs->server = NULL;
		fs->session = false;
	}
	fs->holding = false;
	pthread_cond_broadcast(&fs->work);
	pthread_mutex_unlock(&fs->lock);
	if (!taken)
		fs_server_cancel_waits(server, false);
	return taken;
}

int virtio_fs_detach(struct virtio_fs *fs)
{
	struct fs_server *server;
	char root[256];
	int r = 0;

	pthread_mutex_lock(&fs->admin);
	pthread_mutex_lock(&fs->lock);
	server = fs->server;
	pthread_mutex_unlock(&fs->lock);
	if (server) {
		snprintf(root, sizeof(root), "%s", fs_server_root(server));
		if (fs_server_mounted(server) || !take_server(fs, server))
			r = -EBUSY;
	}
	if (server && r == 0) {
		drop_workers(fs);
		fs_server_free(server);
	}
	pthread_mutex_unlock(&fs->admin);
	if (r < 0)
		return err_set(r, "virtio-fs '%s': the guest has %s mounted", fs->tag, root);
	return 0;
}

void virtio_fs_set_unmount_notify(struct virtio_fs *fs, void (*fn)(void *opaque), void *opaque)
{
	pthread_mutex_lock(&fs->lock);
	fs->unmounted = fn;
	fs->unmounted_opaque = opaque;
	pthread_mutex_unlock(&fs->lock);
}

int virtio_fs_prestart(struct virtio_fs *fs, uint32_t workers, int (*thread_init)(void *opaque), void *opaque)
{
	struct fs_server_opts o = {.thread_init = thread_init, .thread_opaque = opaque};
	int r = check_workers(fs->tag, workers);

	if (r < 0)
		return r;
	pthread_mutex_lock(&fs->admin);
	if (fs->server || fs->workers) {
		pthread_mutex_unlock(&fs->admin);
		return err_set(-EBUSY, "virtio-fs '%s': its workers are there already", fs->tag);
	}
	fs->nworkers = workers;
	r = fs_dev_start_workers(fs, NULL, &o);
	if (r < 0)
		fs_dev_stop_workers(fs);
	fs->prestarted = r >= 0;
	pthread_mutex_unlock(&fs->admin);
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
	pthread_mutex_init(&fs->admin, NULL);
	pthread_mutex_init(&fs->lock, NULL);
	pthread_cond_init(&fs->work, NULL);
	pthread_cond_init(&fs->idle, NULL);
	pthread_cond_init(&fs->ready, NULL);
	r = fs_dev_start(fs, mem, opts);
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
	fs_dev_stop_workers(fs);
	if (fs->mmio.ops)
		virtio_mmio_destroy(&fs->mmio);
	fs_server_free(fs->server);
	pthread_cond_destroy(&fs->work);
	pthread_cond_destroy(&fs->idle);
	pthread_cond_destroy(&fs->ready);
	pthread_mutex_destroy(&fs->lock);
	pthread_mutex_destroy(&fs->admin);
	free(fs);
}
