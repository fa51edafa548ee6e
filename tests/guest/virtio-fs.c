/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scenario virtio-fs: kvrun's virtio-fs device as a guest driver sees it.
 * The host shares a directory holding fs_file (fs_size bytes of the
 * pattern below, seeded by fs_seed); the guest checks the config (fs_tag),
 * speaks FUSE on the request queue (INIT, LOOKUP, OPEN, READ into chained
 * and indirect buffers, WRITE from split buffers, READ back), FORGETs on
 * the high-priority queue, and sends malformed requests, which get FUSE
 * errors or no reply while the device stays healthy. The host then checks
 * the written bytes in the file.
 */
#include "virtio.h"
#include "fuse-wire.h"

#define FUSE_LOOKUP 1
#define FUSE_FORGET 2
#define FUSE_OPEN 14
#define FUSE_READ 15
#define FUSE_WRITE 16
#define FUSE_INIT 26
#define FUSE_ROOT 1
#define HIPRIO 0
#define REQ 1

struct init_out {
	uint32_t major, minor, max_readahead, flags;
	uint16_t max_background, congestion;
	uint32_t max_write, time_gran;
	uint16_t max_pages, map_alignment;
	uint32_t flags2, unused[7];
};

struct entry_out {
	uint64_t nodeid, generation, entry_valid, attr_valid;
	uint32_t entry_valid_nsec, attr_valid_nsec;
	uint64_t ino, size, blocks, atime, mtime, ctime;
	uint32_t atimensec, mtimensec, ctimensec, mode, nlink, uid, gid, rdev, blksize, flags;
};

struct rw_in {
	uint64_t fh, offset;
	uint32_t size, flags;
	uint64_t lock_owner;
	uint32_t flags2, padding;
};

/* Guest RAM for requests (RING_BASE..BUF_BASE are the rings). */
#define REQ_ADDR BUF_BASE
#define ARG_ADDR (BUF_BASE + 0x100)
#define OUT_ADDR (BUF_BASE + 0x1000)
#define DATA_ADDR (BUF_BASE + 0x2000)
#define DATA ((volatile uint8_t *)(uintptr_t)DATA_ADDR)
#define OUT ((volatile struct out_hdr *)(uintptr_t)OUT_ADDR)

struct seg {
	uint64_t addr;
	uint32_t len;
	bool write;
};

static uint64_t unique;

static uint8_t pattern(uint32_t seed, uint32_t i)
{
	return (uint8_t)(seed * 31 + i * 13 + (i >> 9));
}

/* Chain segs in queue q's table (or an indirect table), submit, wait. The
 * used length, or -1 when nothing came back. */
static int64_t fs_submit(struct vdev *d, unsigned int q, const struct seg *s, unsigned int n, bool indirect)
{
	volatile struct vdesc *t = indirect ? (volatile struct vdesc *)(uintptr_t)INDIRECT_TABLE : d->q[q].desc;
	uint32_t id, len;

	for (unsigned int i = 0; i < n; i++) {
		t[i].addr = s[i].addr;
		t[i].len = s[i].len;
		t[i].flags = (uint16_t)((s[i].write ? D_WRITE : 0) | (i + 1 < n ? D_NEXT : 0));
		t[i].next = (uint16_t)(i + 1 < n ? i + 1 : 0);
	}
	if (indirect)
		d->q[q].desc[0] = (struct vdesc){INDIRECT_TABLE, n * 16, D_INDIRECT, 0};
	vq_kick(d, q, 0);
	if (!vq_wait(d, q, 4000000000ULL, &id, &len) || id != 0)
		return -1;
	return len;
}

static void put_hdr(uint32_t opcode, uint64_t node, uint32_t len)
{
	volatile struct in_hdr *h = (volatile struct in_hdr *)(uintptr_t)REQ_ADDR;

	memset((void *)(uintptr_t)REQ_ADDR, 0, sizeof(struct in_hdr));
	h->len = len;
	h->opcode = opcode;
	h->unique = ++unique;
	h->nodeid = node;
}

static bool reply_ok(int64_t len, uint32_t want)
{
	return len == want && OUT->len == want && OUT->error == 0 && OUT->unique == unique;
}

static void check_config(struct vdev *d)
{
	char want[40] = "", got[40] = "";

	cmdline_get("fs_tag", want, sizeof(want));
	for (int i = 0; i < 36; i++)
		got[i] = (char)mmio_read8(d->base + R_CONFIG + i);
	tap_ok(!memcmp(got, want, strlen(want) + 1), "fs: tag '%s' (expected '%s')", got, want);
	tap_ok(rd(d, R_CONFIG + 36) == 1, "fs: one request queue (%u)", rd(d, R_CONFIG + 36));
	tap_ok(has(d, F_EVENT_IDX) && has(d, F_INDIRECT), "fs: EVENT_IDX and INDIRECT_DESC offered and taken");
}

static bool fs_init(struct vdev *d)
{
	volatile uint32_t *in = (volatile uint32_t *)(uintptr_t)ARG_ADDR;
	volatile struct init_out *out = (volatile struct init_out *)(uintptr_t)(OUT_ADDR + 16);

	memset((void *)(uintptr_t)ARG_ADDR, 0, 64);
	in[0] = 7;
	in[1] = 31;
	in[2] = 65536;
	in[3] = 1 << 22; /* FUSE_MAX_PAGES */
	put_hdr(FUSE_INIT, 0, 40 + 64);
	struct seg s[3] = {{REQ_ADDR, 40, false}, {ARG_ADDR, 64, false}, {OUT_ADDR, 16 + 64, true}};
	int64_t len = fs_submit(d, REQ, s, 3, false);
	return tap_ok(reply_ok(len, 80) && out->major == 7 && out->minor == 31 && out->max_write >= 4096,
	              "fs: INIT answered 7.%u, max_write %u (len %d)", out->minor, out->max_write, (int)len);
}

static uint64_t fs_lookup(struct vdev *d, const char *name, uint64_t *ret_size)
{
	volatile struct entry_out *e = (volatile struct entry_out *)(uintptr_t)(OUT_ADDR + 16);
	size_t n = strlen(name) + 1;

	memcpy((void *)(uintptr_t)ARG_ADDR, name, n);
	put_hdr(FUSE_LOOKUP, FUSE_ROOT, (uint32_t)(40 + n));
	/* The header split in two descriptors, the reply in two. */
	struct seg s[5] = {{REQ_ADDR, 24, false},
	                   {REQ_ADDR + 24, 16, false},
	                   {ARG_ADDR, (uint32_t)n, false},
	                   {OUT_ADDR, 40, true},
	                   {OUT_ADDR + 40, 104, true}};
	if (!reply_ok(fs_submit(d, REQ, s, 5, false), 144))
		return 0;
	*ret_size = e->size;
	return e->nodeid;
}

static uint64_t fs_open(struct vdev *d, uint64_t node)
{
	volatile uint32_t *in = (volatile uint32_t *)(uintptr_t)ARG_ADDR;

	in[0] = 2; /* O_RDWR */
	in[1] = 0;
	put_hdr(FUSE_OPEN, node, 48);
	struct seg s[3] = {{REQ_ADDR, 40, false}, {ARG_ADDR, 8, false}, {OUT_ADDR, 32, true}};
	if (!reply_ok(fs_submit(d, REQ, s, 3, true), 32))
		return UINT64_MAX;
	return *(volatile uint64_t *)(uintptr_t)(OUT_ADDR + 16);
}

/* READ len bytes at off into DATA, in three writable pieces. */
static int64_t fs_read(struct vdev *d, uint64_t node, uint64_t fh, uint64_t off, uint32_t len, bool indirect)
{
	volatile struct rw_in *in = (volatile struct rw_in *)(uintptr_t)ARG_ADDR;
	uint32_t a = len / 3, b = len / 3;

	memset((void *)(uintptr_t)ARG_ADDR, 0, sizeof(struct rw_in));
	in->fh = fh;
	in->offset = off;
	in->size = len;
	put_hdr(FUSE_READ, node, 40 + sizeof(struct rw_in));
	memset((void *)(uintptr_t)DATA_ADDR, 0, len);
	struct seg s[5] = {{REQ_ADDR, 40, false},
	                   {ARG_ADDR, sizeof(struct rw_in), false},
	                   {OUT_ADDR, 16, true},
	                   {DATA_ADDR, a, true},
	                   {DATA_ADDR + a, b, true}};
	struct seg s6[6];
	memcpy(s6, s, sizeof(s));
	s6[5] = (struct seg){DATA_ADDR + a + b, len - a - b, true};
	return fs_submit(d, REQ, s6, 6, indirect);
}

static bool data_matches(uint32_t seed, uint64_t off, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		if (DATA[i] != pattern(seed, (uint32_t)off + i))
			return false;
	return true;
}

static void rw_checks(struct vdev *d, uint32_t seed, uint64_t node, uint64_t size)
{
	uint64_t fh = fs_open(d, node);
	int64_t len;

	if (!tap_ok(fh != UINT64_MAX, "fs: OPEN (indirect)"))
		return;
	len = fs_read(d, node, fh, 0, 3000, false);
	tap_ok(len == 16 + 3000 && OUT->error == 0 && data_matches(seed, 0, 3000),
	       "fs: READ 3000 bytes into 3 chained buffers matches the file (len %d)", (int)len);
	len = fs_read(d, node, fh, 1000, 5000, true);
	tap_ok(len == 16 + 5000 && data_matches(seed, 1000, 5000),
	       "fs: READ 5000 bytes at 1000 through an indirect table (len %d)", (int)len);
	len = fs_read(d, node, fh, size - 100, 3000, false);
	tap_ok(len == 16 + 100 && data_matches(seed, size - 100, 100), "fs: READ past the end: 100 bytes (len %d)",
	       (int)len);

	/* WRITE 600 bytes at 4096, the data in two descriptors. */
	volatile struct rw_in *in = (volatile struct rw_in *)(uintptr_t)ARG_ADDR;
	memset((void *)(uintptr_t)ARG_ADDR, 0, sizeof(struct rw_in));
	in->fh = fh;
	in->offset = 4096;
	in->size = 600;
	for (uint32_t i = 0; i < 600; i++)
		DATA[i] = (uint8_t)(0x5a ^ i ^ seed);
	put_hdr(FUSE_WRITE, node, 40 + sizeof(struct rw_in) + 600);
	struct seg s[5] = {{REQ_ADDR, 40, false},
	                   {ARG_ADDR, sizeof(struct rw_in), false},
	                   {DATA_ADDR, 250, false},
	                   {DATA_ADDR + 250, 350, false},
	                   {OUT_ADDR, 24, true}};
	len = fs_submit(d, REQ, s, 5, true);
	tap_ok(reply_ok(len, 24) && *(volatile uint32_t *)(uintptr_t)(OUT_ADDR + 16) == 600,
	       "fs: WRITE 600 bytes from 2 buffers (indirect)");
	len = fs_read(d, node, fh, 4096, 600, false);
	bool same = len == 16 + 600;
	for (uint32_t i = 0; same && i < 600; i++)
		same = DATA[i] == (uint8_t)(0x5a ^ i ^ seed);
	tap_ok(same, "fs: the written bytes read back");
}

static void bad_requests(struct vdev *d)
{
	int64_t len;

	/* Shorter than a FUSE header: no reply. */
	put_hdr(FUSE_LOOKUP, FUSE_ROOT, 48);
	struct seg s1[2] = {{REQ_ADDR, 8, false}, {OUT_ADDR, 64, true}};
	len = fs_submit(d, REQ, s1, 2, false);
	tap_ok(len == 0, "fs: an 8-byte request gets no reply (len %d)", (int)len);
	/* A header that claims more than the chain holds. */
	put_hdr(FUSE_LOOKUP, FUSE_ROOT, 400);
	struct seg s2[2] = {{REQ_ADDR, 40, false}, {OUT_ADDR, 64, true}};
	len = fs_submit(d, REQ, s2, 2, false);
	tap_ok(len == 16 && OUT->error == -22, "fs: a length beyond the chain -> EINVAL (%d)", OUT->error);
	/* ".." and "a/b" are no names; an unknown opcode. */
	memcpy((void *)(uintptr_t)ARG_ADDR, "..", 3);
	put_hdr(FUSE_LOOKUP, FUSE_ROOT, 43);
	struct seg s3[3] = {{REQ_ADDR, 40, false}, {ARG_ADDR, 3, false}, {OUT_ADDR, 144, true}};
	len = fs_submit(d, REQ, s3, 3, false);
	tap_ok(len == 16 && OUT->error == -22, "fs: LOOKUP '..' -> EINVAL (%d)", OUT->error);
	memcpy((void *)(uintptr_t)ARG_ADDR, "a/b", 4);
	put_hdr(FUSE_LOOKUP, FUSE_ROOT, 44);
	s3[1].len = 4;
	len = fs_submit(d, REQ, s3, 3, false);
	tap_ok(len == 16 && OUT->error == -22, "fs: LOOKUP 'a/b' -> EINVAL (%d)", OUT->error);
	put_hdr(9999, FUSE_ROOT, 40);
	len = fs_submit(d, REQ, s2, 2, false);
	tap_ok(len == 16 && OUT->error == -38, "fs: an unknown opcode -> ENOSYS (%d)", OUT->error);
	tap_ok(!(rd(d, R_STATUS) & S_NEEDS_RESET), "fs: the device is still healthy");
}

void check_virtio_fs(void)
{
	uint32_t seed = (uint32_t)cmd_num("fs_seed", 0);
	uint64_t want_size = cmd_num("fs_size", 0), size = 0, node;
	char file[64] = "";
	struct vdev d;

	if (!tap_ok(find_device(26, &d), "fs: virtio-fs found on the command line"))
		return;
	if (!tap_ok(vdev_init(&d, 2, 0), "fs: device reaches DRIVER_OK with 2 queues"))
		return;
	check_config(&d);
	if (!fs_init(&d))
		return;
	cmdline_get("fs_file", file, sizeof(file));
	node = fs_lookup(&d, file, &size);
	if (!tap_ok(node > 1 && size == want_size, "fs: LOOKUP '%s': node %llu, %llu bytes", file,
	            (unsigned long long)node, (unsigned long long)size))
		return;
	rw_checks(&d, seed, node, size);

	/* FORGET on the high-priority queue: no reply. */
	*(volatile uint64_t *)(uintptr_t)ARG_ADDR = 2; /* more than looked up: the count stops at 0 */
	put_hdr(FUSE_FORGET, node, 48);
	struct seg f[2] = {{REQ_ADDR, 40, false}, {ARG_ADDR, 8, false}};
	int64_t len = fs_submit(&d, HIPRIO, f, 2, false);
	tap_ok(len == 0, "fs: FORGET on the high-priority queue, no reply (len %d)", (int)len);
	bad_requests(&d);
}
