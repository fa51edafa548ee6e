/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio-blk beyond requests: a disk created without media that gets its
 * backing file later (a VM restored from a template), quiescing for a
 * snapshot, and the device's part of a snapshot.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "virtio/blk/blk-dev.h"
#include "virtio/mmio-state.h"

#define BLK_STATE_MAGIC 0x314b4c42u /* "BLK1" */

/* What a snapshot holds besides the transport. The backing file is the
 * restoring runtime's to give (by path it may have moved: a checkpoint
 * copies the disk); its size and mode must be the saved ones. */
struct blk_state {
	uint32_t magic;
	uint8_t read_only, has_media;
	uint8_t pad[2];
	uint64_t capacity; /* sectors */
	char id[VIRTIO_BLK_ID_BYTES];
	uint8_t pad2[4];
};

/* The media of an empty disk: size 0, so every request is out of bounds
 * and never reaches it. */
static ssize_t empty_io(struct blk_backend *be, const struct iovec *iov, int n, uint64_t off)
{
	return -EIO;
}

static int empty_flush(struct blk_backend *be)
{
	return 0;
}

static void empty_close(struct blk_backend *be)
{
	free(be);
}

static int empty_export(struct blk_backend *b, int out)
{
	return -ENOMEDIUM;
}

static const struct blk_backend_ops empty_ops = {
    .preadv = empty_io,
    .pwritev = empty_io,
    .flush = empty_flush,
    .export = empty_export,
    .close = empty_close,
};

static bool is_empty(const struct virtio_blk *b)
{
	return b->backend->ops == &empty_ops;
}

int virtio_blk_new_empty(const struct guest_mem *mem, const char *id, struct virtio_blk **ret)
{
	struct blk_backend *be = calloc(1, sizeof(*be));

	if (!be)
		return -ENOMEM;
	be->ops = &empty_ops;
	return virtio_blk_new_backend(mem, be, id, ret);
}

int virtio_blk_attach_media(struct virtio_blk *b, const char *path, const char *base, bool read_only)
{
	struct blk_backend *be, *old;
	int r;

	if (!is_empty(b))
		return err_set(-EBUSY, "virtio-blk: the disk already has media");
	r = blk_open(path, base, read_only, &be);
	if (r < 0)
		return r;
	/* The worker holds the lock for a whole batch: none is in flight. */
	blk_lock(b);
	old = b->backend;
	b->backend = be;
	/* An empty disk had no helper thread; the media may want one. */
	r = blk_helper_start(b);
	if (r < 0) {
		b->backend = old;
		blk_unlock(b);
		blk_backend_close(be);
		return err_set(r, "virtio-blk helper thread");
	}
	b->config.capacity = be->size / SECTOR_SIZE;
	blk_unlock(b);
	blk_backend_close(old);
	/* The driver reads the new capacity on the config change (Linux:
	 * virtblk_config_changed_work revalidates the disk size). */
	virtio_mmio_config_changed(&b->mmio);
	return 0;
}

int virtio_blk_export(struct virtio_blk *b, int out)
{
	int r;

	blk_lock(b);
	r = b->backend->ops->export(b->backend, out);
	blk_unlock(b);
	return r;
}

void virtio_blk_pause(struct virtio_blk *b, bool paused)
{
	blk_lock(b);
	b->paused = paused;
	blk_unlock(b);
	/* Kicks that came while paused were consumed without work. */
	if (!paused)
		blk_kick(b);
}

int virtio_blk_state_save(void *opaque, struct snap_buf *out)
{
	struct virtio_blk *b = opaque;
	struct blk_state st;

	memset(&st, 0, sizeof(st));
	st.magic = BLK_STATE_MAGIC;
	blk_lock(b);
	st.read_only = b->backend->read_only;
	st.has_media = !is_empty(b);
	st.capacity = b->config.capacity;
	blk_unlock(b);
	memcpy(st.id, b->id, sizeof(st.id));
	snap_buf_put(out, &st, sizeof(st));
	if (out->err)
		return out->err;
	return virtio_mmio_state_save(&b->mmio, out);
}

static int check_state(const struct virtio_blk *b, const struct blk_state *st)
{
	if (st->magic != BLK_STATE_MAGIC)
		return err_set(-EINVAL, "virtio-blk: not a virtio-blk state");
	if (st->has_media != !is_empty(b))
		return err_set(-EINVAL, "virtio-blk: saved %s media, this disk has %s",
		               st->has_media ? "with" : "without", is_empty(b) ? "none" : "some");
	if (st->capacity != b->config.capacity)
		return err_set(-EINVAL, "virtio-blk: saved capacity %llu sectors, this disk has %llu",
		               (unsigned long long)st->capacity, (unsigned long long)b->config.capacity);
	if (st->read_only != b->backend->read_only)
		return err_set(-EINVAL, "virtio-blk: saved %s, this disk is %s",
		               st->read_only ? "read-only" : "writable",
		               b->backend->read_only ? "read-only" : "writable");
	if (memcmp(st->id, b->id, sizeof(st->id)) != 0)
		return err_set(-EINVAL, "virtio-blk: saved with another disk id");
	return 0;
}

int virtio_blk_state_offers_ro(const void *data, size_t len, bool *ret_ro, bool *ret_read_only)
{
	struct snap_reader rd = {.p = data, .len = len};
	struct blk_state st;
	uint64_t offered;
	int r;

	if (snap_get(&rd, &st, sizeof(st)) < 0 || st.magic != BLK_STATE_MAGIC)
		return err_set(-EBADMSG, "virtio-blk: not a virtio-blk state");
	r = virtio_mmio_state_offered(&rd, &offered);
	if (r < 0)
		return r;
	*ret_ro = offered & VIRTIO_BIT(VIRTIO_BLK_F_RO);
	*ret_read_only = st.read_only;
	return 0;
}

int virtio_blk_state_load(void *opaque, const void *data, size_t len)
{
	struct virtio_blk *b = opaque;
	struct snap_reader rd = {.p = data, .len = len};
	struct blk_state st;
	int r;

	if (snap_get(&rd, &st, sizeof(st)) < 0)
		return err_set(-EBADMSG, "virtio-blk: state too short");
	r = check_state(b, &st);
	if (r < 0)
		return r;
	r = virtio_mmio_state_load_last(&b->mmio, &rd, "virtio-blk");
	if (r < 0)
		return r;
	return 0;
}
