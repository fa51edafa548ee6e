/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio-balloon driven by a fuzzed guest program (reports, PFN arrays and
 * statistics are whatever the program writes into guest RAM), and by the
 * host side from the input: a new target, a statistics request, pausing.
 * The discard function aborts on any range outside guest RAM, so a range
 * the device failed to check is a crash. The event loop is dispatched by
 * the harness (tests/unit/virtio/poll-loop.c).
 */
#include <stdlib.h>

#include "fuzz.h"
#include "virtio/balloon/balloon.h"

static void balloon_extra(struct fz_guest *g, struct fz *f, uint8_t op)
{
	struct virtio_balloon *b = g->opaque;
	struct virtio_balloon_counters c;
	struct virtio_balloon_stats st;

	switch (op % 4) {
	case 0:
		virtio_balloon_set_target(b, fz_u32(f));
		break;
	case 1:
		(void)virtio_balloon_request_stats(b);
		break;
	case 2:
		virtio_balloon_pause(b, fz_u8(f) & 1);
		break;
	default:
		virtio_balloon_counters(b, &c);
		virtio_balloon_stats(b, &st);
		break;
	}
	fz_loop_settle(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = {data, size};
	struct fz_guest g;
	struct virtio_balloon_opts o = {.discard = fz_balloon_discard, .opaque = &g};
	struct virtio_balloon *b;

	fz_guest_init(&g);
	if (event_loop_new(&g.loop) < 0 || virtio_balloon_new(&g.mem, g.loop, &o, &b) < 0)
		abort();
	g.opaque = b;
	g.settle = fz_loop_settle;
	g.extra = balloon_extra;
	fz_guest_attach(&g, virtio_balloon_mmio(b));
	fz_guest_run(&g, &f, 256);
	virtio_balloon_free(b);
	event_loop_free(g.loop);
	fz_guest_free(&g);
	return 0;
}
