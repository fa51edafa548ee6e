/* SPDX-License-Identifier: Apache-2.0 */
/* Device-specific snapshot state of virtio-blk and virtio-vsock: round
 * trips into fresh devices over a copy of guest RAM (as a restore does),
 * malformed or mismatched state refused, an empty disk taking its media
 * later, and vsock's transport reset event after a restore. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../virtio/fake-driver.h"
#include "../virtio/poll-loop.h"
#include "common/error.h"
#include "tap.h"
#include "virtio/blk/blk.h"
#include "virtio/vsock/vsock.h"

#define V1 VIRTIO_BIT(VIRTIO_F_VERSION_1)
#define SECTORS 64

static void make_image(char *path, int sectors)
{
	uint8_t sec[512];
	int fd;

	strcpy(path, "/tmp/kvrun-devstate-XXXXXX");
	fd = mkstemp(path);
	for (int s = 0; s < sectors; s++) {
		memset(sec, s, sizeof(sec));
		if (write(fd, sec, sizeof(sec)) != sizeof(sec))
			abort();
	}
	close(fd);
}

static void clone_guest(struct fake_drv *dst, struct fake_drv *src)
{
	fake_drv_init(dst);
	memcpy(dst->ram, src->ram, FAKE_RAM_SIZE);
	dst->brk = src->brk;
	memcpy(dst->vqs, src->vqs, sizeof(dst->vqs));
}

/* One request of type at sector into a fresh 512-byte buffer; returns the
 * status byte (0xee when it never completed), the buffer through *ret_buf. */
static uint8_t blk_req(struct fake_drv *d, uint32_t type, uint64_t sector, uint64_t *ret_buf)
{
	struct {
		uint32_t type, reserved;
		uint64_t sector;
	} hdr = {type, 0, sector};
	uint64_t h = fake_alloc(d, 16), buf = fake_alloc(d, 512), st = fake_alloc(d, 1);
	uint32_t id, len;

	memcpy(fake_ptr(d, h), &hdr, 16);
	*(uint8_t *)fake_ptr(d, st) = 0xee;
	fake_add(d, 0, (struct fbuf[]){{h, 16, false}, {buf, 512, type == 0}, {st, 1, true}}, 3, false);
	fake_kick(d, 0);
	fake_wait_used(d, 0, &id, &len);
	if (ret_buf)
		*ret_buf = buf;
	return *(uint8_t *)fake_ptr(d, st);
}

static uint64_t capacity(struct fake_drv *d)
{
	return fake_read(d, VIRTIO_MMIO_CONFIG) | (uint64_t)fake_read(d, VIRTIO_MMIO_CONFIG + 4) << 32;
}

TEST(blk_empty_then_media)
{
	struct fake_drv d;
	struct virtio_blk *b;
	char img[64];
	uint64_t buf;
	uint32_t gen;

	make_image(img, SECTORS);
	fake_drv_init(&d);
	is_int(virtio_blk_new_empty(&d.mem, "rootfs", &b), 0);
	fake_drv_attach(&d, virtio_blk_mmio(b));
	fake_bringup(&d, V1, 1, 64);
	is_int(capacity(&d), 0);
	ok(!(fake_read(&d, VIRTIO_MMIO_DEVICE_FEATURES) & (1u << 5)), "an empty disk does not offer RO");
	is_int(blk_req(&d, 0, 0, NULL), 1); /* IOERR: out of bounds */
	gen = fake_read(&d, VIRTIO_MMIO_CONFIG_GENERATION);
	is_int(virtio_blk_attach_media(b, img, NULL, true), 0);
	is_int(capacity(&d), SECTORS);
	ok(fake_read(&d, VIRTIO_MMIO_CONFIG_GENERATION) != gen, "config generation bumped");
	ok(fake_read(&d, VIRTIO_MMIO_INTERRUPT_STATUS) & VIRTIO_MMIO_INT_CONFIG, "config change interrupt");
	is_int(blk_req(&d, 0, 3, &buf), 0);
	is_int(((uint8_t *)fake_ptr(&d, buf))[100], 3);
	is_int(blk_req(&d, 1, 3, NULL), 1); /* read-only media: writes refused */
	is_int(virtio_blk_attach_media(b, img, NULL, true), -EBUSY);
	virtio_blk_free(b);
	fake_drv_free(&d);
	unlink(img);
}

TEST(blk_state_round_trip_and_refusals)
{
	struct fake_drv d, d2;
	struct virtio_blk *a, *b, *c;
	struct snap_buf sb = {0};
	char img[64], img2[64];
	uint64_t buf;
	uint8_t *bad;

	make_image(img, SECTORS);
	make_image(img2, SECTORS * 2);
	fake_drv_init(&d);
	is_int(virtio_blk_new(&d.mem, &(struct virtio_blk_opts){.path = img, .id = "rootfs"}, &a), 0);
	fake_drv_attach(&d, virtio_blk_mmio(a));
	fake_bringup(&d, V1, 1, 64);
	is_int(blk_req(&d, 0, 1, NULL), 0);
	virtio_blk_pause(a, true);
	is_int(virtio_blk_state_save(a, &sb), 0);
	virtio_blk_pause(a, false);
	virtio_blk_free(a); /* unlocks the image */

	clone_guest(&d2, &d);
	is_int(virtio_blk_new(&d2.mem, &(struct virtio_blk_opts){.path = img, .id = "rootfs"}, &b), 0);
	fake_drv_attach(&d2, virtio_blk_mmio(b));
	is_int(virtio_blk_state_load(b, sb.data, sb.len), 0);
	ok(virtio_mmio_active(virtio_blk_mmio(b)), "restored disk is running");
	is_int(blk_req(&d2, 0, 7, &buf), 0);
	is_int(((uint8_t *)fake_ptr(&d2, buf))[0], 7);
	is_int(virtio_blk_state_load(b, sb.data, sb.len - 1), -EBADMSG);
	is_int(virtio_blk_state_load(b, sb.data, 8), -EBADMSG);
	bad = malloc(sb.len + 1);
	memcpy(bad, sb.data, sb.len);
	bad[sb.len] = 0;
	is_int(virtio_blk_state_load(b, bad, sb.len + 1), -EBADMSG);
	bad[0] ^= 1;
	is_int(virtio_blk_state_load(b, bad, sb.len), -EINVAL);
	ok(strstr(err_msg(), "not a virtio-blk state") != NULL, "bad magic named: %s", err_msg());
	virtio_blk_free(b);

	is_int(virtio_blk_new(&d2.mem, &(struct virtio_blk_opts){.path = img2, .id = "rootfs"}, &c), 0);
	is_int(virtio_blk_state_load(c, sb.data, sb.len), -EINVAL);
	ok(strstr(err_msg(), "capacity") != NULL, "other capacity named: %s", err_msg());
	virtio_blk_free(c);
	is_int(virtio_blk_new(&d2.mem, &(struct virtio_blk_opts){.path = img, .read_only = true, .id = "rootfs"}, &c),
	       0);
	is_int(virtio_blk_state_load(c, sb.data, sb.len), -EINVAL);
	virtio_blk_free(c);
	is_int(virtio_blk_new_empty(&d2.mem, "rootfs", &c), 0);
	is_int(virtio_blk_state_load(c, sb.data, sb.len), -EINVAL);
	ok(strstr(err_msg(), "media") != NULL, "an empty disk refuses a disk's state: %s", err_msg());
	virtio_blk_free(c);

	free(bad);
	snap_buf_free(&sb);
	fake_drv_free(&d);
	fake_drv_free(&d2);
	unlink(img);
	unlink(img2);
}

/* A template's disk: saved empty, restored empty, then given media. */
TEST(blk_empty_state_then_media)
{
	struct fake_drv d, d2;
	struct virtio_blk *a, *b;
	struct snap_buf sb = {0};
	char img[64];
	uint64_t buf;

	make_image(img, SECTORS);
	fake_drv_init(&d);
	is_int(virtio_blk_new_empty(&d.mem, "rootfs", &a), 0);
	fake_drv_attach(&d, virtio_blk_mmio(a));
	fake_bringup(&d, V1, 1, 64);
	is_int(virtio_blk_state_save(a, &sb), 0);
	clone_guest(&d2, &d);
	is_int(virtio_blk_new_empty(&d2.mem, "rootfs", &b), 0);
	fake_drv_attach(&d2, virtio_blk_mmio(b));
	is_int(virtio_blk_state_load(b, sb.data, sb.len), 0);
	is_int(virtio_blk_attach_media(b, img, NULL, false), 0);
	is_int(capacity(&d2), SECTORS);
	is_int(blk_req(&d2, 0, 5, &buf), 0);
	is_int(((uint8_t *)fake_ptr(&d2, buf))[511], 5);
	virtio_blk_free(a);
	virtio_blk_free(b);
	snap_buf_free(&sb);
	fake_drv_free(&d);
	fake_drv_free(&d2);
	unlink(img);
}

/* A checkpoint of a container restored from a template with a read-only
 * root: its disk was the template's (created empty, offering a writable
 * disk, which the driver negotiated) with read-only media attached. The
 * restore must make it offering what it offered, not what read-only media
 * would: a plainly read-only disk offers VIRTIO_BLK_F_RO and is refused. */
TEST(blk_template_ro_checkpoint)
{
	struct fake_drv d, d2;
	struct virtio_blk *a, *b, *c;
	struct snap_buf sb = {0};
	bool ro = true, read_only = false;
	char img[64];
	uint64_t buf;

	make_image(img, SECTORS);
	fake_drv_init(&d);
	is_int(virtio_blk_new_empty(&d.mem, "rootfs", &a), 0);
	fake_drv_attach(&d, virtio_blk_mmio(a));
	fake_bringup(&d, V1, 1, 64);
	is_int(virtio_blk_attach_media(a, img, NULL, true), 0);
	virtio_blk_pause(a, true);
	is_int(virtio_blk_state_save(a, &sb), 0);
	virtio_blk_free(a);
	is_int(virtio_blk_state_offers_ro(sb.data, sb.len, &ro, &read_only), 0);
	ok(!ro && read_only, "the saved state: read-only media behind a writable offer");
	is_int(virtio_blk_state_offers_ro(sb.data, 8, &ro, &read_only), -EBADMSG);

	clone_guest(&d2, &d);
	is_int(virtio_blk_new(&d2.mem, &(struct virtio_blk_opts){.path = img, .read_only = true, .id = "rootfs"}, &c),
	       0);
	is_int(virtio_blk_state_load(c, sb.data, sb.len), -EINVAL);
	ok(strstr(err_msg(), "offered features") != NULL, "a disk offering RO is refused: %s", err_msg());
	virtio_blk_free(c);
	is_int(virtio_blk_new(
		   &d2.mem,
		   &(struct virtio_blk_opts){.path = img, .read_only = true, .offer_writable = true, .id = "rootfs"},
		   &b),
	       0);
	fake_drv_attach(&d2, virtio_blk_mmio(b));
	is_int(virtio_blk_state_load(b, sb.data, sb.len), 0);
	is_int(capacity(&d2), SECTORS);
	is_int(blk_req(&d2, 0, 9, &buf), 0);
	is_int(((uint8_t *)fake_ptr(&d2, buf))[7], 9);
	is_int(blk_req(&d2, 1, 9, NULL), 1); /* still read-only media: writes fail */
	virtio_blk_free(b);
	snap_buf_free(&sb);
	fake_drv_free(&d);
	fake_drv_free(&d2);
	unlink(img);
}

struct vs {
	struct fake_drv d;
	struct event_loop *loop;
	struct virtio_vsock *v;
	char dir[64], path[96];
};

static void vs_new(struct vs *t, struct fake_drv *clone_of, uint64_t cid)
{
	memset(t, 0, sizeof(*t));
	strcpy(t->dir, "/tmp/kvrun-devstate-XXXXXX");
	if (!mkdtemp(t->dir))
		abort();
	snprintf(t->path, sizeof(t->path), "%s/v.sock", t->dir);
	if (clone_of)
		clone_guest(&t->d, clone_of);
	else
		fake_drv_init(&t->d);
	if (event_loop_new(&t->loop) < 0 || virtio_vsock_new(&t->d.mem, t->loop, cid, t->path, true, &t->v) < 0)
		abort();
	fake_drv_attach(&t->d, virtio_vsock_mmio(t->v));
}

static void pump(struct vs *t)
{
	for (int i = 0; i < 1000 && poll_loop_once(t->loop, 0) > 0; i++)
		;
}

static void vs_free(struct vs *t)
{
	virtio_vsock_free(t->v);
	event_loop_free(t->loop);
	fake_drv_free(&t->d);
	rmdir(t->dir);
}

TEST(vsock_state_and_transport_reset)
{
	struct vs a, b, c;
	struct snap_buf sb = {0};
	uint64_t ev;
	uint32_t id, len;

	vs_new(&a, NULL, 3);
	fake_bringup(&a.d, V1 | VIRTIO_BIT(VIRTIO_F_RING_EVENT_IDX), 3, 16);
	ev = fake_alloc(&a.d, 4);
	memset(fake_ptr(&a.d, ev), 0xff, 4);
	fake_add(&a.d, 2, (struct fbuf[]){{ev, 4, true}}, 1, false);
	fake_kick(&a.d, 2);
	pump(&a);
	ok(!fake_get_used(&a.d, 2, &id, &len), "no event while running");
	virtio_vsock_pause(a.v, true);
	is_int(virtio_vsock_state_save(a.v, &sb), 0);
	virtio_vsock_pause(a.v, false);

	vs_new(&b, &a.d, 3);
	is_int(virtio_vsock_state_load(b.v, sb.data, sb.len), 0);
	pump(&b);
	ok(fake_get_used(&b.d, 2, &id, &len) && len == 4, "restored device used the event buffer");
	is_int(*(uint32_t *)fake_ptr(&b.d, ev), 0); /* VIRTIO_VSOCK_EVENT_TRANSPORT_RESET */
	ok(fake_read(&b.d, VIRTIO_MMIO_INTERRUPT_STATUS) & VIRTIO_MMIO_INT_VRING, "and interrupted the guest");
	ok(!fake_get_used(&b.d, 2, &id, &len), "one event only");
	is_int(virtio_vsock_state_load(b.v, sb.data, sb.len - 2), -EBADMSG);
	is_int(virtio_vsock_state_load(b.v, sb.data, 4), -EBADMSG);
	vs_free(&b);

	vs_new(&c, &a.d, 4);
	is_int(virtio_vsock_state_load(c.v, sb.data, sb.len), -EINVAL);
	ok(strstr(err_msg(), "CID") != NULL, "another CID refused: %s", err_msg());
	vs_free(&c);
	vs_free(&a);
	snap_buf_free(&sb);
}

/* Saved with no event buffer posted: the event waits for the first one. */
TEST(vsock_event_waits_for_a_buffer)
{
	struct vs a, b;
	struct snap_buf sb = {0};
	uint64_t ev;
	uint32_t id, len;

	vs_new(&a, NULL, 3);
	fake_bringup(&a.d, V1, 3, 16);
	is_int(virtio_vsock_state_save(a.v, &sb), 0);
	vs_new(&b, &a.d, 3);
	is_int(virtio_vsock_state_load(b.v, sb.data, sb.len), 0);
	pump(&b);
	ok(!fake_get_used(&b.d, 2, &id, &len), "nothing used without a buffer");
	ev = fake_alloc(&b.d, 8);
	fake_add(&b.d, 2, (struct fbuf[]){{ev, 8, true}}, 1, false);
	fake_kick(&b.d, 2);
	pump(&b);
	ok(fake_get_used(&b.d, 2, &id, &len) && len == 4, "event delivered once a buffer came");
	vs_free(&a);
	vs_free(&b);
	snap_buf_free(&sb);
}

TAP_MAIN()
