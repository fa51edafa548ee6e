/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "vmm/snap-buf.h"

int snap_buf_put(struct snap_buf *b, const void *p, size_t n)
{
	/* Nothing to add: an empty buffer keeps data NULL, and NULL + 0 is
	 * undefined for memcpy's destination. */
	if (b->err || n == 0)
		return b->err;
	if (grow_bytes(&b->data, &b->cap, b->len + n, 4096) < 0)
		return b->err = -ENOMEM;
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
	if (n == 0)
		return 0;
	memcpy(dst, r->p + r->off, n);
	r->off += n;
	return 0;
}
