/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio-fs through the fake driver: config space, FUSE framing over
 * chained and indirect descriptors on the request queues, FORGET on the
 * high-priority queue, malformed chains, reset (also with a SETLKW
 * waiting), pause, the snapshot refusal, the workers' setup and
 * names, and a pod's slot: busy while mounted, detached after DESTROY
 * (also with requests in flight and a lock waiting) and attached to the
 * next directory, many times over. The device's workers run on
 * their own threads, so completions are waited for. Needs root (the
 * server's ownership handling); skips otherwise.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "fake-driver.h"
#include "tap.h"
#include "virtio/fs/fs.h"

#define FEATURES \
	(VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VIRTIO_F_RING_EVENT_IDX) | VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC))
#define HIPRIO 0
#define REQ 1

struct dev {
	char dir[64];
	struct virtio_fs *fs;
	struct fake_drv d;
	uint64_t unique;
};

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

static char *path(struct dev *k, const char *rel)
{
	static char buf[128];

	snprintf(buf, sizeof(buf), "%s/%s", k->dir, rel);
	return buf;
}

static int dev_open(struct dev *k, uint32_t queues)
{
	struct virtio_fs_opts o;
	int r;

	memset(k, 0, sizeof(*k));
	strcpy(k->dir, "/tmp/kvrun-vfs-XXXXXX");
	if (!mkdtemp(k->dir))
		return -errno;
	virtio_fs_opts_default(&o);
	o.tag = "share0";
	o.server.root = k->dir;
	o.request_queues = queues;
	o.workers = 3;
	fake_drv_init(&k->d);
	r = virtio_fs_new(&k->d.mem, &o, &k->fs);
	if (r < 0)
		return r;
	fake_drv_attach(&k->d, virtio_fs_mmio(k->fs));
	fake_bringup(&k->d, FEATURES, 1 + queues, 64);
	return 0;
}

static void dev_close(struct dev *k)
{
	virtio_fs_free(k->fs);
	fake_drv_free(&k->d);
	nftw(k->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

/* Guest memory holding bytes. */
static uint64_t put(struct dev *k, const void *p, uint32_t len)
{
	uint64_t gpa = fake_alloc(&k->d, len);

	memcpy(fake_ptr(&k->d, gpa), p, len);
	return gpa;
}

/* A request header for op on node, with len the whole request's bytes. */
static uint64_t header(struct dev *k, uint32_t op, uint64_t node, uint32_t len)
{
	struct fuse_in_header h = {.len = len, .opcode = op, .unique = ++k->unique, .nodeid = node};

	return put(k, &h, sizeof(h));
}

/* Submit bufs on q, wait for the used element; its length, or -1. */
static int64_t submit(struct dev *k, uint32_t q, const struct fbuf *bufs, unsigned int n, bool indirect)
{
	uint32_t id, len;

	fake_add(&k->d, q, bufs, n, indirect);
	fake_kick(&k->d, q);
	if (!fake_wait_used(&k->d, q, &id, &len))
		return -1;
	return len;
}

static struct fuse_out_header *out_hdr(struct dev *k, uint64_t gpa)
{
	return fake_ptr(&k->d, gpa);
}

static bool do_init(struct dev *k, uint32_t q)
{
	struct fuse_init_in in = {.major = 7, .minor = 38, .max_readahead = 65536, .flags = FUSE_MAX_PAGES};
	uint64_t h = header(k, FUSE_INIT, 0, sizeof(struct fuse_in_header) + sizeof(in)), a = put(k, &in, sizeof(in));
	uint64_t o = fake_alloc(&k->d, 16 + sizeof(struct fuse_init_out));
	int64_t len =
	    submit(k, q, (struct fbuf[]){{h, 40, false}, {a, sizeof(in), false}, {o, 16 + 64, true}}, 3, false);

	return len == 16 + 64 && out_hdr(k, o)->error == 0 && out_hdr(k, o)->unique == k->unique;
}

TEST(needs_root)
{
	if (geteuid() != 0)
		tap_skip_all("needs root: the server gives new files the caller's owner");
}

TEST(config_and_init)
{
	struct dev k;
	char tag[40] = "";
	uint32_t nq = 0;

	is_int(dev_open(&k, 2), 0);
	is_int(fake_read(&k.d, VIRTIO_MMIO_DEVICE_ID), VIRTIO_ID_FS);
	for (uint32_t i = 0; i < 36; i += 4)
		virtio_mmio_bus_ops.read(virtio_fs_mmio(k.fs), VIRTIO_MMIO_CONFIG + i, tag + i, 4);
	is_str(tag, "share0");
	virtio_mmio_bus_ops.read(virtio_fs_mmio(k.fs), VIRTIO_MMIO_CONFIG + 36, &nq, 4);
	is_int(nq, 2);
	fake_write(&k.d, VIRTIO_MMIO_QUEUE_SEL, 2);
	is_int(fake_read(&k.d, VIRTIO_MMIO_QUEUE_NUM_MAX), VIRTIO_FS_QUEUE_SIZE);
	fake_write(&k.d, VIRTIO_MMIO_QUEUE_SEL, 3);
	is_int(fake_read(&k.d, VIRTIO_MMIO_QUEUE_NUM_MAX), 0);
	ok(fake_read(&k.d, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DRIVER_OK, "driver ok");
	ok(do_init(&k, REQ), "INIT on request queue 1");
	struct fs_server_stats st;
	fs_server_get_stats(virtio_fs_server(k.fs), &st);
	ok(st.initialized && st.minor == 38, "the server is initialized (7.%u)", st.minor);
	dev_close(&k);
}

/* LOOKUP with its header split across descriptors, then OPEN, READ into
 * three chained buffers and an indirect table, WRITE from split buffers. */
TEST(framing)
{
	struct dev k;
	struct fuse_entry_out *e;
	struct fuse_open_out *oo;
	uint64_t h, a, o, node, fh, d1, d2, d3;
	int64_t len;
	int fd;
	char buf[64];

	is_int(dev_open(&k, 2), 0);
	fd = open(path(&k, "file"), O_WRONLY | O_CREAT, 0644);
	ok(write(fd, "The quick brown fox jumps over the lazy dog", 43) == 43, "host file written");
	close(fd);
	ok(do_init(&k, REQ), "INIT");

	h = header(&k, FUSE_LOOKUP, FUSE_ROOT_ID, 40 + 5);
	a = put(&k, "file", 5);
	o = fake_alloc(&k.d, 16 + sizeof(*e));
	len = submit(
	    &k, REQ,
	    (struct fbuf[]){{h, 7, false}, {h + 7, 33, false}, {a, 5, false}, {o, 10, true}, {o + 10, 6 + 128, true}},
	    5, false);
	e = fake_ptr(&k.d, o + 16);
	ok(len == 16 + 128 && out_hdr(&k, o)->error == 0 && e->attr.size == 43,
	   "LOOKUP: header in 2 pieces, reply in 2");
	node = e->nodeid;

	struct fuse_open_in oin = {.flags = O_RDWR};
	h = header(&k, FUSE_OPEN, node, 40 + 8);
	a = put(&k, &oin, sizeof(oin));
	o = fake_alloc(&k.d, 32);
	len = submit(&k, 2, (struct fbuf[]){{h, 40, false}, {a, 8, false}, {o, 32, true}}, 3, true);
	oo = fake_ptr(&k.d, o + 16);
	ok(len == 32 && out_hdr(&k, o)->error == 0, "OPEN on request queue 2, indirect");
	fh = oo->fh;

	struct fuse_read_in rin = {.fh = fh, .offset = 4, .size = 15};
	h = header(&k, FUSE_READ, node, 40 + sizeof(rin));
	a = put(&k, &rin, sizeof(rin));
	o = fake_alloc(&k.d, 16);
	d1 = fake_alloc(&k.d, 5);
	d2 = fake_alloc(&k.d, 3);
	d3 = fake_alloc(&k.d, 7);
	len = submit(
	    &k, REQ,
	    (struct fbuf[]){
		{h, 40, false}, {a, sizeof(rin), false}, {o, 16, true}, {d1, 5, true}, {d2, 3, true}, {d3, 7, true}},
	    6, false);
	memcpy(buf, fake_ptr(&k.d, d1), 5);
	memcpy(buf + 5, fake_ptr(&k.d, d2), 3);
	memcpy(buf + 8, fake_ptr(&k.d, d3), 7);
	ok(len == 16 + 15 && !memcmp(buf, "quick brown fox", 15) && out_hdr(&k, o)->len == 31,
	   "READ into 3 chained buffers");
	len = submit(
	    &k, REQ,
	    (struct fbuf[]){
		{h, 40, false}, {a, sizeof(rin), false}, {o, 16, true}, {d1, 5, true}, {d2, 3, true}, {d3, 7, true}},
	    6, true);
	ok(len == 31, "the same through an indirect table");

	struct fuse_write_in win = {.fh = fh, .offset = 4, .size = 9};
	h = header(&k, FUSE_WRITE, node, 40 + sizeof(win) + 9);
	a = put(&k, &win, sizeof(win));
	d1 = put(&k, "QUI", 3);
	d2 = put(&k, "CK BROWN", 6);
	o = fake_alloc(&k.d, 24);
	len = submit(
	    &k, REQ,
	    (struct fbuf[]){
		{h, 40, false}, {a, 20, false}, {a + 20, 20, false}, {d1, 3, false}, {d2, 6, false}, {o, 24, true}},
	    6, true);
	fd = open(path(&k, "file"), O_RDONLY);
	memset(buf, 0, sizeof(buf));
	ok(read(fd, buf, 43) == 43, "read the host file");
	close(fd);
	ok(len == 24 && *(uint32_t *)fake_ptr(&k.d, o + 16) == 9 && !memcmp(buf, "The QUICK BROwn fox", 19),
	   "WRITE from split buffers reached the file");

	/* FORGET on the high-priority queue: no reply. */
	struct fuse_forget_in fin = {.nlookup = 1};
	h = header(&k, FUSE_FORGET, node, 40 + 8);
	a = put(&k, &fin, 8);
	len = submit(&k, HIPRIO, (struct fbuf[]){{h, 40, false}, {a, 8, false}}, 2, false);
	is_int(len, 0);
	o = fake_alloc(&k.d, 16 + 104);
	h = header(&k, FUSE_GETATTR, node, 40 + 16);
	a = fake_alloc(&k.d, 16);
	len = submit(&k, REQ, (struct fbuf[]){{h, 40, false}, {a, 16, false}, {o, 16 + 104, true}}, 3, false);
	ok(len == 16 && out_hdr(&k, o)->error == -ESTALE, "the forgotten node is stale");
	dev_close(&k);
}

TEST(malformed_chains)
{
	struct dev k;
	int64_t len;
	uint64_t h, o;

	is_int(dev_open(&k, 1), 0);
	ok(do_init(&k, REQ), "INIT");
	/* A readable part shorter than a header: no reply, device fine. */
	h = header(&k, FUSE_GETATTR, FUSE_ROOT_ID, 56);
	o = fake_alloc(&k.d, 128);
	len = submit(&k, REQ, (struct fbuf[]){{h, 10, false}, {o, 128, true}}, 2, false);
	is_int(len, 0);
	/* A reply area smaller than a reply header. */
	len =
	    submit(&k, REQ, (struct fbuf[]){{h, 40, false}, {fake_alloc(&k.d, 16), 16, false}, {o, 8, true}}, 3, false);
	is_int(len, 0);
	/* No writable part at all. */
	len = submit(&k, REQ, (struct fbuf[]){{h, 40, false}, {fake_alloc(&k.d, 16), 16, false}}, 2, false);
	is_int(len, 0);
	/* The header claims more than the chain carries. */
	len = submit(&k, REQ, (struct fbuf[]){{h, 40, false}, {o, 64, true}}, 2, false);
	ok(len == 16 && out_hdr(&k, o)->error == -EINVAL, "length mismatch -> EINVAL");
	ok(!(fake_read(&k.d, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET),
	   "FUSE-level garbage does not break the device");
	ok(do_init(&k, REQ) == false, "a second INIT is refused");
	/* A virtqueue-level violation does: a buffer outside guest RAM. */
	fake_add(&k.d, REQ, (struct fbuf[]){{h, 40, false}, {FAKE_RAM_SIZE + 4096, 64, true}}, 2, false);
	fake_kick(&k.d, REQ);
	for (int i = 0; i < 2000 && !(fake_read(&k.d, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET); i++)
		usleep(1000);
	ok(fake_read(&k.d, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET,
	   "a buffer outside RAM -> NEEDS_RESET");
	/* A reset brings it back; the driver starts again with INIT. */
	memset(k.d.vqs, 0, sizeof(k.d.vqs));
	fake_bringup(&k.d, FEATURES, 2, 64);
	ok(fake_read(&k.d, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DRIVER_OK, "up again after a reset");
	ok(do_init(&k, REQ), "INIT after the reset");
	dev_close(&k);
}

struct resetter {
	struct dev *k;
	bool done;
};

static void *do_reset(void *arg)
{
	struct resetter *r = arg;

	fake_write(&r->k->d, VIRTIO_MMIO_STATUS, 0);
	__atomic_store_n(&r->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/* A SETLKW waiting for a lock a host process holds: a reset must not wait
 * for it forever. */
TEST(reset_ends_waits)
{
	struct dev k;
	struct fuse_entry_out *e;
	struct fs_server_stats st;
	uint64_t h, a, o, node, fh;
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	int hostfd;

	is_int(dev_open(&k, 1), 0);
	ok(do_init(&k, REQ), "INIT");
	hostfd = open(path(&k, "lk"), O_RDWR | O_CREAT, 0644);
	ok(fcntl(hostfd, F_OFD_SETLK, &fl) == 0, "a host process holds a write lock");
	h = header(&k, FUSE_LOOKUP, FUSE_ROOT_ID, 43);
	a = put(&k, "lk", 3);
	o = fake_alloc(&k.d, 16 + 128);
	ok(submit(&k, REQ, (struct fbuf[]){{h, 40, false}, {a, 3, false}, {o, 144, true}}, 3, false) == 144, "LOOKUP");
	e = fake_ptr(&k.d, o + 16);
	node = e->nodeid;
	struct fuse_open_in oin = {.flags = O_RDWR};
	h = header(&k, FUSE_OPEN, node, 48);
	a = put(&k, &oin, 8);
	o = fake_alloc(&k.d, 32);
	ok(submit(&k, REQ, (struct fbuf[]){{h, 40, false}, {a, 8, false}, {o, 32, true}}, 3, false) == 32, "OPEN");
	fh = ((struct fuse_open_out *)fake_ptr(&k.d, o + 16))->fh;
	struct fuse_lk_in lin = {.fh = fh, .owner = 9, .lk = {0, INT64_MAX, F_WRLCK, 1}};
	h = header(&k, FUSE_SETLKW, node, 40 + sizeof(lin));
	a = put(&k, &lin, sizeof(lin));
	o = fake_alloc(&k.d, 16);
	fake_add(&k.d, REQ, (struct fbuf[]){{h, 40, false}, {a, sizeof(lin), false}, {o, 16, true}}, 3, false);
	fake_kick(&k.d, REQ);
	usleep(100000);
	uint32_t id, len;
	ok(!fake_get_used(&k.d, REQ, &id, &len), "SETLKW waits while the host holds the lock");
	struct resetter rs = {.k = &k};
	pthread_t t;
	pthread_create(&t, NULL, do_reset, &rs);
	for (int i = 0; i < 3000 && !__atomic_load_n(&rs.done, __ATOMIC_ACQUIRE); i++)
		usleep(1000);
	ok(__atomic_load_n(&rs.done, __ATOMIC_ACQUIRE), "the reset returned within 3 s");
	pthread_join(t, NULL);
	fs_server_get_stats(virtio_fs_server(k.fs), &st);
	ok(!st.initialized && st.inodes == 1 && st.handles == 0, "the server forgot everything");
	close(hostfd);
	dev_close(&k);
}

/* Kick as a driver with EVENT_IDX does: only when the device's
 * avail_event says it wants one (vring_need_event). */
static void add_and_kick_if_asked(struct dev *k, uint32_t q, const struct fbuf *bufs, unsigned int n)
{
	uint16_t old = k->d.vqs[q].avail_idx, event;

	fake_add(&k->d, q, bufs, n, false);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	event = fake_avail_event(&k->d, q);
	if ((uint16_t)(k->d.vqs[q].avail_idx - event - 1) < (uint16_t)(k->d.vqs[q].avail_idx - old))
		fake_kick(&k->d, q);
}

/* This process's threads named name (/proc/self/task/TID/comm). */
static int threads_named(const char *name)
{
	char path[300], comm[32];
	struct dirent *de;
	DIR *d = opendir("/proc/self/task");
	int n = 0;

	while (d && (de = readdir(d))) {
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
		f = de->d_name[0] != '.' ? fopen(path, "re") : NULL;
		if (f && fgets(comm, sizeof(comm), f) && !strncmp(comm, name, strlen(name)) &&
		    comm[strlen(name)] == '\n')
			n++;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

/* A SETLKW in flight waits for the unlock that comes after it: the
 * unlock's chain must reach a worker although the driver kicks only when
 * asked to. */
TEST(lock_wait_then_unlock)
{
	struct dev k;
	uint64_t h, a, o, node, fh[2], o_wait, o_unlock;
	uint32_t id, len;
	bool got_wait = false, got_unlock = false;

	is_int(dev_open(&k, 1), 0);
	ok(do_init(&k, REQ), "INIT");
	close(open(path(&k, "f"), O_RDWR | O_CREAT, 0644));
	h = header(&k, FUSE_LOOKUP, FUSE_ROOT_ID, 42);
	a = put(&k, "f", 2);
	o = fake_alloc(&k.d, 144);
	ok(submit(&k, REQ, (struct fbuf[]){{h, 40, false}, {a, 2, false}, {o, 144, true}}, 3, false) == 144, "LOOKUP");
	node = ((struct fuse_entry_out *)fake_ptr(&k.d, o + 16))->nodeid;
	for (int i = 0; i < 2; i++) {
		struct fuse_open_in oin = {.flags = O_RDWR};

		h = header(&k, FUSE_OPEN, node, 48);
		a = put(&k, &oin, 8);
		o = fake_alloc(&k.d, 32);
		ok(submit(&k, REQ, (struct fbuf[]){{h, 40, false}, {a, 8, false}, {o, 32, true}}, 3, false) == 32,
		   "OPEN");
		fh[i] = ((struct fuse_open_out *)fake_ptr(&k.d, o + 16))->fh;
	}
	struct fuse_lk_in lk = {.fh = fh[0], .owner = 1, .lk = {0, INT64_MAX, F_WRLCK, 1}};
	h = header(&k, FUSE_SETLK, node, 40 + sizeof(lk));
	a = put(&k, &lk, sizeof(lk));
	o = fake_alloc(&k.d, 16);
	ok(submit(&k, REQ, (struct fbuf[]){{h, 40, false}, {a, sizeof(lk), false}, {o, 16, true}}, 3, false) == 16 &&
	       out_hdr(&k, o)->error == 0,
	   "owner 1 write-locks the file");
	lk = (struct fuse_lk_in){.fh = fh[1], .owner = 2, .lk = {0, INT64_MAX, F_WRLCK, 2}};
	h = header(&k, FUSE_SETLKW, node, 40 + sizeof(lk));
	a = put(&k, &lk, sizeof(lk));
	o_wait = fake_alloc(&k.d, 16);
	add_and_kick_if_asked(&k, REQ, (struct fbuf[]){{h, 40, false}, {a, sizeof(lk), false}, {o_wait, 16, true}}, 3);
	usleep(100000);
	ok(!fake_get_used(&k.d, REQ, &id, &len), "owner 2's SETLKW waits");
	is_int(threads_named(VIRTIO_FS_WORKER_NAME), 3);
	is_int(threads_named(FS_LOCK_THREAD_NAME), 1);
	lk = (struct fuse_lk_in){.fh = fh[0], .owner = 1, .lk = {0, INT64_MAX, F_UNLCK, 1}};
	h = header(&k, FUSE_SETLK, node, 40 + sizeof(lk));
	a = put(&k, &lk, sizeof(lk));
	o_unlock = fake_alloc(&k.d, 16);
	add_and_kick_if_asked(&k, REQ, (struct fbuf[]){{h, 40, false}, {a, sizeof(lk), false}, {o_unlock, 16, true}},
	                      3);
	for (int i = 0; i < 2 && fake_wait_used(&k.d, REQ, &id, &len); i++) {
		got_unlock |= len == 16 && out_hdr(&k, o_unlock)->error == 0 && out_hdr(&k, o_unlock)->len == 16;
		got_wait |= len == 16 && out_hdr(&k, o_wait)->error == 0 && out_hdr(&k, o_wait)->len == 16;
	}
	ok(got_unlock, "owner 1's unlock, sent while the SETLKW waits, is answered");
	ok(got_wait, "then owner 2's SETLKW is granted");
	dev_close(&k);
}

TEST(pause)
{
	struct dev k;
	uint32_t id, len;
	uint64_t h, a, o;

	is_int(dev_open(&k, 1), 0);
	ok(do_init(&k, REQ), "INIT");
	virtio_fs_pause(k.fs, true);
	h = header(&k, FUSE_GETATTR, FUSE_ROOT_ID, 56);
	a = fake_alloc(&k.d, 16);
	o = fake_alloc(&k.d, 120);
	fake_add(&k.d, REQ, (struct fbuf[]){{h, 40, false}, {a, 16, false}, {o, 120, true}}, 3, false);
	fake_kick(&k.d, REQ);
	usleep(50000);
	ok(!fake_get_used(&k.d, REQ, &id, &len), "paused: the request waits");
	virtio_fs_pause(k.fs, false);
	ok(fake_wait_used(&k.d, REQ, &id, &len) && len == 120, "resumed: answered");
	dev_close(&k);
}

TEST(snapshot_refused)
{
	struct dev k;
	struct snap_buf b = {0};

	is_int(dev_open(&k, 1), 0);
	err_clear();
	is_int(virtio_fs_state_save(k.fs, &b), -EOPNOTSUPP);
	ok(strstr(err_msg(), "virtio-fs 'share0'") && strstr(err_msg(), k.dir), "the error names the device: %s",
	   err_msg());
	is_int(b.len, 0);
	is_int(virtio_fs_state_load(k.fs, "x", 1), -EOPNOTSUPP);
	ok(strstr(err_msg(), "share0") != NULL, "load names it too");
	dev_close(&k);
}

/* A template's slot: a device without a shared directory is saved and
 * restored (tag, queues, transport), waits with requests until it gets
 * one, then serves them; once attached it is neither saved nor loaded. */
TEST(detached_slot)
{
	struct dev a, b;
	struct virtio_fs_opts o, other;
	struct virtio_fs *c;
	struct snap_buf sb = {0};
	uint32_t id, len;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	strcpy(b.dir, "/tmp/kvrun-vfs-XXXXXX");
	ok(mkdtemp(b.dir) != NULL, "a directory to share");
	virtio_fs_opts_default(&o);
	o.tag = "kvrun-fs3";
	fake_drv_init(&a.d);
	is_int(virtio_fs_new_detached(&a.d.mem, &o, &a.fs), 0);
	ok(!virtio_fs_attached(a.fs), "detached");
	is_str(virtio_fs_tag(a.fs), "kvrun-fs3");
	fake_drv_attach(&a.d, virtio_fs_mmio(a.fs));
	fake_bringup(&a.d, FEATURES, 2, 64);
	virtio_fs_pause(a.fs, true);
	is_int(virtio_fs_state_save(a.fs, &sb), 0);
	virtio_fs_pause(a.fs, false);

	/* Restored elsewhere: the same guest memory, a new device. */
	fake_drv_init(&b.d);
	memcpy(b.d.ram, a.d.ram, FAKE_RAM_SIZE);
	b.d.brk = a.d.brk;
	memcpy(b.d.vqs, a.d.vqs, sizeof(b.d.vqs));
	is_int(virtio_fs_new_detached(&b.d.mem, &o, &b.fs), 0);
	fake_drv_attach(&b.d, virtio_fs_mmio(b.fs));
	is_int(virtio_fs_state_load(b.fs, sb.data, sb.len - 1), -EBADMSG);
	is_int(virtio_fs_state_load(b.fs, sb.data, sb.len), 0);
	ok(virtio_mmio_active(virtio_fs_mmio(b.fs)), "the restored device is running");

	/* A request before there is a directory waits for it. */
	struct fuse_init_in in = {.major = 7, .minor = 38, .max_readahead = 65536};
	uint64_t h = header(&b, FUSE_INIT, 0, sizeof(struct fuse_in_header) + sizeof(in)),
		 ia = put(&b, &in, sizeof(in));
	uint64_t out = fake_alloc(&b.d, 16 + sizeof(struct fuse_init_out));

	fake_add(&b.d, REQ, (struct fbuf[]){{h, 40, false}, {ia, sizeof(in), false}, {out, 16 + 64, true}}, 3, false);
	fake_kick(&b.d, REQ);
	usleep(50000);
	ok(!fake_get_used(&b.d, REQ, &id, &len), "detached: the request waits");
	o.server.root = b.dir;
	is_int(virtio_fs_attach(b.fs, &o.server, 0), -EINVAL);
	is_int(virtio_fs_attach(b.fs, &o.server, 2), 0);
	ok(virtio_fs_attached(b.fs), "attached");
	ok(fake_wait_used(&b.d, REQ, &id, &len) && len == 16 + 64 && out_hdr(&b, out)->error == 0,
	   "attached: the waiting INIT is answered");
	ok(do_init(&b, REQ) == false, "a second INIT is refused by the same server");
	is_int(virtio_fs_attach(b.fs, &o.server, 2), -EBUSY);
	err_clear();
	snap_buf_free(&sb);
	is_int(virtio_fs_state_save(b.fs, &sb), -EOPNOTSUPP);
	ok(strstr(err_msg(), "kvrun-fs3") && strstr(err_msg(), b.dir), "the refusal names tag and directory: %s",
	   err_msg());
	is_int(virtio_fs_state_load(b.fs, "x", 1), -EOPNOTSUPP);

	/* Another tag or queue count is not this device's state. */
	snap_buf_free(&sb);
	virtio_fs_pause(a.fs, true);
	is_int(virtio_fs_state_save(a.fs, &sb), 0);
	other = o;
	other.tag = "kvrun-fs4";
	is_int(virtio_fs_new_detached(&b.d.mem, &other, &c), 0);
	is_int(virtio_fs_state_load(c, sb.data, sb.len), -EINVAL);
	ok(strstr(err_msg(), "kvrun-fs3") != NULL, "the saved tag is named: %s", err_msg());
	virtio_fs_free(c);
	other.tag = o.tag;
	other.request_queues = 2;
	is_int(virtio_fs_new_detached(&b.d.mem, &other, &c), 0);
	is_int(virtio_fs_state_load(c, sb.data, sb.len), -EINVAL);
	virtio_fs_free(c);
	snap_buf_free(&sb);
	virtio_fs_free(a.fs);
	fake_drv_free(&a.d);
	dev_close(&b);
}

/* Each worker's setup (fs_server_opts' thread_init): on the worker
 * itself, named, before virtio_fs_new() returns; a failure fails it. */
struct setup_seen {
	pthread_mutex_t lock;
	unsigned int calls, named;
	pthread_t main;
	bool on_main;
	int result;
};

static int worker_setup(void *opaque)
{
	struct setup_seen *s = opaque;
	char name[16] = "";

	pthread_getname_np(pthread_self(), name, sizeof(name));
	pthread_mutex_lock(&s->lock);
	s->calls++;
	s->named += !strcmp(name, VIRTIO_FS_WORKER_NAME);
	s->on_main |= pthread_equal(pthread_self(), s->main) != 0;
	pthread_mutex_unlock(&s->lock);
	return s->result;
}

TEST(worker_setup)
{
	struct setup_seen seen = {.lock = PTHREAD_MUTEX_INITIALIZER, .main = pthread_self()};
	struct virtio_fs_opts o;
	struct virtio_fs *fs = NULL;
	struct fake_drv d;

	fake_drv_init(&d);
	virtio_fs_opts_default(&o);
	o.tag = "setup";
	o.server.root = "/tmp";
	o.server.thread_init = worker_setup;
	o.server.thread_opaque = &seen;
	o.workers = 3;
	is_int(virtio_fs_new(&d.mem, &o, &fs), 0);
	/* No wait: the workers are past it once the device is made. */
	is_int(seen.calls, 3);
	is_int(seen.named, 3);
	ok(!seen.on_main, "run by the workers, not by the caller");
	virtio_fs_free(fs);
	fs = NULL;
	seen.result = -EPERM;
	err_clear();
	is_int(virtio_fs_new(&d.mem, &o, &fs), -EPERM);
	ok(strstr(err_msg(), "virtio-fs 'setup'") != NULL, "a worker's failed setup fails the device: %s", err_msg());
	ok(fs == NULL, "no device then");
	fake_drv_free(&d);
}

/* Prestarted workers (virtio_fs_prestart()): their setup runs at once; the
 * attach later makes the server in the first worker, with its
 * credentials and working directory (here: a relative root that only the
 * workers' directory has), and starts no thread. */
static char prestart_dir[64];

static int prestart_setup(void *opaque)
{
	int r = worker_setup(opaque);

	if (r < 0)
		return r;
	return unshare(CLONE_FS) < 0 || chdir(prestart_dir) < 0 ? -errno : 0;
}

static unsigned int count_workers(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	unsigned int n = 0;

	while (d && (de = readdir(d))) {
		char path[300], name[32] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
		f = fopen(path, "r");
		if (f && fgets(name, sizeof(name), f) &&
		    !strncmp(name, VIRTIO_FS_WORKER_NAME, strlen(VIRTIO_FS_WORKER_NAME)))
			n++;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

TEST(prestarted_slot)
{
	struct setup_seen seen = {.lock = PTHREAD_MUTEX_INITIALIZER, .main = pthread_self()};
	struct virtio_fs_opts o;
	struct dev k;
	char path[128];
	unsigned int before;

	memset(&k, 0, sizeof(k));
	strcpy(k.dir, "/tmp/kvrun-vfs-XXXXXX");
	ok(mkdtemp(k.dir) != NULL, "a directory");
	snprintf(prestart_dir, sizeof(prestart_dir), "%s", k.dir);
	snprintf(path, sizeof(path), "%s/share", k.dir);
	ok(mkdir(path, 0755) == 0, "the share inside it");
	virtio_fs_opts_default(&o);
	o.tag = "kvrun-fs5";
	fake_drv_init(&k.d);
	is_int(virtio_fs_new_detached(&k.d.mem, &o, &k.fs), 0);
	fake_drv_attach(&k.d, virtio_fs_mmio(k.fs));
	fake_bringup(&k.d, FEATURES, 2, 64);
	before = count_workers();
	is_int(virtio_fs_prestart(k.fs, 2, prestart_setup, &seen), 0);
	ok(seen.calls == 2 && seen.named == 2 && !seen.on_main, "each worker ran its setup, named, before it returned");
	is_int(count_workers(), before + 2);
	is_int(virtio_fs_prestart(k.fs, 2, prestart_setup, &seen), -EBUSY);
	ok(!virtio_fs_attached(k.fs), "prestarted, still detached");
	/* Relative: found from the workers' directory only (ours is "/"). */
	ok(chdir("/") == 0, "the caller elsewhere");
	o.server.root = "nosuch";
	err_clear();
	ok(virtio_fs_attach(k.fs, &o.server, 4) < 0 && strstr(err_msg(), "kvrun-fs5"),
	   "a server the first worker cannot make fails the attach, naming the tag: %s", err_msg());
	ok(!virtio_fs_attached(k.fs), "still detached after the failure");
	o.server.root = "share";
	is_int(virtio_fs_attach(k.fs, &o.server, 4), 0);
	ok(virtio_fs_attached(k.fs), "attached: the server was made by a worker");
	ok(do_init(&k, REQ), "requests are served");
	is_int(count_workers(), before + 2);
	is_int(seen.calls, 2);
	dev_close(&k);
}

/* ---- a pod's slot: detached once the guest unmounted it, reattached ---- */

static int unmounts;

static void count_unmount(void *opaque)
{
	__atomic_fetch_add((int *)opaque, 1, __ATOMIC_SEQ_CST);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

/* A request of header and args (may be NULL) with a reply of room bytes
 * after the header; the reply's error, or 1 when none came. The payload
 * in *ret_out (valid until the next request). */
static int call(struct dev *k, uint32_t op, uint64_t node, const void *args, uint32_t len, uint32_t room,
                void **ret_out)
{
	uint64_t h = header(k, op, node, 40 + len), a = len ? put(k, args, len) : 0, o = fake_alloc(&k->d, 16 + room);
	struct fbuf b[3] = {{h, 40, false}, {a, len, false}, {o, 16 + room, true}};
	int64_t got;

	memset(fake_ptr(&k->d, o), 0, 16 + room);
	if (len)
		got = submit(k, REQ, b, 3, true);
	else
		got = submit(k, REQ, (struct fbuf[]){b[0], b[2]}, 2, true);
	if (ret_out)
		*ret_out = fake_ptr(&k->d, o + 16);
	return got >= 16 && out_hdr(k, o)->unique == k->unique ? out_hdr(k, o)->error : 1;
}

/* LOOKUP, OPEN, READ of name: its first bytes in buf. */
static int read_file(struct dev *k, const char *name, char *buf, size_t size, uint64_t *ret_node)
{
	struct fuse_open_in oin = {.flags = O_RDONLY};
	struct fuse_entry_out *e;
	uint64_t node, fh;
	void *out;
	int r = call(k, FUSE_LOOKUP, FUSE_ROOT_ID, name, (uint32_t)strlen(name) + 1, sizeof(*e), &out);

	if (r)
		return r;
	e = out;
	node = e->nodeid;
	if ((r = call(k, FUSE_OPEN, node, &oin, sizeof(oin), sizeof(struct fuse_open_out), &out)))
		return r;
	fh = ((struct fuse_open_out *)out)->fh;
	struct fuse_read_in rin = {.fh = fh, .size = (uint32_t)size - 1};
	if ((r = call(k, FUSE_READ, node, &rin, sizeof(rin), (uint32_t)size - 1, &out)))
		return r;
	memset(buf, 0, size);
	memcpy(buf, out, size - 1);
	if (ret_node)
		*ret_node = node;
	return 0;
}

static void put_host_file(const char *dir, const char *name, const char *content)
{
	char p[PATH_MAX];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, content, strlen(content)) != (ssize_t)strlen(content))
		abort();
	close(fd);
}

/* A prestarted slot (a jailed pod's) through many app containers: busy
 * while mounted, freed by DESTROY, every descriptor closed, the same
 * workers; the next directory is reached only through a new INIT, and
 * the old nodes are not its. */
TEST(slot_reuse)
{
	struct virtio_fs_opts o;
	struct dev k;
	char dirs[2][96], buf[32];
	unsigned int workers0;
	uint64_t old_node = 0, brk0;
	int fds0, r;
	uint32_t id, len;

	memset(&k, 0, sizeof(k));
	strcpy(k.dir, "/tmp/kvrun-vfs-XXXXXX");
	ok(mkdtemp(k.dir) != NULL, "a directory");
	for (int i = 0; i < 2; i++) {
		snprintf(dirs[i], sizeof(dirs[i]), "%s/app%d", k.dir, i);
		ok(mkdir(dirs[i], 0755) == 0, "app container %d's directory", i);
		put_host_file(dirs[i], "name", i ? "second" : "first");
	}
	virtio_fs_opts_default(&o);
	o.tag = "kvrun-fs6";
	fake_drv_init(&k.d);
	is_int(virtio_fs_new_detached(&k.d.mem, &o, &k.fs), 0);
	fake_drv_attach(&k.d, virtio_fs_mmio(k.fs));
	fake_bringup(&k.d, FEATURES, 2, 64);
	unmounts = 0;
	virtio_fs_set_unmount_notify(k.fs, count_unmount, &unmounts);
	is_int(virtio_fs_detach(k.fs), 0);
	workers0 = count_workers();
	is_int(virtio_fs_prestart(k.fs, 2, NULL, NULL), 0);
	workers0 += 2;
	fds0 = count_fds();
	o.server.root = dirs[0];
	is_int(virtio_fs_attach(k.fs, &o.server, 4), 0);
	ok(do_init(&k, REQ), "INIT");
	ok(read_file(&k, "name", buf, sizeof(buf), &old_node) == 0 && !strcmp(buf, "first"),
	   "the first directory's file: '%s'", buf);
	err_clear();
	is_int(virtio_fs_detach(k.fs), -EBUSY);
	ok(strstr(err_msg(), "kvrun-fs6") && strstr(err_msg(), dirs[0]), "mounted: busy, naming tag and directory: %s",
	   err_msg());
	ok(virtio_fs_attached(k.fs) &&
	       call(&k, FUSE_GETATTR, old_node, &(struct fuse_getattr_in){0}, 16, 104, NULL) == 0,
	   "still attached and serving");
	is_int(unmounts, 0);
	is_int(call(&k, FUSE_DESTROY, 0, NULL, 0, 0, NULL), 0);
	is_int(__atomic_load_n(&unmounts, __ATOMIC_SEQ_CST), 1);
	is_int(virtio_fs_detach(k.fs), 0);
	ok(!virtio_fs_attached(k.fs) && virtio_fs_server(k.fs) == NULL, "detached");
	is_int(count_fds(), fds0);
	is_int(count_workers(), workers0);
	is_int(virtio_fs_detach(k.fs), 0);

	/* The guest mounts the tag again before there is a directory: its
	 * INIT waits for the next attach. */
	struct fuse_init_in in = {.major = 7, .minor = 38, .max_readahead = 65536};
	uint64_t h = header(&k, FUSE_INIT, 0, 40 + sizeof(in)), ia = put(&k, &in, sizeof(in)),
		 io = fake_alloc(&k.d, 16 + 64);
	fake_add(&k.d, REQ, (struct fbuf[]){{h, 40, false}, {ia, sizeof(in), false}, {io, 16 + 64, true}}, 3, false);
	fake_kick(&k.d, REQ);
	usleep(50000);
	ok(!fake_get_used(&k.d, REQ, &id, &len), "detached: the INIT waits");
	o.server.root = dirs[1];
	is_int(virtio_fs_attach(k.fs, &o.server, 4), 0);
	ok(fake_wait_used(&k.d, REQ, &id, &len) && len == 16 + 64 && out_hdr(&k, io)->error == 0,
	   "attached to the next directory: the INIT is answered by its server");
	ok(call(&k, FUSE_GETATTR, old_node, &(struct fuse_getattr_in){0}, 16, 104, NULL) == -ESTALE,
	   "a node of the first directory is stale");
	ok(read_file(&k, "name", buf, sizeof(buf), NULL) == 0 && !strcmp(buf, "second"),
	   "the next directory's file: '%s'", buf);

	/* Many app containers, one after another. */
	r = 0;
	brk0 = k.d.brk;
	for (int i = 0; i < 24; i++) {
		bool good = call(&k, FUSE_DESTROY, 0, NULL, 0, 0, NULL) == 0 && virtio_fs_detach(k.fs) == 0 &&
		            count_fds() == fds0;

		o.server.root = dirs[i % 2];
		good = good && virtio_fs_attach(k.fs, &o.server, 4) == 0 && do_init(&k, REQ) &&
		       read_file(&k, "name", buf, sizeof(buf), NULL) == 0 && !strcmp(buf, i % 2 ? "second" : "first");
		if (!good)
			printf("# app container %d: DESTROY, detach, attach, INIT or the read failed (%s)\n", i, buf);
		r += good;
		/* Room in the fake guest's RAM for the next (every request
		 * so far is answered). */
		k.d.brk = brk0;
	}
	is_int(r, 24);
	is_int(__atomic_load_n(&unmounts, __ATOMIC_SEQ_CST), 25);
	is_int(count_workers(), workers0);
	is_int(call(&k, FUSE_DESTROY, 0, NULL, 0, 0, NULL), 0);
	is_int(__atomic_load_n(&unmounts, __ATOMIC_SEQ_CST), 26);
	is_int(virtio_fs_detach(k.fs), 0);
	is_int(count_fds(), fds0);
	dev_close(&k);
}

/* A guest that sends DESTROY amid READs on two queues, and the detach
 * right behind it: the requests in flight end first (none touches the
 * freed server), those not taken yet wait for the next attach and are
 * answered by its server; the workers that the attach started are
 * stopped, every descriptor closed. */
TEST(detach_in_flight)
{
	struct dev k;
	struct fuse_open_in oin = {.flags = O_RDONLY};
	uint64_t node, fh, outs[2][24];
	char big[65536];
	int fds0, r = -1, good = 0, destroyed = 0, answered = 0;
	void *out;

	fds0 = count_fds();
	is_int(dev_open(&k, 2), 0);
	memset(big, 'r', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	put_host_file(k.dir, "data", big);
	ok(do_init(&k, REQ), "INIT");
	is_int(call(&k, FUSE_LOOKUP, FUSE_ROOT_ID, "data", 5, sizeof(struct fuse_entry_out), &out), 0);
	node = ((struct fuse_entry_out *)out)->nodeid;
	is_int(call(&k, FUSE_OPEN, node, &oin, sizeof(oin), sizeof(struct fuse_open_out), &out), 0);
	fh = ((struct fuse_open_out *)out)->fh;
	is_int(threads_named(VIRTIO_FS_WORKER_NAME), 3);
	for (int i = 0; i < 24; i++)
		for (uint32_t q = 1; q <= 2; q++) {
			struct fuse_read_in rin = {.fh = fh, .offset = (uint64_t)i * 2048, .size = 8192};
			bool destroy = q == 1 && i == 8;
			uint64_t h =
			    header(&k, destroy ? FUSE_DESTROY : FUSE_READ, node, destroy ? 40 : 40 + sizeof(rin));
			uint64_t a = put(&k, &rin, sizeof(rin));

			outs[q - 1][i] = fake_alloc(&k.d, 16 + 8192);
			memset(fake_ptr(&k.d, outs[q - 1][i]), 0, 16);
			if (destroy)
				fake_add(&k.d, q, (struct fbuf[]){{h, 40, false}, {outs[q - 1][i], 16, true}}, 2, true);
			else
				fake_add(&k.d, q,
				         (struct fbuf[]){{h, 40, false},
				                         {a, sizeof(rin), false},
				                         {outs[q - 1][i], 16 + 8192, true}},
				         3, true);
		}
	fake_kick(&k.d, 1);
	fake_kick(&k.d, 2);
	for (int i = 0; i < 5000 && r < 0; i++) {
		r = virtio_fs_detach(k.fs);
		if (r < 0)
			usleep(200);
	}
	is_int(r, 0);
	/* A joined thread leaves /proc a moment after its join returns. */
	for (int i = 0; i < 1000 && threads_named(VIRTIO_FS_WORKER_NAME); i++)
		usleep(1000);
	is_int(threads_named(VIRTIO_FS_WORKER_NAME), 0);
	is_int(count_fds(), fds0);
	{
		struct virtio_fs_opts o;

		virtio_fs_opts_default(&o);
		o.server.root = k.dir;
		is_int(virtio_fs_attach(k.fs, &o.server, 2), 0);
	}
	is_int(threads_named(VIRTIO_FS_WORKER_NAME), 2);
	for (uint32_t q = 1; q <= 2; q++)
		for (int n = 0; n < 24; n++) {
			uint32_t id, len;

			if (!fake_wait_used(&k.d, q, &id, &len))
				break;
			answered++;
		}
	is_int(answered, 48);
	for (uint32_t q = 0; q < 2; q++)
		for (int i = 0; i < 24; i++) {
			struct fuse_out_header *oh = out_hdr(&k, outs[q][i]);

			if (q == 0 && i == 8)
				destroyed += oh->len == 16 && oh->error == 0;
			else
				good += (oh->len == 16 + 8192 && oh->error == 0) ||
				        (oh->len == 16 && (oh->error == -EIO || oh->error == -EBADF));
		}
	is_int(destroyed, 1);
	ok(good == 47, "every READ got its data, or EIO/EBADF after the DESTROY (%d of 47)", good);
	ok(!(fake_read(&k.d, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET), "the device is healthy");
	ok(do_init(&k, REQ), "INIT of the next mount");
	dev_close(&k);
}

/* DESTROY with a lock waiting (deferred, in flight): it is answered
 * EINTR first, and the slot is then free at once. */
TEST(destroy_parked_lock)
{
	struct dev k;
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	struct fuse_open_in oin = {.flags = O_RDWR};
	uint64_t node, fh, h, a, o;
	uint32_t id, len;
	int hostfd;
	void *out;

	is_int(dev_open(&k, 1), 0);
	ok(do_init(&k, REQ), "INIT");
	hostfd = open(path(&k, "lk"), O_RDWR | O_CREAT, 0644);
	ok(fcntl(hostfd, F_OFD_SETLK, &fl) == 0, "a host process holds a write lock");
	is_int(call(&k, FUSE_LOOKUP, FUSE_ROOT_ID, "lk", 3, sizeof(struct fuse_entry_out), &out), 0);
	node = ((struct fuse_entry_out *)out)->nodeid;
	is_int(call(&k, FUSE_OPEN, node, &oin, sizeof(oin), sizeof(struct fuse_open_out), &out), 0);
	fh = ((struct fuse_open_out *)out)->fh;
	struct fuse_lk_in lin = {.fh = fh, .owner = 9, .lk = {0, INT64_MAX, F_WRLCK, 1}};
	h = header(&k, FUSE_SETLKW, node, 40 + sizeof(lin));
	a = put(&k, &lin, sizeof(lin));
	o = fake_alloc(&k.d, 16);
	fake_add(&k.d, REQ, (struct fbuf[]){{h, 40, false}, {a, sizeof(lin), false}, {o, 16, true}}, 3, false);
	fake_kick(&k.d, REQ);
	usleep(50000);
	ok(!fake_get_used(&k.d, REQ, &id, &len), "the SETLKW waits");
	is_int(virtio_fs_detach(k.fs), -EBUSY);
	h = header(&k, FUSE_DESTROY, 0, 40);
	uint64_t od = fake_alloc(&k.d, 16);
	fake_add(&k.d, REQ, (struct fbuf[]){{h, 40, false}, {od, 16, true}}, 2, false);
	fake_kick(&k.d, REQ);
	ok(fake_wait_used(&k.d, REQ, &id, &len) && fake_wait_used(&k.d, REQ, &id, &len), "both answered");
	ok(out_hdr(&k, o)->error == -EINTR && out_hdr(&k, od)->error == 0, "the SETLKW EINTR (%d), DESTROY done",
	   out_hdr(&k, o)->error);
	is_int(virtio_fs_detach(k.fs), 0);
	close(hostfd);
	dev_close(&k);
}

TEST(bad_options)
{
	struct virtio_fs_opts o;
	struct virtio_fs *fs = NULL;
	struct fake_drv d;

	fake_drv_init(&d);
	virtio_fs_opts_default(&o);
	o.server.root = "/tmp";
	is_int(virtio_fs_new(&d.mem, &o, &fs), -EINVAL);
	o.tag = "";
	is_int(virtio_fs_new(&d.mem, &o, &fs), -EINVAL);
	o.tag = "0123456789012345678901234567890123456";
	is_int(virtio_fs_new(&d.mem, &o, &fs), -EINVAL);
	o.tag = "012345678901234567890123456789012345";
	o.request_queues = 0;
	is_int(virtio_fs_new(&d.mem, &o, &fs), -EINVAL);
	o.request_queues = VIRTIO_FS_MAX_REQUEST_QUEUES + 1;
	is_int(virtio_fs_new(&d.mem, &o, &fs), -EINVAL);
	o.request_queues = 1;
	o.workers = 0;
	is_int(virtio_fs_new(&d.mem, &o, &fs), -EINVAL);
	o.workers = 1;
	o.server.root = "/nonexistent-kvrun-dir";
	is_int(virtio_fs_new(&d.mem, &o, &fs), -ENOENT);
	ok(strstr(err_msg(), "virtio-fs '012345678901234567890123456789012345'") != NULL, "named: %s", err_msg());
	o.server.root = "/tmp";
	is_int(virtio_fs_new(&d.mem, &o, &fs), 0);
	char tag[37] = "";
	for (uint32_t i = 0; i < 36; i += 4)
		virtio_mmio_bus_ops.read(virtio_fs_mmio(fs), VIRTIO_MMIO_CONFIG + i, tag + i, 4);
	is_str(tag, "012345678901234567890123456789012345");
	virtio_fs_free(fs);
	fake_drv_free(&d);
}

TAP_MAIN()
