/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small AML reader for the ACPI tests: walks the definition block of a
 * DSDT and records every Name() it finds under its full path (for example
 * "\_SB_.VR00._HID") with the decoded value. It knows the subset of AML a
 * static, method-free DSDT uses (Scope, Device, Name; integers, strings,
 * buffers and packages of integers) and fails on anything else, so an
 * unexpected opcode in the builder's output fails the test.
 */
#ifndef KVRUN_TESTS_AML_READER_H
#define KVRUN_TESTS_AML_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define AML_MAX_OBJS 512
#define AML_MAX_PKG 8

enum aml_kind { AML_INT, AML_STR, AML_BUF, AML_PKG, AML_DEVICE, AML_SCOPE };

struct aml_obj {
	char path[64];
	enum aml_kind kind;
	uint64_t val; /* AML_INT */
	char str[32]; /* AML_STR */
	const uint8_t *buf; /* AML_BUF: points into the table */
	size_t buf_len;
	uint64_t pkg[AML_MAX_PKG]; /* AML_PKG of integers */
	unsigned int pkg_n;
};

struct aml_reader {
	const uint8_t *p;
	size_t pos, end;
	bool err;
	char why[96];
	struct aml_obj objs[AML_MAX_OBJS];
	unsigned int n;
	unsigned int max_pkglen_bytes; /* largest PkgLength encoding seen */
};

static inline void aml_fail(struct aml_reader *r, const char *why)
{
	if (!r->err)
		snprintf(r->why, sizeof(r->why), "%s at offset %zu", why, r->pos);
	r->err = true;
}

static inline unsigned int aml_u8(struct aml_reader *r)
{
	if (r->pos >= r->end) {
		aml_fail(r, "truncated");
		return 0;
	}
	return r->p[r->pos++];
}

static inline uint64_t aml_le(struct aml_reader *r, unsigned int n)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < n; i++)
		v |= (uint64_t)aml_u8(r) << (8 * i);
	return v;
}

/* Decode a PkgLength at the current position; returns the offset where the
 * package ends (the length counts from the PkgLength's first byte). */
static inline size_t aml_pkg_end(struct aml_reader *r)
{
	size_t start = r->pos;
	unsigned int lead = aml_u8(r), follow = lead >> 6;
	size_t len;

	if (follow == 0) {
		len = lead & 0x3f;
	} else {
		if (lead & 0x30)
			aml_fail(r, "PkgLength lead byte bits 5-4 set");
		len = lead & 0x0f;
		for (unsigned int i = 0; i < follow; i++)
			len |= (size_t)aml_u8(r) << (4 + 8 * i);
	}
	if (follow + 1 > r->max_pkglen_bytes)
		r->max_pkglen_bytes = follow + 1;
	if (len < follow + 1u || start + len > r->end) {
		aml_fail(r, "PkgLength out of range");
		return r->end;
	}
	return start + len;
}

static inline bool aml_lead_char(unsigned int c)
{
	return (c >= 'A' && c <= 'Z') || c == '_';
}

/* NameString -> "\SEG_.SEG_" (relative names are joined to scope). */
static inline void aml_namestring(struct aml_reader *r, const char *scope, char *out, size_t outlen)
{
	char name[64] = "";
	unsigned int segs = 1, c = r->pos < r->end ? r->p[r->pos] : 0;

	if (c == '\\') {
		r->pos++;
		strcpy(name, "\\");
	} else {
		snprintf(name, sizeof(name), "%s", scope);
		if (c == '^') {
			aml_fail(r, "parent prefix not expected");
			return;
		}
	}
	c = aml_u8(r);
	if (c == 0x2e) {
		segs = 2;
	} else if (c == 0x2f) {
		segs = aml_u8(r);
	} else if (c == 0x00) {
		segs = 0;
	} else {
		r->pos--;
	}
	for (unsigned int i = 0; i < segs && !r->err; i++) {
		char seg[5] = "";

		for (unsigned int j = 0; j < 4; j++) {
			unsigned int ch = aml_u8(r);

			if (!(aml_lead_char(ch) || (j > 0 && ch >= '0' && ch <= '9')))
				aml_fail(r, "bad NameSeg character");
			seg[j] = (char)ch;
		}
		size_t l = strlen(name);
		snprintf(name + l, sizeof(name) - l, "%s%s", (l > 1 || (l == 1 && name[0] != '\\')) ? "." : "", seg);
	}
	snprintf(out, outlen, "%s", name);
}

/* An integer constant (ZeroOp, OneOp, OnesOp or a prefixed value). */
static inline bool aml_try_integer(struct aml_reader *r, uint64_t *v)
{
	unsigned int op = r->pos < r->end ? r->p[r->pos] : 0x100;

	switch (op) {
	case 0x00:
		r->pos++;
		*v = 0;
		return true;
	case 0x01:
		r->pos++;
		*v = 1;
		return true;
	case 0xff:
		r->pos++;
		*v = ~0ULL;
		return true;
	case 0x0a:
		r->pos++;
		*v = aml_le(r, 1);
		return true;
	case 0x0b:
		r->pos++;
		*v = aml_le(r, 2);
		return true;
	case 0x0c:
		r->pos++;
		*v = aml_le(r, 4);
		return true;
	case 0x0e:
		r->pos++;
		*v = aml_le(r, 8);
		return true;
	default:
		return false;
	}
}

static inline void aml_data(struct aml_reader *r, struct aml_obj *o)
{
	unsigned int op;
	size_t end;

	if (aml_try_integer(r, &o->val)) {
		o->kind = AML_INT;
		return;
	}
	op = aml_u8(r);
	switch (op) {
	case 0x0d: { /* String */
		size_t i = 0;
		unsigned int ch;

		o->kind = AML_STR;
		while ((ch = aml_u8(r)) != 0 && !r->err) {
			if (ch > 0x7f || i + 1 >= sizeof(o->str))
				aml_fail(r, "bad string");
			else
				o->str[i++] = (char)ch;
		}
		o->str[i] = 0;
		return;
	}
	case 0x11: { /* Buffer */
		uint64_t size;

		o->kind = AML_BUF;
		end = aml_pkg_end(r);
		if (!aml_try_integer(r, &size))
			aml_fail(r, "buffer size is not a constant");
		o->buf = r->p + r->pos;
		o->buf_len = end - r->pos;
		if (size != o->buf_len)
			aml_fail(r, "buffer size differs from its contents");
		r->pos = end;
		return;
	}
	case 0x12: { /* Package of integers */
		unsigned int n;

		o->kind = AML_PKG;
		end = aml_pkg_end(r);
		n = aml_u8(r);
		for (o->pkg_n = 0; r->pos < end && !r->err; o->pkg_n++) {
			if (o->pkg_n >= AML_MAX_PKG || !aml_try_integer(r, &o->pkg[o->pkg_n]))
				aml_fail(r, "package element is not an integer");
		}
		if (o->pkg_n != n)
			aml_fail(r, "package NumElements differs from its contents");
		return;
	}
	default:
		aml_fail(r, "unexpected data opcode");
	}
}

static inline struct aml_obj *aml_new(struct aml_reader *r)
{
	if (r->n >= AML_MAX_OBJS) {
		aml_fail(r, "too many objects");
		return &r->objs[0];
	}
	memset(&r->objs[r->n], 0, sizeof(r->objs[0]));
	return &r->objs[r->n++];
}

static inline void aml_termlist(struct aml_reader *r, const char *scope, size_t end)
{
	size_t saved_end = r->end;

	r->end = end;
	while (r->pos < end && !r->err) {
		unsigned int op = aml_u8(r);
		struct aml_obj *o;
		size_t pend;

		if (op == 0x08) { /* Name */
			o = aml_new(r);
			aml_namestring(r, scope, o->path, sizeof(o->path));
			aml_data(r, o);
		} else if (op == 0x10 || (op == 0x5b && r->pos < end && r->p[r->pos] == 0x82)) {
			if (op == 0x5b)
				r->pos++;
			pend = aml_pkg_end(r);
			o = aml_new(r);
			o->kind = op == 0x10 ? AML_SCOPE : AML_DEVICE;
			aml_namestring(r, scope, o->path, sizeof(o->path));
			char inner[64];
			snprintf(inner, sizeof(inner), "%s", o->path);
			aml_termlist(r, inner, pend);
			r->pos = pend;
		} else {
			r->pos--;
			aml_fail(r, "unexpected opcode");
		}
	}
	r->end = saved_end;
}

/* Parse the AML after a 36-byte table header. Returns false with r->why. */
static inline bool aml_read(struct aml_reader *r, const uint8_t *table, size_t len)
{
	memset(r, 0, sizeof(*r));
	r->p = table;
	r->pos = 36;
	r->end = len;
	aml_termlist(r, "\\", len);
	return !r->err;
}

static inline const struct aml_obj *aml_find(const struct aml_reader *r, const char *path)
{
	for (unsigned int i = 0; i < r->n; i++)
		if (strcmp(r->objs[i].path, path) == 0)
			return &r->objs[i];
	return NULL;
}

#endif
