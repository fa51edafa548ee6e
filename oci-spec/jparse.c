/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/error.h"
#include "oci-spec/jparse.h"

/* Integers above INT64_MAX (RLIM_INFINITY in rlimits, large seccomp
 * values) do not fit jansson's json_int_t. Before parsing they are rewritten
 * as strings starting with a NUL character, which no config can otherwise
 * contain (NUL in a string is rejected by the readers), so that
 * jread_u64() can recognise and convert them. */
#define BIG_MARK "\\u0000"

void jctx_init(struct jctx *c, const char *name, const char *root)
{
	c->name = name;
	c->len = 0;
	c->path[0] = '\0';
	if (root && *root)
		jctx_push_key(c, root);
}

static size_t jctx_advance(struct jctx *c, size_t old, int n)
{
	if (n < 0 || (size_t)n >= sizeof(c->path) - c->len)
		c->len = sizeof(c->path) - 1;
	else
		c->len += n;
	return old;
}

size_t jctx_push_key(struct jctx *c, const char *key)
{
	size_t room = sizeof(c->path) - c->len;

	return jctx_advance(c, c->len, snprintf(c->path + c->len, room, c->len ? ".%s" : "%s", key));
}

size_t jctx_push_index(struct jctx *c, size_t i)
{
	size_t room = sizeof(c->path) - c->len;

	return jctx_advance(c, c->len, snprintf(c->path + c->len, room, "[%zu]", i));
}

void jctx_pop(struct jctx *c, size_t len)
{
	c->len = len;
	c->path[len] = '\0';
}

int jctx_error(const struct jctx *c, const char *fmt, ...)
{
	_cleanup_free_ char *msg = NULL;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;
	if (c->len)
		return err_set(-EINVAL, "%s: %s: %s", c->name, c->path, msg);
	return err_set(-EINVAL, "%s: %s", c->name, msg);
}

/* Length of the integer literal at p (digits only, no sign) when it is a
 * plain integer token, 0 when it is not (fraction or exponent follows). */
static size_t plain_integer_len(const char *p, const char *end)
{
	size_t n = 0;

	while (p + n < end && p[n] >= '0' && p[n] <= '9')
		n++;
	if (p + n < end && (p[n] == '.' || p[n] == 'e' || p[n] == 'E'))
		return 0;
	return n;
}

static bool exceeds_int64(const char *digits, size_t n)
{
	static const char max[] = "9223372036854775807";

	while (n > 1 && *digits == '0')
		digits++, n--;
	if (n != sizeof(max) - 1)
		return n > sizeof(max) - 1;
	return memcmp(digits, max, n) > 0;
}

/* Copy json into a new buffer with big positive integers turned into marked
 * strings. *ret stays NULL when there is nothing to rewrite. */
static int mark_big_integers(const char *json, size_t len, char **ret, size_t *ret_len)
{
	const char *p = json, *end = json + len;
	char *out = NULL;
	size_t olen = 0, ocap = 0;
	const char *copied = json;
	bool in_str = false;

	for (; p < end; p++) {
		if (in_str) {
			if (*p == '\\')
				p++;
			else if (*p == '"')
				in_str = false;
			continue;
		}
		if (*p == '"') {
			in_str = true;
			continue;
		}
		/* Only the first digit of a token that has no sign, fraction or
		 * exponent before it. */
		if (*p < '0' || *p > '9' || (p > json && strchr("-+.eE0123456789", p[-1])))
			continue;
		size_t n = plain_integer_len(p, end);
		if (n == 0 || !exceeds_int64(p, n)) {
			p += n ? n - 1 : 0;
			continue;
		}
		size_t need = olen + (size_t)(p - copied) + n + sizeof(BIG_MARK) + 2;
		if (need > ocap) {
			ocap = need + len / 4 + 64;
			char *t = realloc(out, ocap);
			if (!t) {
				free(out);
				return -ENOMEM;
			}
			out = t;
		}
		memcpy(out + olen, copied, p - copied);
		olen += p - copied;
		olen += sprintf(out + olen, "\"%s%.*s\"", BIG_MARK, (int)n, p);
		p += n - 1;
		copied = p + 1;
	}
	if (!out)
		return 0;
	char *t = realloc(out, olen + (end - copied) + 1);
	if (!t) {
		free(out);
		return -ENOMEM;
	}
	memcpy(t + olen, copied, end - copied);
	olen += end - copied;
	t[olen] = '\0';
	*ret = t;
	*ret_len = olen;
	return 0;
}

/* A syntax error after a rewritten integer on the same line is reported
 * at the column of the original text: each rewrite added 8 characters. */
static int original_column(const char *marked, int position, int column)
{
	static const char mark[] = "\"" BIG_MARK;
	const char *end = marked + position, *line = end;

	while (line > marked && line[-1] != '\n')
		line--;
	for (const char *p = line; (p = strstr(p, mark)) && p < end; p += sizeof(mark) - 1)
		column -= sizeof(mark);
	return column;
}

int jparse_document(const char *json, size_t len, const char *name, json_t **ret)
{
	_cleanup_free_ char *marked = NULL;
	size_t mlen = 0;
	json_error_t e;
	json_t *j;
	int r;

	r = mark_big_integers(json, len, &marked, &mlen);
	if (r < 0)
		return err_set(r, "%s: out of memory", name);
	if (marked)
		j = json_loadb(marked, mlen, JSON_ALLOW_NUL, &e);
	else
		j = json_loadb(json, len, JSON_ALLOW_NUL, &e);
	if (!j)
		return err_set(-EINVAL, "%s: line %d, column %d: %s", name, e.line,
		               marked ? original_column(marked, e.position, e.column) : e.column, e.text);
	if (!json_is_object(j)) {
		json_decref(j);
		return err_set(-EINVAL, "%s: expected a JSON object", name);
	}
	*ret = j;
	return 0;
}

json_t *jfield(json_t *obj, const char *key)
{
	json_t *v = NULL, *m;
	const char *k;

	/* Go assigns every member whose name folds to the field's, in document
	 * order, so the last one wins. */
	json_object_foreach(obj, k, m) if (strcasecmp(k, key) == 0) v = m;
	return v;
}

static bool is_big_integer(json_t *v)
{
	return json_is_string(v) && json_string_length(v) > 1 && json_string_value(v)[0] == '\0';
}

int jread_string(struct jctx *c, json_t *v, char **ret)
{
	char *s;

	if (!json_is_string(v) || is_big_integer(v))
		return jctx_error(c, "expected a string");
	if (strlen(json_string_value(v)) != json_string_length(v))
		return jctx_error(c, "string contains a NUL character");
	s = strdup(json_string_value(v));
	if (!s)
		return -ENOMEM;
	free(*ret);
	*ret = s;
	return 0;
}

int jread_bool(struct jctx *c, json_t *v, bool *ret)
{
	if (!json_is_boolean(v))
		return jctx_error(c, "expected a boolean");
	*ret = json_is_true(v);
	return 0;
}

int jread_i64(struct jctx *c, json_t *v, int64_t min, int64_t max, const char *type, int64_t *ret)
{
	if (is_big_integer(v))
		return jctx_error(c, "%s is out of range for %s", json_string_value(v) + 1, type);
	if (!json_is_integer(v))
		return jctx_error(c, "expected an integer");
	json_int_t x = json_integer_value(v);
	if (x < min || x > max)
		return jctx_error(c, "%" JSON_INTEGER_FORMAT " is out of range for %s", x, type);
	*ret = x;
	return 0;
}

int jread_u64(struct jctx *c, json_t *v, uint64_t max, const char *type, uint64_t *ret)
{
	if (is_big_integer(v)) {
		const char *digits = json_string_value(v) + 1;
		char *end;
		errno = 0;
		unsigned long long x = strtoull(digits, &end, 10);
		if (errno == ERANGE || *end || x > max)
			return jctx_error(c, "%s is out of range for %s", digits, type);
		*ret = x;
		return 0;
	}
	if (!json_is_integer(v))
		return jctx_error(c, "expected an integer");
	json_int_t x = json_integer_value(v);
	if (x < 0 || (uint64_t)x > max)
		return jctx_error(c, "%" JSON_INTEGER_FORMAT " is out of range for %s", x, type);
	*ret = x;
	return 0;
}

static oci_field_observer_fn field_observer;
static void *field_observer_data;

void oci_spec_observe_fields(oci_field_observer_fn fn, void *data)
{
	field_observer = fn;
	field_observer_data = data;
}

/* Look key up; *ret_v NULL when absent or null. Pushes the key when found. */
static json_t *jenter(struct jctx *c, json_t *obj, const char *key, size_t *old)
{
	json_t *v = jfield(obj, key);

	if (field_observer) {
		size_t o = jctx_push_key(c, key);

		field_observer(c->path, field_observer_data);
		jctx_pop(c, o);
	}
	if (!v || json_is_null(v))
		return NULL;
	*old = jctx_push_key(c, key);
	return v;
}

int jget_string(struct jctx *c, json_t *obj, const char *key, char **ret)
{
	size_t old;
	json_t *v = jenter(c, obj, key, &old);
	int r;

	if (!v)
		return 0;
	r = jread_string(c, v, ret);
	jctx_pop(c, old);
	return r;
}

int jget_bool(struct jctx *c, json_t *obj, const char *key, bool *ret, bool *has)
{
	size_t old;
	json_t *v = jenter(c, obj, key, &old);
	int r;

	if (!v)
		return 0;
	r = jread_bool(c, v, ret);
	jctx_pop(c, old);
	if (r >= 0 && has)
		*has = true;
	return r;
}

static int jget_signed(struct jctx *c, json_t *obj, const char *key, int64_t min, int64_t max, const char *type,
                       int64_t *ret, bool *has)
{
	size_t old;
	json_t *v = jenter(c, obj, key, &old);
	int r;

	if (!v)
		return 0;
	r = jread_i64(c, v, min, max, type, ret);
	jctx_pop(c, old);
	if (r >= 0 && has)
		*has = true;
	return r;
}

static int jget_unsigned(struct jctx *c, json_t *obj, const char *key, uint64_t max, const char *type, uint64_t *ret,
                         bool *has)
{
	size_t old;
	json_t *v = jenter(c, obj, key, &old);
	int r;

	if (!v)
		return 0;
	r = jread_u64(c, v, max, type, ret);
	jctx_pop(c, old);
	if (r >= 0 && has)
		*has = true;
	return r;
}

int jget_u16(struct jctx *c, json_t *obj, const char *key, uint16_t *ret, bool *has)
{
	uint64_t x = 0;
	bool h = false;
	int r = jget_unsigned(c, obj, key, UINT16_MAX, "uint16", &x, &h);

	if (r >= 0 && h) {
		*ret = x;
		if (has)
			*has = true;
	}
	return r;
}

int jget_u32(struct jctx *c, json_t *obj, const char *key, uint32_t *ret, bool *has)
{
	uint64_t x = 0;
	bool h = false;
	int r = jget_unsigned(c, obj, key, UINT32_MAX, "uint32", &x, &h);

	if (r >= 0 && h) {
		*ret = x;
		if (has)
			*has = true;
	}
	return r;
}

int jget_i32(struct jctx *c, json_t *obj, const char *key, int32_t *ret, bool *has)
{
	int64_t x = 0;
	bool h = false;
	int r = jget_signed(c, obj, key, INT32_MIN, INT32_MAX, "int32", &x, &h);

	if (r >= 0 && h) {
		*ret = x;
		if (has)
			*has = true;
	}
	return r;
}

int jget_i64(struct jctx *c, json_t *obj, const char *key, int64_t *ret, bool *has)
{
	return jget_signed(c, obj, key, INT64_MIN, INT64_MAX, "int64", ret, has);
}

int jget_u64(struct jctx *c, json_t *obj, const char *key, uint64_t *ret, bool *has)
{
	return jget_unsigned(c, obj, key, UINT64_MAX, "uint64", ret, has);
}

static int jget_typed(struct jctx *c, json_t *obj, const char *key, json_type type, const char *desc, json_t **ret)
{
	size_t old;
	json_t *v = jenter(c, obj, key, &old);
	int r = 0;

	*ret = NULL;
	if (!v)
		return 0;
	if (json_typeof(v) != type || is_big_integer(v))
		r = jctx_error(c, "expected %s", desc);
	else
		*ret = v;
	jctx_pop(c, old);
	return r;
}

int jget_object(struct jctx *c, json_t *obj, const char *key, json_t **ret)
{
	return jget_typed(c, obj, key, JSON_OBJECT, "an object", ret);
}

int jget_array(struct jctx *c, json_t *obj, const char *key, json_t **ret)
{
	return jget_typed(c, obj, key, JSON_ARRAY, "an array", ret);
}

int jexpect_object(struct jctx *c, json_t *v)
{
	if (!json_is_object(v))
		return jctx_error(c, "expected an object");
	return 0;
}

int jget_strv(struct jctx *c, json_t *obj, const char *key, char ***ret)
{
	json_t *a, *v;
	size_t i, old;
	char **strv;
	int r;

	r = jget_array(c, obj, key, &a);
	if (r < 0 || !a)
		return r;
	strv = calloc(json_array_size(a) + 1, sizeof(char *));
	if (!strv)
		return -ENOMEM;
	old = jctx_push_key(c, key);
	json_array_foreach(a, i, v)
	{
		size_t o = jctx_push_index(c, i);
		/* Go decodes null in a []string as "". */
		r = json_is_null(v) ? ((strv[i] = strdup("")) ? 0 : -ENOMEM) : jread_string(c, v, &strv[i]);
		jctx_pop(c, o);
		if (r < 0)
			break;
	}
	jctx_pop(c, old);
	if (r < 0) {
		oci_strv_free(strv);
		return r;
	}
	oci_strv_free(*ret);
	*ret = strv;
	return 0;
}

int jget_u32v(struct jctx *c, json_t *obj, const char *key, uint32_t **ret, size_t *ret_n)
{
	_cleanup_free_ uint32_t *out = NULL;
	json_t *a, *v;
	size_t i, old;
	int r;

	r = jget_array(c, obj, key, &a);
	if (r < 0 || !a)
		return r;
	out = calloc(json_array_size(a) + 1, sizeof(uint32_t));
	if (!out)
		return -ENOMEM;
	old = jctx_push_key(c, key);
	json_array_foreach(a, i, v)
	{
		size_t o = jctx_push_index(c, i);
		uint64_t x = 0;
		r = json_is_null(v) ? 0 : jread_u64(c, v, UINT32_MAX, "uint32", &x);
		jctx_pop(c, o);
		if (r < 0)
			break;
		out[i] = x;
	}
	jctx_pop(c, old);
	if (r < 0)
		return r;
	free(*ret);
	*ret = TAKE_PTR(out);
	*ret_n = json_array_size(a);
	return 0;
}

int jget_map(struct jctx *c, json_t *obj, const char *key, struct oci_map *ret)
{
	json_t *o, *v;
	const char *k;
	size_t old;
	int r;

	r = jget_object(c, obj, key, &o);
	if (r < 0 || !o)
		return r;
	old = jctx_push_key(c, key);
	json_object_foreach(o, k, v)
	{
		_cleanup_free_ char *s = NULL;
		size_t o2 = jctx_push_key(c, k);
		r = json_is_null(v) ? ((s = strdup("")) ? 0 : -ENOMEM) : jread_string(c, v, &s);
		jctx_pop(c, o2);
		if (r >= 0)
			r = oci_map_set(ret, k, s);
		if (r < 0)
			break;
	}
	jctx_pop(c, old);
	return r;
}

int jget_struct_array(struct jctx *c, json_t *obj, const char *key, size_t elem, jelem_fn fn, void **ret, size_t *ret_n)
{
	json_t *a, *v;
	size_t i, old;
	char *out;
	int r;

	r = jget_array(c, obj, key, &a);
	if (r < 0 || !a)
		return r;
	out = calloc(json_array_size(a) + 1, elem);
	if (!out)
		return -ENOMEM;
	*ret = out;
	*ret_n = json_array_size(a);
	old = jctx_push_key(c, key);
	json_array_foreach(a, i, v)
	{
		size_t o = jctx_push_index(c, i);
		r = json_is_null(v) ? 0 : jexpect_object(c, v);
		if (r >= 0 && !json_is_null(v))
			r = fn(c, v, out + i * elem);
		jctx_pop(c, o);
		if (r < 0)
			break;
	}
	jctx_pop(c, old);
	return r;
}

int jget_struct_map(struct jctx *c, json_t *obj, const char *key, size_t elem, jmember_fn fn, void **ret, size_t *ret_n)
{
	json_t *o, *v;
	const char *k;
	size_t i = 0, old;
	char *out;
	int r;

	r = jget_object(c, obj, key, &o);
	if (r < 0 || !o)
		return r;
	out = calloc(json_object_size(o) + 1, elem);
	if (!out)
		return -ENOMEM;
	*ret = out;
	*ret_n = json_object_size(o);
	old = jctx_push_key(c, key);
	json_object_foreach(o, k, v)
	{
		size_t o2 = jctx_push_key(c, k);
		r = json_is_null(v) ? 0 : jexpect_object(c, v);
		if (r >= 0)
			r = fn(c, k, json_is_null(v) ? NULL : v, out + i++ * elem);
		jctx_pop(c, o2);
		if (r < 0)
			break;
	}
	jctx_pop(c, old);
	return r;
}
