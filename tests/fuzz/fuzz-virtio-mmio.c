/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The virtio-mmio transport (registers, feature negotiation, queue setup
 * and readiness, status, reset, config space) under a fuzzed guest program,
 * with a small echo device that drains its queues synchronously on each
 * notify: every readable byte of a chain copied into its writable bytes.
 */
#include <stdlib.h>

#include "fuzz.h"

#define ECHO_QUEUES 3

struct echo {
	struct virtio_mmio m;
	struct virtq_req req;
	uint8_t config[24];
};

static int echo_activate(struct virtio_mmio *m)
{
	return 0;
}

static void echo_reset(struct virtio_mmio *m)
{
}

static void echo_config_read(struct virtio_mmio *m, uint32_t off, void *data, uint32_t len)
{
	memcpy(data, ((struct echo *)m->dev)->config + off, len);
}

static void echo_config_write(struct virtio_mmio *m, uint32_t off, const void *data, uint32_t len)
{
	memcpy(((struct echo *)m->dev)->config + off, data, len);
}

static void echo_notify(struct virtio_mmio *m, uint32_t q)
{
	struct echo *e = m->dev;
	struct virtq *vq = &m->vqs[q];
	uint8_t buf[512];
	int r, budget = 64;

	do {
		virtq_disable_notify(vq);
		while (budget-- > 0 && (r = virtq_pop(vq, &e->req)) > 0) {
			size_t n = iov_to_buf(e->req.iov, e->req.nr_out, 0, buf, sizeof(buf));

			n = iov_from_buf(e->req.iov + e->req.nr_out, e->req.nr_in, 0, buf, n);
			virtq_push(vq, e->req.head, (uint32_t)n);
		}
		if (r < 0) {
			virtio_mmio_set_broken(m);
			break;
		}
	} while (budget > 0 && virtq_enable_notify(vq));
	virtio_mmio_notify_used(m, vq);
}

static const struct virtio_dev_ops echo_ops = {
    .config_read = echo_config_read,
    .config_write = echo_config_write,
    .activate = echo_activate,
    .queue_notify = echo_notify,
    .reset = echo_reset,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct virtio_mmio_info info = {
	    .device_id = 42,
	    .nr_queues = ECHO_QUEUES,
	    .queue_max = 256,
	    .features = VIRTIO_BIT(VIRTIO_F_RING_EVENT_IDX) | VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC),
	    .config_size = sizeof(((struct echo *)0)->config),
	};
	struct fz f = {data, size};
	struct fz_guest g;
	struct echo *e = calloc(1, sizeof(*e));

	if (!e)
		abort();
	fz_guest_init(&g);
	if (virtio_mmio_init(&e->m, &g.mem, &info, &echo_ops, e) < 0)
		abort();
	fz_guest_attach(&g, &e->m);
	fz_guest_run(&g, &f, 256);
	virtio_mmio_destroy(&e->m);
	fz_guest_free(&g);
	free(e);
	return 0;
}
