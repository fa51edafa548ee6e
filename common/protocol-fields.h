/* SPDX-License-Identifier: Apache-2.0 */
/* Between protocol.c (the field tables that describe each message) and
 * protocol-codec.c (the walker that encodes, decodes and frees messages by
 * those tables). Not for other code. */
#ifndef KVRUN_COMMON_PROTOCOL_FIELDS_H
#define KVRUN_COMMON_PROTOCOL_FIELDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum field_kind {
	F_U16, /* uint16_t, 2 bytes */
	F_U32, /* uint32_t, 4 bytes */
	F_I32, /* int32_t, 4 bytes */
	F_U64, /* uint64_t, 8 bytes */
	F_BOOL, /* bool, 1 byte */
	F_STR, /* char *, NULL = absent */
	F_STRV, /* char ** NULL-terminated, one TLV per entry */
	F_BYTES, /* uint8_t * with size_t length at aux */
	F_U32V, /* uint32_t * with size_t count at aux, one TLV per entry */
	F_RECV, /* array of sub records with size_t count at aux */
	F_RECP, /* pointer to one sub record, NULL = absent */
	F_U8, /* uint8_t, 1 byte */
	F_RAW, /* inline uint8_t[aux], exactly aux bytes */
	F_CSTR, /* inline char[aux], NUL-terminated: at most aux - 1 bytes, no NUL */
	F_RECA, /* inline array of at most max sub records, unsigned int count at aux */
};

#define NO_HAS ((size_t)-1)

/* Fields a record may have (the decoder keeps a count per field). */
#define PROTO_MAX_FIELDS 48

struct desc;

struct field {
	uint16_t tag;
	uint8_t kind;
	size_t off;
	size_t aux; /* length/count offset */
	size_t has; /* offset of a bool "present" flag, or NO_HAS */
	const struct desc *sub;
	size_t max; /* F_RECA: capacity of the inline array */
};

struct desc {
	size_t size;
	const struct field *fields;
	size_t n;
};

/* The body of messages of type, or NULL for an unknown type. */
const struct desc *proto_desc_of(uint16_t type);

/* START embeds proto_process by value, not by pointer: whether field f of
 * d is such an embedded record. */
bool proto_field_embedded(const struct desc *d, const struct field *f);

#endif
