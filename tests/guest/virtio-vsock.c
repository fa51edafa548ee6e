/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scenario virtio-vsock: a stream to host port vsock_port=P (the host
 * echoes it), then one from the host to vsock_listen=L, with credit
 * updates and the shutdown of both.
 *
 * Scenario fake-init: a stand-in for guest-init under a container's VM
 * monitor (`kvrun create` with this guest as its kernel): HELLO, START
 * answered READY, the three stdio streams, then the first bytes of an EXIT
 * frame and nothing more, ever. The monitor must go on serving and drop
 * the stream at its deadline (tests/integration/test_monitor_stall.py).
 */
#include "virtio.h"

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

/* ---- fake-init ---- */

#define FI_BUF 0x2000000ULL /* frames from the host, up to 8 MiB */
#define FI_BUF_SIZE (8u << 20)
#define PROTO_MAGIC 0x5052564bu
#define PROTO_HDR 24
#define PROTO_HELLO 1
#define PROTO_START 2
#define PROTO_READY 3
#define PROTO_EXIT 9
#define CTL_PORT 1024 /* KVRUN_PROTO_CONTROL_PORT */
#define STDIO_PORT 1025 /* GUEST_PORT_STDIN, then stdout and stderr */

static void put_le(uint8_t *p, uint64_t v, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* A TLV holding a u32. */
static uint32_t put_u32_tlv(uint8_t *p, uint16_t tag, uint32_t v)
{
	put_le(p, tag, 2);
	put_le(p + 2, 4, 4);
	put_le(p + 6, v, 4);
	return 10;
}

/* A frame header: body bytes claimed (len), whatever follows. */
static void put_header(uint8_t *p, uint16_t type, uint32_t len, uint64_t id)
{
	put_le(p, PROTO_MAGIC, 4);
	put_le(p + 4, 1, 2);
	put_le(p + 6, type, 2);
	put_le(p + 8, 0, 4);
	put_le(p + 12, len, 4);
	put_le(p + 16, id, 8);
}

static bool fi_connect(struct vdev *d, struct vs_stream *s)
{
	static uint8_t data[VS_RX_SIZE];
	struct vs_hdr h;

	return vs_send(d, s, VS_REQUEST, 0, NULL, 0) && vs_expect(d, s, VS_RESPONSE, &h, data);
}

/* Reads the control stream until a whole START came; its id, or 0. */
static uint64_t fi_wait_start(struct vdev *d, struct vs_stream *s)
{
	static uint8_t data[VS_RX_SIZE];
	uint8_t *buf = (uint8_t *)(uintptr_t)FI_BUF;
	uint32_t have = 0, credit_sent = 0;
	struct vs_hdr h;

	for (;;) {
		while (have >= PROTO_HDR && have - PROTO_HDR >= get_le(buf + 12, 4)) {
			uint32_t len = PROTO_HDR + (uint32_t)get_le(buf + 12, 4);

			if (get_le(buf + 6, 2) == PROTO_START)
				return get_le(buf + 16, 8);
			memcpy(buf, buf + len, have - len);
			have -= len;
		}
		if (!vs_expect(d, s, VS_RW, &h, data) || h.len > FI_BUF_SIZE - have)
			return 0;
		memcpy(buf + have, data, h.len);
		have += h.len;
		s->fwd_cnt += h.len;
		/* The host sends only within the credit we give back. */
		if (s->fwd_cnt - credit_sent >= VS_BUF_ALLOC / 2) {
			if (!vs_send(d, s, VS_CREDIT_UPDATE, 0, NULL, 0))
				return 0;
			credit_sent = s->fwd_cnt;
		}
	}
}

void check_fake_init(void)
{
	struct vs_stream ctl = {.local = 2000, .peer = CTL_PORT};
	uint8_t msg[128];
	uint64_t id;
	uint32_t n;
	struct vdev d;

	if (!tap_ok(find_device(19, &d), "fake-init: virtio-vsock found on the command line"))
		return;
	if (!tap_ok(vdev_init(&d, 3, 0), "fake-init: vsock reaches DRIVER_OK"))
		return;
	for (uint16_t i = 0; i < VS_RX_BUFS; i++)
		vs_post_rx(&d, i);
	if (!tap_ok(fi_connect(&d, &ctl), "fake-init: control stream to host port %u", CTL_PORT))
		return;
	n = put_u32_tlv(msg + PROTO_HDR, 1, 1);
	n += put_u32_tlv(msg + PROTO_HDR + n, 2, 1);
	put_header(msg, PROTO_HELLO, n, 0);
	tap_ok(vs_send(&d, &ctl, VS_RW, 0, msg, PROTO_HDR + n), "fake-init: HELLO sent");
	id = fi_wait_start(&d, &ctl);
	if (!tap_ok(id != 0, "fake-init: START received (id %llu)", (unsigned long long)id))
		return;
	n = put_u32_tlv(msg + PROTO_HDR, 1, 1);
	put_header(msg, PROTO_READY, n, id);
	tap_ok(vs_send(&d, &ctl, VS_RW, 0, msg, PROTO_HDR + n), "fake-init: READY sent");
	for (uint32_t i = 0; i < 3; i++) {
		struct vs_stream io = {.local = 2001 + i, .peer = STDIO_PORT + i};

		tap_ok(fi_connect(&d, &io), "fake-init: stdio stream to host port %u", STDIO_PORT + i);
	}
	if (cmd_num("stall", 0)) {
		/* An EXIT promising 30 bytes of body, and 4 of them. */
		put_header(msg, PROTO_EXIT, 30, 0);
		memset(msg + PROTO_HDR, 0, 4);
		tap_ok(vs_send(&d, &ctl, VS_RW, 0, msg, PROTO_HDR + 4), "fake-init: part of an EXIT sent");
		tap_diag("fake-init: silent from now on");
		for (;;)
			__asm__ volatile("cli; hlt");
	}
}
