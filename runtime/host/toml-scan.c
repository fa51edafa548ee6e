/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "runtime/host/toml-scan.h"

struct scan {
	const char *p, *end;
	char *arena, *w; /* words are copied here, each with its NUL */
	const char *table[TOML_MAX_DEPTH];
	size_t table_depth;
};

static void skip_blank(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\r'))
		s->p++;
}

/* Past the end of the line (a comment included). */
static void skip_line(struct scan *s)
{
	while (s->p < s->end && *s->p != '\n')
		s->p++;
	if (s->p < s->end)
		s->p++;
}

/* Blank space, newlines and comments (inside arrays). */
static void skip_space(struct scan *s)
{
	for (;;) {
		while (s->p < s->end && strchr(" \t\r\n", *s->p))
			s->p++;
		if (s->p < s->end && *s->p == '#')
			skip_line(s);
		else
			return;
	}
}

/* A quoted string at s->p, copied to the arena (escapes of basic strings
 * kept simple: \" and \\ become the character). NULL when unterminated. */
static const char *quoted(struct scan *s)
{
	char q = *s->p++, *start = s->w;

	while (s->p < s->end && *s->p != q && *s->p != '\n') {
		if (q == '"' && *s->p == '\\' && s->p + 1 < s->end)
			s->p++;
		*s->w++ = *s->p++;
	}
	*s->w++ = 0;
	if (s->p >= s->end || *s->p != q)
		return NULL;
	s->p++;
	return start;
}

/* A bare word up to one of stop (or blank space), copied to the arena. */
static const char *bare(struct scan *s, const char *stop)
{
	char *start = s->w;

	while (s->p < s->end && !strchr(stop, *s->p) && !strchr(" \t\r\n", *s->p))
		*s->w++ = *s->p++;
	if (s->w == start)
		return NULL;
	*s->w++ = 0;
	return start;
}

/* Dotted keys up to stop ("]" or "="): each part into out. */
static int keys(struct scan *s, const char *stop, const char **out, size_t *n)
{
	*n = 0;
	for (;;) {
		const char *k;

		skip_blank(s);
		if (s->p >= s->end)
			return -1;
		k = (*s->p == '"' || *s->p == '\'') ? quoted(s) : bare(s, ".]=");
		if (!k || *n >= TOML_MAX_DEPTH)
			return -1;
		out[(*n)++] = k;
		skip_blank(s);
		if (s->p < s->end && *s->p == '.') {
			s->p++;
			continue;
		}
		return s->p < s->end && strchr(stop, *s->p) ? 0 : -1;
	}
}

static void header(struct scan *s)
{
	size_t n;

	s->p++;
	if (s->p < s->end && *s->p == '[')
		s->p++;
	if (keys(s, "]", s->table, &n) < 0) {
		s->table_depth = 0;
	} else {
		s->table_depth = n;
		s->p++;
	}
	skip_line(s);
}

/* The value after '=': a string, an array of strings, or raw text. */
static void value(struct scan *s, struct toml_entry *e)
{
	const char *v;

	skip_blank(s);
	if (s->p < s->end && (*s->p == '"' || *s->p == '\'')) {
		v = quoted(s);
		if (v)
			e->values[e->nvalues++] = v;
	} else if (s->p < s->end && *s->p == '[') {
		s->p++;
		for (;;) {
			skip_space(s);
			if (s->p >= s->end || *s->p == ']')
				break;
			if (*s->p == ',') {
				s->p++;
				continue;
			}
			if (*s->p != '"' && *s->p != '\'')
				break;
			v = quoted(s);
			if (!v)
				break;
			if (e->nvalues < TOML_MAX_VALUES)
				e->values[e->nvalues++] = v;
		}
	} else {
		v = bare(s, "#");
		if (v)
			e->values[e->nvalues++] = v;
	}
	skip_line(s);
}

static void key_value(struct scan *s, toml_entry_fn fn, void *data)
{
	struct toml_entry e = {0};
	const char *k[TOML_MAX_DEPTH];
	size_t n;

	if (keys(s, "=", k, &n) < 0 || s->table_depth + n > TOML_MAX_DEPTH) {
		skip_line(s);
		return;
	}
	s->p++;
	memcpy(e.path, s->table, s->table_depth * sizeof(*e.path));
	memcpy(e.path + s->table_depth, k, n * sizeof(*k));
	e.depth = s->table_depth + n;
	value(s, &e);
	fn(&e, data);
}

int toml_scan(const char *text, size_t len, toml_entry_fn fn, void *data)
{
	/* Each word is at most its text plus a NUL: twice the text is room. */
	struct scan s = {.p = text, .end = text + len, .arena = malloc(2 * len + 2)};

	if (!s.arena)
		return -ENOMEM;
	s.w = s.arena;
	while (s.p < s.end) {
		skip_space(&s);
		if (s.p >= s.end)
			break;
		if (*s.p == '[')
			header(&s);
		else
			key_value(&s, fn, data);
	}
	free(s.arena);
	return 0;
}
