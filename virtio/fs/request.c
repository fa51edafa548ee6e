/* SPDX-License-Identifier: Apache-2.0 */
/* A request's arguments and its reply (server-int.h): what every operation
 * uses, below the dispatcher in server.c. */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "virtio/fs/server-int.h"
#include "virtio/virtqueue.h"

static int reply_header(struct fs_ctx *c, int32_t error, size_t payload)
{
	struct fuse_out_header oh = {.len = (uint32_t)(sizeof(oh) + payload), .error = error, .unique = c->h.unique};

	iov_from_buf(c->out, c->nout, 0, &oh, sizeof(oh));
	c->reply_len = sizeof(oh) + payload;
	return 0;
}

int fs_reply_error(struct fs_ctx *c, int32_t error)
{
	return reply_header(c, error, 0);
}

int fs_reply(struct fs_ctx *c, const void *p, size_t n)
{
	if (c->out_len < sizeof(struct fuse_out_header) + n)
		return -EINVAL; /* the client left no room for the answer */
	if (n)
		iov_from_buf(c->out, c->nout, sizeof(struct fuse_out_header), p, n);
	return reply_header(c, 0, n);
}

int fs_reply_written(struct fs_ctx *c, size_t n)
{
	return reply_header(c, 0, n);
}

const void *fs_arg(struct fs_ctx *c, size_t n)
{
	return c->arg_len >= n ? c->arg : NULL;
}

int fs_arg_str(struct fs_ctx *c, size_t off, size_t max, const char **ret, size_t *ret_next)
{
	const char *p = (const char *)c->arg + off, *nul;

	if (off >= c->arg_len)
		return -EINVAL;
	nul = memchr(p, '\0', c->arg_len - off);
	if (!nul || nul == p)
		return -EINVAL;
	if ((size_t)(nul - p) >= max)
		return -ENAMETOOLONG;
	*ret = p;
	if (ret_next)
		*ret_next = off + (size_t)(nul - p) + 1;
	return 0;
}

int fs_arg_name(struct fs_ctx *c, size_t off, const char **ret, size_t *ret_next)
{
	const char *name;
	int r = fs_arg_str(c, off, NAME_MAX + 1, &name, ret_next);

	if (r < 0)
		return r;
	if (strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
		return -EINVAL;
	*ret = name;
	return 0;
}
