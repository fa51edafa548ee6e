/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio-vsock in snapshots. Streams do not survive a restore by design:
 * their host ends belonged to the process that was saved. The restored
 * device tells the guest with VIRTIO_VSOCK_EVENT_TRANSPORT_RESET (virtio
 * 1.2, 5.10.6.7), on which the guest drops every socket and re-reads its
 * CID; guest-init then connects again.
 */
#include <errno.h>
#include <string.h>

#include "common/error.h"
#include "virtio/mmio-state.h"
#include "virtio/vsock/vsock-dev.h"

#define VSOCK_STATE_MAGIC 0x314b5356u /* "VSK1" */

struct vsock_state {
	uint32_t magic;
	uint32_t pad;
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

	snap_buf_put(out, &st, sizeof(st));
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

	if (snap_get(&rd, &st, sizeof(st)) < 0)
		return err_set(-EBADMSG, "virtio-vsock: state too short");
	if (st.magic != VSOCK_STATE_MAGIC)
		return err_set(-EINVAL, "virtio-vsock: not a virtio-vsock state");
	if (st.guest_cid != v->guest_cid)
		return err_set(-EINVAL, "virtio-vsock: saved for guest CID %llu, this device has %llu",
		               (unsigned long long)st.guest_cid, (unsigned long long)v->guest_cid);
	r = virtio_mmio_state_load_last(&v->mmio, &rd, "virtio-vsock");
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
