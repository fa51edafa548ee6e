/* SPDX-License-Identifier: Apache-2.0 */
/* Growing a malloc'd byte array by doubling: the buffers that wire
 * protocol messages, D-Bus messages and snapshot sections are written to. */
#ifndef KVRUN_COMMON_GROW_H
#define KVRUN_COMMON_GROW_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Make *data, of *cap bytes, hold at least need bytes: the capacity
 * doubles from first (or from *cap). Returns 0, or -ENOMEM with *data and
 * *cap as they were. */
static inline int grow_bytes(uint8_t **data, size_t *cap, size_t need, size_t first)
{
	size_t c = *cap ? *cap : first;
	uint8_t *d;

	if (need <= *cap)
		return 0;
	while (c < need) {
		if (c > SIZE_MAX / 2)
			return -ENOMEM;
		c *= 2;
	}
	d = realloc(*data, c);
	if (!d)
		return -ENOMEM;
	*data = d;
	*cap = c;
	return 0;
}

#endif
