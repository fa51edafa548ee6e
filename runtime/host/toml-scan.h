/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Enough of TOML to read the engines' runtime tables (containerd's
 * config.toml, podman's containers.conf, CRI-O's crio.conf): table headers
 * (`[a."b.c".d]`, `[[a]]`), `key = value` lines with dotted keys, basic and
 * literal strings, arrays of strings over several lines, and comments.
 * Other values (numbers, booleans, inline tables) are passed as their raw
 * text. Not a validator: a line it cannot read is skipped.
 */
#ifndef KVRUN_RUNTIME_HOST_TOML_SCAN_H
#define KVRUN_RUNTIME_HOST_TOML_SCAN_H

#include <stddef.h>

#define TOML_MAX_DEPTH 12
#define TOML_MAX_VALUES 16

/* One `key = value`: path is the table's keys then the key's own (a dotted
 * key adds several), unquoted; values the strings of the value (one for a
 * string, each element of an array; raw text for anything else). */
struct toml_entry {
	const char *path[TOML_MAX_DEPTH];
	size_t depth;
	const char *values[TOML_MAX_VALUES];
	size_t nvalues;
};

typedef void (*toml_entry_fn)(const struct toml_entry *e, void *data);

/* Call fn for each key/value of text (len bytes). -ENOMEM. */
int toml_scan(const char *text, size_t len, toml_entry_fn fn, void *data);

#endif
