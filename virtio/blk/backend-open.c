/* SPDX-License-Identifier: Apache-2.0 */
/* Which backend serves a disk: the raw file, or the copy-on-write disk of a
 * base image (backend.h). */
#include <stddef.h>

#include "virtio/blk/backend.h"

int blk_open(const char *path, const char *base, bool read_only, struct blk_backend **ret)
{
	if (!base)
		return blk_file_open(path, read_only, ret);
	if (read_only)
		return blk_file_open(base, true, ret);
	return blk_cow_open(base, path, ret);
}

void blk_backend_close(struct blk_backend *b)
{
	if (b)
		b->ops->close(b);
}
