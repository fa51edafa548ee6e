/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake-init's shared directories (fake-fs.h): a FUSE client on kvrun's
 * virtio-fs devices, enough for a pod member's root and volumes: INIT,
 * LOOKUP, OPEN, READ, CREATE, WRITE, RELEASE and DESTROY on the first
 * request queue, one at a time.
 */
#include "fake-fs.h"
#include "fuse-wire.h"

#define FS_DEVICE_ID 26
#define FF_MAX 8
#define FF_RINGS 0x880000ULL /* device i's two queues at FF_RINGS + i * 0x8000 */
#define FF_IN 0x8c0000ULL /* header, arguments, a name */
#define FF_DATA 0x8c1000ULL /* a WRITE's bytes */
#define FF_OUT 0x8c2000ULL /* the reply, up to 8 KiB */
#define FF_REQ_QUEUE 1
#define FF_WAIT 8000000000ULL

#define FUSE_LOOKUP 1
#define FUSE_OPEN 14
#define FUSE_READ 15
#define FUSE_WRITE 16
#define FUSE_RELEASE 18
#define FUSE_INIT 26
#define FUSE_DESTROY 38
#define FUSE_CREATE 35
#define FUSE_ROOT 1

struct ff_dev {
	struct vdev d;
	bool used;
	char tag[40];
	uint64_t unique;
};

static struct ff_dev devs[FF_MAX];

/* One request: 40-byte header and args (alen bytes, already at FF_IN +
 * 40), then dlen bytes at FF_DATA, the reply into FF_OUT (room bytes
 * after its header). The reply's error (0 or -errno), or 1 when none
 * came or it is not this request's. */
static int ff_call(struct ff_dev *f, uint32_t op, uint64_t node, uint32_t alen, uint32_t dlen, uint32_t room)
{
	volatile struct in_hdr *h = (volatile struct in_hdr *)(uintptr_t)FF_IN;
	volatile struct out_hdr *o = (volatile struct out_hdr *)(uintptr_t)FF_OUT;
	volatile struct vdesc *t = f->d.q[FF_REQ_QUEUE].desc;
	uint32_t n = 0, id, len;

	h->len = 40 + alen + dlen;
	h->opcode = op;
	h->unique = ++f->unique;
	h->nodeid = node;
	h->uid = h->gid = h->pid = 0;
	h->extlen = h->pad = 0;
	memset((void *)(uintptr_t)FF_OUT, 0, 16 + room);
	t[n] = (struct vdesc){FF_IN, 40 + alen, D_NEXT, (uint16_t)(n + 1)};
	n++;
	if (dlen) {
		t[n] = (struct vdesc){FF_DATA, dlen, D_NEXT, (uint16_t)(n + 1)};
		n++;
	}
	t[n] = (struct vdesc){FF_OUT, 16 + room, D_WRITE, 0};
	vq_kick(&f->d, FF_REQ_QUEUE, 0);
	if (!vq_wait(&f->d, FF_REQ_QUEUE, FF_WAIT, &id, &len) || id != 0 || len < 16 || o->unique != f->unique)
		return 1;
	return o->error;
}

static void *arg(uint32_t off)
{
	return (void *)(uintptr_t)(FF_IN + 40 + off);
}

static void *reply(uint32_t off)
{
	return (void *)(uintptr_t)(FF_OUT + 16 + off);
}

static bool tag_is(struct vdev *d, const char *tag, uint32_t len)
{
	for (uint32_t i = 0; i < 36; i++) {
		char c = (char)mmio_read8(d->base + R_CONFIG + i);

		if (i < len ? c != tag[i] : c != 0)
			return false;
	}
	return len > 0 && len <= 36;
}

/* The device of tag, up (DRIVER_OK, its rings its own) on first use. */
static struct ff_dev *ff_find(const char *tag, uint32_t len)
{
	struct vdev d;

	for (unsigned int i = 0; i < FF_MAX; i++)
		if (devs[i].used && ff_is(&devs[i], tag, len))
			return &devs[i];
	if (len == 0 || len > 36)
		return 0;
	for (unsigned int n = 0; find_device_nth(FS_DEVICE_ID, n, &d); n++) {
		if (!tag_is(&d, tag, len))
			continue;
		for (unsigned int i = 0; i < FF_MAX; i++) {
			if (devs[i].used)
				continue;
			devs[i] = (struct ff_dev){.d = d, .used = true};
			memcpy(devs[i].tag, tag, len);
			if (!vdev_init_at(&devs[i].d, 2, 0, FF_RINGS + i * 0x8000ULL)) {
				devs[i].used = false;
				return 0;
			}
			return &devs[i];
		}
	}
	return 0;
}

bool ff_is(const struct ff_dev *f, const char *tag, uint32_t len)
{
	return strlen(f->tag) == len && !memcmp(f->tag, tag, len);
}

struct ff_dev *ff_mount(const char *tag, uint32_t len)
{
	struct ff_dev *f = ff_find(tag, len);
	volatile uint32_t *in = arg(0);

	if (!f)
		return 0;
	memset(arg(0), 0, 64);
	in[0] = 7; /* major */
	in[1] = 31; /* minor */
	in[2] = 65536; /* max_readahead */
	return ff_call(f, FUSE_INIT, 0, 64, 0, 64) == 0 ? f : 0;
}

bool ff_umount(struct ff_dev *f)
{
	return ff_call(f, FUSE_DESTROY, 0, 0, 0, 0) == 0;
}

static uint64_t ff_lookup(struct ff_dev *f, const char *name, uint32_t len)
{
	memcpy(arg(0), name, len);
	*(volatile char *)arg(len) = 0;
	if (ff_call(f, FUSE_LOOKUP, FUSE_ROOT, len + 1, 0, 128))
		return 0;
	return *(volatile uint64_t *)reply(0);
}

static void ff_release(struct ff_dev *f, uint64_t node, uint64_t fh)
{
	memset(arg(0), 0, 24);
	*(volatile uint64_t *)arg(0) = fh;
	ff_call(f, FUSE_RELEASE, node, 24, 0, 0);
}

int ff_read(struct ff_dev *f, const char *name, uint32_t len, void *buf, uint32_t size)
{
	volatile struct out_hdr *o = (volatile struct out_hdr *)(uintptr_t)FF_OUT;
	uint64_t node = ff_lookup(f, name, len), fh;
	int n = -1;

	if (!node || size > 4096)
		return -1;
	memset(arg(0), 0, 8);
	if (ff_call(f, FUSE_OPEN, node, 8, 0, 16)) /* O_RDONLY */
		return -1;
	fh = *(volatile uint64_t *)reply(0);
	memset(arg(0), 0, 40);
	*(volatile uint64_t *)arg(0) = fh;
	*(volatile uint32_t *)arg(16) = size;
	if (ff_call(f, FUSE_READ, node, 40, 0, size) == 0) {
		n = (int)(o->len - 16);
		memcpy(buf, reply(0), (size_t)n);
	}
	ff_release(f, node, fh);
	return n;
}

bool ff_write(struct ff_dev *f, const char *name, uint32_t len, const void *data, uint32_t size)
{
	volatile uint32_t *in = arg(0);
	uint64_t node, fh;
	bool ok;

	if (size > 4096 || len > 255)
		return false;
	in[0] = 0x241; /* O_WRONLY | O_CREAT | O_TRUNC */
	in[1] = 0100644;
	in[2] = 022; /* umask */
	in[3] = 0;
	memcpy(arg(16), name, len);
	*(volatile char *)arg(16 + len) = 0;
	if (ff_call(f, FUSE_CREATE, FUSE_ROOT, 16 + len + 1, 0, 128 + 16))
		return false;
	node = *(volatile uint64_t *)reply(0);
	fh = *(volatile uint64_t *)reply(128);
	memset(arg(0), 0, 40);
	*(volatile uint64_t *)arg(0) = fh;
	*(volatile uint32_t *)arg(16) = size;
	memcpy((void *)(uintptr_t)FF_DATA, data, size);
	ok = ff_call(f, FUSE_WRITE, node, 40, size, 8) == 0 && *(volatile uint32_t *)reply(0) == size;
	ff_release(f, node, fh);
	return ok;
}
