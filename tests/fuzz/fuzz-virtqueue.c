/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The split virtqueue walker alone (virtio/virtqueue.c): the input is the
 * queue's registers and then the content of guest RAM itself (rings,
 * descriptors, indirect tables, all as the fuzzer wrote them). Each popped
 * chain must lie in guest RAM and respect the limits virtq_pop() promises;
 * the iovec helpers are run over it with fuzzed offsets.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz.h"
#include "virtio/virtqueue.h"

#define RAM_SIZE (64u << 10)

static void check_chain(const struct virtq_req *req, const uint8_t *ram)
{
	uint64_t out = 0, in = 0;

	if (req->nr_out + req->nr_in > VIRTQ_MAX_SEGS)
		abort();
	for (unsigned int i = 0; i < req->nr_out + req->nr_in; i++) {
		const uint8_t *b = req->iov[i].iov_base;

		if (b < ram || b > ram + RAM_SIZE || req->iov[i].iov_len > (size_t)(ram + RAM_SIZE - b)) {
			fprintf(stderr, "buffer %u outside guest RAM\n", i);
			abort();
		}
		*(i < req->nr_out ? &out : &in) += req->iov[i].iov_len;
	}
	if (out != req->out_len || in != req->in_len)
		abort();
}

/* The helpers over the chain, as devices use them. */
static void use_chain(const struct virtq_req *req, struct fz *f)
{
	static uint8_t buf[4096];
	struct iovec sl[VIRTQ_MAX_SEGS];
	size_t skip = fz_u16(f), len = fz_u16(f) % sizeof(buf), got;
	unsigned int n;

	iov_to_buf(req->iov, req->nr_out, skip, buf, len);
	iov_from_buf(req->iov + req->nr_out, req->nr_in, skip, buf, len);
	n = iov_slice(req->iov, req->nr_out + req->nr_in, skip, len, sl, 1 + fz_u8(f) % VIRTQ_MAX_SEGS, &got);
	if (got > len)
		abort();
	for (unsigned int i = 0; i < n; i++)
		if (sl[i].iov_len == 0)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = {data, size};
	struct guest_mem mem;
	struct virtq vq;
	struct virtq_req *req = malloc(sizeof(*req));
	uint8_t *ram = calloc(1, RAM_SIZE);
	uint64_t features;

	if (!ram || !req)
		abort();
	guest_mem_init_buffer(&mem, ram, RAM_SIZE);
	virtq_init(&vq, &mem, 256);
	vq.num = fz_u16(&f) % 512;
	vq.desc_gpa = fz_u16(&f);
	vq.avail_gpa = fz_u16(&f);
	vq.used_gpa = fz_u16(&f);
	vq.ready = true;
	features = (uint64_t)(fz_u8(&f) & 3) << 28; /* INDIRECT_DESC (28), EVENT_IDX (29) */
	vq.last_avail = fz_u16(&f) & 0x8001 ? fz_u16(&f) : 0;
	fz_take(&f, ram, f.n < RAM_SIZE ? f.n : RAM_SIZE);
	if (virtq_start(&vq, features) == 0) {
		for (int i = 0; i < 64; i++) {
			int r = virtq_pop(&vq, req);
			struct fz rest = {data + size - (size > 16 ? 16 : size), size > 16 ? 16 : size};

			if (r <= 0)
				break;
			check_chain(req, ram);
			if (i % 4 == 2) {
				/* Given back unused, it comes again (nothing wrote
				 * guest RAM meanwhile). */
				virtq_unpop(&vq);
				if (virtq_pop(&vq, req) != 1)
					abort();
				check_chain(req, ram);
			}
			use_chain(req, &rest);
			if (i & 1)
				virtq_push(&vq, req->head, req->in_len);
			virtq_need_interrupt(&vq);
		}
		virtq_disable_notify(&vq);
		virtq_enable_notify(&vq);
	}
	free(ram);
	free(req);
	return 0;
}
