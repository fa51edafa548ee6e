/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Deadline-bounded framing for streams whose peer may misbehave
 * (protocol.h): an incremental frame reader for serve loops, and a read
 * and a write of one frame that give up at a deadline.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fileio.h"
#include "common/protocol.h"

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void proto_reader_init(struct proto_reader *r)
{
	memset(r, 0, sizeof(*r));
}

void proto_reader_reset(struct proto_reader *r)
{
	free(r->frame);
	proto_reader_init(r);
}

bool proto_reader_partial(const struct proto_reader *r)
{
	return r->have > 0;
}

void proto_reader_touch(struct proto_reader *r)
{
	if (r->have)
		r->progress_ms = mono_ms();
}

int proto_reader_timeout(const struct proto_reader *r, int stall_ms)
{
	int64_t left;

	if (!r->have)
		return -1;
	left = r->progress_ms + stall_ms - mono_ms();
	return left <= 0 ? 0 : left > stall_ms ? stall_ms : (int)left;
}

/* Up to len bytes that fd holds now: > 0 bytes read, 0 at EOF, -EAGAIN
 * when there are none yet, or -errno. */
static ssize_t read_now(int fd, void *buf, size_t len)
{
	ssize_t n;

	for (;;) {
		n = recv(fd, buf, len, MSG_DONTWAIT);
		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		if (errno == EWOULDBLOCK)
			return -EAGAIN;
		if (errno != ENOTSOCK)
			return -errno;
		break;
	}
	/* A pipe (tests): read only what poll says is there. */
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int k = poll(&p, 1, 0);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			return -EAGAIN;
		n = read(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 ? -errno : n;
	}
}

/* The header is complete: check it and make room for the whole frame. */
static int reader_start_frame(struct proto_reader *r)
{
	struct proto_header h;
	int q;

	q = proto_header_parse(r->hdr, sizeof(r->hdr), &h);
	if (q < 0)
		return q;
	r->need = KVRUN_PROTO_HEADER_SIZE + (size_t)h.length;
	r->frame = malloc(r->need);
	if (!r->frame)
		return -ENOMEM;
	memcpy(r->frame, r->hdr, sizeof(r->hdr));
	return 0;
}

int proto_reader_feed(struct proto_reader *r, int fd, struct proto_msg *ret)
{
	int q;

	/* Each turn reads into what is missing of the header or the frame,
	 * never further: want > 0 until the frame is decoded below. */
	for (;;) {
		uint8_t *at = r->need ? r->frame + r->have : r->hdr + r->have;
		size_t want = (r->need ? r->need : sizeof(r->hdr)) - r->have;
		ssize_t n = read_now(fd, at, want);

		if (n == -EAGAIN)
			return 0;
		if (n <= 0) {
			proto_reader_reset(r);
			return n < 0 ? (int)n : -ECONNRESET;
		}
		r->have += (size_t)n;
		r->progress_ms = mono_ms();
		if (!r->need && r->have == sizeof(r->hdr)) {
			q = reader_start_frame(r);
			if (q < 0) {
				proto_reader_reset(r);
				return q;
			}
		}
		if (r->need && r->have == r->need) {
			q = proto_decode(r->frame, r->need, ret);
			proto_reader_reset(r);
			return q < 0 ? q : 1;
		}
	}
}

int proto_recv_timeout(int fd, int timeout_ms, struct proto_msg *ret)
{
	int64_t deadline = mono_ms() + timeout_ms;
	struct proto_reader r;
	int q;

	proto_reader_init(&r);
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int64_t left;

		q = proto_reader_feed(&r, fd, ret);
		if (q != 0)
			return q < 0 ? q : 0;
		left = deadline - mono_ms();
		if (left <= 0) {
			proto_reader_reset(&r);
			return -ETIMEDOUT;
		}
		if (poll(&p, 1, (int)left) < 0 && errno != EINTR) {
			q = -errno;
			proto_reader_reset(&r);
			return q;
		}
	}
}

int proto_send_timeout(int fd, const struct proto_msg *m, int timeout_ms)
{
	int64_t deadline = mono_ms() + timeout_ms;
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len, done = 0;
	int q;

	q = proto_encode(m, &buf, &len);
	if (q < 0)
		return q;
	while (done < len) {
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		ssize_t n = send(fd, buf + done, len - done, MSG_DONTWAIT | MSG_NOSIGNAL);
		int64_t left;

		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == ENOTSOCK)
			return write_all(fd, buf + done, len - done);
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		left = deadline - mono_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
			return -errno;
	}
	return 0;
}
