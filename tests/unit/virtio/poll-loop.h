/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A single-threaded implementation of vmm/event-loop.h for unit tests: the
 * test dispatches ready events itself with poll_loop_once(), so device,
 * driver and host peers run in a fixed order on one thread.
 */
#ifndef KVRUN_TESTS_POLL_LOOP_H
#define KVRUN_TESTS_POLL_LOOP_H

#include "vmm/event-loop.h"

/* Wait up to timeout_ms for events and dispatch them once. Returns the
 * number of handlers called. */
int poll_loop_once(struct event_loop *l, int timeout_ms);

#endif
