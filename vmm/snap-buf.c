/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/snap-buf.h"

int snap_buf_put(struct snap_buf *b, const void *p, size_t n)
{
	if (b->err)
		return b->err;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		uint8_t *d;

		while (cap < b->len + n)
			cap *= 2;
		d = realloc(b->data, cap);
		if (!d)
			return b->err = -ENOMEM;
		b->data = d;
		b->cap = cap;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

void snap_buf_free(struct snap_buf *b)
{
	free(b->data);
	*b = (struct snap_buf){0};
}

int snap_get(struct snap_reader *r, void *dst, size_t n)
{
	if (n > r->len - r->off)
		return -EBADMSG;
	memcpy(dst, r->p + r->off, n);
	r->off += n;
	return 0;
}
