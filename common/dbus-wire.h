/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The D-Bus wire format, as much of it as a client of systemd needs:
 * messages are written little-endian ('l'), read in either byte order.
 * Every value sits at its natural alignment counted from the start of the
 * message (1 for y/g/v, 4 for b/u/i/s/o/a, 8 for t/x/d and structs and
 * dict entries); the header is 12 fixed bytes plus an a(yv) of fields,
 * padded to 8 before the body.
 *
 * The reader checks everything it reads against the buffer: a length or
 * offset that points outside, a string without its NUL or with one inside,
 * an invalid signature, a boolean that is neither 0 nor 1 are errors
 * (-EBADMSG), never a read past the end.
 */
#ifndef KVRUN_COMMON_DBUS_WIRE_H
#define KVRUN_COMMON_DBUS_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DBUS_MAX_MESSAGE (128u << 20) /* the specification's limit */
#define DBUS_MAX_ARRAY (64u << 20)
#define DBUS_MAX_SIGNATURE 255
#define DBUS_HEADER_FIXED 16 /* up to and including the fields' array length */

enum dbus_msg_type {
	DBUS_METHOD_CALL = 1,
	DBUS_METHOD_RETURN = 2,
	DBUS_ERROR = 3,
	DBUS_SIGNAL = 4,
};

#define DBUS_FLAG_NO_REPLY 0x1

/* A message's header, and where its body is. The strings point into the
 * buffer the message was parsed from (or are the caller's, for writing);
 * absent fields are NULL, an absent reply serial is 0. */
struct dbus_msg {
	uint8_t type, flags;
	bool big_endian;
	uint32_t serial, reply_serial;
	const char *path, *interface, *member, *error_name, *destination, *sender, *signature;
	const uint8_t *body;
	size_t body_len;
};

/* ---- writing ---------------------------------------------------------- */

/* A growing buffer. A failed allocation is remembered in err (-ENOMEM)
 * and makes later writes no-ops, so callers check once at the end. */
struct dbus_writer {
	uint8_t *buf;
	size_t len, cap;
	size_t body_at; /* where the body starts (set by dbus_msg_begin) */
	int err;
};

void dbus_writer_free(struct dbus_writer *w);

void dbus_w_align(struct dbus_writer *w, size_t n);
void dbus_w_u8(struct dbus_writer *w, uint8_t v);
void dbus_w_bool(struct dbus_writer *w, bool v);
void dbus_w_u32(struct dbus_writer *w, uint32_t v);
void dbus_w_u64(struct dbus_writer *w, uint64_t v);
void dbus_w_str(struct dbus_writer *w, const char *s); /* 's' and 'o' */
void dbus_w_sig(struct dbus_writer *w, const char *s); /* 'g' */
/* A variant holding one basic value: sig is its one-letter signature. */
void dbus_w_variant_str(struct dbus_writer *w, const char *s);
void dbus_w_variant_bool(struct dbus_writer *w, bool v);
void dbus_w_variant_u64(struct dbus_writer *w, uint64_t v);

/* Arrays: open returns the position of the length to patch at close;
 * elem_align is the alignment of the element type (the padding before
 * the first element is not part of the length). */
struct dbus_array {
	size_t len_at, start;
};
struct dbus_array dbus_w_array_open(struct dbus_writer *w, size_t elem_align);
void dbus_w_array_close(struct dbus_writer *w, struct dbus_array a);

/* Start a message with the header fields of h that are set (path,
 * interface, member, error name, reply serial, destination, sender,
 * signature), h->type, h->flags and h->serial; the body follows. */
void dbus_msg_begin(struct dbus_writer *w, const struct dbus_msg *h);
/* Patch the body length. Returns 0, or -ENOMEM / -EMSGSIZE. */
int dbus_msg_end(struct dbus_writer *w);

/* ---- reading ---------------------------------------------------------- */

struct dbus_reader {
	const uint8_t *buf; /* the whole message: alignment counts from here */
	size_t len, pos;
	bool big_endian;
};

int dbus_r_align(struct dbus_reader *r, size_t n);
int dbus_r_u8(struct dbus_reader *r, uint8_t *ret);
int dbus_r_bool(struct dbus_reader *r, bool *ret);
int dbus_r_u32(struct dbus_reader *r, uint32_t *ret);
int dbus_r_u64(struct dbus_reader *r, uint64_t *ret);
int dbus_r_str(struct dbus_reader *r, const char **ret); /* 's' and 'o' */
int dbus_r_sig(struct dbus_reader *r, const char **ret); /* 'g' */
/* Enter an array: *ret_end is where its elements end (validated against
 * the buffer and DBUS_MAX_ARRAY); read elements while pos < end. */
int dbus_r_array(struct dbus_reader *r, size_t elem_align, size_t *ret_end);
/* Skip one value of the complete type at the start of *sig and advance
 * *sig past it. Nesting is bounded (variants and containers, 64). */
int dbus_r_skip(struct dbus_reader *r, const char **sig);

/* Whether sig is a valid signature: a sequence of complete types, at most
 * 255 bytes, dict entries only as array elements, with basic keys. */
bool dbus_sig_valid(const char *sig);
/* The alignment of the type starting at sig (0 for an invalid one). */
size_t dbus_type_align(char c);

/* The total size of the message whose first DBUS_HEADER_FIXED bytes are
 * hdr, or -EBADMSG for a bad endianness byte, version or lengths. */
int dbus_msg_size(const uint8_t *hdr, size_t *ret_size);

/* Parse the complete message buf[0..len) into *ret (which points into
 * buf). Checks the header fields' types, that the required ones for the
 * message type are present, and that the body is as long as said. A
 * signature given in the header is validated; the body is not walked. */
int dbus_msg_parse(const uint8_t *buf, size_t len, struct dbus_msg *ret);

/* A reader positioned at the body of m (alignment counted from the body's
 * start, which is 8-aligned in the message). */
struct dbus_reader dbus_msg_body(const struct dbus_msg *m);

#endif
