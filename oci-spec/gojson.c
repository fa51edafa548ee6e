/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/cleanup.h"
#include "oci-spec/gojson.h"

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid.
 * *cp gets the code point. Mirrors utf8.DecodeRuneInString's rules:
 * no overlongs, no surrogates, nothing above U+10FFFF. */
static size_t utf8_decode(const unsigned char *s, size_t n, unsigned *cp)
{
	unsigned c = s[0], len, min;

	if (c < 0x80) {
		*cp = c;
		return 1;
	} else if (c >= 0xc2 && c <= 0xdf) {
		len = 2, min = 0x80, c &= 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3, min = 0x800, c &= 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4, min = 0x10000, c &= 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (unsigned i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

static void put_string(FILE *f, const char *str, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', f);
	for (size_t i = 0; i < n;) {
		unsigned c = s[i], cp;
		if (c < 0x80) {
			if (c == '"' || c == '\\')
				fprintf(f, "\\%c", c);
			else if (c == '\n')
				fputs("\\n", f);
			else if (c == '\r')
				fputs("\\r", f);
			else if (c == '\t')
				fputs("\\t", f);
			else if (c < 0x20 || c == '<' || c == '>' || c == '&')
				fprintf(f, "\\u00%c%c", hex[c >> 4], hex[c & 0xf]);
			else
				fputc(c, f);
			i++;
			continue;
		}
		size_t len = utf8_decode(s + i, n - i, &cp);
		if (len == 0) {
			fputs("\\ufffd", f);
			i++;
		} else if (cp == 0x2028 || cp == 0x2029) {
			fprintf(f, "\\u202%c", hex[cp & 0xf]);
			i += len;
		} else {
			fwrite(s + i, 1, len, f);
			i += len;
		}
	}
	fputc('"', f);
}

static void newline(FILE *f, const char *indent, int depth)
{
	fputc('\n', f);
	for (int i = 0; i < depth; i++)
		fputs(indent, f);
}

static void put_value(FILE *f, json_t *v, const char *indent, int depth)
{
	const char *key;
	json_t *m;
	size_t i;
	bool first = true;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		if (json_object_size(v) == 0) {
			fputs("{}", f);
			return;
		}
		fputc('{', f);
		json_object_foreach(v, key, m)
		{
			if (!first)
				fputc(',', f);
			first = false;
			if (indent)
				newline(f, indent, depth + 1);
			put_string(f, key, strlen(key));
			fputs(indent ? ": " : ":", f);
			put_value(f, m, indent, depth + 1);
		}
		if (indent)
			newline(f, indent, depth);
		fputc('}', f);
		return;
	case JSON_ARRAY:
		if (json_array_size(v) == 0) {
			fputs("[]", f);
			return;
		}
		fputc('[', f);
		json_array_foreach(v, i, m)
		{
			if (i)
				fputc(',', f);
			if (indent)
				newline(f, indent, depth + 1);
			put_value(f, m, indent, depth + 1);
		}
		if (indent)
			newline(f, indent, depth);
		fputc(']', f);
		return;
	case JSON_STRING:
		put_string(f, json_string_value(v), json_string_length(v));
		return;
	case JSON_INTEGER:
		fprintf(f, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return;
	case JSON_REAL:
		fprintf(f, "%.17g", json_real_value(v));
		return;
	case JSON_TRUE:
		fputs("true", f);
		return;
	case JSON_FALSE:
		fputs("false", f);
		return;
	case JSON_NULL:
		fputs("null", f);
		return;
	}
}

int gojson_dump(json_t *v, const char *indent, char **ret)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return -ENOMEM;
	put_value(f, v, indent, 0);
	if (fclose(f) != 0 || !buf) {
		free(buf);
		return -ENOMEM;
	}
	*ret = buf;
	return 0;
}

void jset(json_t *o, const char *key, json_t *v, int *r)
{
	if (!o) {
		json_decref(v);
		*r = -ENOMEM;
	} else if (!v || json_object_set_new_nocheck(o, key, v) < 0) {
		*r = -ENOMEM;
	}
}

void jappend(json_t *a, json_t *v, int *r)
{
	if (!a) {
		json_decref(v);
		*r = -ENOMEM;
	} else if (!v || json_array_append_new(a, v) < 0) {
		*r = -ENOMEM;
	}
}

json_t *jstrv(const char *const *v)
{
	json_t *a = json_array();
	int r = 0;

	for (; a && v && *v; v++)
		jappend(a, json_string_nocheck(*v), &r);
	if (r < 0) {
		json_decref(a);
		return NULL;
	}
	return a;
}
