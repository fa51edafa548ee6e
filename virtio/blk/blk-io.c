/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio-blk requests (5.2.6): parsed from their chains, and read or
 * written with the backend. Within one pass over the queue, IN or OUT
 * requests that continue each other (same direction, the next sector
 * where the previous one ended) are merged into one preadv/pwritev of all
 * their buffers: a driver that queues a sequential stream in small
 * requests costs one system call per run instead of one per request. A
 * merged transfer that fails is done again request by request, so that
 * only the failing ones answer IOERR. Order is kept: a request that cannot
 * join the run (another type, direction or place) first ends it. A large
 * transfer is cut in two halves moved at once, the second by the disk's
 * helper thread (backends whose calls may run concurrently; reads only,
 * for backends whose reads may).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "virtio/blk/blk-dev.h"
#include "vmm/counters.h"

/* Transfer exactly len bytes at off, resuming after short transfers. */
static int blk_rw(struct virtio_blk *b, bool write, const struct iovec *iov, unsigned int n, size_t len, uint64_t off)
{
	struct iovec rest[BLK_MERGE_SEGS];
	size_t done = 0;

	while (done < len) {
		unsigned int nr = iov_slice(iov, n, done, len - done, rest, BLK_MERGE_SEGS, NULL);
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

static void *blk_helper_main(void *arg)
{
	struct virtio_blk *b = arg;
	struct blk_helper *h = b->helper;

	pthread_mutex_lock(&h->lock);
	for (;;) {
		while (!h->busy && !h->quit)
			pthread_cond_wait(&h->go, &h->lock);
		if (h->quit)
			break;
		pthread_mutex_unlock(&h->lock);
		h->result = blk_rw(b, h->write, h->iov, h->n, h->len, h->off);
		pthread_mutex_lock(&h->lock);
		h->busy = false;
		pthread_cond_signal(&h->done);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

int blk_helper_start(struct virtio_blk *b)
{
	struct blk_helper *h;
	int r;

	if (b->helper || !(b->backend->concurrent || b->backend->concurrent_reads) || !b->split_min)
		return 0;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->go, NULL);
	pthread_cond_init(&h->done, NULL);
	b->helper = h;
	r = pthread_create(&h->thread, NULL, blk_helper_main, b);
	if (r) {
		b->helper = NULL;
		pthread_cond_destroy(&h->done);
		pthread_cond_destroy(&h->go);
		pthread_mutex_destroy(&h->lock);
		free(h);
		return -r;
	}
	return 0;
}

void blk_helper_stop(struct virtio_blk *b)
{
	struct blk_helper *h = b->helper;

	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	h->quit = true;
	pthread_cond_signal(&h->go);
	pthread_mutex_unlock(&h->lock);
	pthread_join(h->thread, NULL);
	pthread_cond_destroy(&h->done);
	pthread_cond_destroy(&h->go);
	pthread_mutex_destroy(&h->lock);
	free(h);
	b->helper = NULL;
}

/* blk_rw(), a large transfer in two halves at once: the first here, the
 * second on the helper thread. */
static int blk_rw_split(struct virtio_blk *b, bool write, const struct iovec *iov, unsigned int n, size_t len,
                        uint64_t off)
{
	struct blk_helper *h = b->helper;
	struct iovec first[BLK_MERGE_SEGS];
	unsigned int nf;
	size_t half;
	int r;

	if (!h || len < b->split_min || (write && !b->backend->concurrent))
		return blk_rw(b, write, iov, n, len, off);
	/* Whole pages on both sides where the buffers allow it. */
	half = (len / 2) & ~(size_t)4095;
	vmm_count(VMM_BLK_SPLIT, 1);
	pthread_mutex_lock(&h->lock);
	h->write = write;
	h->n = iov_slice(iov, n, half, len - half, h->iov, BLK_MERGE_SEGS, NULL);
	h->len = len - half;
	h->off = off + half;
	h->busy = true;
	pthread_cond_signal(&h->go);
	pthread_mutex_unlock(&h->lock);
	nf = iov_slice(iov, n, 0, half, first, BLK_MERGE_SEGS, NULL);
	r = blk_rw(b, write, first, nf, half, off);
	pthread_mutex_lock(&h->lock);
	while (h->busy)
		pthread_cond_wait(&h->done, &h->lock);
	if (r >= 0)
		r = h->result;
	pthread_mutex_unlock(&h->lock);
	return r;
}

/* 5.2.6.2: data must be whole sectors inside the disk. */
static bool blk_in_bounds(struct virtio_blk *b, uint64_t sector, size_t len)
{
	uint64_t cap = b->config.capacity;

	return len % SECTOR_SIZE == 0 && sector <= cap && len / SECTOR_SIZE <= cap - sector;
}

/* Without FLUSH negotiated the disk must be write-through (5.2.5.1). */
static bool blk_write_through(struct virtio_blk *b)
{
	return !virtio_mmio_has_feature(&b->mmio, VIRTIO_BLK_F_FLUSH);
}

/* Header, data and status of req; -EINVAL when the chain cannot carry a
 * request (the driver is broken). */
static int blk_parse(struct virtq_req *req, struct virtio_blk_outhdr *hdr, struct blk_io *io)
{
	const struct iovec *in = req->iov + req->nr_out;
	struct iovec st;

	if (req->out_len < sizeof(*hdr) || req->in_len < 1)
		return -EINVAL;
	iov_to_buf(req->iov, req->nr_out, 0, hdr, sizeof(*hdr));
	iov_slice(in, req->nr_in, req->in_len - 1, 1, &st, 1, NULL);
	io->status = st.iov_base;
	if (hdr->type == VIRTIO_BLK_T_IN || hdr->type == VIRTIO_BLK_T_GET_ID)
		io->nr_data = iov_slice(in, req->nr_in, 0, req->in_len - 1, io->data, VIRTQ_MAX_SEGS, &io->len);
	else
		io->nr_data = iov_slice(req->iov, req->nr_out, sizeof(*hdr), req->out_len - sizeof(*hdr), io->data,
		                        VIRTQ_MAX_SEGS, &io->len);
	return 0;
}

/* Requests other than a valid IN or OUT: answered at once; the bytes
 * written into the chain. */
static uint32_t blk_other(struct virtio_blk *b, const struct virtio_blk_outhdr *hdr, struct blk_io *io)
{
	uint32_t written = 1;

	switch (hdr->type) {
	case VIRTIO_BLK_T_IN:
	case VIRTIO_BLK_T_OUT:
		/* Out of bounds, or a write to a read-only disk. */
		*io->status = VIRTIO_BLK_S_IOERR;
		break;
	case VIRTIO_BLK_T_FLUSH:
		*io->status = b->backend->ops->flush(b->backend) < 0 ? VIRTIO_BLK_S_IOERR : VIRTIO_BLK_S_OK;
		break;
	case VIRTIO_BLK_T_GET_ID:
		written += (uint32_t)iov_from_buf(io->data, io->nr_data, 0, b->id, sizeof(b->id));
		*io->status = VIRTIO_BLK_S_OK;
		break;
	default:
		*io->status = VIRTIO_BLK_S_UNSUPP;
		break;
	}
	return written;
}

static bool blk_is_rw(struct virtio_blk *b, const struct virtio_blk_outhdr *hdr, const struct blk_io *io)
{
	bool write = hdr->type == VIRTIO_BLK_T_OUT;

	return (write || hdr->type == VIRTIO_BLK_T_IN) && !(write && b->backend->read_only) &&
	       blk_in_bounds(b, hdr->sector, io->len);
}

static bool blk_run_takes(const struct blk_run *run, const struct virtio_blk_outhdr *hdr, const struct blk_io *io)
{
	return run->n == 0 ||
	       (run->n < BLK_MERGE_MAX && run->write == (hdr->type == VIRTIO_BLK_T_OUT) &&
	        hdr->sector == run->sector + run->len / SECTOR_SIZE && run->nseg + io->nr_data <= BLK_MERGE_SEGS);
}

static void blk_run_add(struct blk_run *run, uint16_t head, const struct virtio_blk_outhdr *hdr,
                        const struct blk_io *io)
{
	struct blk_run_req *r = &run->req[run->n++];

	if (run->n == 1) {
		run->write = hdr->type == VIRTIO_BLK_T_OUT;
		run->sector = hdr->sector;
		run->len = 0;
		run->nseg = 0;
	}
	*r = (struct blk_run_req){.head = head,
	                          .status = io->status,
	                          .seg = run->nseg,
	                          .nseg = io->nr_data,
	                          .len = io->len,
	                          .sector = hdr->sector};
	memcpy(run->seg + run->nseg, io->data, io->nr_data * sizeof(struct iovec));
	run->nseg += io->nr_data;
	run->len += io->len;
}

/* The run's I/O, its statuses, and its chains back to the driver. */
static void blk_run_finish(struct virtio_blk *b, struct virtq *vq, struct blk_run *run)
{
	int r;

	if (!run->n)
		return;
	r = blk_rw_split(b, run->write, run->seg, run->nseg, run->len, run->sector * SECTOR_SIZE);
	if (r < 0 && run->n > 1) {
		for (unsigned int i = 0; i < run->n; i++) {
			struct blk_run_req *q = &run->req[i];

			q->failed =
			    blk_rw(b, run->write, run->seg + q->seg, q->nseg, q->len, q->sector * SECTOR_SIZE) < 0;
		}
	} else {
		for (unsigned int i = 0; i < run->n; i++)
			run->req[i].failed = r < 0;
	}
	if (run->write && blk_write_through(b) && b->backend->ops->flush(b->backend) < 0)
		for (unsigned int i = 0; i < run->n; i++)
			run->req[i].failed = true;
	for (unsigned int i = 0; i < run->n; i++) {
		struct blk_run_req *q = &run->req[i];

		*q->status = q->failed ? VIRTIO_BLK_S_IOERR : VIRTIO_BLK_S_OK;
		virtq_fill(vq, q->head, q->failed || run->write ? 1 : (uint32_t)q->len + 1);
	}
	virtq_flush(vq);
	vmm_count(VMM_BLK_REQUESTS, run->n);
	vmm_count(VMM_BLK_MERGED, run->n - 1);
	run->n = 0;
}

int blk_pass(struct virtio_blk *b, struct virtq *vq, unsigned int max, unsigned int *ret_n)
{
	struct blk_run *run = &b->run;
	struct virtio_blk_outhdr hdr;
	struct blk_io *io = &b->io;
	unsigned int n = 0;
	int r = 0;

	while (n < max && !blk_lock_wanted(b) && (r = virtq_pop(vq, &b->req)) > 0) {
		n++;
		r = blk_parse(&b->req, &hdr, io);
		if (r < 0)
			break;
		if (blk_is_rw(b, &hdr, io)) {
			if (!blk_run_takes(run, &hdr, io))
				blk_run_finish(b, vq, run);
			blk_run_add(run, b->req.head, &hdr, io);
			continue;
		}
		blk_run_finish(b, vq, run);
		vmm_count(VMM_BLK_REQUESTS, 1);
		virtq_push(vq, b->req.head, blk_other(b, &hdr, io));
	}
	blk_run_finish(b, vq, run);
	*ret_n = n;
	return r;
}
