/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A minimal virtio-mmio 1.x driver for the test guest, and the scenarios
 * that drive kvrun's virtio devices with it:
 *   virtio-blk      reads against the pattern the host wrote (blk_seed=N,
 *                   blk_sectors=N), write + read back, FLUSH, GET_ID
 *                   (blk_id=), chained and indirect requests, out-of-range
 *                   and (blk_ro=1) read-only errors
 *   virtio-blk-bad  malformed queues the device must refuse with
 *                   DEVICE_NEEDS_RESET, and work again after a reset
 *   virtio-vsock    a stream to host port vsock_port=P (echoed back) and
 *                   one from the host to vsock_listen=L
 * Devices come from the virtio_mmio.device= words of the command line.
 * Requests are polled one at a time; rings and buffers live in RAM below
 * the guest image (8-16 MiB).
 */
#include "guest.h"
#include "hw.h"

#define VIRTIO_MAGIC 0x74726976
#define R_MAGIC 0x000
#define R_VERSION 0x004
#define R_DEVICE_ID 0x008
#define R_DEV_FEATURES 0x010
#define R_DEV_FEATURES_SEL 0x014
#define R_DRV_FEATURES 0x020
#define R_DRV_FEATURES_SEL 0x024
#define R_QUEUE_SEL 0x030
#define R_QUEUE_NUM_MAX 0x034
#define R_QUEUE_NUM 0x038
#define R_QUEUE_READY 0x044
#define R_QUEUE_NOTIFY 0x050
#define R_INT_STATUS 0x060
#define R_INT_ACK 0x064
#define R_STATUS 0x070
#define R_QUEUE_DESC 0x080
#define R_QUEUE_DRIVER 0x090
#define R_QUEUE_DEVICE 0x0a0
#define R_CONFIG 0x100

#define S_ACK 1
#define S_DRIVER 2
#define S_DRIVER_OK 4
#define S_FEATURES_OK 8
#define S_NEEDS_RESET 64

#define F_INDIRECT 28
#define F_EVENT_IDX 29
#define F_VERSION_1 32

#define D_NEXT 1
#define D_WRITE 2
#define D_INDIRECT 4

#define QSIZE 16
#define RING_BASE 0x800000ULL /* queue q at RING_BASE + q * 0x4000 */
#define INDIRECT_TABLE 0x810000ULL
#define BUF_BASE 0x820000ULL

struct vdesc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags, next;
};

struct vq {
	volatile struct vdesc *desc;
	volatile uint16_t *avail; /* flags, idx, ring[QSIZE], used_event */
	volatile uint32_t *used; /* flags|idx, {id, len}[QSIZE], avail_event */
	uint16_t avail_idx, last_used;
	uint32_t num;
};

struct vdev {
	uint64_t base;
	uint32_t gsi;
	uint64_t features;
	struct vq q[3];
	unsigned int nq;
};

static uint32_t rd(struct vdev *d, uint32_t off)
{
	return mmio_read32(d->base + off);
}

static void wr(struct vdev *d, uint32_t off, uint32_t v)
{
	mmio_write32(d->base + off, v);
}

static void fence(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* Finds the first virtio_mmio.device=<size>@0x<addr>:<gsi> on the command
 * line whose device has device_id. */
static bool find_device(uint32_t device_id, struct vdev *d)
{
	static const char key[] = "virtio_mmio.device=";
	const char *p = cmdline();

	for (; *p; p++) {
		if (memcmp(p, key, sizeof(key) - 1))
			continue;
		const char *s = p + sizeof(key) - 1;
		while (*s && *s != '@' && *s != ' ')
			s++;
		if (s[0] != '@' || s[1] != '0' || s[2] != 'x')
			continue;
		uint64_t addr = 0;
		uint32_t gsi = 0;
		for (s += 3;; s++) {
			int v = *s >= '0' && *s <= '9' ? *s - '0' : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10 : -1;
			if (v < 0)
				break;
			addr = addr * 16 + (uint64_t)v;
		}
		if (*s == ':')
			for (s++; *s >= '0' && *s <= '9'; s++)
				gsi = gsi * 10 + (uint32_t)(*s - '0');
		if (addr < KVRUN_MMIO_VIRTIO_BASE || addr >= KVRUN_MMIO_VIRTIO_BASE + 64 * KVRUN_MMIO_VIRTIO_STRIDE)
			continue;
		if (mmio_read32(addr + R_MAGIC) == VIRTIO_MAGIC && mmio_read32(addr + R_DEVICE_ID) == device_id) {
			memset(d, 0, sizeof(*d));
			d->base = addr;
			d->gsi = gsi;
			return true;
		}
	}
	return false;
}

static bool setup_queue(struct vdev *d, unsigned int i)
{
	uint64_t base = RING_BASE + i * 0x4000ULL;
	struct vq *q = &d->q[i];

	memset((void *)(uintptr_t)base, 0, 0x3000);
	q->desc = (volatile struct vdesc *)(uintptr_t)base;
	q->avail = (volatile uint16_t *)(uintptr_t)(base + 0x1000);
	q->used = (volatile uint32_t *)(uintptr_t)(base + 0x2000);
	q->avail_idx = q->last_used = 0;
	q->num = QSIZE;
	wr(d, R_QUEUE_SEL, i);
	if (rd(d, R_QUEUE_READY) != 0 || rd(d, R_QUEUE_NUM_MAX) < QSIZE)
		return false;
	wr(d, R_QUEUE_NUM, QSIZE);
	wr(d, R_QUEUE_DESC, (uint32_t)base);
	wr(d, R_QUEUE_DESC + 4, 0);
	wr(d, R_QUEUE_DRIVER, (uint32_t)(base + 0x1000));
	wr(d, R_QUEUE_DRIVER + 4, 0);
	wr(d, R_QUEUE_DEVICE, (uint32_t)(base + 0x2000));
	wr(d, R_QUEUE_DEVICE + 4, 0);
	wr(d, R_QUEUE_READY, 1);
	return rd(d, R_QUEUE_READY) == 1;
}

/* Reset and bring the device up to DRIVER_OK with nq queues, taking
 * VERSION_1, EVENT_IDX and INDIRECT_DESC when offered plus the device
 * features in want. */
static bool vdev_init(struct vdev *d, unsigned int nq, uint64_t want)
{
	uint64_t offered;

	wr(d, R_STATUS, 0);
	if (rd(d, R_STATUS) != 0)
		return false;
	wr(d, R_STATUS, S_ACK);
	wr(d, R_STATUS, S_ACK | S_DRIVER);
	wr(d, R_DEV_FEATURES_SEL, 0);
	offered = rd(d, R_DEV_FEATURES);
	wr(d, R_DEV_FEATURES_SEL, 1);
	offered |= (uint64_t)rd(d, R_DEV_FEATURES) << 32;
	want |= 1ULL << F_VERSION_1 | 1ULL << F_EVENT_IDX | 1ULL << F_INDIRECT;
	d->features = offered & want;
	if (!(d->features & 1ULL << F_VERSION_1))
		return false;
	wr(d, R_DRV_FEATURES_SEL, 0);
	wr(d, R_DRV_FEATURES, (uint32_t)d->features);
	wr(d, R_DRV_FEATURES_SEL, 1);
	wr(d, R_DRV_FEATURES, (uint32_t)(d->features >> 32));
	wr(d, R_STATUS, S_ACK | S_DRIVER | S_FEATURES_OK);
	if (!(rd(d, R_STATUS) & S_FEATURES_OK))
		return false;
	d->nq = nq;
	for (unsigned int i = 0; i < nq; i++)
		if (!setup_queue(d, i))
			return false;
	wr(d, R_STATUS, S_ACK | S_DRIVER | S_FEATURES_OK | S_DRIVER_OK);
	return rd(d, R_STATUS) == (S_ACK | S_DRIVER | S_FEATURES_OK | S_DRIVER_OK);
}

static bool has(const struct vdev *d, unsigned int bit)
{
	return d->features & 1ULL << bit;
}

/* Publishes head in the avail ring and rings the doorbell. */
static void vq_kick(struct vdev *d, unsigned int qi, uint16_t head)
{
	struct vq *q = &d->q[qi];

	q->avail[2 + q->avail_idx % q->num] = head;
	q->avail[2 + q->num] = q->last_used; /* used_event: interrupt on the next one */
	fence();
	q->avail_idx++;
	q->avail[1] = q->avail_idx;
	fence();
	wr(d, R_QUEUE_NOTIFY, qi);
}

static uint16_t used_idx(struct vq *q)
{
	return (uint16_t)(q->used[0] >> 16);
}

/* Waits for the next used element; false on timeout. */
static bool vq_wait(struct vdev *d, unsigned int qi, uint64_t ticks, uint32_t *ret_id, uint32_t *ret_len)
{
	struct vq *q = &d->q[qi];
	struct deadline dl;

	deadline_start(&dl, ticks);
	while (used_idx(q) == q->last_used)
		if (deadline_passed(&dl))
			return false;
	fence();
	uint32_t slot = q->last_used % q->num;
	if (ret_id)
		*ret_id = q->used[1 + 2 * slot];
	if (ret_len)
		*ret_len = q->used[2 + 2 * slot];
	q->last_used++;
	return true;
}

/* ---- virtio-blk ---- */

#define BLK_IN 0
#define BLK_OUT 1
#define BLK_FLUSH 4
#define BLK_GET_ID 8
#define BLK_F_RO 5
#define BLK_F_FLUSH 9

struct blk_hdr {
	uint32_t type, reserved;
	uint64_t sector;
};

#define HDR ((volatile struct blk_hdr *)(uintptr_t)BUF_BASE)
#define STATUS_ADDR (BUF_BASE + 0x100)
#define STATUS (*(volatile uint8_t *)(uintptr_t)STATUS_ADDR)
#define DATA_ADDR (BUF_BASE + 0x1000)
#define DATA ((uint8_t *)(uintptr_t)DATA_ADDR)

struct seg {
	uint64_t addr;
	uint32_t len;
	bool write;
};

static void fill_chain(volatile struct vdesc *t, const struct seg *s, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		t[i].addr = s[i].addr;
		t[i].len = s[i].len;
		t[i].flags = (uint16_t)((s[i].write ? D_WRITE : 0) | (i + 1 < n ? D_NEXT : 0));
		t[i].next = (uint16_t)(i + 1 < n ? i + 1 : 0);
	}
}

/* One request through descriptors 0.. (or an indirect table), polled.
 * Returns the status byte, or -1 when no completion came. */
static int blk_submit(struct vdev *d, const struct seg *s, unsigned int n, bool indirect)
{
	struct vq *q = &d->q[0];

	STATUS = 0xee;
	if (indirect) {
		fill_chain((volatile struct vdesc *)(uintptr_t)INDIRECT_TABLE, s, n);
		q->desc[0] = (struct vdesc){INDIRECT_TABLE, n * 16, D_INDIRECT, 0};
	} else {
		fill_chain(q->desc, s, n);
	}
	vq_kick(d, 0, 0);
	uint32_t id;
	if (!vq_wait(d, 0, 4000000000ULL, &id, NULL) || id != 0)
		return -1;
	return STATUS;
}

static int blk_rw(struct vdev *d, uint32_t type, uint64_t sector, uint64_t addr, uint32_t len)
{
	HDR->type = type;
	HDR->reserved = 0;
	HDR->sector = sector;
	struct seg s[3] = {{BUF_BASE, 16, false}, {addr, len, type != BLK_OUT}, {STATUS_ADDR, 1, true}};
	if (!len) {
		s[1] = s[2];
		return blk_submit(d, s, 2, false);
	}
	return blk_submit(d, s, 3, false);
}

static uint8_t pattern(uint32_t seed, uint64_t sector, uint32_t i)
{
	return (uint8_t)(seed + sector * 131 + i * 7 + (i >> 8) * 13);
}

static bool sector_matches(const uint8_t *buf, uint32_t seed, uint64_t sector)
{
	for (uint32_t i = 0; i < 512; i++)
		if (buf[i] != pattern(seed, sector, i))
			return false;
	return true;
}

static uint64_t cmd_num(const char *key, uint64_t dflt)
{
	char buf[32];
	uint64_t v;

	if (cmdline_get(key, buf, sizeof(buf)) && parse_size(buf, &v))
		return v;
	return dflt;
}

static bool blk_up(struct vdev *d)
{
	return vdev_init(d, 1, 1ULL << BLK_F_FLUSH | 1ULL << BLK_F_RO);
}

static void blk_checks(struct vdev *d)
{
	uint32_t seed = (uint32_t)cmd_num("blk_seed", 0);
	uint64_t sectors = cmd_num("blk_sectors", 0), last = sectors - 1;
	bool ro = cmd_num("blk_ro", 0);
	uint64_t cap = mmio_read64(d->base + R_CONFIG);
	char want_id[24] = "";

	tap_ok(cap == sectors, "blk: capacity %llu sectors (expected %llu)", (unsigned long long)cap,
	       (unsigned long long)sectors);
	tap_ok(has(d, F_EVENT_IDX) && has(d, F_INDIRECT), "blk: EVENT_IDX and INDIRECT_DESC offered and taken");
	tap_ok(has(d, BLK_F_RO) == ro, "blk: RO feature %s", ro ? "offered" : "not offered");

	wr(d, R_INT_ACK, rd(d, R_INT_STATUS));
	int st = blk_rw(d, BLK_IN, 0, DATA_ADDR, 512);
	tap_ok(st == 0 && sector_matches(DATA, seed, 0), "blk: read sector 0 matches the pattern (status %d)", st);
	struct deadline dl;
	deadline_start(&dl, 2000000000ULL);
	while (!(rd(d, R_INT_STATUS) & 1) && !deadline_passed(&dl))
		;
	uint32_t isr = rd(d, R_INT_STATUS);
	tap_ok(isr & 1, "blk: InterruptStatus shows a used buffer (0x%x)", isr);
	wr(d, R_INT_ACK, isr);

	st = blk_rw(d, BLK_IN, last, DATA_ADDR, 512);
	tap_ok(st == 0 && sector_matches(DATA, seed, last), "blk: read sector %llu matches the pattern (status %d)",
	       (unsigned long long)last, st);

	/* Two sectors, header, data and status in 3 descriptors, then the same
	 * through an indirect table. */
	HDR->type = BLK_IN;
	HDR->sector = 2;
	memset(DATA, 0, 1024);
	struct seg s3[3] = {{BUF_BASE, 16, false}, {DATA_ADDR, 1024, true}, {STATUS_ADDR, 1, true}};
	st = blk_submit(d, s3, 3, false);
	tap_ok(st == 0 && sector_matches(DATA, seed, 2) && sector_matches(DATA + 512, seed, 3),
	       "blk: chained 3-descriptor read of sectors 2-3 (status %d)", st);
	memset(DATA, 0, 1024);
	HDR->sector = 4;
	st = blk_submit(d, s3, 3, true);
	tap_ok(st == 0 && sector_matches(DATA, seed, 4) && sector_matches(DATA + 512, seed, 5),
	       "blk: indirect 3-descriptor read of sectors 4-5 (status %d)", st);

	HDR->sector = last;
	st = blk_submit(d, s3, 3, false);
	tap_ok(st == 1, "blk: 2-sector read from the last sector -> IOERR (status %d)", st);
	st = blk_rw(d, BLK_IN, sectors, DATA_ADDR, 512);
	tap_ok(st == 1, "blk: read at sector %llu (the capacity) -> IOERR (status %d)", (unsigned long long)sectors,
	       st);

	for (uint32_t i = 0; i < 512; i++)
		DATA[i] = (uint8_t)(0xa5 ^ i ^ seed);
	st = blk_rw(d, BLK_OUT, 1, DATA_ADDR, 512);
	if (ro) {
		tap_ok(st == 1, "blk: write to a read-only disk -> IOERR (status %d)", st);
		memset(DATA, 0, 512);
		st = blk_rw(d, BLK_IN, 1, DATA_ADDR, 512);
		tap_ok(st == 0 && sector_matches(DATA, seed, 1), "blk: read-only sector 1 unchanged (status %d)", st);
	} else {
		tap_ok(st == 0, "blk: write sector 1 (status %d)", st);
		memset(DATA, 0, 512);
		st = blk_rw(d, BLK_IN, 1, DATA_ADDR, 512);
		bool same = true;
		for (uint32_t i = 0; i < 512; i++)
			same &= DATA[i] == (uint8_t)(0xa5 ^ i ^ seed);
		tap_ok(st == 0 && same, "blk: sector 1 reads back what was written (status %d)", st);
	}

	if (has(d, BLK_F_FLUSH)) {
		st = blk_rw(d, BLK_FLUSH, 0, 0, 0);
		tap_ok(st == 0, "blk: FLUSH (status %d)", st);
	} else {
		tap_ok(ro, "blk: FLUSH offered on a writable disk");
	}

	memset(DATA, 0xff, 20);
	st = blk_rw(d, BLK_GET_ID, 0, DATA_ADDR, 20);
	cmdline_get("blk_id", want_id, sizeof(want_id));
	size_t idlen = strlen(want_id);
	bool id_ok = idlen <= 20 && !memcmp(DATA, want_id, idlen);
	for (size_t i = idlen; i < 20; i++)
		id_ok &= DATA[i] == 0;
	tap_ok(st == 0 && id_ok, "blk: GET_ID is '%s', zero-padded (status %d)", want_id, st);
	tap_ok(!(rd(d, R_STATUS) & S_NEEDS_RESET), "blk: device still healthy");
}

void check_virtio_blk(void)
{
	struct vdev d;

	if (!tap_ok(find_device(2, &d), "blk: virtio-blk found on the command line"))
		return;
	tap_ok(rd(&d, R_VERSION) == 2, "blk: virtio-mmio version 2 at 0x%llx gsi %u", (unsigned long long)d.base,
	       d.gsi);
	if (!tap_ok(blk_up(&d), "blk: device reaches DRIVER_OK"))
		return;
	blk_checks(&d);
}

/* ---- malformed requests ---- */

static bool wait_needs_reset(struct vdev *d)
{
	struct deadline dl;

	deadline_start(&dl, 4000000000ULL);
	while (!(rd(d, R_STATUS) & S_NEEDS_RESET))
		if (deadline_passed(&dl))
			return false;
	return true;
}

/* After a malformed request: NEEDS_RESET, nothing used, then a reset and
 * a good read. */
static void bad_case(struct vdev *d, const char *what, uint32_t seed)
{
	struct vq *q = &d->q[0];

	tap_ok(wait_needs_reset(d), "blk-bad: %s -> DEVICE_NEEDS_RESET", what);
	tap_ok(used_idx(q) == q->last_used, "blk-bad: %s -> nothing used", what);
	tap_ok(blk_up(d), "blk-bad: %s: reset and re-init reach DRIVER_OK", what);
	int st = blk_rw(d, BLK_IN, 0, DATA_ADDR, 512);
	tap_ok(st == 0 && sector_matches(DATA, seed, 0), "blk-bad: %s: a good read after the reset (status %d)", what,
	       st);
}

static void blk_header(void)
{
	HDR->type = BLK_IN;
	HDR->reserved = 0;
	HDR->sector = 0;
}

void check_virtio_blk_bad(void)
{
	uint32_t seed = (uint32_t)cmd_num("blk_seed", 0);
	struct vdev d;

	if (!tap_ok(find_device(2, &d), "blk-bad: virtio-blk found on the command line"))
		return;
	if (!tap_ok(blk_up(&d), "blk-bad: device reaches DRIVER_OK"))
		return;
	blk_header();

	/* A head index beyond the queue size. */
	vq_kick(&d, 0, QSIZE + 3);
	bad_case(&d, "head index beyond the queue size", seed);

	/* A chain that loops: 0 -> 1 -> 0. */
	blk_header();
	d.q[0].desc[0] = (struct vdesc){BUF_BASE, 16, D_NEXT, 1};
	d.q[0].desc[1] = (struct vdesc){DATA_ADDR, 512, D_NEXT | D_WRITE, 0};
	vq_kick(&d, 0, 0);
	bad_case(&d, "a chain loop", seed);

	/* An indirect descriptor inside an indirect table. */
	blk_header();
	volatile struct vdesc *t = (volatile struct vdesc *)(uintptr_t)INDIRECT_TABLE;
	t[0] = (struct vdesc){BUF_BASE, 16, D_NEXT, 1};
	t[1] = (struct vdesc){INDIRECT_TABLE + 0x100, 32, D_INDIRECT | D_NEXT, 2};
	t[2] = (struct vdesc){STATUS_ADDR, 1, D_WRITE, 0};
	d.q[0].desc[0] = (struct vdesc){INDIRECT_TABLE, 48, D_INDIRECT, 0};
	vq_kick(&d, 0, 0);
	bad_case(&d, "a nested indirect descriptor", seed);

	/* A data buffer far outside guest RAM. */
	blk_header();
	struct seg s[3] = {{BUF_BASE, 16, false}, {0x4000000000ULL, 512, true}, {STATUS_ADDR, 1, true}};
	fill_chain(d.q[0].desc, s, 3);
	vq_kick(&d, 0, 0);
	bad_case(&d, "a buffer outside RAM", seed);
}

/* ---- virtio-vsock ---- */

#define VS_REQUEST 1
#define VS_RESPONSE 2
#define VS_RST 3
#define VS_SHUTDOWN 4
#define VS_RW 5
#define VS_CREDIT_UPDATE 6
#define VS_CREDIT_REQUEST 7
#define VS_TYPE_STREAM 1
#define VS_HOST_CID 2
#define VS_GUEST_CID 3
#define VS_BUF_ALLOC 65536
#define VS_RX_BUFS 8
#define VS_RX_SIZE 2048
#define VS_RX_BASE 0x830000ULL
#define VS_TX_ADDR 0x840000ULL

struct vs_hdr {
	uint64_t src_cid, dst_cid;
	uint32_t src_port, dst_port, len;
	uint16_t type, op;
	uint32_t flags, buf_alloc, fwd_cnt;
} __attribute__((packed));

/* One stream as the guest sees it. */
struct vs_stream {
	uint32_t local, peer;
	uint32_t fwd_cnt; /* bytes we received */
	uint32_t tx_cnt; /* bytes we sent */
	uint32_t peer_buf_alloc, peer_fwd; /* the host's last credit */
};

static void vs_post_rx(struct vdev *d, uint16_t i)
{
	d->q[0].desc[i] = (struct vdesc){VS_RX_BASE + i * 0x1000ULL, VS_RX_SIZE, D_WRITE, 0};
	vq_kick(d, 0, i);
}

static bool vs_send(struct vdev *d, struct vs_stream *s, uint16_t op, uint32_t flags, const void *data, uint32_t len)
{
	struct vs_hdr *h = (struct vs_hdr *)(uintptr_t)VS_TX_ADDR;
	uint32_t id;

	*h = (struct vs_hdr){VS_GUEST_CID,   VS_HOST_CID, s->local, s->peer,      len,
	                     VS_TYPE_STREAM, op,          flags,    VS_BUF_ALLOC, s->fwd_cnt};
	if (len)
		memcpy((uint8_t *)h + sizeof(*h), data, len);
	s->tx_cnt += len;
	d->q[1].desc[0] = (struct vdesc){VS_TX_ADDR, (uint32_t)sizeof(*h) + len, 0, 0};
	vq_kick(d, 1, 0);
	return vq_wait(d, 1, 4000000000ULL, &id, NULL) && id == 0;
}

/* Next packet from the device into *h and data (up to VS_RX_SIZE); the rx
 * buffer goes straight back to the device. */
static bool vs_recv(struct vdev *d, struct vs_hdr *h, uint8_t *data, uint64_t ticks)
{
	uint32_t id, len;

	if (!vq_wait(d, 0, ticks, &id, &len) || id >= VS_RX_BUFS || len < sizeof(*h) || len > VS_RX_SIZE)
		return false;
	const uint8_t *buf = (const uint8_t *)(uintptr_t)(VS_RX_BASE + id * 0x1000ULL);
	memcpy(h, buf, sizeof(*h));
	if (h->len > len - sizeof(*h))
		return false;
	memcpy(data, buf + sizeof(*h), h->len);
	vs_post_rx(d, (uint16_t)id);
	return true;
}

/* Receives until a packet of op for stream s (credit updates on the way
 * are taken in); false on timeout or a different packet for s. */
static bool vs_expect_for(struct vdev *d, struct vs_stream *s, uint16_t op, struct vs_hdr *h, uint8_t *data,
                          uint64_t ticks)
{
	for (int n = 0; n < 16; n++) {
		if (!vs_recv(d, h, data, ticks))
			return false;
		if (h->src_cid != VS_HOST_CID || h->dst_cid != VS_GUEST_CID || h->type != VS_TYPE_STREAM) {
			tap_diag("vsock: unexpected packet cid %llu->%llu type %u", (unsigned long long)h->src_cid,
			         (unsigned long long)h->dst_cid, h->type);
			return false;
		}
		if (s->peer && (h->src_port != s->peer || h->dst_port != s->local)) {
			tap_diag("vsock: packet op %u for port %u from %u", h->op, h->dst_port, h->src_port);
			continue;
		}
		s->peer_buf_alloc = h->buf_alloc;
		s->peer_fwd = h->fwd_cnt;
		if (h->op == op)
			return true;
		if (h->op != VS_CREDIT_UPDATE) {
			tap_diag("vsock: op %u while waiting for op %u", h->op, op);
			return false;
		}
	}
	return false;
}

static bool vs_expect(struct vdev *d, struct vs_stream *s, uint16_t op, struct vs_hdr *h, uint8_t *data)
{
	return vs_expect_for(d, s, op, h, data, 8000000000ULL);
}

static uint32_t fmt_msg(char *buf, const char *who, uint32_t seed)
{
	char digits[12];
	uint32_t n = 0, k = 0;

	while (*who)
		buf[n++] = *who++;
	do
		digits[k++] = (char)('0' + seed % 10);
	while ((seed /= 10));
	while (k)
		buf[n++] = digits[--k];
	buf[n] = 0;
	return n;
}

/* Receives RW data on s until want bytes came; true when they equal want. */
static bool vs_read_all(struct vdev *d, struct vs_stream *s, const char *want, uint32_t wantlen)
{
	static uint8_t got[VS_RX_SIZE], data[VS_RX_SIZE];
	struct vs_hdr h;
	uint32_t n = 0;

	while (n < wantlen) {
		if (!vs_expect(d, s, VS_RW, &h, data) || n + h.len > sizeof(got))
			return false;
		memcpy(got + n, data, h.len);
		n += h.len;
		s->fwd_cnt += h.len;
	}
	return n == wantlen && !memcmp(got, want, wantlen);
}

static void vs_guest_to_host(struct vdev *d, uint32_t port, uint32_t seed)
{
	struct vs_stream s = {.local = 1234, .peer = port};
	static uint8_t data[VS_RX_SIZE];
	char msg[48];
	struct vs_hdr h;
	uint32_t len = fmt_msg(msg, "echo-me-", seed);

	tap_ok(vs_send(d, &s, VS_REQUEST, 0, NULL, 0), "vsock: REQUEST to host port %u sent", port);
	bool ok = vs_expect(d, &s, VS_RESPONSE, &h, data);
	if (!tap_ok(ok, "vsock: RESPONSE from host port %u", port))
		return;
	tap_ok(h.buf_alloc > 0, "vsock: the host advertises credit (buf_alloc %u, fwd_cnt %u)", h.buf_alloc, h.fwd_cnt);
	tap_ok(len <= s.peer_buf_alloc - (s.tx_cnt - s.peer_fwd), "vsock: payload fits the host's credit");
	tap_ok(vs_send(d, &s, VS_RW, 0, msg, len), "vsock: RW '%s' sent", msg);
	tap_ok(vs_read_all(d, &s, msg, len), "vsock: the host echoed '%s'", msg);
	tap_ok(vs_send(d, &s, VS_CREDIT_UPDATE, 0, NULL, 0), "vsock: CREDIT_UPDATE sent (fwd_cnt %u)", s.fwd_cnt);
	tap_ok(vs_send(d, &s, VS_CREDIT_REQUEST, 0, NULL, 0), "vsock: CREDIT_REQUEST sent");
	ok = vs_expect(d, &s, VS_CREDIT_UPDATE, &h, data);
	tap_ok(ok && h.fwd_cnt == len, "vsock: CREDIT_UPDATE answers, fwd_cnt %u == %u bytes sent", h.fwd_cnt, len);
	tap_ok(vs_send(d, &s, VS_SHUTDOWN, 3, NULL, 0), "vsock: SHUTDOWN(RCV|SEND) sent");
	ok = vs_expect(d, &s, VS_RST, &h, data);
	tap_ok(ok, "vsock: the device closes the stream with RST");
}

static void vs_host_to_guest(struct vdev *d, uint32_t port, uint32_t seed)
{
	struct vs_stream s = {.local = port};
	static uint8_t data[VS_RX_SIZE];
	char want[48], reply[48];
	struct vs_hdr h;
	uint32_t wantlen = fmt_msg(want, "from-host-", seed), rlen = fmt_msg(reply, "from-guest-", seed);

	/* The host connects once it reads this line. */
	tap_diag("vsock: listening on port %u", port);
	/* The host test reacts to a console line: wait longer on a busy host. */
	bool ok = vs_expect_for(d, &s, VS_REQUEST, &h, data, 60000000000ULL);
	if (!tap_ok(ok && h.dst_port == port, "vsock: REQUEST from the host to port %u (from port %u)", port,
	            h.src_port))
		return;
	tap_ok(h.src_port >= 1U << 30, "vsock: host port %u is from 2^30 up", h.src_port);
	s.peer = h.src_port;
	tap_ok(vs_send(d, &s, VS_RESPONSE, 0, NULL, 0), "vsock: RESPONSE sent");
	tap_ok(vs_read_all(d, &s, want, wantlen), "vsock: received '%s' from the host", want);
	tap_ok(vs_send(d, &s, VS_CREDIT_UPDATE, 0, NULL, 0), "vsock: CREDIT_UPDATE sent (fwd_cnt %u)", s.fwd_cnt);
	tap_ok(rlen <= s.peer_buf_alloc - (s.tx_cnt - s.peer_fwd), "vsock: reply fits the host's credit (%u)",
	       s.peer_buf_alloc);
	tap_ok(vs_send(d, &s, VS_RW, 0, reply, rlen), "vsock: RW '%s' sent", reply);
	/* The host closes its end once it has the reply. */
	ok = vs_expect(d, &s, VS_SHUTDOWN, &h, data);
	tap_ok(ok && (h.flags & 3) == 3, "vsock: SHUTDOWN(RCV|SEND) when the host closed (flags %u)", h.flags);
	tap_ok(vs_send(d, &s, VS_RST, 0, NULL, 0), "vsock: RST sent");
}

void check_virtio_vsock(void)
{
	uint32_t seed = (uint32_t)cmd_num("vsock_seed", 0);
	struct vdev d;

	if (!tap_ok(find_device(19, &d), "vsock: virtio-vsock found on the command line"))
		return;
	if (!tap_ok(vdev_init(&d, 3, 0), "vsock: device reaches DRIVER_OK with 3 queues"))
		return;
	uint64_t cid = mmio_read64(d.base + R_CONFIG);
	tap_ok(cid == VS_GUEST_CID, "vsock: guest_cid is %llu", (unsigned long long)cid);
	for (uint16_t i = 0; i < VS_RX_BUFS; i++)
		vs_post_rx(&d, i);
	vs_guest_to_host(&d, (uint32_t)cmd_num("vsock_port", 0), seed);
	vs_host_to_guest(&d, (uint32_t)cmd_num("vsock_listen", 0), seed);
	tap_ok(!(rd(&d, R_STATUS) & S_NEEDS_RESET), "vsock: device still healthy");
	wr(&d, R_STATUS, 0);
	tap_ok(rd(&d, R_STATUS) == 0, "vsock: reset");
}
