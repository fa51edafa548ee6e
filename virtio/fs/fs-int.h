/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Between the virtio-fs device's engine (fs.c: queues, workers, reset,
 * pause) and its life (slot.c: made, attached, detached, saved, freed);
 * nothing outside virtio/fs.
 */
#ifndef KVRUN_VIRTIO_FS_FS_INT_H
#define KVRUN_VIRTIO_FS_FS_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "virtio/fs/fs.h"
#include "virtio/fs/fuse-server.h"
#include "virtio/mmio.h"
#include "virtio/virtqueue.h"

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

struct virtio_fs {
	struct virtio_mmio mmio;
	/* The server's life: attach, detach, reset and free take this first
	 * (a reset comes from a vCPU, a detach from the runtime's thread). */
	pthread_mutex_t admin;
	struct fs_server *server;
	struct virtio_fs_config config;
	char tag[VIRTIO_FS_TAG_MAX + 1];
	pthread_mutex_t lock; /* the queues and the flags below */
	pthread_cond_t work; /* kicked, activated, resumed or stopping */
	pthread_cond_t idle; /* inflight dropped to 0 */
	pthread_cond_t ready; /* a worker is past its thread_init */
	bool running; /* activated and not reset */
	bool paused, stop;
	bool holding; /* a detach waits for the requests in flight: none starts */
	bool prestarted; /* the workers outlive a detach (virtio_fs_prestart()) */
	bool session; /* the server was mounted after the last request that ended */
	void (*unmounted)(void *opaque); /* see virtio_fs_set_unmount_notify() */
	void *unmounted_opaque;
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

/* The transport and its config space (tag, queues): a device without a
 * server yet. */
int fs_dev_start(struct virtio_fs *fs, const struct guest_mem *mem, const struct virtio_fs_opts *o);

/* Start fs->nworkers workers, each running o->thread_init first, with
 * their state for server (NULL: prestarted, the first makes it at the
 * attach); the first setup failure, once all are past it. */
int fs_dev_start_workers(struct virtio_fs *fs, struct fs_server *server, const struct fs_server_opts *o);

/* Stop and join the workers and free their state (no request running). */
void fs_dev_stop_workers(struct virtio_fs *fs);

/* Under fs->lock: until no request runs. */
void fs_dev_wait_idle(struct virtio_fs *fs);

#endif
