/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scenario virtio-vsock: a stream to host port vsock_port=P (the host
 * echoes it), then one from the host to vsock_listen=L, with credit
 * updates and the shutdown of both. The packet helpers are shared with
 * fake-init.c (vsock.h).
 */
#include "vsock.h"

void vs_post_rx(struct vdev *d, uint16_t i)
{
	d->q[0].desc[i] = (struct vdesc){VS_RX_BASE + i * 0x1000ULL, VS_RX_SIZE, D_WRITE, 0};
	vq_kick(d, 0, i);
}

bool vs_send(struct vdev *d, struct vs_stream *s, uint16_t op, uint32_t flags, const void *data, uint32_t len)
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
bool vs_recv(struct vdev *d, struct vs_hdr *h, uint8_t *data, uint64_t ticks)
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
