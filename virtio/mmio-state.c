/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <string.h>

#include "common/error.h"
#include "virtio/mmio-state.h"

#define ATOMIC_LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define ATOMIC_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

struct virtio_mmio_state {
	uint32_t device_id, nr_queues;
	uint64_t device_features, driver_features;
	uint32_t device_features_sel, driver_features_sel, queue_sel;
	uint32_t status, isr, config_gen;
	uint8_t active;
	uint8_t pad[3];
};

void virtq_state_save(const struct virtq *vq, struct virtq_state *out)
{
	*out = (struct virtq_state){
	    .desc_gpa = vq->desc_gpa,
	    .avail_gpa = vq->avail_gpa,
	    .used_gpa = vq->used_gpa,
	    .num = vq->num,
	    .num_max = vq->num_max,
	    .last_avail = vq->last_avail,
	    .used_idx = vq->used_idx,
	    .signalled_used = vq->signalled_used,
	    .ready = vq->ready,
	    .broken = vq->broken,
	};
}

int virtq_state_load(struct virtq *vq, const struct virtq_state *st, uint64_t features)
{
	if (st->num_max != vq->num_max)
		return err_set(-EINVAL, "queue size %u, this device's is %u", st->num_max, vq->num_max);
	virtq_reset(vq);
	vq->num = st->num;
	vq->desc_gpa = st->desc_gpa;
	vq->avail_gpa = st->avail_gpa;
	vq->used_gpa = st->used_gpa;
	vq->ready = st->ready;
	if (!st->ready)
		return 0;
	/* Maps the rings again, checking them against guest RAM as when the
	 * driver made the queue ready, then puts the indices back. */
	if (virtq_start(vq, features) < 0 && !st->broken)
		return err_set(-EINVAL, "queue at 0x%llx does not fit guest RAM", (unsigned long long)st->desc_gpa);
	vq->last_avail = st->last_avail;
	vq->used_idx = st->used_idx;
	vq->signalled_used = st->signalled_used;
	vq->broken = st->broken;
	return 0;
}

int virtio_mmio_state_save(struct virtio_mmio *m, struct snap_buf *out)
{
	struct virtio_mmio_state st;

	memset(&st, 0, sizeof(st));
	pthread_mutex_lock(&m->lock);
	st.device_id = m->device_id;
	st.nr_queues = m->nr_queues;
	st.device_features = m->device_features;
	st.driver_features = m->driver_features;
	st.device_features_sel = m->device_features_sel;
	st.driver_features_sel = m->driver_features_sel;
	st.queue_sel = m->queue_sel;
	st.status = ATOMIC_LOAD(&m->status);
	st.isr = ATOMIC_LOAD(&m->isr);
	st.config_gen = ATOMIC_LOAD(&m->config_gen);
	st.active = ATOMIC_LOAD(&m->active);
	snap_buf_put(out, &st, sizeof(st));
	for (uint32_t i = 0; i < m->nr_queues; i++) {
		struct virtq_state q;

		virtq_state_save(&m->vqs[i], &q);
		snap_buf_put(out, &q, sizeof(q));
	}
	pthread_mutex_unlock(&m->lock);
	return out->err;
}

static int check_same_device(const struct virtio_mmio *m, const struct virtio_mmio_state *st)
{
	if (st->device_id != m->device_id || st->nr_queues != m->nr_queues)
		return err_set(-EINVAL, "virtio device %u with %u queues saved, this is device %u with %u",
		               st->device_id, st->nr_queues, m->device_id, m->nr_queues);
	if (st->device_features != m->device_features)
		return err_set(-EINVAL, "virtio device %u offered features 0x%llx, now 0x%llx", m->device_id,
		               (unsigned long long)st->device_features, (unsigned long long)m->device_features);
	if (st->driver_features & ~st->device_features)
		return err_set(-EINVAL, "virtio device %u: driver features beyond the device's", m->device_id);
	return 0;
}

int virtio_mmio_state_offered(const struct snap_reader *rd, uint64_t *ret)
{
	struct snap_reader copy = *rd;
	struct virtio_mmio_state st;

	if (snap_get(&copy, &st, sizeof(st)) < 0)
		return err_set(-EBADMSG, "virtio device: state too short");
	*ret = st.device_features;
	return 0;
}

static int load_queues(struct virtio_mmio *m, const struct virtio_mmio_state *st, struct snap_reader *rd)
{
	for (uint32_t i = 0; i < m->nr_queues; i++) {
		struct virtq_state q;
		int r;

		if (snap_get(rd, &q, sizeof(q)) < 0)
			return err_set(-EBADMSG, "virtio device %u: state too short", m->device_id);
		r = virtq_state_load(&m->vqs[i], &q, st->driver_features);
		if (r < 0)
			return err_prefix(r, "virtio device %u, queue %u", m->device_id, i);
	}
	return 0;
}

int virtio_mmio_state_load(struct virtio_mmio *m, struct snap_reader *rd)
{
	struct virtio_mmio_state st;
	int r;

	if (snap_get(rd, &st, sizeof(st)) < 0)
		return err_set(-EBADMSG, "virtio device %u: state too short", m->device_id);
	r = check_same_device(m, &st);
	if (r < 0)
		return r;
	pthread_mutex_lock(&m->lock);
	r = load_queues(m, &st, rd);
	if (r >= 0) {
		m->driver_features = st.driver_features;
		m->device_features_sel = st.device_features_sel;
		m->driver_features_sel = st.driver_features_sel;
		m->queue_sel = st.queue_sel;
		ATOMIC_STORE(&m->status, st.status);
		ATOMIC_STORE(&m->isr, st.isr);
		ATOMIC_STORE(&m->config_gen, st.config_gen);
	}
	pthread_mutex_unlock(&m->lock);
	if (r < 0 || !st.active)
		return r;
	/* A running device starts its workers on the restored queues. */
	ATOMIC_STORE(&m->active, true);
	if (m->ops->activate(m) < 0) {
		ATOMIC_STORE(&m->active, false);
		virtio_mmio_set_broken(m);
	}
	return 0;
}

int virtio_mmio_state_load_last(struct virtio_mmio *m, struct snap_reader *rd, const char *dev)
{
	int r = virtio_mmio_state_load(m, rd);

	if (r < 0)
		return r;
	if (rd->off != rd->len)
		return err_set(-EBADMSG, "%s: %zu bytes of trailing state", dev, rd->len - rd->off);
	return 0;
}
