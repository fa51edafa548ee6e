/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "guest-init/relay.h"

void relay_init(struct relay *r, int src, int dst, bool use_splice)
{
	r->src = src;
	r->dst = dst;
	r->active = src >= 0 && dst >= 0;
	r->eof = false;
	r->use_splice = use_splice;
	r->dst_full = false;
	r->off = r->len = 0;
}

int relay_poll(const struct relay *r, short *ret_events)
{
	if (!r->active)
		return -1;
	if (r->len > r->off || r->dst_full) {
		*ret_events = POLLOUT;
		return r->dst;
	}
	*ret_events = POLLIN;
	return r->src;
}

static int finish(struct relay *r)
{
	r->active = false;
	r->eof = true;
	return 1;
}

/* Flush the buffer; 0 when empty, -EAGAIN when dst is full. */
static int flush(struct relay *r)
{
	while (r->len > r->off) {
		ssize_t n = write(r->dst, r->buf + r->off, r->len - r->off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		r->off += (size_t)n;
	}
	r->off = r->len = 0;
	return 0;
}

int relay_step(struct relay *r)
{
	ssize_t n;
	int e;

	bool waited_dst = r->dst_full;

	if (!r->active)
		return r->eof;
	e = flush(r);
	if (e == -EAGAIN)
		return 0;
	if (e < 0)
		return finish(r); /* the reader went away: drop the rest */
	r->dst_full = false;
	for (int rounds = 0; rounds < 16; rounds++) {
		if (r->use_splice) {
			n = splice(r->src, NULL, r->dst, NULL, 1 << 16, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
			if (n > 0)
				continue;
			if (n == 0)
				return finish(r);
			if (errno == EAGAIN) {
				/* Either side may be the one not ready. Woken
				 * for a readable source with nothing moved, it
				 * is the destination; otherwise wait for input. */
				r->dst_full = rounds == 0 && !waited_dst;
				return 0;
			}
			if (errno != EINVAL && errno != EINTR)
				return finish(r);
			r->use_splice = false; /* this pair cannot splice */
		}
		n = read(r->src, r->buf, sizeof(r->buf));
		if (n == 0 || (n < 0 && errno == EIO)) /* EIO: pty slave closed */
			return finish(r);
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : finish(r);
		r->off = 0;
		r->len = (size_t)n;
		e = flush(r);
		if (e == -EAGAIN)
			return 0;
		if (e < 0)
			return finish(r);
	}
	return 0;
}
