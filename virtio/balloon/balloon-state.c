/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio-balloon in snapshots: the target and the driver's actual size
 * (config space), the statistics buffer the device keeps, then the
 * transport. What the guest gave back is not state: those pages are zero
 * (holes) in the snapshot's RAM, and a restored VM maps them from there.
 */
#include <errno.h>

#include "common/error.h"
#include "virtio/balloon/balloon-dev.h"
#include "virtio/mmio-state.h"

#define BALLOON_STATE_MAGIC 0x314e4c42u /* "BLN1" */

struct balloon_state {
	uint32_t magic;
	uint32_t num_pages, actual;
	uint16_t stats_head;
	uint8_t stats_held;
	uint8_t pad;
};

void virtio_balloon_pause(struct virtio_balloon *b, bool paused)
{
	pthread_mutex_lock(&b->lock);
	b->paused = paused;
	pthread_mutex_unlock(&b->lock);
	if (!paused)
		balloon_kick(b);
}

int virtio_balloon_state_save(void *opaque, struct snap_buf *out)
{
	struct virtio_balloon *b = opaque;
	struct balloon_state st = {.magic = BALLOON_STATE_MAGIC};

	pthread_mutex_lock(&b->lock);
	st.num_pages = __atomic_load_n(&b->num_pages, __ATOMIC_ACQUIRE);
	st.actual = __atomic_load_n(&b->actual, __ATOMIC_ACQUIRE);
	st.stats_held = b->stats_held;
	st.stats_head = b->stats_head;
	pthread_mutex_unlock(&b->lock);
	snap_buf_put(out, &st, sizeof(st));
	if (out->err)
		return out->err;
	return virtio_mmio_state_save(&b->mmio, out);
}

/* The kept statistics buffer must be a descriptor of the statistics
 * queue the restored driver runs. Lock held. */
static int check_stats_head(const struct virtio_balloon *b)
{
	for (unsigned int q = 0; q < BALLOON_NR_QUEUES; q++) {
		const struct virtq *vq = &b->mmio.vqs[q];

		if (b->roles[q] == BALLOON_ROLE_STATS && virtq_usable(vq) && b->stats_head < vq->num)
			return 0;
	}
	return err_set(-EINVAL, "virtio-balloon: keeps statistics buffer %u, which its statistics queue lacks",
	               b->stats_head);
}

int virtio_balloon_state_load(void *opaque, const void *data, size_t len)
{
	struct virtio_balloon *b = opaque;
	struct snap_reader rd = {.p = data, .len = len};
	struct balloon_state st;
	int r;

	if (snap_get(&rd, &st, sizeof(st)) < 0)
		return err_set(-EBADMSG, "virtio-balloon: state too short");
	if (st.magic != BALLOON_STATE_MAGIC)
		return err_set(-EINVAL, "virtio-balloon: not a virtio-balloon state");
	if (st.stats_held > 1)
		return err_set(-EINVAL, "virtio-balloon: statistics buffer flag %u", st.stats_held);
	__atomic_store_n(&b->num_pages, st.num_pages, __ATOMIC_RELEASE);
	__atomic_store_n(&b->actual, st.actual, __ATOMIC_RELEASE);
	/* Before the transport: its load activates a running device, which
	 * keeps what is set here. */
	pthread_mutex_lock(&b->lock);
	b->stats_held = st.stats_held;
	b->stats_head = st.stats_head;
	pthread_mutex_unlock(&b->lock);
	r = virtio_mmio_state_load_last(&b->mmio, &rd, "virtio-balloon");
	pthread_mutex_lock(&b->lock);
	/* A device saved broken (the driver broke it while a buffer was
	 * kept) is not running: the buffer goes with the reset to come. */
	if (r >= 0 && b->stats_held && b->running)
		r = check_stats_head(b);
	if (r < 0 || !b->running)
		b->stats_held = false;
	pthread_mutex_unlock(&b->lock);
	return r;
}
