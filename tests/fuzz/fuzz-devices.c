/* SPDX-License-Identifier: Apache-2.0 */
/* Settling the devices between steps of a fuzzed program (fuzz.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "poll-loop.h"
#include "virtio/blk/blk-dev.h"

void fz_blk_settle(struct fz_guest *g)
{
	struct virtio_blk *b = g->blk;
	struct virtq *vq = &b->mmio.vqs[0];

	/* Until the worker took every request published, or cannot take
	 * any (not running, paused, queue broken or not set up); one kick
	 * first, for an avail idx moved without one. 2 s at most: a request
	 * moves at most 256 buffers of guest RAM. */
	for (int i = 0; i < 100000; i++) {
		bool idle;

		pthread_mutex_lock(&b->lock);
		idle = !b->running || b->paused || !virtio_mmio_active(&b->mmio) || !virtq_usable(vq) ||
		       vq->last_avail == __atomic_load_n(&vq->avail->idx, __ATOMIC_ACQUIRE);
		pthread_mutex_unlock(&b->lock);
		if (idle)
			return;
		if (i == 0)
			blk_kick(b);
		usleep(20);
	}
	fprintf(stderr, "virtio-blk: the worker never drained the queue\n");
	abort();
}

int fz_balloon_discard(void *opaque, uint64_t gpa, uint64_t len)
{
	struct fz_guest *g = opaque;

	if (!len || gpa >= FZ_RAM_SIZE || len > FZ_RAM_SIZE - gpa) {
		fprintf(stderr, "virtio-balloon: gave back 0x%llx+0x%llx, outside guest RAM\n", (unsigned long long)gpa,
		        (unsigned long long)len);
		abort();
	}
	memset(g->ram + gpa, 0, len);
	return 0;
}

void fz_loop_settle(struct fz_guest *g)
{
	for (int i = 0; i < 256; i++) {
		if (g->drain)
			g->drain(g);
		if (poll_loop_once(g->loop, 0) == 0)
			return;
	}
}
