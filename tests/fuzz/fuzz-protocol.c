/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host-guest wire protocol (common/protocol.c, common/proto-stream.c).
 * The input's first byte picks how it is used:
 *   - as one frame for proto_decode(); a frame that decodes must encode
 *     again, and that encoding must decode to the same encoding (the
 *     encoder, decoder and destructor share one table per message);
 *   - as a body behind a valid header of the type the next byte names
 *     (so that the fuzzer need not find the header's magic first);
 *   - as a stream fed to struct proto_reader through a socketpair in
 *     chunks of fuzzed sizes, as the monitor's serve loop reads guest-init.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/protocol.h"
#include "fuzz.h"

static void roundtrip(const uint8_t *frame, size_t len)
{
	struct proto_msg m, again;
	uint8_t *enc, *enc2;
	size_t elen, elen2;
	int r;

	if (proto_decode(frame, len, &m) < 0)
		return;
	r = proto_encode(&m, &enc, &elen);
	if (r == -EMSGSIZE) {
		/* Decoded fields can outgrow the body limit only through
		 * repeated records replacing each other: never more. */
		proto_msg_free(&m);
		return;
	}
	if (r < 0)
		abort();
	if (proto_decode(enc, elen, &again) < 0) {
		fprintf(stderr, "a frame encoded from a decoded one does not decode\n");
		abort();
	}
	if (proto_encode(&again, &enc2, &elen2) < 0 || elen2 != elen || memcmp(enc, enc2, elen)) {
		fprintf(stderr, "encode(decode(encode(m))) differs from encode(m)\n");
		abort();
	}
	proto_msg_free(&m);
	proto_msg_free(&again);
	free(enc);
	free(enc2);
}

static void with_header(struct fz *f)
{
	uint16_t type = fz_u8(f) % (PROTO_MSG__MAX + 1);
	size_t len = 24 + f->n;
	uint8_t *frame = malloc(len);

	if (!frame)
		abort();
	memcpy(frame, "KVRP", 4);
	frame[4] = KVRUN_PROTO_VERSION;
	frame[5] = 0;
	frame[6] = (uint8_t)type;
	frame[7] = 0;
	memset(frame + 8, 0, 16);
	for (int i = 0; i < 4; i++)
		frame[12 + i] = (uint8_t)(f->n >> (8 * i));
	fz_take(f, frame + 24, f->n);
	roundtrip(frame, len);
	free(frame);
}

/* The bytes go into a socket in chunks; the reader takes frames out. */
static void stream(struct fz *f)
{
	uint8_t chunks[16];
	struct proto_reader r;
	struct proto_msg m;
	int sv[2], q = 0;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	fz_take(f, chunks, sizeof(chunks));
	proto_reader_init(&r);
	for (unsigned int i = 0; f->n && q >= 0; i++) {
		size_t n = 1 + chunks[i % sizeof(chunks)];

		if (n > f->n)
			n = f->n;
		if (write(sv[0], f->p, n) != (ssize_t)n)
			abort();
		f->p += n;
		f->n -= n;
		while ((q = proto_reader_feed(&r, sv[1], &m)) > 0)
			proto_msg_free(&m);
		if (proto_reader_partial(&r) && proto_reader_timeout(&r, 1000) < 0)
			abort();
	}
	close(sv[0]);
	while ((q = proto_reader_feed(&r, sv[1], &m)) > 0)
		proto_msg_free(&m);
	if (q == 0 || proto_reader_partial(&r))
		abort(); /* EOF must end the stream, partial frame or not */
	close(sv[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = {data, size};
	struct proto_header h;

	switch (fz_u8(&f) % 3) {
	case 0:
		(void)proto_header_parse(f.p, f.n, &h);
		roundtrip(f.p, f.n);
		break;
	case 1:
		with_header(&f);
		break;
	default:
		stream(&f);
		break;
	}
	return 0;
}
