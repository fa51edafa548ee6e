/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/dbus-wire.h"
#include "common/grow.h"

#define MAX_DEPTH 64

enum field {
	F_PATH = 1,
	F_INTERFACE = 2,
	F_MEMBER = 3,
	F_ERROR_NAME = 4,
	F_REPLY_SERIAL = 5,
	F_DESTINATION = 6,
	F_SENDER = 7,
	F_SIGNATURE = 8,
	F_UNIX_FDS = 9,
};

/* ---- writing ---------------------------------------------------------- */

void dbus_writer_free(struct dbus_writer *w)
{
	free(w->buf);
	*w = (struct dbus_writer){0};
}

static void put(struct dbus_writer *w, const void *p, size_t n)
{
	if (w->err)
		return;
	if (grow_bytes(&w->buf, &w->cap, w->len + n, 256) < 0) {
		w->err = -ENOMEM;
		return;
	}
	memcpy(w->buf + w->len, p, n);
	w->len += n;
}

void dbus_w_align(struct dbus_writer *w, size_t n)
{
	static const uint8_t zero[8];

	if (w->len % n)
		put(w, zero, n - w->len % n);
}

void dbus_w_u8(struct dbus_writer *w, uint8_t v)
{
	put(w, &v, 1);
}

void dbus_w_u32(struct dbus_writer *w, uint32_t v)
{
	uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};

	dbus_w_align(w, 4);
	put(w, b, 4);
}

void dbus_w_bool(struct dbus_writer *w, bool v)
{
	dbus_w_u32(w, v);
}

void dbus_w_u64(struct dbus_writer *w, uint64_t v)
{
	dbus_w_align(w, 8);
	dbus_w_u32(w, (uint32_t)v);
	dbus_w_u32(w, (uint32_t)(v >> 32));
}

void dbus_w_str(struct dbus_writer *w, const char *s)
{
	dbus_w_u32(w, (uint32_t)strlen(s));
	put(w, s, strlen(s) + 1);
}

void dbus_w_sig(struct dbus_writer *w, const char *s)
{
	dbus_w_u8(w, (uint8_t)strlen(s));
	put(w, s, strlen(s) + 1);
}

void dbus_w_variant_str(struct dbus_writer *w, const char *s)
{
	dbus_w_sig(w, "s");
	dbus_w_str(w, s);
}

void dbus_w_variant_bool(struct dbus_writer *w, bool v)
{
	dbus_w_sig(w, "b");
	dbus_w_bool(w, v);
}

void dbus_w_variant_u64(struct dbus_writer *w, uint64_t v)
{
	dbus_w_sig(w, "t");
	dbus_w_u64(w, v);
}

struct dbus_array dbus_w_array_open(struct dbus_writer *w, size_t elem_align)
{
	struct dbus_array a;

	dbus_w_u32(w, 0);
	a.len_at = w->len - 4;
	dbus_w_align(w, elem_align);
	a.start = w->len;
	return a;
}

void dbus_w_array_close(struct dbus_writer *w, struct dbus_array a)
{
	uint32_t n = (uint32_t)(w->len - a.start);

	if (w->err)
		return;
	if (w->len - a.start > DBUS_MAX_ARRAY) {
		w->err = -EMSGSIZE;
		return;
	}
	for (int i = 0; i < 4; i++)
		w->buf[a.len_at + i] = (uint8_t)(n >> (8 * i));
}

static void field_str(struct dbus_writer *w, uint8_t code, const char *sig, const char *v)
{
	if (!v)
		return;
	dbus_w_align(w, 8);
	dbus_w_u8(w, code);
	dbus_w_sig(w, sig);
	if (sig[0] == 'g')
		dbus_w_sig(w, v);
	else
		dbus_w_str(w, v);
}

void dbus_msg_begin(struct dbus_writer *w, const struct dbus_msg *h)
{
	struct dbus_array a;

	w->len = 0;
	dbus_w_u8(w, 'l');
	dbus_w_u8(w, h->type);
	dbus_w_u8(w, h->flags);
	dbus_w_u8(w, 1);
	dbus_w_u32(w, 0); /* body length, patched at the end */
	dbus_w_u32(w, h->serial);
	a = dbus_w_array_open(w, 8);
	field_str(w, F_PATH, "o", h->path);
	field_str(w, F_INTERFACE, "s", h->interface);
	field_str(w, F_MEMBER, "s", h->member);
	field_str(w, F_ERROR_NAME, "s", h->error_name);
	if (h->reply_serial) {
		dbus_w_align(w, 8);
		dbus_w_u8(w, F_REPLY_SERIAL);
		dbus_w_sig(w, "u");
		dbus_w_u32(w, h->reply_serial);
	}
	field_str(w, F_DESTINATION, "s", h->destination);
	field_str(w, F_SENDER, "s", h->sender);
	field_str(w, F_SIGNATURE, "g", h->signature && *h->signature ? h->signature : NULL);
	dbus_w_array_close(w, a);
	dbus_w_align(w, 8);
	w->body_at = w->len;
}

int dbus_msg_end(struct dbus_writer *w)
{
	size_t n = w->len - w->body_at;

	if (w->err)
		return w->err;
	if (w->len > DBUS_MAX_MESSAGE)
		return -EMSGSIZE;
	for (int i = 0; i < 4; i++)
		w->buf[4 + i] = (uint8_t)(n >> (8 * i));
	return 0;
}

/* ---- reading ---------------------------------------------------------- */

static uint32_t get32(const uint8_t *p, bool big)
{
	return big ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
	           : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

int dbus_r_align(struct dbus_reader *r, size_t n)
{
	size_t pad = r->pos % n ? n - r->pos % n : 0;

	if (pad > r->len - r->pos)
		return -EBADMSG;
	/* The specification requires the padding to be zero. */
	for (size_t i = 0; i < pad; i++)
		if (r->buf[r->pos + i])
			return -EBADMSG;
	r->pos += pad;
	return 0;
}

int dbus_r_u8(struct dbus_reader *r, uint8_t *ret)
{
	if (r->pos >= r->len)
		return -EBADMSG;
	*ret = r->buf[r->pos++];
	return 0;
}

int dbus_r_u32(struct dbus_reader *r, uint32_t *ret)
{
	if (dbus_r_align(r, 4) < 0 || r->len - r->pos < 4)
		return -EBADMSG;
	*ret = get32(r->buf + r->pos, r->big_endian);
	r->pos += 4;
	return 0;
}

int dbus_r_bool(struct dbus_reader *r, bool *ret)
{
	uint32_t v;

	if (dbus_r_u32(r, &v) < 0 || v > 1)
		return -EBADMSG;
	*ret = v;
	return 0;
}

int dbus_r_u64(struct dbus_reader *r, uint64_t *ret)
{
	uint32_t a, b;

	if (dbus_r_align(r, 8) < 0 || dbus_r_u32(r, &a) < 0 || dbus_r_u32(r, &b) < 0)
		return -EBADMSG;
	*ret = r->big_endian ? (uint64_t)a << 32 | b : (uint64_t)b << 32 | a;
	return 0;
}

/* n bytes of text at pos, then the NUL, none inside. */
static int text(struct dbus_reader *r, size_t n, const char **ret)
{
	const char *s = (const char *)r->buf + r->pos;

	if (n >= r->len - r->pos || s[n] != 0 || memchr(s, 0, n))
		return -EBADMSG;
	r->pos += n + 1;
	*ret = s;
	return 0;
}

int dbus_r_str(struct dbus_reader *r, const char **ret)
{
	uint32_t n;

	if (dbus_r_u32(r, &n) < 0 || n > r->len)
		return -EBADMSG;
	return text(r, n, ret);
}

int dbus_r_sig(struct dbus_reader *r, const char **ret)
{
	uint8_t n;
	const char *s;

	if (dbus_r_u8(r, &n) < 0 || text(r, n, &s) < 0 || !dbus_sig_valid(s))
		return -EBADMSG;
	*ret = s;
	return 0;
}

int dbus_r_array(struct dbus_reader *r, size_t elem_align, size_t *ret_end)
{
	uint32_t n;

	if (dbus_r_u32(r, &n) < 0 || n > DBUS_MAX_ARRAY || dbus_r_align(r, elem_align) < 0 || n > r->len - r->pos)
		return -EBADMSG;
	*ret_end = r->pos + n;
	return 0;
}

/* ---- signatures ------------------------------------------------------- */

static bool basic(char c)
{
	return c && strchr("ybnqiuxtdsogh", c);
}

size_t dbus_type_align(char c)
{
	switch (c) {
	case 'y':
	case 'g':
	case 'v':
		return 1;
	case 'n':
	case 'q':
		return 2;
	case 'b':
	case 'i':
	case 'u':
	case 'h':
	case 's':
	case 'o':
	case 'a':
		return 4;
	case 'x':
	case 't':
	case 'd':
	case '(':
	case '{':
		return 8;
	default:
		return 0;
	}
}

/* Advance *s past one complete type; false when there is none. */
static bool one_type(const char **s, int depth)
{
	char c = **s;

	if (depth > MAX_DEPTH)
		return false;
	(*s)++;
	if (basic(c) || c == 'v')
		return true;
	if (c == 'a') {
		if (**s == '{') {
			(*s)++;
			if (!basic(**s))
				return false;
			(*s)++;
			if (!one_type(s, depth + 1) || **s != '}')
				return false;
			(*s)++;
			return true;
		}
		return one_type(s, depth + 1);
	}
	if (c == '(') {
		if (**s == ')')
			return false;
		while (**s && **s != ')')
			if (!one_type(s, depth + 1))
				return false;
		if (**s != ')')
			return false;
		(*s)++;
		return true;
	}
	return false;
}

bool dbus_sig_valid(const char *sig)
{
	if (strlen(sig) > DBUS_MAX_SIGNATURE)
		return false;
	while (*sig)
		if (!one_type(&sig, 0))
			return false;
	return true;
}

/* ---- skipping values -------------------------------------------------- */

static int skip(struct dbus_reader *r, const char **sig, int depth);

static int skip_fixed(struct dbus_reader *r, size_t n)
{
	if (dbus_r_align(r, n) < 0 || r->len - r->pos < n)
		return -EBADMSG;
	r->pos += n;
	return 0;
}

/* *sig is just past the 'a'. */
static int skip_array(struct dbus_reader *r, const char **sig, int depth)
{
	const char *elem = *sig, *after = *sig - 1;
	size_t end;
	int q;

	if (!one_type(&after, depth))
		return -EBADMSG;
	q = dbus_r_array(r, dbus_type_align(*elem), &end);
	if (q < 0)
		return q;
	while (r->pos < end) {
		const char *e = elem;

		if (*e == '{') {
			/* A dict entry: a struct of key and value. */
			if (dbus_r_align(r, 8) < 0)
				return -EBADMSG;
			e++;
			if ((q = skip(r, &e, depth + 1)) < 0 || (q = skip(r, &e, depth + 1)) < 0)
				return q;
		} else if ((q = skip(r, &e, depth + 1)) < 0) {
			return q;
		}
	}
	*sig = after;
	return r->pos == end ? 0 : -EBADMSG;
}

static int skip(struct dbus_reader *r, const char **sig, int depth)
{
	char c = **sig;
	const char *s, *inner;
	int q;

	if (depth > MAX_DEPTH)
		return -EBADMSG;
	(*sig)++;
	switch (c) {
	case 'y':
		return skip_fixed(r, 1);
	case 'n':
	case 'q':
		return skip_fixed(r, 2);
	case 'b':
		return dbus_r_bool(r, &(bool){0});
	case 'i':
	case 'u':
	case 'h':
		return skip_fixed(r, 4);
	case 'x':
	case 't':
	case 'd':
		return skip_fixed(r, 8);
	case 's':
	case 'o':
		return dbus_r_str(r, &s);
	case 'g':
		return dbus_r_sig(r, &s);
	case 'v':
		if ((q = dbus_r_sig(r, &inner)) < 0)
			return q;
		/* A variant holds exactly one complete type. */
		s = inner;
		if (!one_type(&s, 0) || *s)
			return -EBADMSG;
		return skip(r, &inner, depth + 1);
	case 'a':
		return skip_array(r, sig, depth);
	case '(':
		if (dbus_r_align(r, 8) < 0)
			return -EBADMSG;
		while (**sig && **sig != ')')
			if ((q = skip(r, sig, depth + 1)) < 0)
				return q;
		if (**sig != ')')
			return -EBADMSG;
		(*sig)++;
		return 0;
	default:
		return -EBADMSG;
	}
}

int dbus_r_skip(struct dbus_reader *r, const char **sig)
{
	return skip(r, sig, 0);
}

/* ---- messages --------------------------------------------------------- */

int dbus_msg_size(const uint8_t *hdr, size_t *ret_size)
{
	bool big = hdr[0] == 'B';
	uint64_t body, fields, n;

	if ((hdr[0] != 'l' && !big) || hdr[3] != 1)
		return -EBADMSG;
	body = get32(hdr + 4, big);
	fields = get32(hdr + 12, big);
	n = DBUS_HEADER_FIXED + fields;
	n = (n + 7) & ~(uint64_t)7;
	n += body;
	if (fields > DBUS_MAX_ARRAY || n > DBUS_MAX_MESSAGE)
		return -EBADMSG;
	*ret_size = (size_t)n;
	return 0;
}

static int header_field(struct dbus_reader *r, struct dbus_msg *m)
{
	const char *sig, **to = NULL, *want = "s";
	uint8_t code;

	if (dbus_r_align(r, 8) < 0 || dbus_r_u8(r, &code) < 0 || dbus_r_sig(r, &sig) < 0)
		return -EBADMSG;
	switch (code) {
	case F_PATH:
		to = &m->path, want = "o";
		break;
	case F_INTERFACE:
		to = &m->interface;
		break;
	case F_MEMBER:
		to = &m->member;
		break;
	case F_ERROR_NAME:
		to = &m->error_name;
		break;
	case F_DESTINATION:
		to = &m->destination;
		break;
	case F_SENDER:
		to = &m->sender;
		break;
	case F_SIGNATURE:
		to = &m->signature, want = "g";
		break;
	case F_REPLY_SERIAL:
		if (strcmp(sig, "u") || dbus_r_u32(r, &m->reply_serial) < 0 || !m->reply_serial)
			return -EBADMSG;
		return 0;
	case F_UNIX_FDS:
		want = "u";
		break;
	default:
		/* Unknown fields are to be ignored. */
		return dbus_r_skip(r, &sig);
	}
	if (strcmp(sig, want))
		return -EBADMSG;
	if (!to)
		return dbus_r_skip(r, &sig);
	return want[0] == 'g' ? dbus_r_sig(r, to) : dbus_r_str(r, to);
}

int dbus_msg_parse(const uint8_t *buf, size_t len, struct dbus_msg *ret)
{
	struct dbus_msg m = {0};
	struct dbus_reader r = {.buf = buf, .len = len};
	size_t size, end;
	uint32_t body_len;
	uint8_t v;

	if (len < DBUS_HEADER_FIXED || dbus_msg_size(buf, &size) < 0 || size != len)
		return -EBADMSG;
	r.big_endian = m.big_endian = buf[0] == 'B';
	r.pos = 1;
	(void)dbus_r_u8(&r, &m.type);
	(void)dbus_r_u8(&r, &m.flags);
	(void)dbus_r_u8(&r, &v);
	if (dbus_r_u32(&r, &body_len) < 0 || dbus_r_u32(&r, &m.serial) < 0 || !m.serial)
		return -EBADMSG;
	if (m.type < DBUS_METHOD_CALL || m.type > DBUS_SIGNAL)
		return -EBADMSG;
	if (dbus_r_array(&r, 8, &end) < 0)
		return -EBADMSG;
	{
		/* Fields must not run past their array's end. */
		struct dbus_reader f = r;

		f.len = end;
		while (f.pos < end)
			if (header_field(&f, &m) < 0)
				return -EBADMSG;
		r.pos = f.pos;
	}
	if (dbus_r_align(&r, 8) < 0 || len - r.pos != body_len)
		return -EBADMSG;
	if ((m.type == DBUS_METHOD_CALL && (!m.path || !m.member)) ||
	    (m.type == DBUS_SIGNAL && (!m.path || !m.interface || !m.member)) ||
	    (m.type == DBUS_ERROR && (!m.error_name || !m.reply_serial)) ||
	    (m.type == DBUS_METHOD_RETURN && !m.reply_serial))
		return -EBADMSG;
	if (body_len && !m.signature)
		return -EBADMSG;
	m.body = buf + r.pos;
	m.body_len = body_len;
	*ret = m;
	return 0;
}

struct dbus_reader dbus_msg_body(const struct dbus_msg *m)
{
	return (struct dbus_reader){.buf = m->body, .len = m->body_len, .big_endian = m->big_endian};
}
