/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Wire protocol encoder/decoder: one walker over the field tables of
 * protocol.c encodes, decodes and frees every message.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fileio.h"
#include "common/grow.h"
#include "common/protocol-fields.h"
#include "common/protocol.h"

#define MAX_DEPTH 4

/* ---- little-endian helpers ---- */

static void put_le(uint8_t *p, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* ---- encoder ---- */

struct wbuf {
	uint8_t *p;
	size_t len, cap;
	int err;
};

static uint8_t *wbuf_reserve(struct wbuf *w, size_t n)
{
	if (w->err)
		return NULL;
	if (n > KVRUN_PROTO_MAX_BODY + KVRUN_PROTO_HEADER_SIZE - w->len) {
		w->err = -EMSGSIZE;
		return NULL;
	}
	if (grow_bytes(&w->p, &w->cap, w->len + n, 256) < 0) {
		w->err = -ENOMEM;
		return NULL;
	}
	w->len += n;
	return w->p + w->len - n;
}

/* Write a TLV header; returns the offset of its length for patching. */
static size_t put_tl(struct wbuf *w, uint16_t tag, size_t len)
{
	uint8_t *p = wbuf_reserve(w, 6);

	if (!p)
		return 0;
	put_le(p, tag, 2);
	put_le(p + 2, len, 4);
	return w->len - 4;
}

static void put_raw(struct wbuf *w, uint16_t tag, const void *v, size_t len)
{
	uint8_t *p;

	put_tl(w, tag, len);
	p = wbuf_reserve(w, len);
	if (p && len)
		memcpy(p, v, len);
}

static void put_int(struct wbuf *w, uint16_t tag, uint64_t v, size_t n)
{
	uint8_t b[8];

	put_le(b, v, n);
	put_raw(w, tag, b, n);
}

static void encode_record(struct wbuf *w, const struct desc *d, const void *obj);

static void encode_field(struct wbuf *w, const struct desc *d, const struct field *f, const char *base)
{
	const void *v = base + f->off;

	if (f->has != NO_HAS && !*(const bool *)(base + f->has))
		return;
	switch (f->kind) {
	case F_U16:
		put_int(w, f->tag, *(const uint16_t *)v, 2);
		break;
	case F_U32:
		put_int(w, f->tag, *(const uint32_t *)v, 4);
		break;
	case F_I32:
		put_int(w, f->tag, (uint32_t) * (const int32_t *)v, 4);
		break;
	case F_U64:
		put_int(w, f->tag, *(const uint64_t *)v, 8);
		break;
	case F_BOOL:
		put_int(w, f->tag, *(const bool *)v, 1);
		break;
	case F_U8:
		put_int(w, f->tag, *(const uint8_t *)v, 1);
		break;
	case F_RAW:
		put_raw(w, f->tag, v, f->aux);
		break;
	case F_CSTR:
		put_raw(w, f->tag, v, strnlen(v, f->aux - 1));
		break;
	case F_RECA: {
		unsigned int n = *(const unsigned int *)(base + f->aux);

		for (size_t i = 0; i < n && i < f->max; i++) {
			size_t at = put_tl(w, f->tag, 0), start = w->len;

			encode_record(w, f->sub, (const char *)v + i * f->sub->size);
			if (!w->err)
				put_le(w->p + at, w->len - start, 4);
		}
		break;
	}
	case F_STR:
		if (*(char *const *)v)
			put_raw(w, f->tag, *(char *const *)v, strlen(*(char *const *)v));
		break;
	case F_STRV:
		for (char *const *s = *(char **const *)v; s && *s; s++)
			put_raw(w, f->tag, *s, strlen(*s));
		break;
	case F_BYTES:
		put_raw(w, f->tag, *(uint8_t *const *)v, *(const size_t *)(base + f->aux));
		break;
	case F_U32V:
		for (size_t i = 0; i < *(const size_t *)(base + f->aux); i++)
			put_int(w, f->tag, (*(uint32_t *const *)v)[i], 4);
		break;
	case F_RECV:
		for (size_t i = 0; i < *(const size_t *)(base + f->aux); i++) {
			size_t at = put_tl(w, f->tag, 0), start = w->len;

			encode_record(w, f->sub, *(char *const *)v + i * f->sub->size);
			if (!w->err)
				put_le(w->p + at, w->len - start, 4);
		}
		break;
	case F_RECP: {
		const void *sub = proto_field_embedded(d, f) ? v : *(void *const *)v;
		size_t at, start;

		if (!sub)
			break;
		at = put_tl(w, f->tag, 0);
		start = w->len;
		encode_record(w, f->sub, sub);
		if (!w->err)
			put_le(w->p + at, w->len - start, 4);
		break;
	}
	}
}

static void encode_record(struct wbuf *w, const struct desc *d, const void *obj)
{
	for (size_t i = 0; i < d->n; i++)
		encode_field(w, d, &d->fields[i], obj);
}

int proto_encode(const struct proto_msg *m, uint8_t **ret_buf, size_t *ret_len)
{
	const struct desc *d = proto_desc_of(m->type);
	struct wbuf w = {0};
	uint8_t *h;

	if (!d)
		return -EINVAL;
	h = wbuf_reserve(&w, KVRUN_PROTO_HEADER_SIZE);
	if (!h)
		return w.err;
	if (d->n)
		encode_record(&w, d, &m->u);
	if (w.err) {
		free(w.p);
		return w.err;
	}
	put_le(w.p, KVRUN_PROTO_MAGIC, 4);
	put_le(w.p + 4, KVRUN_PROTO_VERSION, 2);
	put_le(w.p + 6, m->type, 2);
	put_le(w.p + 8, m->flags, 4);
	put_le(w.p + 12, w.len - KVRUN_PROTO_HEADER_SIZE, 4);
	put_le(w.p + 16, m->id, 8);
	*ret_buf = w.p;
	*ret_len = w.len;
	return 0;
}

/* ---- decoder ---- */

static const struct field *find_field(const struct desc *d, uint16_t tag, size_t *ret_idx)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->fields[i].tag == tag) {
			*ret_idx = i;
			return &d->fields[i];
		}
	return NULL;
}

/* Grow an array of n elements of size sz by one, doubling the capacity. */
static int grow(void **arr, size_t n, size_t *cap, size_t sz)
{
	void *np;
	size_t ncap;

	if (n >= KVRUN_PROTO_MAX_LIST)
		return -EMSGSIZE;
	if (n + 1 < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 4;
	np = realloc(*arr, ncap * sz);
	if (!np)
		return -ENOMEM;
	memset((char *)np + n * sz, 0, (ncap - n) * sz);
	*arr = np;
	*cap = ncap;
	return 0;
}

static int dup_str(const uint8_t *v, size_t len, char **ret)
{
	char *s;

	if (memchr(v, '\0', len))
		return -EBADMSG;
	s = malloc(len + 1);
	if (!s)
		return -ENOMEM;
	memcpy(s, v, len);
	s[len] = '\0';
	*ret = s;
	return 0;
}

static int decode_record(const struct desc *d, void *obj, const uint8_t *p, size_t len, int depth);
static void free_record(const struct desc *d, void *obj);

static int decode_scalar(const struct field *f, void *v, const uint8_t *val, size_t vlen)
{
	static const size_t sizes[] = {[F_U16] = 2, [F_U32] = 4, [F_I32] = 4, [F_U64] = 8, [F_BOOL] = 1, [F_U8] = 1};

	if (vlen != sizes[f->kind])
		return -EBADMSG;
	switch (f->kind) {
	case F_U16:
		*(uint16_t *)v = (uint16_t)get_le(val, 2);
		break;
	case F_U32:
		*(uint32_t *)v = (uint32_t)get_le(val, 4);
		break;
	case F_I32:
		*(int32_t *)v = (int32_t)(uint32_t)get_le(val, 4);
		break;
	case F_U64:
		*(uint64_t *)v = get_le(val, 8);
		break;
	case F_BOOL:
		if (val[0] > 1)
			return -EBADMSG;
		*(bool *)v = val[0];
		break;
	case F_U8:
		*(uint8_t *)v = val[0];
		break;
	}
	return 0;
}

static int decode_sub(const struct field *f, void *dst, const uint8_t *val, size_t vlen, int depth)
{
	if (depth >= MAX_DEPTH)
		return -EBADMSG;
	return decode_record(f->sub, dst, val, vlen, depth + 1);
}

static int decode_field(const struct desc *d, const struct field *f, char *base, size_t *cap, const uint8_t *val,
                        size_t vlen, int depth)
{
	void *v = base + f->off;
	int r;

	if (f->has != NO_HAS)
		*(bool *)(base + f->has) = true;
	switch (f->kind) {
	case F_STR:
		free(*(char **)v);
		*(char **)v = NULL;
		return dup_str(val, vlen, (char **)v);
	case F_STRV: /* handled by decode_record, which keeps the count */
		return -EINVAL;
	case F_BYTES: {
		uint8_t **bp = v;

		free(*bp);
		*bp = malloc(vlen ? vlen : 1);
		if (!*bp)
			return -ENOMEM;
		memcpy(*bp, val, vlen);
		*(size_t *)(base + f->aux) = vlen;
		return 0;
	}
	case F_U32V: {
		size_t *n = (size_t *)(base + f->aux);

		if (vlen != 4)
			return -EBADMSG;
		r = grow(v, *n, cap, sizeof(uint32_t));
		if (r < 0)
			return r;
		(*(uint32_t **)v)[(*n)++] = (uint32_t)get_le(val, 4);
		return 0;
	}
	case F_RECV: {
		size_t *n = (size_t *)(base + f->aux);

		r = grow(v, *n, cap, f->sub->size);
		if (r < 0)
			return r;
		/* Count it first so a failed decode is still freed. */
		return decode_sub(f, *(char **)v + (*n)++ * f->sub->size, val, vlen, depth);
	}
	case F_RAW:
		if (vlen != f->aux)
			return -EBADMSG;
		memcpy(v, val, vlen);
		return 0;
	case F_CSTR:
		if (vlen >= f->aux || memchr(val, '\0', vlen))
			return -EBADMSG;
		memcpy(v, val, vlen);
		((char *)v)[vlen] = '\0';
		return 0;
	case F_RECA: {
		unsigned int *n = (unsigned int *)(base + f->aux);

		/* A fixed array: one element too many is a malformed frame. */
		if (*n >= f->max)
			return -EBADMSG;
		return decode_sub(f, (char *)v + (*n)++ * f->sub->size, val, vlen, depth);
	}
	case F_RECP: {
		void *sub;

		if (proto_field_embedded(d, f)) {
			/* A repeated record replaces the first one. */
			free_record(f->sub, v);
			return decode_sub(f, v, val, vlen, depth);
		}
		if (*(void **)v) {
			free_record(f->sub, *(void **)v);
			free(*(void **)v);
		}
		sub = calloc(1, f->sub->size);
		*(void **)v = sub;
		if (!sub)
			return -ENOMEM;
		return decode_sub(f, sub, val, vlen, depth);
	}
	default:
		return decode_scalar(f, v, val, vlen);
	}
}

static int strv_push(char ***sv, size_t *n, size_t *cap, const uint8_t *val, size_t vlen)
{
	int r;

	/* grow() keeps one spare slot, so the array stays NULL-terminated. */
	r = grow((void **)sv, *n, cap, sizeof(char *));
	if (r < 0)
		return r;
	r = dup_str(val, vlen, &(*sv)[*n]);
	if (r < 0)
		return r;
	(*n)++;
	return 0;
}

static int decode_record(const struct desc *d, void *obj, const uint8_t *p, size_t len, int depth)
{
	size_t caps[PROTO_MAX_FIELDS] = {0}, counts[PROTO_MAX_FIELDS] = {0};
	size_t off = 0;

	while (off < len) {
		const struct field *f;
		size_t vlen, idx;
		uint16_t tag;
		int r;

		if (len - off < 6)
			return -EBADMSG;
		tag = (uint16_t)get_le(p + off, 2);
		vlen = (size_t)get_le(p + off + 2, 4);
		off += 6;
		if (vlen > len - off)
			return -EBADMSG;
		f = find_field(d, tag, &idx);
		if (f && f->kind == F_STRV)
			r = strv_push((char ***)((char *)obj + f->off), &counts[idx], &caps[idx], p + off, vlen);
		else if (f)
			r = decode_field(d, f, obj, &caps[idx], p + off, vlen, depth);
		else
			r = 0; /* unknown tag: a newer peer's field */
		if (r < 0)
			return r;
		off += vlen;
	}
	return 0;
}

int proto_header_parse(const void *buf, size_t len, struct proto_header *ret)
{
	const uint8_t *p = buf;

	if (len < KVRUN_PROTO_HEADER_SIZE)
		return -EAGAIN;
	if (get_le(p, 4) != KVRUN_PROTO_MAGIC)
		return -EBADMSG;
	ret->version = (uint16_t)get_le(p + 4, 2);
	ret->type = (uint16_t)get_le(p + 6, 2);
	ret->flags = (uint32_t)get_le(p + 8, 4);
	ret->length = (uint32_t)get_le(p + 12, 4);
	ret->id = get_le(p + 16, 8);
	if (ret->version != KVRUN_PROTO_VERSION)
		return -EPROTONOSUPPORT;
	if (ret->length > KVRUN_PROTO_MAX_BODY)
		return -EMSGSIZE;
	return 0;
}

int proto_decode(const void *buf, size_t len, struct proto_msg *ret)
{
	struct proto_header h;
	const struct desc *d;
	int r;

	memset(ret, 0, sizeof(*ret));
	r = proto_header_parse(buf, len, &h);
	if (r == -EAGAIN)
		return -EBADMSG;
	if (r < 0)
		return r;
	if (len != KVRUN_PROTO_HEADER_SIZE + (size_t)h.length)
		return -EBADMSG;
	d = proto_desc_of(h.type);
	if (!d)
		return -EBADMSG;
	ret->type = h.type;
	ret->flags = h.flags;
	ret->id = h.id;
	r = decode_record(d, &ret->u, (const uint8_t *)buf + KVRUN_PROTO_HEADER_SIZE, h.length, 0);
	if (r < 0) {
		proto_msg_free(ret);
		return r;
	}
	return 0;
}

/* ---- free ---- */

static void free_record(const struct desc *d, void *obj)
{
	char *base = obj;

	for (size_t i = 0; i < d->n; i++) {
		const struct field *f = &d->fields[i];
		void *v = base + f->off;

		switch (f->kind) {
		case F_STR:
		case F_BYTES:
		case F_U32V:
			free(*(void **)v);
			break;
		case F_STRV:
			for (char **s = *(char ***)v; s && *s; s++)
				free(*s);
			free(*(void **)v);
			break;
		case F_RECV:
			for (size_t j = 0; j < *(size_t *)(base + f->aux); j++)
				free_record(f->sub, *(char **)v + j * f->sub->size);
			free(*(void **)v);
			break;
		case F_RECA:
			for (unsigned int j = 0; j < *(unsigned int *)(base + f->aux) && j < f->max; j++)
				free_record(f->sub, (char *)v + j * f->sub->size);
			break;
		case F_RECP:
			if (proto_field_embedded(d, f)) {
				free_record(f->sub, v);
				break;
			}
			if (*(void **)v)
				free_record(f->sub, *(void **)v);
			free(*(void **)v);
			break;
		default:
			break;
		}
	}
	memset(obj, 0, d->size);
}

void proto_msg_free(struct proto_msg *m)
{
	const struct desc *d;

	if (!m)
		return;
	d = proto_desc_of(m->type);
	if (d && d->n)
		free_record(d, &m->u);
	memset(m, 0, sizeof(*m));
}

void proto_process_free(struct proto_process *p)
{
	free_record(proto_desc_of(PROTO_MSG_EXEC), p);
}

void proto_start_free(struct proto_start *s)
{
	free_record(proto_desc_of(PROTO_MSG_START), s);
}

/* ---- blocking stream I/O ---- */

static int read_full(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = read(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int proto_send(int fd, const struct proto_msg *m)
{
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len;
	int r;

	r = proto_encode(m, &buf, &len);
	if (r < 0)
		return r;
	return write_all(fd, buf, len);
}

int proto_recv(int fd, struct proto_msg *ret)
{
	uint8_t hdr[KVRUN_PROTO_HEADER_SIZE];
	_cleanup_free_ uint8_t *buf = NULL;
	struct proto_header h;
	int r;

	r = read_full(fd, hdr, sizeof(hdr));
	if (r < 0)
		return r;
	r = proto_header_parse(hdr, sizeof(hdr), &h);
	if (r < 0)
		return r;
	buf = malloc(sizeof(hdr) + h.length);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, hdr, sizeof(hdr));
	r = read_full(fd, buf + sizeof(hdr), h.length);
	if (r < 0)
		return r;
	return proto_decode(buf, sizeof(hdr) + h.length, ret);
}
