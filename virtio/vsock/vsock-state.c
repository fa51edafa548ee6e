/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio-vsock in snapshots. Streams do not survive a restore by design:
 * their host ends belonged to the process that was saved. The restored
 * device tells the guest with VIRTIO_VSOCK_EVENT_TRANSPORT_RESET (virtio
 * 1.2, 5.10.6.7), on which the guest drops every socket and re-reads its
 * CID; guest-init then connects again. The saved streams' ports go with
 * the state, so that the restored backend lets the event end them instead
 * of an RST (uds.h, vsock_uds_forget_streams()).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "virtio/mmio-state.h"
#include "virtio/vsock/vsock-dev.h"

#define VSOCK_STATE_MAGIC_V1 0x314b5356u /* "VSK1": no streams */
#define VSOCK_STATE_MAGIC 0x324b5356u /* "VSK2": nr_streams port pairs follow */

struct vsock_state {
	uint32_t magic;
	uint32_t nr_streams; /* 0 in "VSK1" */
	uint64_t guest_cid;
};

void virtio_vsock_pause(struct virtio_vsock *v, bool paused)
{
	pthread_mutex_lock(&v->lock);
	v->paused = paused;
	pthread_mutex_unlock(&v->lock);
	if (!paused)
		vsock_kick(v);
}

int virtio_vsock_state_save(void *opaque, struct snap_buf *out)
{
	struct virtio_vsock *v = opaque;
	struct vsock_state st = {.magic = VSOCK_STATE_MAGIC, .guest_cid = v->guest_cid};
	struct vsock_port_pair *pairs = calloc(VSOCK_MAX_CONNS, sizeof(*pairs));

	if (!pairs)
		return -ENOMEM;
	pthread_mutex_lock(&v->lock);
	st.nr_streams = vsock_uds_streams(v->uds, pairs, VSOCK_MAX_CONNS);
	pthread_mutex_unlock(&v->lock);
	if (st.nr_streams > VSOCK_MAX_CONNS)
		st.nr_streams = VSOCK_MAX_CONNS;
	snap_buf_put(out, &st, sizeof(st));
	snap_buf_put(out, pairs, st.nr_streams * sizeof(*pairs));
	free(pairs);
	if (out->err)
		return out->err;
	return virtio_mmio_state_save(&v->mmio, out);
}

int virtio_vsock_state_load(void *opaque, const void *data, size_t len)
{
	struct virtio_vsock *v = opaque;
	struct snap_reader rd = {.p = data, .len = len};
	struct vsock_state st;
	int r;

	struct vsock_port_pair *pairs = NULL;

	if (snap_get(&rd, &st, sizeof(st)) < 0)
		return err_set(-EBADMSG, "virtio-vsock: state too short");
	if (st.magic != VSOCK_STATE_MAGIC && st.magic != VSOCK_STATE_MAGIC_V1)
		return err_set(-EINVAL, "virtio-vsock: not a virtio-vsock state");
	if (st.magic == VSOCK_STATE_MAGIC_V1)
		st.nr_streams = 0;
	if (st.guest_cid != v->guest_cid)
		return err_set(-EINVAL, "virtio-vsock: saved for guest CID %llu, this device has %llu",
		               (unsigned long long)st.guest_cid, (unsigned long long)v->guest_cid);
	if (st.nr_streams > VSOCK_MAX_CONNS)
		return err_set(-EINVAL, "virtio-vsock: %u streams saved (at most %u)", st.nr_streams, VSOCK_MAX_CONNS);
	if (st.nr_streams && !(pairs = calloc(st.nr_streams, sizeof(*pairs))))
		return -ENOMEM;
	if (pairs && snap_get(&rd, pairs, st.nr_streams * sizeof(*pairs)) < 0) {
		free(pairs);
		return err_set(-EBADMSG, "virtio-vsock: state too short for its %u streams", st.nr_streams);
	}
	r = virtio_mmio_state_load_last(&v->mmio, &rd, "virtio-vsock");
	if (r >= 0) {
		pthread_mutex_lock(&v->lock);
		r = vsock_uds_forget_streams(v->uds, pairs, st.nr_streams);
		pthread_mutex_unlock(&v->lock);
	}
	free(pairs);
	if (r < 0)
		return r;
	if (!virtio_mmio_active(&v->mmio))
		return 0;
	/* Sent from the loop thread once it runs. */
	pthread_mutex_lock(&v->lock);
	v->event_pending = true;
	pthread_mutex_unlock(&v->lock);
	vsock_kick(v);
	return 0;
}
