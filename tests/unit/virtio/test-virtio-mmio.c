/* SPDX-License-Identifier: Apache-2.0 */
/* virtio-mmio transport and split virtqueues, against a small echo device
 * driven by the fake driver. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fake-driver.h"
#include "tap.h"
#include "vmm/counters.h"

#define ECHO_FEATURES (VIRTIO_BIT(VIRTIO_F_RING_EVENT_IDX) | VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC))
#define V1 VIRTIO_BIT(VIRTIO_F_VERSION_1)
#define NEEDS_RESET VIRTIO_STATUS_DEVICE_NEEDS_RESET

/* Echo device: copies each chain's readable bytes into its writable ones.
 * Queues are processed synchronously on notify. */
struct echo {
	struct virtio_mmio m;
	int activated, resets, batches;
	uint8_t config[8];
};

static int echo_activate(struct virtio_mmio *m)
{
	((struct echo *)m->dev)->activated++;
	return 0;
}

static void echo_reset(struct virtio_mmio *m)
{
	((struct echo *)m->dev)->resets++;
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
	struct virtq *vq = &m->vqs[q];
	struct virtq_req *req = malloc(sizeof(*req));
	uint8_t buf[4096];
	int r;

	((struct echo *)m->dev)->batches++;
	do {
		virtq_disable_notify(vq);
		while ((r = virtq_pop(vq, req)) > 0) {
			size_t n = iov_to_buf(req->iov, req->nr_out, 0, buf, sizeof(buf));

			n = iov_from_buf(req->iov + req->nr_out, req->nr_in, 0, buf, n);
			virtq_push(vq, req->head, (uint32_t)n);
		}
		if (r < 0) {
			virtio_mmio_set_broken(m);
			break;
		}
	} while (virtq_enable_notify(vq));
	virtio_mmio_notify_used(m, vq);
	free(req);
}

static const struct virtio_dev_ops echo_ops = {
    .config_read = echo_config_read,
    .config_write = echo_config_write,
    .activate = echo_activate,
    .queue_notify = echo_notify,
    .reset = echo_reset,
};

static void echo_setup(struct echo *e, struct fake_drv *d)
{
	struct virtio_mmio_info info = {
	    .device_id = 42, .nr_queues = 2, .queue_max = 64, .features = ECHO_FEATURES, .config_size = 8};

	memset(e, 0, sizeof(*e));
	fake_drv_init(d);
	if (virtio_mmio_init(&e->m, &d->mem, &info, &echo_ops, e) < 0)
		abort();
	fake_drv_attach(d, &e->m);
}

static void echo_teardown(struct echo *e, struct fake_drv *d)
{
	virtio_mmio_destroy(&e->m);
	fake_drv_free(d);
}

TEST(identity_registers)
{
	struct fake_drv d;
	struct echo e;
	uint16_t v16 = 0xabcd;
	uint64_t v64 = 0;

	echo_setup(&e, &d);
	is_int(fake_read(&d, VIRTIO_MMIO_MAGIC_VALUE), 0x74726976);
	is_int(fake_read(&d, VIRTIO_MMIO_VERSION), 2);
	is_int(fake_read(&d, VIRTIO_MMIO_DEVICE_ID), 42);
	is_int(fake_read(&d, VIRTIO_MMIO_VENDOR_ID), VIRTIO_MMIO_VENDOR);
	fake_write(&d, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
	is_int(fake_read(&d, VIRTIO_MMIO_DEVICE_FEATURES), (uint32_t)ECHO_FEATURES);
	fake_write(&d, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 1);
	is_int(fake_read(&d, VIRTIO_MMIO_DEVICE_FEATURES), 1);
	fake_write(&d, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 2);
	is_int(fake_read(&d, VIRTIO_MMIO_DEVICE_FEATURES), 0);
	is_int(fake_read(&d, VIRTIO_MMIO_QUEUE_NUM_MAX), 64);
	fake_write(&d, VIRTIO_MMIO_QUEUE_SEL, 2);
	is_int(fake_read(&d, VIRTIO_MMIO_QUEUE_NUM_MAX), 0);
	is_int(fake_read(&d, VIRTIO_MMIO_SHM_LEN_LOW), 0xffffffff);
	/* Registers are 32-bit only: other widths read as zero. */
	virtio_mmio_bus_ops.read(&e.m, VIRTIO_MMIO_MAGIC_VALUE, &v16, 2);
	is_int(v16, 0);
	virtio_mmio_bus_ops.read(&e.m, VIRTIO_MMIO_MAGIC_VALUE + 1, &v64, 4);
	is_int(v64, 0);
	/* Config space takes any width, and nothing past its end. */
	memcpy(e.config, "\x11\x22\x33\x44\x55\x66\x77\x88", 8);
	virtio_mmio_bus_ops.read(&e.m, VIRTIO_MMIO_CONFIG, &v64, 8);
	ok(v64 == 0x8877665544332211ULL, "64-bit config read");
	virtio_mmio_bus_ops.read(&e.m, VIRTIO_MMIO_CONFIG + 6, &v16, 2);
	is_int(v16, 0x8877);
	virtio_mmio_bus_ops.read(&e.m, VIRTIO_MMIO_CONFIG + 7, &v16, 2);
	is_int(v16, 0);
	v16 = 0x9999;
	virtio_mmio_bus_ops.write(&e.m, VIRTIO_MMIO_CONFIG + 8, &v16, 2);
	virtio_mmio_bus_ops.write(&e.m, VIRTIO_MMIO_CONFIG + 0xf00, &v16, 2);
	virtio_mmio_bus_ops.write(&e.m, VIRTIO_MMIO_CONFIG, &v16, 2);
	is_int(e.config[0], 0x99);
	echo_teardown(&e, &d);
}

TEST(feature_negotiation)
{
	struct fake_drv d;
	struct echo e;

	echo_setup(&e, &d);
	ok(!(fake_negotiate(&d, 0) & VIRTIO_STATUS_FEATURES_OK), "VERSION_1 is required");
	ok(!(fake_negotiate(&d, V1 | VIRTIO_BIT(5)) & VIRTIO_STATUS_FEATURES_OK), "unoffered feature refused");
	ok(fake_negotiate(&d, V1 | ECHO_FEATURES) & VIRTIO_STATUS_FEATURES_OK, "offered features accepted");
	ok(e.m.driver_features == (V1 | ECHO_FEATURES), "driver features recorded");
	fake_write(&d, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
	fake_write(&d, VIRTIO_MMIO_DRIVER_FEATURES, 0);
	ok(e.m.driver_features == (V1 | ECHO_FEATURES), "features frozen after FEATURES_OK");
	/* DRIVER_OK without FEATURES_OK does not stick. */
	fake_negotiate(&d, 0);
	fake_write(&d, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_DRIVER_OK);
	ok(!(fake_read(&d, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DRIVER_OK), "DRIVER_OK needs FEATURES_OK");
	is_int(e.activated, 0);
	is_int(fake_bringup(&d, V1, 2, 16) & VIRTIO_STATUS_DRIVER_OK, VIRTIO_STATUS_DRIVER_OK);
	is_int(e.activated, 1);
	ok(virtio_mmio_active(&e.m), "device active");
	echo_teardown(&e, &d);
}

TEST(queue_setup_rules)
{
	struct fake_drv d;
	struct echo e;

	echo_setup(&e, &d);
	fake_negotiate(&d, V1);
	fake_setup_queue(&d, 0, 16);
	is_int(fake_read(&d, VIRTIO_MMIO_QUEUE_READY), 1);
	fake_write(&d, VIRTIO_MMIO_QUEUE_NUM, 32);
	fake_write(&d, VIRTIO_MMIO_QUEUE_DESC_LOW, 0x5000);
	is_int(e.m.vqs[0].num, 16);
	is_int(e.m.vqs[0].desc_gpa, d.vqs[0].desc);
	/* A queue not ready may be reconfigured. */
	fake_write(&d, VIRTIO_MMIO_QUEUE_READY, 0);
	fake_write(&d, VIRTIO_MMIO_QUEUE_NUM, 32);
	is_int(e.m.vqs[0].num, 32);
	/* Not a power of two: refused, device needs reset. */
	fake_write(&d, VIRTIO_MMIO_QUEUE_NUM, 24);
	fake_write(&d, VIRTIO_MMIO_QUEUE_READY, 1);
	ok(fake_read(&d, VIRTIO_MMIO_STATUS) & NEEDS_RESET, "bad queue size breaks the device");
	fake_negotiate(&d, V1);
	ok(!(fake_read(&d, VIRTIO_MMIO_STATUS) & NEEDS_RESET), "reset clears NEEDS_RESET");
	/* Larger than QueueNumMax. */
	fake_write(&d, VIRTIO_MMIO_QUEUE_SEL, 1);
	fake_write(&d, VIRTIO_MMIO_QUEUE_NUM, 128);
	fake_write(&d, VIRTIO_MMIO_QUEUE_READY, 1);
	ok(fake_read(&d, VIRTIO_MMIO_STATUS) & NEEDS_RESET, "size above max breaks the device");
	/* Misaligned and out-of-RAM rings. */
	fake_negotiate(&d, V1);
	fake_write(&d, VIRTIO_MMIO_QUEUE_NUM, 16);
	fake_write(&d, VIRTIO_MMIO_QUEUE_DESC_LOW, 0x10008);
	fake_write(&d, VIRTIO_MMIO_QUEUE_READY, 1);
	ok(fake_read(&d, VIRTIO_MMIO_STATUS) & NEEDS_RESET, "misaligned descriptor table refused");
	fake_negotiate(&d, V1);
	fake_write(&d, VIRTIO_MMIO_QUEUE_NUM, 16);
	fake_write(&d, VIRTIO_MMIO_QUEUE_DESC_LOW, 0);
	fake_write(&d, VIRTIO_MMIO_QUEUE_DESC_HIGH, 1);
	fake_write(&d, VIRTIO_MMIO_QUEUE_READY, 1);
	ok(fake_read(&d, VIRTIO_MMIO_STATUS) & NEEDS_RESET, "ring outside RAM refused");
	echo_teardown(&e, &d);
}

TEST(reset)
{
	struct fake_drv d;
	struct echo e;

	echo_setup(&e, &d);
	fake_bringup(&d, V1 | ECHO_FEATURES, 2, 16);
	virtio_mmio_signal(&e.m, VIRTIO_MMIO_INT_VRING);
	is_int(fake_read(&d, VIRTIO_MMIO_INTERRUPT_STATUS), 1);
	fake_write(&d, VIRTIO_MMIO_INTERRUPT_ACK, 1);
	is_int(fake_read(&d, VIRTIO_MMIO_INTERRUPT_STATUS), 0);
	virtio_mmio_signal(&e.m, VIRTIO_MMIO_INT_VRING);
	e.resets = 0;
	fake_write(&d, VIRTIO_MMIO_STATUS, 0);
	is_int(e.resets, 1);
	is_int(fake_read(&d, VIRTIO_MMIO_STATUS), 0);
	is_int(fake_read(&d, VIRTIO_MMIO_INTERRUPT_STATUS), 0);
	is_int(fake_read(&d, VIRTIO_MMIO_QUEUE_READY), 0);
	ok(e.m.driver_features == 0, "driver features cleared");
	ok(!virtio_mmio_active(&e.m), "device stopped");
	/* Kicks after reset reach nothing. */
	e.batches = 0;
	fake_kick(&d, 0);
	is_int(e.batches, 0);
	echo_teardown(&e, &d);
}

static void echo_roundtrip(bool indirect)
{
	struct fake_drv d;
	struct echo e;
	uint64_t a, b, c;
	uint32_t id, len;
	uint16_t head;

	echo_setup(&e, &d);
	fake_bringup(&d, V1 | ECHO_FEATURES, 2, 16);
	a = fake_alloc(&d, 5);
	b = fake_alloc(&d, 6);
	c = fake_alloc(&d, 16);
	memcpy(fake_ptr(&d, a), "hello", 5);
	memcpy(fake_ptr(&d, b), " world", 6);
	head = fake_add(&d, 1, (struct fbuf[]){{a, 5, false}, {b, 6, false}, {c, 4, true}, {c + 4, 12, true}}, 4,
	                indirect);
	fake_kick(&d, 1);
	ok(fake_get_used(&d, 1, &id, &len), "chain used");
	is_int(id, head);
	is_int(len, 11);
	ok(memcmp(fake_ptr(&d, c), "hello world", 11) == 0, "data crossed segments");
	ok(d.irqs == 1, "one interrupt");
	is_int(fake_read(&d, VIRTIO_MMIO_INTERRUPT_STATUS), VIRTIO_MMIO_INT_VRING);
	ok(!(fake_read(&d, VIRTIO_MMIO_STATUS) & NEEDS_RESET), "device healthy");
	echo_teardown(&e, &d);
}

TEST(chained_descriptors)
{
	echo_roundtrip(false);
}

TEST(indirect_descriptors)
{
	echo_roundtrip(true);
}

/* virtq_fill() leaves the used index alone; virtq_flush() and the
 * interrupt decision publish everything filled. */
TEST(used_fill_then_flush)
{
	struct fake_drv d;
	struct echo e;
	struct virtq_req req;
	struct virtq *vq;
	uint64_t buf;
	uint32_t id, len;

	echo_setup(&e, &d);
	fake_bringup(&d, V1, 1, 16);
	vq = &e.m.vqs[0];
	buf = fake_alloc(&d, 64);
	for (int i = 0; i < 3; i++)
		fake_add(&d, 0, (struct fbuf[]){{buf, 8, true}}, 1, false);
	for (int i = 0; i < 3; i++)
		if (virtq_pop(vq, &req) == 1)
			virtq_fill(vq, req.head, 8);
	ok(!fake_get_used(&d, 0, &id, &len), "filled elements are not visible yet");
	virtq_flush(vq);
	ok(fake_get_used(&d, 0, &id, &len) && fake_get_used(&d, 0, &id, &len) && fake_get_used(&d, 0, &id, &len),
	   "a flush publishes the three");
	fake_add(&d, 0, (struct fbuf[]){{buf, 8, true}}, 1, false);
	if (virtq_pop(vq, &req) == 1)
		virtq_fill(vq, req.head, 8);
	virtq_need_interrupt(vq);
	ok(fake_get_used(&d, 0, &id, &len), "the interrupt decision publishes what was filled");
	echo_teardown(&e, &d);
}

TEST(event_idx_interrupt_suppression)
{
	struct fake_drv d;
	struct echo e;
	uint64_t buf;
	uint32_t id, len;

	echo_setup(&e, &d);
	fake_bringup(&d, V1 | ECHO_FEATURES, 1, 16);
	buf = fake_alloc(&d, 64);
	/* used_event = 2: interrupt only once used idx passes 2, i.e. at the
	 * third completion. */
	fake_set_used_event(&d, 0, 2);
	for (int i = 0; i < 2; i++) {
		fake_add(&d, 0, (struct fbuf[]){{buf, 8, true}}, 1, false);
		fake_kick(&d, 0);
	}
	is_int(d.irqs, 0);
	fake_add(&d, 0, (struct fbuf[]){{buf, 8, true}}, 1, false);
	fake_kick(&d, 0);
	is_int(d.irqs, 1);
	fake_add(&d, 0, (struct fbuf[]){{buf, 8, true}}, 1, false);
	fake_kick(&d, 0);
	is_int(d.irqs, 1);
	/* A batch of four crossing used_event gives one interrupt. */
	fake_set_used_event(&d, 0, 5);
	for (int i = 0; i < 4; i++)
		fake_add(&d, 0, (struct fbuf[]){{buf, 8, true}}, 1, false);
	fake_kick(&d, 0);
	is_int(d.irqs, 2);
	while (fake_get_used(&d, 0, &id, &len))
		;
	/* The device asks to be kicked at the next new buffer. */
	is_int(fake_avail_event(&d, 0), 8);
	echo_teardown(&e, &d);
}

TEST(no_interrupt_flag)
{
	struct fake_drv d;
	struct echo e;
	uint64_t buf;

	uint64_t suppressed = vmm_counter_get(VMM_IRQ_SUPPRESSED), raised, exits = vmm_counter_get(VMM_NOTIFY_EXITS);

	echo_setup(&e, &d);
	fake_bringup(&d, V1, 1, 16);
	buf = fake_alloc(&d, 64);
	fake_set_avail_flags(&d, 0, VIRTQ_AVAIL_F_NO_INTERRUPT);
	fake_add(&d, 0, (struct fbuf[]){{buf, 8, true}}, 1, false);
	fake_kick(&d, 0);
	is_int(d.irqs, 0);
	ok(vmm_counter_get(VMM_IRQ_SUPPRESSED) == suppressed + 1, "the suppressed interrupt is counted");
	ok(vmm_counter_get(VMM_NOTIFY_EXITS) == exits + 1, "the QueueNotify write is counted");
	raised = vmm_counter_get(VMM_IRQ_RAISED);
	fake_set_avail_flags(&d, 0, 0);
	fake_add(&d, 0, (struct fbuf[]){{buf, 8, true}}, 1, false);
	fake_kick(&d, 0);
	is_int(d.irqs, 1);
	ok(vmm_counter_get(VMM_IRQ_RAISED) == raised + 1 && vmm_counter_get(VMM_IRQ_SUPPRESSED) == suppressed + 1,
	   "the interrupt sent is counted as raised, not suppressed");
	is_int(fake_used_flags(&d, 0), 0);
	echo_teardown(&e, &d);
}

TEST(notify_eventfd)
{
	struct fake_drv d;
	struct echo e;
	struct virtio_mmio_notifier n;
	uint64_t buf, one = 1;
	uint32_t id, len;
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	uint64_t wakeups = vmm_counter_get(VMM_DOORBELL_WAKEUPS), signals = vmm_counter_get(VMM_DOORBELL_SIGNALS);

	echo_setup(&e, &d);
	fake_bringup(&d, V1, 2, 16);
	buf = fake_alloc(&d, 64);
	fake_add(&d, 1, (struct fbuf[]){{buf, 8, true}}, 1, false);
	n = (struct virtio_mmio_notifier){.m = &e.m, .fd = fd, .queue = VIRTIO_MMIO_ALL_QUEUES};
	is_int(write(fd, &one, 8), 8);
	is_int(write(fd, &one, 8), 8);
	virtio_mmio_notify_fd_handler(fd, 0, &n);
	ok(fake_get_used(&d, 1, &id, &len), "doorbell reached the queue");
	ok(vmm_counter_get(VMM_DOORBELL_WAKEUPS) == wakeups + 1 && vmm_counter_get(VMM_DOORBELL_SIGNALS) == signals + 2,
	   "one wakeup counted for two doorbell signals");
	virtio_mmio_notify_fd_handler(fd, 0, &n);
	ok(vmm_counter_get(VMM_DOORBELL_WAKEUPS) == wakeups + 1, "an empty doorbell is not counted");
	is_int(read(fd, &one, 8), -1);
	close(fd);
	echo_teardown(&e, &d);
}

/* Each malformed layout: the device needs reset, a config interrupt was
 * sent, nothing is used, and after a reset the device works again. */
typedef void (*corrupt_fn)(struct fake_drv *d, uint64_t buf);

static void check_refused(const char *what, corrupt_fn corrupt, uint64_t features)
{
	struct fake_drv d;
	struct echo e;
	uint64_t buf;
	uint32_t id, len;
	void *big;

	echo_setup(&e, &d);
	/* A second, huge RAM region that is never touched, so lengths can
	 * reach 4 GiB while staying inside "guest RAM". */
	big = mmap(NULL, 3ULL << 30, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	d.mem.regions[1] = (struct guest_mem_region){.gpa = 1ULL << 30, .size = 3ULL << 30, .host = big};
	d.mem.nr_regions = 2;
	fake_bringup(&d, V1 | features, 1, 16);
	buf = fake_alloc(&d, 64);
	corrupt(&d, buf);
	fake_kick(&d, 0);
	ok(fake_read(&d, VIRTIO_MMIO_STATUS) & NEEDS_RESET, "%s: device needs reset", what);
	ok(fake_read(&d, VIRTIO_MMIO_INTERRUPT_STATUS) & VIRTIO_MMIO_INT_CONFIG, "%s: config interrupt", what);
	ok(!fake_get_used(&d, 0, &id, &len), "%s: nothing used", what);
	fake_bringup(&d, V1 | features, 1, 16);
	fake_add(&d, 0, (struct fbuf[]){{buf, 8, true}}, 1, false);
	fake_kick(&d, 0);
	ok(fake_get_used(&d, 0, &id, &len), "%s: works after reset", what);
	munmap(big, 3ULL << 30);
	echo_teardown(&e, &d);
}

static void bad_head(struct fake_drv *d, uint64_t buf)
{
	fake_publish(d, 0, 16);
}

static void bad_next(struct fake_drv *d, uint64_t buf)
{
	fake_set_desc(d, 0, 0, 0, buf, 8, VIRTQ_DESC_F_NEXT, 99);
	fake_publish(d, 0, 0);
}

static void chain_loop(struct fake_drv *d, uint64_t buf)
{
	fake_set_desc(d, 0, 0, 0, buf, 8, VIRTQ_DESC_F_NEXT, 1);
	fake_set_desc(d, 0, 0, 1, buf, 8, VIRTQ_DESC_F_NEXT, 0);
	fake_publish(d, 0, 0);
}

static void indirect_loop(struct fake_drv *d, uint64_t buf)
{
	uint64_t t = fake_alloc(d, 32);

	fake_set_desc(d, 0, t, 0, buf, 8, VIRTQ_DESC_F_NEXT, 1);
	fake_set_desc(d, 0, t, 1, buf, 8, VIRTQ_DESC_F_NEXT, 0);
	fake_set_desc(d, 0, 0, 0, t, 32, VIRTQ_DESC_F_INDIRECT, 0);
	fake_publish(d, 0, 0);
}

static void nested_indirect(struct fake_drv *d, uint64_t buf)
{
	uint64_t t1 = fake_alloc(d, 16), t2 = fake_alloc(d, 16);

	fake_set_desc(d, 0, t2, 0, buf, 8, VIRTQ_DESC_F_WRITE, 0);
	fake_set_desc(d, 0, t1, 0, t2, 16, VIRTQ_DESC_F_INDIRECT, 0);
	fake_set_desc(d, 0, 0, 0, t1, 16, VIRTQ_DESC_F_INDIRECT, 0);
	fake_publish(d, 0, 0);
}

static void indirect_bad_len(struct fake_drv *d, uint64_t buf)
{
	uint64_t t = fake_alloc(d, 32);

	fake_set_desc(d, 0, t, 0, buf, 8, VIRTQ_DESC_F_WRITE, 0);
	fake_set_desc(d, 0, 0, 0, t, 24, VIRTQ_DESC_F_INDIRECT, 0);
	fake_publish(d, 0, 0);
}

static void indirect_too_long(struct fake_drv *d, uint64_t buf)
{
	uint64_t t = fake_alloc(d, 16 * (VIRTQ_MAX_SEGS + 1));

	fake_set_desc(d, 0, t, 0, buf, 8, VIRTQ_DESC_F_WRITE, 0);
	fake_set_desc(d, 0, 0, 0, t, 16 * (VIRTQ_MAX_SEGS + 1), VIRTQ_DESC_F_INDIRECT, 0);
	fake_publish(d, 0, 0);
}

static void indirect_with_next(struct fake_drv *d, uint64_t buf)
{
	uint64_t t = fake_alloc(d, 16);

	fake_set_desc(d, 0, t, 0, buf, 8, VIRTQ_DESC_F_WRITE, 0);
	fake_set_desc(d, 0, 0, 0, t, 16, VIRTQ_DESC_F_INDIRECT | VIRTQ_DESC_F_NEXT, 1);
	fake_set_desc(d, 0, 0, 1, buf, 8, VIRTQ_DESC_F_WRITE, 0);
	fake_publish(d, 0, 0);
}

static void addr_outside_ram(struct fake_drv *d, uint64_t buf)
{
	fake_set_desc(d, 0, 0, 0, FAKE_RAM_SIZE - 4, 8, VIRTQ_DESC_F_WRITE, 0);
	fake_publish(d, 0, 0);
}

static void addr_wraps(struct fake_drv *d, uint64_t buf)
{
	fake_set_desc(d, 0, 0, 0, UINT64_MAX - 3, 8, VIRTQ_DESC_F_WRITE, 0);
	fake_publish(d, 0, 0);
}

static void length_overflow(struct fake_drv *d, uint64_t buf)
{
	fake_set_desc(d, 0, 0, 0, 1ULL << 30, 0xc0000000u, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 1);
	fake_set_desc(d, 0, 0, 1, 1ULL << 30, 0x40000000u, VIRTQ_DESC_F_WRITE, 0);
	fake_publish(d, 0, 0);
}

static void avail_idx_jump(struct fake_drv *d, uint64_t buf)
{
	struct virtq_avail *avail = fake_ptr(d, d->vqs[0].avail);

	fake_set_desc(d, 0, 0, 0, buf, 8, VIRTQ_DESC_F_WRITE, 0);
	d->vqs[0].avail_idx += 17;
	avail->idx = d->vqs[0].avail_idx;
}

static void readable_after_writable(struct fake_drv *d, uint64_t buf)
{
	fake_set_desc(d, 0, 0, 0, buf, 8, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 1);
	fake_set_desc(d, 0, 0, 1, buf, 8, 0, 0);
	fake_publish(d, 0, 0);
}

static void indirect_not_negotiated(struct fake_drv *d, uint64_t buf)
{
	uint64_t t = fake_alloc(d, 16);

	fake_set_desc(d, 0, t, 0, buf, 8, VIRTQ_DESC_F_WRITE, 0);
	fake_set_desc(d, 0, 0, 0, t, 16, VIRTQ_DESC_F_INDIRECT, 0);
	fake_publish(d, 0, 0);
}

TEST(malformed_input_refused)
{
	uint64_t ind = VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC);

	check_refused("head out of range", bad_head, 0);
	check_refused("next out of range", bad_next, 0);
	check_refused("chain loop", chain_loop, 0);
	check_refused("loop in indirect table", indirect_loop, ind);
	check_refused("nested indirect", nested_indirect, ind);
	check_refused("indirect length not a multiple of 16", indirect_bad_len, ind);
	check_refused("indirect table too long", indirect_too_long, ind);
	check_refused("indirect with NEXT", indirect_with_next, ind);
	check_refused("address outside RAM", addr_outside_ram, 0);
	check_refused("address wraps", addr_wraps, 0);
	check_refused("length overflow", length_overflow, 0);
	check_refused("avail idx jump", avail_idx_jump, 0);
	check_refused("readable after writable", readable_after_writable, 0);
	check_refused("indirect not negotiated", indirect_not_negotiated, 0);
}

TEST(cmdline_fragment)
{
	char buf[64], tiny[8];

	is_int(virtio_mmio_cmdline(buf, sizeof(buf), 0xd0001000ULL, 5), 34);
	is_str(buf, "virtio_mmio.device=4K@0xd0001000:5");
	is_int(virtio_mmio_cmdline(tiny, sizeof(tiny), 0xd0001000ULL, 5), -ENOSPC);
}

TEST(iov_helpers)
{
	char a[4] = "abcd", b[4] = "efgh", out[8] = {0};
	struct iovec iov[2] = {{a, 4}, {b, 4}}, sl[2];
	size_t got;

	is_int(iov_to_buf(iov, 2, 3, out, 8), 5);
	ok(memcmp(out, "defgh", 5) == 0, "copy across segments");
	is_int(iov_slice(iov, 2, 2, 4, sl, 2, &got), 2);
	is_int(got, 4);
	ok(sl[0].iov_base == a + 2 && sl[0].iov_len == 2 && sl[1].iov_len == 2, "slice");
	is_int(iov_from_buf(iov, 2, 6, "XYZ", 3), 2);
	ok(memcmp(b, "efXY", 4) == 0, "write clipped at the end");
}

TAP_MAIN()
