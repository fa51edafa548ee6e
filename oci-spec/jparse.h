/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to oci-spec/: typed reads out of a jansson tree that follow Go's
 * encoding/json rules (as runc decodes config.json) and name the JSON path
 * of whatever is wrong.
 */
#ifndef KVRUN_OCI_SPEC_JPARSE_H
#define KVRUN_OCI_SPEC_JPARSE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/cleanup.h"
#include "oci-spec/spec.h"

/* json_decrefp() comes with jansson >= 2.9. */
#define _cleanup_json_ _cleanup_(json_decrefp)

/* Where we are in the document: the name given by the caller and the JSON
 * path of the value being read ("linux.namespaces[2].type"). */
struct jctx {
	const char *name;
	size_t len;
	char path[1024];
};

void jctx_init(struct jctx *c, const char *name, const char *root);
/* Append ".key" (or "key" at the root) / "[i]"; return the length to pass
 * to jctx_pop() to undo it. */
size_t jctx_push_key(struct jctx *c, const char *key);
size_t jctx_push_index(struct jctx *c, size_t i);
void jctx_pop(struct jctx *c, size_t len);
/* err_set(-EINVAL, "<name>: <path>: <fmt...>") */
int jctx_error(const struct jctx *c, const char *fmt, ...) _printf_(2, 3);

/* Parse len bytes into a tree whose top level is an object. Syntax errors
 * read "<name>: line L, column C: <jansson's text>". Integers above
 * INT64_MAX are kept (as marked strings) for jread_u64(). */
int jparse_document(const char *json, size_t len, const char *name, json_t **ret);

/* The member of obj named key, compared case-insensitively as Go does;
 * the last match in document order. NULL when absent. */
json_t *jfield(json_t *obj, const char *key);

/* Readers of one value v at the current path. v is never JSON null (callers
 * treat null as absent). */
int jread_string(struct jctx *c, json_t *v, char **ret);
int jread_bool(struct jctx *c, json_t *v, bool *ret);
int jread_i64(struct jctx *c, json_t *v, int64_t min, int64_t max, const char *type, int64_t *ret);
int jread_u64(struct jctx *c, json_t *v, uint64_t max, const char *type, uint64_t *ret);

/* Readers of obj's member key (absent or null: nothing written, has left
 * alone, 0 returned). They push key on the path while reading. */
int jget_string(struct jctx *c, json_t *obj, const char *key, char **ret);
int jget_bool(struct jctx *c, json_t *obj, const char *key, bool *ret, bool *has);
int jget_u16(struct jctx *c, json_t *obj, const char *key, uint16_t *ret, bool *has);
int jget_u32(struct jctx *c, json_t *obj, const char *key, uint32_t *ret, bool *has);
int jget_i32(struct jctx *c, json_t *obj, const char *key, int32_t *ret, bool *has);
int jget_i64(struct jctx *c, json_t *obj, const char *key, int64_t *ret, bool *has);
int jget_u64(struct jctx *c, json_t *obj, const char *key, uint64_t *ret, bool *has);
int jget_strv(struct jctx *c, json_t *obj, const char *key, char ***ret);
int jget_u32v(struct jctx *c, json_t *obj, const char *key, uint32_t **ret, size_t *ret_n);
/* An object of strings into an ordered map. */
int jget_map(struct jctx *c, json_t *obj, const char *key, struct oci_map *ret);
/* The member key when it is an object / array; *ret NULL when absent. */
int jget_object(struct jctx *c, json_t *obj, const char *key, json_t **ret);
int jget_array(struct jctx *c, json_t *obj, const char *key, json_t **ret);

/* Read an array of structs: for key's array, allocate n elements of size
 * elem (zeroed) and call fn on each with the path at "key[i]". On failure
 * the elements read so far stay in *ret (with *ret_n set) for the caller to free. */
typedef int (*jelem_fn)(struct jctx *c, json_t *v, void *elem);
int jget_struct_array(struct jctx *c, json_t *obj, const char *key, size_t elem, jelem_fn fn, void **ret,
                      size_t *ret_n);
/* The same for an object whose members are structs (rdma, timeOffsets):
 * fn gets each member's key as well. */
typedef int (*jmember_fn)(struct jctx *c, const char *key, json_t *v, void *elem);
int jget_struct_map(struct jctx *c, json_t *obj, const char *key, size_t elem, jmember_fn fn, void **ret,
                    size_t *ret_n);

/* Read obj's member key as an object and hand it to fn with the path pushed. */
#define WITH_OBJECT(c, obj, key, fn, arg)                        \
	({                                                       \
		json_t *_o;                                      \
		int _r = jget_object((c), (obj), (key), &_o);    \
		if (_r >= 0 && _o) {                             \
			size_t _old = jctx_push_key((c), (key)); \
			_r = fn((c), _o, (arg));                 \
			jctx_pop((c), _old);                     \
		}                                                \
		_r;                                              \
	})

/* Require v to be an object. */
int jexpect_object(struct jctx *c, json_t *v);

#endif
