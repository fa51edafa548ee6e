/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The byte buffer device states are saved into, and the bounds-checked
 * reader they are loaded from (vmm/snapshot.c). No KVM needed. Run with
 * UBSAN_OPTIONS=halt_on_error=1 (meson does), so that undefined behaviour
 * in a sanitized build fails the test.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "vmm/snapshot.h"

/* Found by fuzz-device-state: adding nothing to an empty buffer did
 * memcpy(NULL + 0, ...), undefined behaviour. */
TEST(put_nothing)
{
	struct snap_buf b = {0};
	static const uint8_t one = 1;

	is_int(snap_buf_put(&b, NULL, 0), 0);
	is_int(snap_buf_put(&b, &one, 0), 0);
	ok(b.len == 0 && b.data == NULL, "still empty, nothing allocated");
	is_int(snap_buf_put(&b, &one, 1), 0);
	is_int(snap_buf_put(&b, NULL, 0), 0);
	ok(b.len == 1 && b.data && b.data[0] == 1, "one byte");
	snap_buf_free(&b);
	ok(b.data == NULL && b.len == 0 && b.cap == 0, "freed and zeroed");
}

TEST(put_grows)
{
	struct snap_buf b = {0};
	uint8_t chunk[3000];
	size_t total = 0;

	memset(chunk, 0xab, sizeof(chunk));
	for (int i = 0; i < 10; i++) {
		is_int(snap_buf_put(&b, chunk, sizeof(chunk)), 0);
		total += sizeof(chunk);
	}
	ok(b.len == total && b.cap >= total, "30000 bytes kept");
	ok(b.data[0] == 0xab && b.data[total - 1] == 0xab, "content");
	snap_buf_free(&b);
}

TEST(reader_bounds)
{
	static const uint8_t data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	struct snap_reader r = {.p = data, .len = sizeof(data)};
	struct snap_reader none = {0};
	uint8_t out[8];

	is_int(snap_get(&r, out, 3), 0);
	is_int(snap_get(&r, out, 6), -EBADMSG);
	is_int(r.off, 3);
	is_int(snap_get(&r, out, 5), 0);
	ok(out[4] == 8, "last byte");
	is_int(snap_get(&r, out, 1), -EBADMSG);
	is_int(snap_get(&r, out, 0), 0);
	/* An empty section (no data at all). */
	is_int(snap_get(&none, out, 0), 0);
	is_int(snap_get(&none, out, 1), -EBADMSG);
}

TAP_MAIN()
