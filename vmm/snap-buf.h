/* SPDX-License-Identifier: Apache-2.0 */
/* The byte buffers of snapshots: what save functions append to, and the
 * bounds-checked reading of a saved section. */
#ifndef KVRUN_VMM_SNAP_BUF_H
#define KVRUN_VMM_SNAP_BUF_H

#include <stddef.h>
#include <stdint.h>

/* Growable byte buffer that device save functions append to. The first
 * failure (-ENOMEM) sticks in err and later puts do nothing. */
struct snap_buf {
	uint8_t *data;
	size_t len, cap;
	int err;
};

int snap_buf_put(struct snap_buf *b, const void *p, size_t n);
void snap_buf_free(struct snap_buf *b);

/* Bounds-checked reading of a saved section. */
struct snap_reader {
	const uint8_t *p;
	size_t len, off;
};

/* Copy the next n bytes to dst; -EBADMSG when fewer are left. */
int snap_get(struct snap_reader *r, void *dst, size_t n);

#endif
