/* SPDX-License-Identifier: Apache-2.0 */
/* Locating and reading the oci-spec test fixtures (OCI_FIXTURES). */
#ifndef KVRUN_TESTS_OCI_FIXTURES_H
#define KVRUN_TESTS_OCI_FIXTURES_H

#include <stdio.h>
#include <stdlib.h>

#include "common/error.h"
#include "common/fileio.h"
#include "tap.h"

/* "<OCI_FIXTURES>/<name>" in a static buffer; skips the whole program when
 * the variable is not set (the test was not started by meson). */
static inline const char *fixture(const char *name)
{
	static char buf[4096];
	const char *dir = getenv("OCI_FIXTURES");

	if (!dir)
		tap_skip_all("OCI_FIXTURES is not set");
	snprintf(buf, sizeof(buf), "%s/%s", dir, name);
	return buf;
}

/* The fixture's bytes (malloc'd, NUL-terminated), or NULL after a failed
 * assertion. */
static inline char *fixture_read(const char *name, size_t *ret_len)
{
	char *buf = NULL;
	int r = read_file_all(fixture(name), 1 << 20, &buf, ret_len);

	ok(r >= 0, "read fixture %s", name);
	return r >= 0 ? buf : NULL;
}

#endif
