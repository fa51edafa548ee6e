/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One direction of a stdio stream between a vsock stream and the process
 * (pipe or pty master), driven by PID 1's poll loop. Both fds must be
 * non-blocking; the copier does not own them.
 */
#ifndef KVRUN_GUEST_INIT_RELAY_H
#define KVRUN_GUEST_INIT_RELAY_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>

#define RELAY_BUF 16384

struct relay {
	int src, dst;
	bool active; /* set up and not finished */
	bool eof; /* src reached EOF (or dst went away) */
	bool use_splice; /* one side is a pipe */
	bool dst_full; /* last splice hit a full dst */
	size_t off, len;
	char buf[RELAY_BUF];
};

/* Set up r to copy src to dst. */
void relay_init(struct relay *r, int src, int dst, bool use_splice);

/* The fd and events r waits for, or -1 when it waits for nothing. */
int relay_poll(const struct relay *r, short *ret_events);

/* Move what can move now. Returns 1 at EOF (r->active turns false), else 0. */
int relay_step(struct relay *r);

#endif
