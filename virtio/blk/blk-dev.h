/* SPDX-License-Identifier: Apache-2.0 */
/* The virtio-blk device's state, shared by blk.c (requests, transport) and
 * blk-state.c (snapshots, media attached later). Internal to virtio/blk. */
#ifndef KVRUN_VIRTIO_BLK_BLK_DEV_H
#define KVRUN_VIRTIO_BLK_BLK_DEV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "virtio/blk/backend.h"
#include "virtio/blk/blk.h"
#include "virtio/mmio.h"

/* Feature bits (5.2.3). */
#define VIRTIO_BLK_F_SEG_MAX 2
#define VIRTIO_BLK_F_RO 5
#define VIRTIO_BLK_F_BLK_SIZE 6
#define VIRTIO_BLK_F_FLUSH 9

/* Request types and status (5.2.6). */
#define VIRTIO_BLK_T_IN 0
#define VIRTIO_BLK_T_OUT 1
#define VIRTIO_BLK_T_FLUSH 4
#define VIRTIO_BLK_T_GET_ID 8
#define VIRTIO_BLK_S_OK 0
#define VIRTIO_BLK_S_IOERR 1
#define VIRTIO_BLK_S_UNSUPP 2

#define SECTOR_SIZE 512ULL
/* How long the worker watches the ring after it emptied it (blk_poll). */
#define BLK_POLL_NS 50000ULL
/* ... after a pass of at most this many requests. */
#define BLK_POLL_MAX_PASS 4
#define BLK_QUEUE_SIZE 256

struct virtio_blk_config {
	uint64_t capacity;
	uint32_t size_max;
	uint32_t seg_max;
	uint16_t cylinders;
	uint8_t heads;
	uint8_t sectors;
	uint32_t blk_size;
	uint8_t physical_block_exp;
	uint8_t alignment_offset;
	uint16_t min_io_size;
	uint32_t opt_io_size;
	uint8_t writeback;
	uint8_t unused0;
	uint16_t num_queues;
} __attribute__((packed));

struct virtio_blk_outhdr {
	uint32_t type;
	uint32_t reserved;
	uint64_t sector;
};

/* Merging (blk-io.c): at most this many requests, and buffers, per I/O. */
#define BLK_MERGE_MAX 32
#define BLK_MERGE_SEGS 1024
/* A transfer of at least this many bytes is cut in two halves moved at
 * once, the second by the disk's helper thread (backends that allow it):
 * one thread copying megabytes through the page cache is the limit of a
 * sequential stream. $KVRUN_BLK_SPLIT_KIB sets it, 0 for never. */
#define BLK_SPLIT_MIN (512 * 1024)

/* The second half of a split transfer (blk-io.c blk_rw_split()). */
struct blk_helper {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t go, done;
	bool busy; /* a job is set and not finished */
	bool quit;
	bool write;
	struct iovec iov[BLK_MERGE_SEGS];
	unsigned int n;
	size_t len;
	uint64_t off;
	int result;
};

/* A parsed request: data buffers and where the status byte goes. */
struct blk_io {
	struct iovec data[VIRTQ_MAX_SEGS];
	unsigned int nr_data;
	size_t len;
	uint8_t *status;
};

/* Adjacent IN or OUT requests of one pass, done as one transfer. */
struct blk_run_req {
	uint16_t head;
	uint8_t *status;
	unsigned int seg, nseg; /* its buffers in blk_run.seg */
	size_t len;
	uint64_t sector;
	bool failed;
};

struct blk_run {
	unsigned int n; /* requests */
	bool write;
	uint64_t sector; /* the first's */
	size_t len; /* bytes of them all */
	unsigned int nseg;
	struct iovec seg[BLK_MERGE_SEGS];
	struct blk_run_req req[BLK_MERGE_MAX];
};

struct virtio_blk {
	struct virtio_mmio mmio;
	struct blk_backend *backend;
	bool offer_ro; /* VIRTIO_BLK_F_RO offered (fixed at creation) */
	struct virtio_blk_config config;
	char id[VIRTIO_BLK_ID_BYTES];
	/* Worker: sleeps on kick_fd and on the guest's doorbell (an
	 * ioeventfd the worker reads itself, so that a kick wakes one thread,
	 * not the event loop and then the worker); lock is held while it
	 * drains the queue, so that reset waits for the batch in flight. */
	pthread_t worker;
	bool worker_started;
	int kick_fd;
	int doorbell_fd; /* atomic; -1: kicks come through queue_notify */
	uint64_t poll_ns; /* blk_poll()'s window */
	size_t split_min; /* BLK_SPLIT_MIN or its override; 0: never */
	struct blk_helper *helper; /* NULL: transfers are not split */
	pthread_mutex_t lock;
	/* Threads in blk_lock(): the worker ends its batch and lets them in
	 * first, so that a driver keeping the queue full cannot starve a
	 * reset or a pause (an unfair mutex would let the worker take it
	 * back every time). */
	unsigned int lock_waiters; /* atomic */
	pthread_cond_t lock_turn;
	bool running; /* under lock: activated and not reset */
	bool stop; /* atomic */
	bool paused; /* under lock: virtio_blk_pause(), no request is touched */
	struct virtq_req req;
	/* Scratch of the worker (blk-io.c). */
	struct blk_io io;
	struct blk_run run;
};

/* Pop and serve the queue's requests (blk-io.c), merging adjacent
 * transfers, at most max of them and none once another thread waits for
 * the device lock; *ret_n: the requests taken. Returns 0, or -EIO /
 * -EINVAL when the driver broke the queue. */
int blk_pass(struct virtio_blk *b, struct virtq *vq, unsigned int max, unsigned int *ret_n);

/* The helper thread of a backend that allows concurrent calls, or
 * concurrent reads (made with the worker, before the guest runs, or when
 * an empty disk gets its media, under the device lock); none again when
 * there is one; 0 or -errno. */
int blk_helper_start(struct virtio_blk *b);
void blk_helper_stop(struct virtio_blk *b);

/* Whether a blk_lock() caller waits for the worker to let go. */
static inline bool blk_lock_wanted(struct virtio_blk *b)
{
	return __atomic_load_n(&b->lock_waiters, __ATOMIC_SEQ_CST) > 0;
}

/* Ring the worker's doorbell. */
void blk_kick(struct virtio_blk *b);

/* Take and release b->lock from any thread but the worker, which yields
 * it to them between requests. */
void blk_lock(struct virtio_blk *b);
void blk_unlock(struct virtio_blk *b);

#endif
