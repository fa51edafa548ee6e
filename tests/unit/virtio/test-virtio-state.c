/* SPDX-License-Identifier: Apache-2.0 */
/* Saving and loading the virtio-mmio transport and its virtqueues: a device
 * is brought up and used by the fake driver, saved, and loaded into a fresh
 * device over a copy of the guest RAM (as a restore does); the driver then
 * carries on against the new device. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../virtio/fake-driver.h"
#include "tap.h"
#include "virtio/mmio-state.h"

#define FEATURES (VIRTIO_BIT(VIRTIO_F_RING_EVENT_IDX) | VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC))
#define V1 VIRTIO_BIT(VIRTIO_F_VERSION_1)

/* Echo device: each chain's readable bytes are copied into its writable
 * ones, synchronously on notify. */
struct echo {
	struct virtio_mmio m;
	int activated;
};

static int echo_activate(struct virtio_mmio *m)
{
	((struct echo *)m->dev)->activated++;
	return 0;
}

static void echo_reset(struct virtio_mmio *m)
{
}

static void echo_notify(struct virtio_mmio *m, uint32_t q)
{
	struct virtq *vq = &m->vqs[q];
	struct virtq_req *req = malloc(sizeof(*req));
	uint8_t buf[256];

	while (virtq_pop(vq, req) > 0) {
		size_t n = iov_to_buf(req->iov, req->nr_out, 0, buf, sizeof(buf));

		n = iov_from_buf(req->iov + req->nr_out, req->nr_in, 0, buf, n);
		virtq_push(vq, req->head, (uint32_t)n);
	}
	virtio_mmio_notify_used(m, vq);
	free(req);
}

static const struct virtio_dev_ops echo_ops = {
    .activate = echo_activate, .queue_notify = echo_notify, .reset = echo_reset};

static void echo_init(struct echo *e, struct fake_drv *d, uint32_t nr_queues, uint16_t qmax)
{
	struct virtio_mmio_info info = {
	    .device_id = 42, .nr_queues = nr_queues, .queue_max = qmax, .features = FEATURES};

	memset(e, 0, sizeof(*e));
	if (virtio_mmio_init(&e->m, &d->mem, &info, &echo_ops, e) < 0)
		abort();
	fake_drv_attach(d, &e->m);
}

/* One request on queue q: "msg" out, a 16-byte buffer in. */
static uint64_t send(struct fake_drv *d, uint32_t q, const char *msg, bool kick)
{
	uint64_t out = fake_alloc(d, 16), in = fake_alloc(d, 16);
	struct fbuf b[2] = {{out, (uint32_t)strlen(msg) + 1, false}, {in, 16, true}};

	strcpy(fake_ptr(d, out), msg);
	fake_add(d, q, b, 2, false);
	if (kick)
		fake_kick(d, q);
	return in;
}

/* The restoring side: a new fake guest whose RAM and driver state are
 * copies of the saved one's. */
static void clone_guest(struct fake_drv *dst, struct fake_drv *src)
{
	fake_drv_init(dst);
	memcpy(dst->ram, src->ram, FAKE_RAM_SIZE);
	dst->brk = src->brk;
	memcpy(dst->vqs, src->vqs, sizeof(dst->vqs));
}

TEST(transport_and_queues_round_trip)
{
	struct fake_drv d, d2;
	struct echo a, b;
	struct snap_buf buf = {0};
	uint32_t id, len;

	fake_drv_init(&d);
	echo_init(&a, &d, 2, 64);
	is_int(fake_bringup(&d, FEATURES | V1, 2, 16) & VIRTIO_STATUS_DRIVER_OK, VIRTIO_STATUS_DRIVER_OK);
	for (int i = 0; i < 3; i++)
		send(&d, 0, "before", true);
	for (int i = 0; i < 3; i++)
		ok(fake_get_used(&d, 0, &id, &len) && len == 7, "request %d done before the save", i);
	/* Two requests the device has not seen yet: the restored one must. */
	uint64_t in1 = send(&d, 0, "pending-1", false), in2 = send(&d, 0, "pending-2", false);
	fake_write(&d, VIRTIO_MMIO_QUEUE_SEL, 1);
	is_int(virtio_mmio_state_save(&a.m, &buf), 0);

	clone_guest(&d2, &d);
	echo_init(&b, &d2, 2, 64);
	struct snap_reader rd = {buf.data, buf.len, 0};
	is_int(virtio_mmio_state_load(&b.m, &rd), 0);
	is_int(rd.off, buf.len);
	is_int(b.activated, 1);
	ok(virtio_mmio_active(&b.m), "restored device is active");
	is_int(fake_read(&d2, VIRTIO_MMIO_STATUS), fake_read(&d, VIRTIO_MMIO_STATUS));
	is_int(b.m.queue_sel, 1);
	is_int(fake_read(&d2, VIRTIO_MMIO_QUEUE_READY), 1);
	is_int(b.m.vqs[1].num, 16);
	ok(b.m.vqs[0].desc_gpa == d.vqs[0].desc && b.m.vqs[0].used_gpa == d.vqs[0].used, "ring addresses restored");
	ok(virtio_mmio_has_feature(&b.m, VIRTIO_F_RING_EVENT_IDX), "negotiated features restored");
	is_int(b.m.vqs[0].last_avail, a.m.vqs[0].last_avail);
	is_int(b.m.vqs[0].used_idx, 3);
	ok(b.m.vqs[0].event_idx && b.m.vqs[0].indirect, "queue feature flags restored");
	ok(b.m.vqs[0].desc == (void *)(d2.ram + d.vqs[0].desc), "rings mapped in the new guest RAM");

	/* The driver kicks the new device, which finds the pending requests. */
	fake_kick(&d2, 0);
	ok(fake_get_used(&d2, 0, &id, &len) && len == 10, "first pending request echoed by the restored device");
	ok(fake_get_used(&d2, 0, &id, &len) && len == 10, "second pending request echoed");
	ok(!fake_get_used(&d2, 0, &id, &len), "nothing else used");
	is_str((char *)fake_ptr(&d2, in1), "pending-1");
	is_str((char *)fake_ptr(&d2, in2), "pending-2");
	ok(!fake_get_used(&d, 0, &id, &len), "the saved device's guest saw nothing of it");
	send(&d2, 0, "after", true);
	ok(fake_get_used(&d2, 0, &id, &len) && len == 6, "new requests work after the restore");

	snap_buf_free(&buf);
	virtio_mmio_destroy(&a.m);
	virtio_mmio_destroy(&b.m);
	fake_drv_free(&d);
	fake_drv_free(&d2);
}

TEST(mismatches_refused)
{
	struct fake_drv d, d2;
	struct echo a, b;
	struct snap_buf buf = {0};
	struct snap_reader rd;

	fake_drv_init(&d);
	echo_init(&a, &d, 2, 64);
	fake_bringup(&d, FEATURES | V1, 2, 16);
	is_int(virtio_mmio_state_save(&a.m, &buf), 0);

	clone_guest(&d2, &d);
	echo_init(&b, &d2, 1, 64);
	rd = (struct snap_reader){buf.data, buf.len, 0};
	is_int(virtio_mmio_state_load(&b.m, &rd), -EINVAL);
	virtio_mmio_destroy(&b.m);

	echo_init(&b, &d2, 2, 32);
	rd = (struct snap_reader){buf.data, buf.len, 0};
	is_int(virtio_mmio_state_load(&b.m, &rd), -EINVAL);
	is_int(b.activated, 0);
	virtio_mmio_destroy(&b.m);

	echo_init(&b, &d2, 2, 64);
	rd = (struct snap_reader){buf.data, buf.len - 1, 0};
	is_int(virtio_mmio_state_load(&b.m, &rd), -EBADMSG);
	virtio_mmio_destroy(&b.m);

	/* A ring address outside guest RAM (a state that does not belong to
	 * this guest) is refused, not mapped. */
	struct virtq_state *q0 = (struct virtq_state *)(buf.data + buf.len - 2 * sizeof(*q0));
	q0->desc_gpa = FAKE_RAM_SIZE + 0x1000;
	echo_init(&b, &d2, 2, 64);
	rd = (struct snap_reader){buf.data, buf.len, 0};
	is_int(virtio_mmio_state_load(&b.m, &rd), -EINVAL);
	ok(!virtio_mmio_active(&b.m), "device stays inactive");
	virtio_mmio_destroy(&b.m);

	snap_buf_free(&buf);
	virtio_mmio_destroy(&a.m);
	fake_drv_free(&d);
	fake_drv_free(&d2);
}

TEST(unready_queue_round_trip)
{
	struct fake_drv d, d2;
	struct echo a, b;
	struct snap_buf buf = {0};

	fake_drv_init(&d);
	echo_init(&a, &d, 2, 64);
	fake_negotiate(&d, FEATURES | V1);
	fake_write(&d, VIRTIO_MMIO_QUEUE_SEL, 1);
	fake_write(&d, VIRTIO_MMIO_QUEUE_NUM, 8);
	is_int(virtio_mmio_state_save(&a.m, &buf), 0);
	clone_guest(&d2, &d);
	echo_init(&b, &d2, 2, 64);
	struct snap_reader rd = {buf.data, buf.len, 0};
	is_int(virtio_mmio_state_load(&b.m, &rd), 0);
	is_int(b.activated, 0);
	is_int(b.m.vqs[1].num, 8);
	is_int(fake_read(&d2, VIRTIO_MMIO_QUEUE_READY), 0);
	is_int(fake_read(&d2, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_FEATURES_OK, VIRTIO_STATUS_FEATURES_OK);
	snap_buf_free(&buf);
	virtio_mmio_destroy(&a.m);
	virtio_mmio_destroy(&b.m);
	fake_drv_free(&d);
	fake_drv_free(&d2);
}

TAP_MAIN()
