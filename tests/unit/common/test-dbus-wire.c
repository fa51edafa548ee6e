/* SPDX-License-Identifier: Apache-2.0 */
/* The D-Bus wire format: exact bytes of a known message, round trips of
 * every type the client uses, big-endian input, signatures, and malformed
 * messages (truncated, bad lengths, bad signatures, bad padding), which
 * must be refused without reading past the buffer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/dbus-wire.h"
#include "tap.h"

/* The Hello call every D-Bus client sends first, as libdbus and sd-bus
 * write it (serial 1). */
static const char hello_bytes[] = "l\1\0\1\0\0\0\0\1\0\0\0m\0\0\0"
				  "\1\1o\0\25\0\0\0/org/freedesktop/DBus\0\0\0"
				  "\2\1s\0\24\0\0\0org.freedesktop.DBus\0\0\0\0"
				  "\3\1s\0\5\0\0\0Hello\0\0\0"
				  "\6\1s\0\24\0\0\0org.freedesktop.DBus\0\0\0\0";

static void hello(struct dbus_writer *w)
{
	struct dbus_msg h = {.type = DBUS_METHOD_CALL,
	                     .serial = 1,
	                     .path = "/org/freedesktop/DBus",
	                     .interface = "org.freedesktop.DBus",
	                     .member = "Hello",
	                     .destination = "org.freedesktop.DBus"};

	dbus_msg_begin(w, &h);
}

TEST(hello_bytes)
{
	struct dbus_writer w = {0};
	struct dbus_msg m;

	hello(&w);
	is_int(dbus_msg_end(&w), 0);
	is_int(w.len, sizeof(hello_bytes) - 1);
	ok(w.len == sizeof(hello_bytes) - 1 && memcmp(w.buf, hello_bytes, w.len) == 0, "the bytes libdbus writes");
	is_int(dbus_msg_parse((const uint8_t *)hello_bytes, sizeof(hello_bytes) - 1, &m), 0);
	is_int(m.type, DBUS_METHOD_CALL);
	is_int(m.serial, 1);
	is_str(m.path, "/org/freedesktop/DBus");
	is_str(m.interface, "org.freedesktop.DBus");
	is_str(m.member, "Hello");
	is_str(m.destination, "org.freedesktop.DBus");
	ok(m.signature == NULL && m.body_len == 0, "no body");
	dbus_writer_free(&w);
}

/* A StartTransientUnit-shaped call: "ssa(sv)a(sa(sv))" with s, b, t, au,
 * ay variants, so that every alignment rule is crossed. */
static void build_call(struct dbus_writer *w)
{
	struct dbus_msg h = {.type = DBUS_METHOD_CALL,
	                     .serial = 7,
	                     .path = "/org/freedesktop/systemd1",
	                     .interface = "org.freedesktop.systemd1.Manager",
	                     .member = "StartTransientUnit",
	                     .destination = "org.freedesktop.systemd1",
	                     .signature = "ssa(sv)a(sa(sv))"};
	struct dbus_array a, in;

	dbus_msg_begin(w, &h);
	dbus_w_str(w, "x-1.scope");
	dbus_w_str(w, "replace");
	a = dbus_w_array_open(w, 8);
	dbus_w_align(w, 8);
	dbus_w_str(w, "Slice");
	dbus_w_variant_str(w, "a-b.slice");
	dbus_w_align(w, 8);
	dbus_w_str(w, "Delegate");
	dbus_w_variant_bool(w, true);
	dbus_w_align(w, 8);
	dbus_w_str(w, "MemoryMax");
	dbus_w_variant_u64(w, 0x123456789abcdefull);
	dbus_w_align(w, 8);
	dbus_w_str(w, "PIDs");
	dbus_w_sig(w, "au");
	in = dbus_w_array_open(w, 4);
	dbus_w_u32(w, 4242);
	dbus_w_u32(w, 7);
	dbus_w_array_close(w, in);
	dbus_w_align(w, 8);
	dbus_w_str(w, "AllowedCPUs");
	dbus_w_sig(w, "ay");
	in = dbus_w_array_open(w, 1);
	dbus_w_u8(w, 0xff);
	dbus_w_u8(w, 0x03);
	dbus_w_array_close(w, in);
	dbus_w_array_close(w, a);
	a = dbus_w_array_open(w, 8);
	dbus_w_array_close(w, a);
}

TEST(round_trip)
{
	struct dbus_writer w = {0};
	struct dbus_msg m;
	struct dbus_reader r;
	const char *s, *sig;
	uint64_t t;
	uint32_t u;
	uint8_t y;
	bool b;
	size_t end, inner;

	build_call(&w);
	is_int(dbus_msg_end(&w), 0);
	is_int(w.body_at % 8, 0);
	is_int(dbus_msg_parse(w.buf, w.len, &m), 0);
	is_str(m.member, "StartTransientUnit");
	is_str(m.signature, "ssa(sv)a(sa(sv))");
	is_int(m.body_len, w.len - w.body_at);
	r = dbus_msg_body(&m);
	ok(dbus_r_str(&r, &s) == 0 && strcmp(s, "x-1.scope") == 0, "unit name");
	ok(dbus_r_str(&r, &s) == 0 && strcmp(s, "replace") == 0, "mode");
	is_int(dbus_r_array(&r, 8, &end), 0);
	is_int(r.pos % 8, 0);
	ok(dbus_r_str(&r, &s) == 0 && strcmp(s, "Slice") == 0, "Slice");
	ok(dbus_r_sig(&r, &sig) == 0 && strcmp(sig, "s") == 0 && dbus_r_str(&r, &s) == 0 && strcmp(s, "a-b.slice") == 0,
	   "Slice value");
	ok(dbus_r_align(&r, 8) == 0 && dbus_r_str(&r, &s) == 0 && strcmp(s, "Delegate") == 0, "Delegate");
	ok(dbus_r_sig(&r, &sig) == 0 && strcmp(sig, "b") == 0 && dbus_r_bool(&r, &b) == 0 && b, "Delegate value");
	ok(dbus_r_align(&r, 8) == 0 && dbus_r_str(&r, &s) == 0 && strcmp(s, "MemoryMax") == 0, "MemoryMax");
	ok(dbus_r_sig(&r, &sig) == 0 && strcmp(sig, "t") == 0, "t");
	is_int(r.pos % 8, 1);
	ok(dbus_r_u64(&r, &t) == 0 && t == 0x123456789abcdefull, "u64 value after 8-byte padding");
	ok(dbus_r_align(&r, 8) == 0 && dbus_r_str(&r, &s) == 0 && strcmp(s, "PIDs") == 0, "PIDs");
	ok(dbus_r_sig(&r, &sig) == 0 && strcmp(sig, "au") == 0 && dbus_r_array(&r, 4, &inner) == 0, "au");
	ok(dbus_r_u32(&r, &u) == 0 && u == 4242 && dbus_r_u32(&r, &u) == 0 && u == 7 && r.pos == inner, "au values");
	ok(dbus_r_align(&r, 8) == 0 && dbus_r_str(&r, &s) == 0 && strcmp(s, "AllowedCPUs") == 0, "AllowedCPUs");
	ok(dbus_r_sig(&r, &sig) == 0 && strcmp(sig, "ay") == 0 && dbus_r_array(&r, 1, &inner) == 0 &&
	       inner - r.pos == 2,
	   "ay of 2");
	ok(dbus_r_u8(&r, &y) == 0 && y == 0xff && dbus_r_u8(&r, &y) == 0 && y == 3, "ay values");
	is_int(r.pos, end);
	is_int(dbus_r_array(&r, 8, &end), 0);
	is_int(end, r.pos);
	is_int(r.pos, r.len);
	/* The generic skipper walks the same body. */
	r = dbus_msg_body(&m);
	sig = m.signature;
	while (*sig)
		if (dbus_r_skip(&r, &sig) < 0)
			break;
	ok(!*sig && r.pos == r.len, "dbus_r_skip walks the whole body");
	dbus_writer_free(&w);
}

TEST(big_endian)
{
	/* A method return (reply serial 5) with body "u" 0x01020304, written
	 * big-endian by hand. */
	static const uint8_t msg[] = {
	    'B', 2, 0,   1, 0, 0,   0, 4, 0, 0, 0, 9, 0, 0, 0, 15, 5, 1, 'u', 0, 0, 0, 0, 5, /* reply serial */
	    8,   1, 'g', 0, 1, 'u', 0, 0, /* signature "u" (field is 7 bytes; then padding) */
	    1,   2, 3,   4,
	};
	struct dbus_msg m;
	struct dbus_reader r;
	uint32_t u = 0;

	is_int(dbus_msg_parse(msg, sizeof(msg), &m), 0);
	ok(m.big_endian && m.type == DBUS_METHOD_RETURN && m.serial == 9 && m.reply_serial == 5, "header");
	is_str(m.signature, "u");
	r = dbus_msg_body(&m);
	ok(dbus_r_u32(&r, &u) == 0 && u == 0x01020304, "big-endian u32");
}

TEST(signatures)
{
	const char *good[] = {"", "s", "ssa(sv)a(sa(sv))", "a{sv}", "a{oa{sa{sv}}}", "(ii)v", "aay", "uoss"};
	const char *bad[] = {"a", "(", "()", "(i", "{sv}", "a{vs}", "a{sss}", "a{s}", "z", "i)", "a{(i)s}"};
	char deep[80], long_sig[300];

	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
		ok(dbus_sig_valid(good[i]), "valid: \"%s\"", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		ok(!dbus_sig_valid(bad[i]), "invalid: \"%s\"", bad[i]);
	memset(deep, 'a', 70);
	deep[70] = 'i', deep[71] = 0;
	ok(!dbus_sig_valid(deep), "70 nested arrays are refused");
	memset(long_sig, 'i', 256);
	long_sig[256] = 0;
	ok(!dbus_sig_valid(long_sig), "a 256-byte signature is refused");
}

static int parse_copy(const uint8_t *buf, size_t len)
{
	/* A copy of exactly len bytes, so that ASan sees any read past it. */
	uint8_t *b = malloc(len ? len : 1);
	struct dbus_msg m;
	int r;

	memcpy(b, buf, len);
	r = dbus_msg_parse(b, len, &m);
	if (r == 0 && m.signature) {
		/* Walking the body must also stay inside. */
		struct dbus_reader rd = dbus_msg_body(&m);
		const char *sig = m.signature;

		while (*sig && dbus_r_skip(&rd, &sig) == 0)
			;
	}
	free(b);
	return r;
}

TEST(truncated)
{
	struct dbus_writer w = {0};
	int fails = 0;

	build_call(&w);
	dbus_msg_end(&w);
	for (size_t n = 0; n < w.len; n++)
		fails += parse_copy(w.buf, n) == -EBADMSG;
	is_int(fails, w.len);
	is_int(parse_copy(w.buf, w.len), 0);
	dbus_writer_free(&w);
}

/* Copy the message, apply one change at offset off, expect -EBADMSG. */
static void corrupt(const struct dbus_writer *w, size_t off, uint8_t v, const char *what)
{
	uint8_t *b = malloc(w->len);

	memcpy(b, w->buf, w->len);
	b[off] = v;
	ok(parse_copy(b, w->len) == -EBADMSG, "%s is refused", what);
	free(b);
}

static size_t find(const struct dbus_writer *w, const char *s)
{
	for (size_t i = 0; i + strlen(s) <= w->len; i++)
		if (memcmp(w->buf + i, s, strlen(s)) == 0)
			return i;
	return 0;
}

TEST(malformed_header)
{
	struct dbus_writer w = {0};
	size_t at;

	build_call(&w);
	dbus_msg_end(&w);
	corrupt(&w, 0, 'x', "an unknown endianness byte");
	corrupt(&w, 1, 9, "an unknown message type");
	corrupt(&w, 3, 2, "protocol version 2");
	corrupt(&w, 4, (uint8_t)(w.buf[4] + 1), "a body length one too long");
	corrupt(&w, 7, 0x10, "a body length past the message limit");
	corrupt(&w, 8, 0, "serial 0 (all four bytes)");
	corrupt(&w, 15, 0x7f, "a header field array length past the end");
	corrupt(&w, 12, (uint8_t)(w.buf[12] + 8), "a header field array length 8 too long");
	at = find(&w, "/org/freedesktop/systemd1");
	corrupt(&w, at - 4, 0xf0, "a path length past the end");
	corrupt(&w, at - 6, 's', "a path field typed 's'");
	corrupt(&w, at + 3, 0, "a NUL inside a string");
	at = find(&w, "StartTransientUnit");
	corrupt(&w, at + 18, 'x', "a string without its NUL");
	at = find(&w, "ssa(sv)a(sa(sv))");
	corrupt(&w, at + 4, '{', "a bad signature in the header");
	corrupt(&w, at - 1, 60, "a signature length past its NUL");
	dbus_writer_free(&w);
}

TEST(malformed_fields)
{
	struct dbus_writer w = {0};
	struct dbus_msg h = {.type = DBUS_METHOD_CALL, .serial = 3, .path = "/a", .member = "M"};
	struct dbus_msg m;
	uint8_t *b;

	/* A call without a member. */
	dbus_msg_begin(&w, &(struct dbus_msg){.type = DBUS_METHOD_CALL, .serial = 3, .path = "/a"});
	dbus_msg_end(&w);
	ok(parse_copy(w.buf, w.len) == -EBADMSG, "a method call without a member is refused");
	/* An error without a name, a return without a reply serial. */
	dbus_msg_begin(&w, &(struct dbus_msg){.type = DBUS_ERROR, .serial = 3, .reply_serial = 2});
	dbus_msg_end(&w);
	ok(parse_copy(w.buf, w.len) == -EBADMSG, "an error without its name is refused");
	dbus_msg_begin(&w, &(struct dbus_msg){.type = DBUS_METHOD_RETURN, .serial = 3});
	dbus_msg_end(&w);
	ok(parse_copy(w.buf, w.len) == -EBADMSG, "a return without a reply serial is refused");
	/* A body without a signature. */
	dbus_msg_begin(&w, &h);
	dbus_w_u32(&w, 1);
	dbus_msg_end(&w);
	ok(parse_copy(w.buf, w.len) == -EBADMSG, "a body without a signature is refused");
	/* Non-zero padding before the body. */
	dbus_msg_begin(&w, &(struct dbus_msg){.type = DBUS_METHOD_CALL, .serial = 3, .path = "/abc", .member = "M"});
	dbus_msg_end(&w);
	is_int(dbus_msg_parse(w.buf, w.len, &m), 0);
	b = w.buf;
	ok(w.len % 8 == 0 && b[w.len - 1] == 0, "ends with padding");
	b[w.len - 1] = 1;
	ok(parse_copy(w.buf, w.len) == -EBADMSG, "non-zero padding is refused");
	dbus_writer_free(&w);
}

TEST(malformed_body)
{
	struct dbus_msg h = {.type = DBUS_METHOD_CALL, .serial = 3, .path = "/a", .member = "M", .signature = "bas"};
	struct dbus_writer w = {0};
	struct dbus_msg m;
	struct dbus_reader r;
	struct dbus_array a;
	const char *sig, *s;
	bool b;
	size_t end;

	dbus_msg_begin(&w, &h);
	dbus_w_u32(&w, 2); /* a boolean that is neither 0 nor 1 */
	a = dbus_w_array_open(&w, 4);
	dbus_w_str(&w, "x");
	dbus_w_array_close(&w, a);
	dbus_msg_end(&w);
	is_int(dbus_msg_parse(w.buf, w.len, &m), 0);
	r = dbus_msg_body(&m);
	is_int(dbus_r_bool(&r, &b), -EBADMSG);
	r = dbus_msg_body(&m);
	sig = m.signature;
	is_int(dbus_r_skip(&r, &sig), -EBADMSG);
	/* An array length past the body. */
	r = dbus_msg_body(&m);
	r.pos = 4;
	w.buf[w.body_at + 4] = 0xff;
	is_int(dbus_r_array(&r, 4, &end), -EBADMSG);
	/* A string read with no room for its length. */
	r = dbus_msg_body(&m);
	r.pos = r.len - 2;
	is_int(dbus_r_str(&r, &s), -EBADMSG);
	/* A variant whose signature holds two types. */
	{
		static const uint8_t v[] = {2, 'y', 'y', 0, 1, 2};
		struct dbus_reader vr = {.buf = v, .len = sizeof(v)};
		const char *vs = "v";

		is_int(dbus_r_skip(&vr, &vs), -EBADMSG);
	}
	dbus_writer_free(&w);
}

TEST(flipped_bytes)
{
	struct dbus_writer w = {0};
	unsigned seed = 1, refused = 0, total = 0;

	/* Every byte changed to a few values: parse or refuse, never crash
	 * (ASan checks the reads). */
	build_call(&w);
	dbus_msg_end(&w);
	for (size_t i = 0; i < w.len; i++) {
		for (int k = 0; k < 4; k++) {
			uint8_t *b = malloc(w.len);
			int r;

			memcpy(b, w.buf, w.len);
			seed = seed * 1103515245 + 12345;
			b[i] = k == 0 ? 0 : k == 1 ? 0xff : (uint8_t)(seed >> 16);
			r = parse_copy(b, w.len);
			refused += r == -EBADMSG;
			total += r == 0 || r == -EBADMSG;
			free(b);
		}
	}
	is_int(total, w.len * 4);
	ok(refused > 0, "some changes are refused (%u of %u)", refused, total);
	dbus_writer_free(&w);
}

TAP_MAIN()
