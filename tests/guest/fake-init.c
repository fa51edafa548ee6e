/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scenario fake-init: a stand-in for guest-init under a container's VM
 * monitor (`kvrun create` with this guest as its kernel), fast where a
 * Linux guest is emulated. It says HELLO, answers START with READY, opens
 * the init's three stdio streams with the token of the host's HELLO, then
 * serves the control stream: GO (STARTED), EXEC (the process's streams,
 * opened with its token; "echo ARGS" writes ARGS and exits 0 at once, any
 * other process lives until signalled; into a pod member, tag 28, only a
 * live one), a pod member's START (its root a virtio-fs slot "kvrun-fs*",
 * mounted as Linux would, FUSE INIT, with the tags of its binds: see
 * fake-fs.h; then its process's streams, READY; GO with its pid then
 * STARTED; its end unmounts them, DESTROY; a member whose args are
 * "fs <file> <name>" first reads <file> of its root and writes it as
 * <name> into its first bind's share, and "fs-keep <file> <name>" does
 * that and never unmounts, as a guest that holds on), STATS
 * (all zero), UPDATE (acknowledged; of a member only a live one; its
 * frozen pauses or resumes a member: no EXEC into it, a signal but
 * SIGKILL taken at the thaw; its cpu fields are written on the console;
 * a member's memory limit below 4096 is followed by an OOM naming it),
 * SIGNAL (acknowledged, then the
 * EXIT of that process: the init's ends the container), NETWORK
 * (acknowledged); anything else is refused. When the host closes the
 * control stream it resets the VM. A restored VM (the device's transport
 * reset event: a template's, or a checkpoint's) connects again and says
 * HELLO; after START it opens the init's stdio streams again with the new
 * HELLO's token, as guest-init does.
 *
 * Options (kernel command line):
 *   hold=1        never answer START: the monitor waits in create
 *   halt=1        after the stdio streams, halt with interrupts off:
 *                 the vCPU stays in KVM_RUN (test_monitor_stall.py)
 *   stall=1       after the stdio streams, the first bytes of an EXIT
 *                 frame and nothing more, ever (test_monitor_stall.py)
 *   second_ctl=1  after the stdio streams, try a second control stream:
 *                 the host must refuse it (TAP line on the console)
 *   intrude=1     before each exec's real streams, a stream to its stdout
 *                 port that opens with 16 wrong bytes and "HIJACK": the
 *                 host must not take it
 *   drop_ctl=1    each control stream (at boot, after each restore) comes
 *                 after one that was opened and reset before its HELLO,
 *                 as a Linux guest's connect() that gave up leaves: the
 *                 host must take the next one
 */
#include "fake-fs.h"
#include "hw.h"
#include "vsock.h"

#define FI_BUF 0x2000000ULL /* frames from the host, up to 8 MiB */
#define FI_BUF_SIZE (8u << 20)
#define PROTO_MAGIC 0x5052564bu
#define PROTO_HDR 24
#define PROTO_HELLO 1
#define PROTO_START 2
#define PROTO_READY 3
#define PROTO_GO 4
#define PROTO_STARTED 5
#define PROTO_EXEC 6
#define PROTO_SIGNAL 7
#define PROTO_EXIT 9
#define PROTO_STATS 10
#define PROTO_ERROR 11
#define PROTO_NETWORK 14
#define PROTO_UPDATE 12
#define PROTO_OOM 13
#define CTL_PORT 1024 /* KVRUN_PROTO_CONTROL_PORT */
#define STDIO_PORT 1025 /* GUEST_PORT_STDIN, then stdout and stderr */
#define TOKEN_BYTES 16 /* PROTO_TOKEN_BYTES */
#define MAX_EXECS 16
#define MAX_MEMBER_SHARES 8
#define FOREVER 30000000000ULL
#define POLL_TICKS 20000000ULL /* between two looks at the event queue */
#define EV_ADDR 0x850000ULL /* the event queue's one buffer */
#define NET_RINGS 0x860000ULL /* the first NIC's two rings, never filled */
/* What Linux's driver takes of kvrun's virtio-net: the host then sets the
 * TAP's header size and offloads as the device goes live. */
#define NET_WANT                                                                                        \
	(1ULL << NET_F_CSUM | 1ULL << NET_F_GUEST_CSUM | 1ULL << NET_F_MAC | 1ULL << NET_F_GUEST_TSO4 | \
	 1ULL << NET_F_HOST_TSO4 | 1ULL << NET_F_MRG_RXBUF)

struct fi_exec {
	bool live;
	uint64_t id;
	uint32_t pid;
	struct vs_stream io[3];
	/* A pod member's mounted tags, unmounted at its end unless kept. */
	struct ff_dev *shares[MAX_MEMBER_SHARES];
	unsigned int nshares;
	bool keep_mounts;
	/* Paused (UPDATE's frozen): a signal but SIGKILL waits for the thaw,
	 * as a frozen cgroup's processes take it. */
	bool frozen;
	uint32_t pending;
	uint64_t oom_kill; /* OOM kills told of it */
};

struct fi {
	struct vdev d;
	struct vdev net; /* the first NIC, when the VM has one */
	struct vs_stream ctl;
	uint8_t *buf; /* frames received on ctl, not yet taken */
	uint32_t have, taken, credit_sent;
	bool ctl_closed;
	bool reset; /* the transport was reset: every stream is gone */
	bool started; /* START answered: the init's streams exist */
	bool has_token;
	uint8_t token[TOKEN_BYTES];
	uint64_t start_id;
	uint32_t next_local;
	struct vs_stream init_io[3];
	struct fi_exec execs[MAX_EXECS];
};

static uint8_t pkt[VS_RX_SIZE];

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

/* A TLV holding an n-byte integer. */
static uint32_t put_int_tlv(uint8_t *p, uint16_t tag, uint64_t v, unsigned int n)
{
	put_le(p, tag, 2);
	put_le(p + 2, n, 4);
	put_le(p + 6, v, n);
	return 6 + n;
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

/* The value of top-level TLV tag in body (index-th occurrence), or NULL. */
static const uint8_t *tlv(const uint8_t *body, uint32_t len, uint16_t tag, unsigned int index, uint32_t *ret_len)
{
	uint32_t at = 0;

	while (at + 6 <= len) {
		uint16_t t = (uint16_t)get_le(body + at, 2);
		uint32_t l = (uint32_t)get_le(body + at + 2, 4);

		if (l > len - at - 6)
			return NULL;
		if (t == tag && index-- == 0) {
			*ret_len = l;
			return body + at + 6;
		}
		at += 6 + l;
	}
	return NULL;
}

static uint32_t tlv_u32(const uint8_t *body, uint32_t len, uint16_t tag)
{
	uint32_t l;
	const uint8_t *v = tlv(body, len, tag, 0, &l);

	return v && l <= 4 ? (uint32_t)get_le(v, l) : 0;
}

static uint64_t tlv_u64(const uint8_t *body, uint32_t len, uint16_t tag)
{
	uint32_t l;
	const uint8_t *v = tlv(body, len, tag, 0, &l);

	return v && l <= 8 ? get_le(v, l) : 0;
}

/* Takes in a packet: data on the control stream is buffered (credit given
 * back), its end noted; packets of other streams are dropped. */
static void fi_take(struct fi *f, const struct vs_hdr *h)
{
	if (h->dst_port != f->ctl.local || h->src_port != CTL_PORT)
		return;
	if (h->op == VS_SHUTDOWN || h->op == VS_RST) {
		f->ctl_closed = true;
		return;
	}
	if (h->op != VS_RW || h->len > FI_BUF_SIZE - f->have)
		return;
	memcpy(f->buf + f->have, pkt, h->len);
	f->have += h->len;
	f->ctl.fwd_cnt += h->len;
	/* The host sends only within the credit we give back. */
	if (f->ctl.fwd_cnt - f->credit_sent >= VS_BUF_ALLOC / 2) {
		vs_send(&f->d, &f->ctl, VS_CREDIT_UPDATE, 0, NULL, 0);
		f->credit_sent = f->ctl.fwd_cnt;
	}
}

static void fi_post_event(struct fi *f)
{
	f->d.q[2].desc[0] = (struct vdesc){EV_ADDR, 4, D_WRITE, 0};
	vq_kick(&f->d, 2, 0);
}

/* The next packet (0), or -1 when the device reported a transport reset
 * (a restored VM: every stream is gone), or -2 after ticks. */
static int fi_recv(struct fi *f, struct vs_hdr *h, uint64_t ticks)
{
	for (uint64_t waited = 0; waited < ticks; waited += POLL_TICKS) {
		struct vq *ev = &f->d.q[2];

		if (vq_used_idx(ev) != ev->last_used) {
			ev->last_used++;
			fi_post_event(f);
			f->reset = true;
			return -1;
		}
		if (vs_recv(&f->d, h, pkt, POLL_TICKS))
			return 0;
	}
	return -2;
}

/* Receives until stream s gets a packet of op (true) or an RST (false). */
static bool fi_wait_op(struct fi *f, struct vs_stream *s, uint16_t op)
{
	struct vs_hdr h;

	for (int tries = 0; tries < 64;) {
		int r = fi_recv(f, &h, FOREVER);

		if (r == -1)
			return false;
		if (r < 0) {
			tries++;
			continue;
		}
		if (h.dst_port == s->local && h.src_port == s->peer) {
			s->peer_buf_alloc = h.buf_alloc;
			s->peer_fwd = h.fwd_cnt;
			if (h.op == op)
				return true;
			if (h.op == VS_RST)
				return false;
			continue;
		}
		fi_take(f, &h);
	}
	return false;
}

static bool fi_open(struct fi *f, struct vs_stream *s, uint32_t port)
{
	*s = (struct vs_stream){.local = f->next_local++, .peer = port};
	return vs_send(&f->d, s, VS_REQUEST, 0, NULL, 0) && fi_wait_op(f, s, VS_RESPONSE);
}

static bool fi_send_msg(struct fi *f, uint16_t type, uint64_t id, const uint8_t *body, uint32_t len)
{
	static uint8_t msg[256];

	put_header(msg, type, len, id);
	memcpy(msg + PROTO_HDR, body, len);
	return vs_send(&f->d, &f->ctl, VS_RW, 0, msg, PROTO_HDR + len);
}

/* Next whole frame from the host: its type, id and body (valid until the
 * next call). False when the control stream ended (f->reset: by a reset of
 * the transport). */
static bool fi_next_frame(struct fi *f, uint16_t *type, uint64_t *id, const uint8_t **body, uint32_t *len)
{
	struct vs_hdr h;

	if (f->taken) {
		memcpy(f->buf, f->buf + f->taken, f->have - f->taken);
		f->have -= f->taken;
		f->taken = 0;
	}
	for (;;) {
		if (f->have >= PROTO_HDR && f->have - PROTO_HDR >= get_le(f->buf + 12, 4)) {
			*type = (uint16_t)get_le(f->buf + 6, 2);
			*id = get_le(f->buf + 16, 8);
			*len = (uint32_t)get_le(f->buf + 12, 4);
			*body = f->buf + PROTO_HDR;
			f->taken = PROTO_HDR + *len;
			return true;
		}
		if (f->ctl_closed || f->reset)
			return false;
		int r = fi_recv(f, &h, FOREVER);

		if (r == 0)
			fi_take(f, &h);
	}
}

/* A stdio stream to port, opened with the token. */
static bool fi_open_stdio(struct fi *f, struct vs_stream *s, uint32_t port, const uint8_t *token)
{
	if (!fi_open(f, s, port))
		return false;
	return !token || vs_send(&f->d, s, VS_RW, 0, token, TOKEN_BYTES);
}

static void fi_ack(struct fi *f, uint64_t id, uint32_t err)
{
	uint8_t b[16];

	fi_send_msg(f, PROTO_ERROR, id, b, put_int_tlv(b, 1, err, 4));
}

static void fi_exit(struct fi *f, uint64_t id, uint32_t pid, uint32_t status, bool init)
{
	uint8_t b[32];
	uint32_t n = put_int_tlv(b, 1, pid, 4);

	n += put_int_tlv(b + n, 2, status, 4);
	n += put_int_tlv(b + n, 3, init, 1);
	fi_send_msg(f, PROTO_EXIT, id, b, n);
}

static void fi_started(struct fi *f, uint16_t type, uint64_t id, uint32_t pid)
{
	uint8_t b[16];

	fi_send_msg(f, type, id, b, put_int_tlv(b, 1, pid, 4));
}

/* The first 16 bytes are not the token: a process that raced for the port. */
static void fi_intrude(struct fi *f, uint32_t port)
{
	static const char junk[] = "0123456789abcdefHIJACK\n";
	struct vs_stream s;

	if (fi_open(f, &s, port))
		vs_send(&f->d, &s, VS_RW, 0, junk, sizeof(junk) - 1);
}

static struct fi_exec *fi_find(struct fi *f, uint32_t pid)
{
	for (int i = 0; i < MAX_EXECS; i++)
		if (f->execs[i].live && f->execs[i].pid == pid)
			return &f->execs[i];
	return 0;
}

/* EXEC, or a pod member's START (member: its process record as body):
 * the process's streams, then STARTED (READY for a member, which waits
 * for GO). An EXEC into a member (tag 28) must name a live one. The
 * process (a member's, live), or NULL. */
static struct fi_exec *fi_spawn(struct fi *f, uint64_t id, const uint8_t *body, uint32_t len, bool member)
{
	static const uint32_t tags[3] = {21, 22, 23};
	struct fi_exec *e = NULL;
	uint32_t tl, al, in = tlv_u32(body, len, 28);
	const uint8_t *token = tlv(body, len, 24, 0, &tl), *arg0 = tlv(body, len, 1, 0, &al);
	bool echo = !member && arg0 && al == 4 && !memcmp(arg0, "echo", 4);

	if (in && !fi_find(f, in)) {
		fi_ack(f, id, 3 /* ESRCH */);
		return 0;
	}
	if (in && fi_find(f, in)->frozen) { /* as guest-init: not into a frozen cgroup */
		fi_ack(f, id, 16 /* EBUSY */);
		return 0;
	}
	for (int i = 0; i < MAX_EXECS && !e; i++)
		if (!f->execs[i].live)
			e = &f->execs[i];
	if (!e || (token && tl != TOKEN_BYTES)) {
		fi_ack(f, id, 11 /* EAGAIN */);
		return 0;
	}
	*e = (struct fi_exec){.live = true, .id = id, .pid = (member ? 200 : 100) + (uint32_t)(e - f->execs)};
	if (cmd_num("intrude", 0) && tlv_u32(body, len, tags[1]))
		fi_intrude(f, tlv_u32(body, len, tags[1]));
	for (int i = 0; i < 3; i++) {
		uint32_t port = tlv_u32(body, len, tags[i]);

		if (port && !fi_open_stdio(f, &e->io[i], port, token)) {
			e->live = false;
			fi_ack(f, id, 111 /* ECONNREFUSED */);
			return 0;
		}
	}
	if (echo && e->io[1].peer) {
		static uint8_t out[256];
		uint32_t n = 0, l;
		const uint8_t *a;

		for (unsigned int k = 1; (a = tlv(body, len, 1, k, &l)) && n + l + 1 < sizeof(out); k++) {
			memcpy(out + n, a, l);
			n += l;
			out[n++] = ' ';
		}
		out[n ? n - 1 : n++] = '\n';
		vs_send(&f->d, &e->io[1], VS_RW, 0, out, n);
	}
	fi_started(f, member ? PROTO_READY : PROTO_STARTED, id, e->pid);
	if (echo) {
		for (int i = 1; i < 3; i++)
			if (e->io[i].peer)
				vs_send(&f->d, &e->io[i], VS_SHUTDOWN, 3, NULL, 0);
		fi_exit(f, id, e->pid, 0, false);
		e->live = false;
	}
	return e;
}

/* Tag (len bytes) mounted unless devs[0..n) has it already. */
static bool fi_mount_once(const uint8_t *tag, uint32_t len, struct ff_dev **devs, unsigned int *n)
{
	struct ff_dev *d;

	for (unsigned int k = 0; k < *n; k++)
		if (ff_is(devs[k], (const char *)tag, len))
			return true;
	if (*n == MAX_MEMBER_SHARES || !(d = ff_mount((const char *)tag, len)))
		return false;
	devs[(*n)++] = d;
	return true;
}

/* The member's shares: its root's tag, then its binds' (each once), into
 * devs[0..*n). 0, or the errno that refuses it. */
static uint32_t fi_mount_member(const uint8_t *body, uint32_t len, struct ff_dev **devs, unsigned int *n)
{
	uint32_t dl, ml, tl;
	const uint8_t *dev = tlv(body, len, 11, 0, &dl), *m, *tag;

	*n = 0;
	if (!fi_mount_once(dev, dl, devs, n))
		return 5; /* EIO */
	for (unsigned int i = 0; (m = tlv(body, len, 4, i, &ml)); i++)
		if ((tag = tlv(m, ml, 7, 0, &tl)) && !fi_mount_once(tag, tl, devs, n))
			return 5;
	return 0;
}

/* "fs <file> <name>": <file> of the root copied as <name> into the
 * first bind's share (the root's when it has none). 0 or an errno. */
static uint32_t fi_fs_probe(const uint8_t *proc, uint32_t pl, struct ff_dev **devs, unsigned int n)
{
	static uint8_t data[4096];
	uint32_t fl, nl;
	const uint8_t *file = tlv(proc, pl, 1, 1, &fl), *name = tlv(proc, pl, 1, 2, &nl);
	int got;

	if (!file || !name)
		return 22; /* EINVAL */
	got = ff_read(devs[0], (const char *)file, fl, data, sizeof(data));
	if (got < 0)
		return 2; /* ENOENT */
	return ff_write(devs[n > 1 ? 1 : 0], (const char *)name, nl, data, (uint32_t)got) ? 0 : 5;
}

static void fi_unmount_member(struct ff_dev **devs, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		tap_ok(ff_umount(devs[i]), "fake-init: a pod member's share unmounted (DESTROY)");
}

/* A pod member's START: its root must be a shared directory slot. */
static void fi_handle_member(struct fi *f, uint64_t id, const uint8_t *body, uint32_t len)
{
	struct ff_dev *devs[MAX_MEMBER_SHARES];
	unsigned int n = 0;
	uint32_t pl, fl, dl, al, err;
	const uint8_t *proc = tlv(body, len, 1, 0, &pl), *fstype = tlv(body, len, 12, 0, &fl),
		      *dev = tlv(body, len, 11, 0, &dl), *arg0;
	struct fi_exec *e;
	bool probe, keep;

	if (!proc || !fstype || fl != 8 || memcmp(fstype, "virtiofs", 8) || !dev || dl < 9 ||
	    memcmp(dev, "kvrun-fs", 8)) {
		fi_ack(f, id, 22 /* EINVAL */);
		return;
	}
	arg0 = tlv(proc, pl, 1, 0, &al);
	keep = arg0 && al == 7 && !memcmp(arg0, "fs-keep", 7);
	probe = keep || (arg0 && al == 2 && !memcmp(arg0, "fs", 2));
	err = fi_mount_member(body, len, devs, &n);
	if (!err && probe)
		err = fi_fs_probe(proc, pl, devs, n);
	if (err) {
		fi_unmount_member(devs, n);
		fi_ack(f, id, err);
		return;
	}
	e = fi_spawn(f, id, proc, pl, true);
	if (!e) {
		fi_unmount_member(devs, n);
		return;
	}
	memcpy(e->shares, devs, sizeof(devs));
	e->nshares = n;
	e->keep_mounts = keep;
}

/* GO: the init (pid 0) or a member waiting for it. */
static void fi_handle_go(struct fi *f, uint64_t id, const uint8_t *body, uint32_t len)
{
	uint32_t pid = tlv_u32(body, len, 1);

	if (pid && !fi_find(f, pid)) {
		fi_ack(f, id, 3 /* ESRCH */);
		return;
	}
	fi_started(f, PROTO_STARTED, id, pid ? pid : 1);
}

/* Process e ends by signal signo: its streams closed, its EXIT. */
static void fi_end(struct fi *f, struct fi_exec *e, uint32_t signo)
{
	for (int k = 1; k < 3; k++)
		if (e->io[k].peer)
			vs_send(&f->d, &e->io[k], VS_SHUTDOWN, 3, NULL, 0);
	/* Its stdin too, as guest-init closes it at the end: the host
	 * would keep that stream's socket otherwise. */
	if (e->io[0].peer)
		vs_send(&f->d, &e->io[0], VS_RST, 0, NULL, 0);
	fi_exit(f, e->id, e->pid, signo & 0x7f, false);
	e->live = false;
	/* As guest-init: its mounts go after its EXIT. */
	if (!e->keep_mounts)
		fi_unmount_member(e->shares, e->nshares);
	e->nshares = 0;
}

/* SIGNAL: acknowledged, then the process ends by the signal (a frozen
 * one by SIGKILL only; another signal once thawed). */
static void fi_handle_signal(struct fi *f, uint64_t id, const uint8_t *body, uint32_t len)
{
	uint32_t pid = tlv_u32(body, len, 1), signo = tlv_u32(body, len, 2);

	fi_ack(f, id, 0);
	if (pid == 0 || pid == 1) {
		for (int i = 1; i < 3; i++)
			vs_send(&f->d, &f->init_io[i], VS_SHUTDOWN, 3, NULL, 0);
		fi_exit(f, f->start_id, 1, signo & 0x7f, true);
		return;
	}
	for (int i = 0; i < MAX_EXECS; i++) {
		struct fi_exec *e = &f->execs[i];

		if (!e->live || e->pid != pid)
			continue;
		if (e->frozen && signo != 9)
			e->pending = signo;
		else
			fi_end(f, e, signo);
	}
}

/* UPDATE: acknowledged (of a member only a live one); its frozen (tag 4)
 * pauses or resumes the member, a pending signal taken at the thaw. */
static void fi_handle_update(struct fi *f, uint64_t id, const uint8_t *body, uint32_t len)
{
	uint32_t pid = tlv_u32(body, len, 3), l;
	struct fi_exec *e = pid ? fi_find(f, pid) : 0;
	bool has_frozen = tlv(body, len, 4, 0, &l) != 0;

	if (pid && !e) {
		fi_ack(f, id, 3 /* ESRCH */);
		return;
	}
	fi_ack(f, id, 0);
	if (e && (tlv(body, len, 5, 0, &l) || tlv(body, len, 6, 0, &l) || tlv(body, len, 7, 0, &l) ||
	          tlv(body, len, 8, 0, &l))) {
		char cpus[64] = "-";
		const uint8_t *c = tlv(body, len, 8, 0, &l);

		if (c && l < sizeof(cpus)) {
			memcpy(cpus, c, l);
			cpus[l] = 0;
		}
		tap_diag("fake-init: pod member %u cpu: quota %s%lu period %lu weight %lu cpus %s", pid,
		         tlv(body, len, 5, 0, &l) ? "" : "unset ", (unsigned long)tlv_u64(body, len, 5),
		         (unsigned long)tlv_u64(body, len, 6), (unsigned long)tlv_u64(body, len, 7), cpus);
	}
	/* A memory limit below a page: its OOM killer would kill (OOM with its
	 * pid), as a member's memory.events tells guest-init. */
	if (e && tlv(body, len, 2, 0, &l) && tlv_u64(body, len, 2) && tlv_u64(body, len, 2) < 4096) {
		uint8_t b[48];
		uint32_t n;

		e->oom_kill++;
		n = put_int_tlv(b, 1, e->oom_kill, 8);
		n += put_int_tlv(b + n, 2, e->oom_kill, 8);
		n += put_int_tlv(b + n, 3, pid, 4);
		fi_send_msg(f, PROTO_OOM, 0, b, n);
	}
	if (!e || !has_frozen)
		return;
	e->frozen = tlv_u32(body, len, 4) != 0;
	tap_diag("fake-init: pod member %u %s", pid, e->frozen ? "frozen" : "thawed");
	if (!e->frozen && e->pending) {
		fi_end(f, e, e->pending);
		e->pending = 0;
	}
}

static void fi_hello(struct fi *f)
{
	uint8_t b[32];
	uint32_t n = put_int_tlv(b, 1, 1, 4);

	n += put_int_tlv(b + n, 2, 1, 4);
	tap_ok(fi_send_msg(f, PROTO_HELLO, 0, b, n), "fake-init: HELLO sent");
}

/* A new control stream (the first, or after a reset) and our HELLO. */
static bool fi_connect_ctl(struct fi *f)
{
	f->have = f->taken = 0;
	f->ctl_closed = f->reset = false;
	f->has_token = false;
	/* drop_ctl: first a stream given up on, as Linux's connect() does
	 * when the host's answer comes after its timeout: the answer is
	 * taken, then the stream reset; then the real one. */
	if (cmd_num("drop_ctl", 0)) {
		struct vs_stream gone = {.local = f->next_local++, .peer = CTL_PORT};

		tap_ok(vs_send(&f->d, &gone, VS_REQUEST, 0, NULL, 0) && fi_wait_op(f, &gone, VS_RESPONSE) &&
		           vs_send(&f->d, &gone, VS_RST, 0, NULL, 0),
		       "fake-init: a control stream opened and reset before its HELLO");
		if (f->reset)
			return false;
	}
	f->ctl = (struct vs_stream){.local = f->next_local++, .peer = CTL_PORT};
	if (!tap_ok(vs_send(&f->d, &f->ctl, VS_REQUEST, 0, NULL, 0) && fi_wait_op(f, &f->ctl, VS_RESPONSE),
	            "fake-init: control stream to host port %u", CTL_PORT))
		return false;
	fi_hello(f);
	return true;
}

/* The host's HELLO: the token of the init's streams. */
static void fi_take_hello(struct fi *f, const uint8_t *body, uint32_t len)
{
	uint32_t tl;
	const uint8_t *t = tlv(body, len, 4, 0, &tl);

	f->has_token = t && tl == TOKEN_BYTES;
	if (f->has_token)
		memcpy(f->token, t, TOKEN_BYTES);
}

static void fi_open_init_stdio(struct fi *f)
{
	for (uint32_t i = 0; i < 3; i++)
		tap_ok(fi_open_stdio(f, &f->init_io[i], STDIO_PORT + i, f->has_token ? f->token : NULL),
		       "fake-init: stdio stream to host port %u", STDIO_PORT + i);
}

static void fi_serve(struct fi *f)
{
	uint16_t type;
	uint64_t id;
	const uint8_t *body;
	uint32_t len;

	for (;;) {
		if (!fi_next_frame(f, &type, &id, &body, &len)) {
			/* Restored from a checkpoint: the exec'd processes'
			 * host side is gone; the init's streams open again
			 * once the new HELLO came. */
			if (!f->reset || !fi_connect_ctl(f))
				break;
			for (int i = 0; i < MAX_EXECS; i++)
				f->execs[i].live = false;
			continue;
		}
		if (type == PROTO_HELLO) {
			fi_take_hello(f, body, len);
			fi_open_init_stdio(f);
		} else if (type == PROTO_NETWORK)
			fi_ack(f, id, 0);
		else if (type == PROTO_STATS)
			fi_send_msg(f, PROTO_STATS, id, body, 0);
		else if (type == PROTO_UPDATE)
			fi_handle_update(f, id, body, len);
		else if (type == PROTO_GO)
			fi_handle_go(f, id, body, len);
		else if (type == PROTO_EXEC)
			fi_spawn(f, id, body, len, false);
		else if (type == PROTO_START)
			fi_handle_member(f, id, body, len);
		else if (type == PROTO_SIGNAL)
			fi_handle_signal(f, id, body, len);
		else
			fi_ack(f, id, 95 /* EOPNOTSUPP */);
	}
	tap_diag("fake-init: the host closed the control stream");
	outb(0x64, 0xfe); /* i8042 reset: the VM ends */
	for (;;)
		__asm__ volatile("cli; hlt");
}

static void fi_halt(const char *why)
{
	tap_diag("fake-init: %s", why);
	for (;;)
		__asm__ volatile("cli; hlt");
}

/* Reads frames until START; the host's HELLO on the way gives the token.
 * A restored template connects again. */
static bool fi_wait_start(struct fi *f)
{
	uint16_t type;
	uint64_t id;
	const uint8_t *body;
	uint32_t len;

	for (;;) {
		if (!fi_next_frame(f, &type, &id, &body, &len)) {
			if (f->reset && fi_connect_ctl(f))
				continue;
			return false;
		}
		if (type == PROTO_HELLO)
			fi_take_hello(f, body, len);
		if (type == PROTO_STATS) /* a template build's: all zero */
			fi_send_msg(f, PROTO_STATS, id, body, 0);
		if (type == PROTO_START) {
			f->start_id = id;
			return true;
		}
	}
}

void check_fake_init(void)
{
	static struct fi f;
	uint8_t msg[128];

	f = (struct fi){.buf = (uint8_t *)(uintptr_t)FI_BUF, .next_local = 2000};
	/* A container's first NIC goes live as under Linux (its rings stay
	 * empty: nothing is sent or taken), before anything is said. */
	if (find_device(1, &f.net))
		tap_ok(vdev_init_at(&f.net, 2, NET_WANT, NET_RINGS), "fake-init: virtio-net reaches DRIVER_OK");
	if (!tap_ok(find_device(19, &f.d), "fake-init: virtio-vsock found on the command line"))
		return;
	if (!tap_ok(vdev_init(&f.d, 3, 0), "fake-init: vsock reaches DRIVER_OK"))
		return;
	for (uint16_t i = 0; i < VS_RX_BUFS; i++)
		vs_post_rx(&f.d, i);
	fi_post_event(&f);
	if (!fi_connect_ctl(&f))
		return;
	if (!tap_ok(fi_wait_start(&f), "fake-init: START received"))
		return;
	tap_ok(f.has_token, "fake-init: the host's HELLO carries a token");
	if (cmd_num("hold", 0))
		fi_halt("holding START unanswered");
	fi_started(&f, PROTO_READY, f.start_id, 1);
	f.started = true;
	fi_open_init_stdio(&f);
	if (cmd_num("second_ctl", 0)) {
		struct vs_stream s;

		tap_ok(!fi_open(&f, &s, CTL_PORT), "fake-init: a second control stream is refused");
	}
	/* Idle for good with interrupts off: the vCPU stays halted inside
	 * KVM_RUN, as an idle Linux guest's does between interrupts. */
	if (cmd_num("halt", 0))
		fi_halt("halted after the start, interrupts off");
	if (cmd_num("stall", 0)) {
		/* An EXIT promising 30 bytes of body, and 4 of them. */
		put_header(msg, PROTO_EXIT, 30, 0);
		memset(msg + PROTO_HDR, 0, 4);
		tap_ok(vs_send(&f.d, &f.ctl, VS_RW, 0, msg, PROTO_HDR + 4), "fake-init: part of an EXIT sent");
		fi_halt("silent from now on");
	}
	fi_serve(&f);
}
