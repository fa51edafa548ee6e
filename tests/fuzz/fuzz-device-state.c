/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device-state loaders of a snapshot (each device's *-state.c and the
 * virtio-mmio transport's, vmm/device-state.c, the CMOS clock's): a device
 * is made as a restore makes it and its saved section loaded from the
 * input. The first byte picks the device, the second how the section is
 * made:
 *   - the rest of the input as it is;
 *   - a real section: a device of the same kind runs a fuzzed guest
 *     program, saves, and the input flips bytes of what it saved.
 * A virtio device that loaded its state then runs the rest of the program,
 * on the restored queues. A state that loads must save again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "virtio/balloon/balloon.h"
#include "virtio/blk/blk.h"
#include "virtio/net/net.h"
#include "virtio/vsock/vsock.h"
#include "vmm/platform.h"
#include "vmm/serial.h"
#include "vmm/test-device.h"
#include "vmm/vm.h"

enum { DEV_BLK, DEV_NET, DEV_VSOCK, DEV_SERIAL, DEV_RTC, DEV_TEST, DEV_BALLOON, NR_DEVS };

static char dir[64], uds[96];

static void remove_dir(void)
{
	unlink(uds);
	rmdir(dir);
}

static void make_dir(void)
{
	if (dir[0])
		return;
	snprintf(dir, sizeof(dir), "/tmp/kvrun-fuzz-state-%d", (int)getpid());
	if (mkdir(dir, 0700) < 0)
		abort();
	snprintf(uds, sizeof(uds), "%s/v.sock", dir);
	atexit(remove_dir);
}

/* One device of kind `kind` on guest g (virtio) or alone. */
struct dev {
	int kind;
	struct fz_guest g;
	struct virtio_blk *blk;
	struct virtio_net *net;
	struct virtio_vsock *vsock;
	struct virtio_balloon *balloon;
	struct serial serial;
	struct vm *vm; /* just its port bus, for the CMOS clock */
	struct platform platform;
	struct test_device td;
	void *opaque;
	int (*save)(void *opaque, struct snap_buf *out);
	int (*load)(void *opaque, const void *data, size_t len);
};

static void dev_new_virtio(struct dev *d)
{
	struct virtio_net_opts o = {.mac = {2, 0, 0, 0, 0, 1}, .queue_pairs = 2, .no_vhost = true};

	fz_guest_init(&d->g);
	switch (d->kind) {
	case DEV_BLK:
		if (virtio_blk_new_empty(&d->g.mem, "state", &d->blk) < 0)
			abort();
		d->g.blk = d->opaque = d->blk;
		d->g.settle = fz_blk_settle;
		d->save = virtio_blk_state_save;
		d->load = virtio_blk_state_load;
		fz_guest_attach(&d->g, virtio_blk_mmio(d->blk));
		break;
	case DEV_NET:
		if (event_loop_new(&d->g.loop) < 0 || virtio_net_new_detached(&d->g.mem, d->g.loop, &o, &d->net) < 0)
			abort();
		d->opaque = d->net;
		d->g.settle = fz_loop_settle;
		d->save = virtio_net_state_save;
		d->load = virtio_net_state_load;
		fz_guest_attach(&d->g, virtio_net_mmio(d->net));
		break;
	case DEV_BALLOON: {
		struct virtio_balloon_opts bo = {.discard = fz_balloon_discard, .opaque = &d->g};

		if (event_loop_new(&d->g.loop) < 0 || virtio_balloon_new(&d->g.mem, d->g.loop, &bo, &d->balloon) < 0)
			abort();
		d->opaque = d->balloon;
		d->g.settle = fz_loop_settle;
		d->save = virtio_balloon_state_save;
		d->load = virtio_balloon_state_load;
		fz_guest_attach(&d->g, virtio_balloon_mmio(d->balloon));
		break;
	}
	default:
		if (event_loop_new(&d->g.loop) < 0 ||
		    virtio_vsock_new(&d->g.mem, d->g.loop, 3, uds, true, &d->vsock) < 0)
			abort();
		d->opaque = d->vsock;
		d->g.settle = fz_loop_settle;
		d->save = virtio_vsock_state_save;
		d->load = virtio_vsock_state_load;
		fz_guest_attach(&d->g, virtio_vsock_mmio(d->vsock));
		break;
	}
}

static void dev_new(struct dev *d, int kind)
{
	memset(d, 0, sizeof(*d));
	d->kind = kind;
	switch (kind) {
	case DEV_SERIAL:
		serial_init(&d->serial, -1, NULL, NULL);
		d->opaque = &d->serial;
		d->save = serial_state_save;
		d->load = serial_state_load;
		break;
	case DEV_RTC:
		d->vm = calloc(1, sizeof(*d->vm));
		if (!d->vm || bus_init(&d->vm->pio, "pio") < 0 || rtc_create(d->vm, &d->platform.rtc) < 0)
			abort();
		d->opaque = &d->platform;
		d->save = platform_state_save;
		d->load = platform_state_load;
		break;
	case DEV_TEST:
		pthread_mutex_init(&d->td.lock, NULL);
		d->td.irq.gsi = 7;
		d->opaque = &d->td;
		d->save = test_device_state_save;
		d->load = test_device_state_load;
		break;
	default:
		dev_new_virtio(d);
		break;
	}
}

static void dev_free(struct dev *d)
{
	virtio_blk_free(d->blk);
	virtio_net_free(d->net);
	virtio_vsock_free(d->vsock);
	virtio_balloon_free(d->balloon);
	if (d->g.loop)
		event_loop_free(d->g.loop);
	if (d->g.ram)
		fz_guest_free(&d->g);
	if (d->kind == DEV_SERIAL)
		serial_destroy(&d->serial);
	if (d->vm) {
		rtc_free(d->platform.rtc);
		bus_destroy(&d->vm->pio);
		free(d->vm);
	}
	if (d->kind == DEV_TEST)
		pthread_mutex_destroy(&d->td.lock);
}

static bool is_virtio(int kind)
{
	return kind == DEV_BLK || kind == DEV_NET || kind == DEV_VSOCK || kind == DEV_BALLOON;
}

/* A real section: a device's state after a fuzzed program, with bytes of
 * it flipped as the input says. */
static void saved_state(int kind, struct fz *f, struct snap_buf *out)
{
	struct dev d;

	dev_new(&d, kind);
	if (is_virtio(kind))
		fz_guest_run(&d.g, f, 1 + fz_u8(f) % 32);
	if (d.save(d.opaque, out) < 0 || out->err)
		abort();
	dev_free(&d);
	for (unsigned int n = fz_u8(f) % 8; n && out->len; n--) {
		size_t at = fz_u16(f) % out->len;

		out->data[at] ^= fz_u8(f);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = {data, size};
	struct snap_buf st = {0}, again = {0};
	int kind = fz_u8(&f) % NR_DEVS;
	struct dev d;

	make_dir();
	if (fz_u8(&f) & 1)
		saved_state(kind, &f, &st);
	else if (snap_buf_put(&st, f.p, f.n) < 0)
		abort();
	else
		f.n = 0;
	if (kind == DEV_NET) {
		struct virtio_net_opts o;

		(void)virtio_net_state_opts(st.data, st.len, &o);
	}
	dev_new(&d, kind);
	if (d.load(d.opaque, st.data, st.len) == 0) {
		if (d.save(d.opaque, &again) < 0)
			abort();
		if (is_virtio(kind))
			fz_guest_run(&d.g, &f, 64);
	}
	dev_free(&d);
	snap_buf_free(&st);
	snap_buf_free(&again);
	return 0;
}
