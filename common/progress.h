/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One line that says what long work is doing and how far it is, redrawn on
 * stderr by a thread while the work runs: "kvrun: root disk image of
 * /b/rootfs: 120 of ~480 MiB (25%), 0:07". Only on a terminal, only after
 * the work has taken a second, and never when progress is off (main() turns
 * it off under an engine: --log or JSON logging; $KVRUN_PROGRESS=0 too).
 * The line is cleared when the work ends, so nothing of it stays in the
 * output.
 */
#ifndef KVRUN_COMMON_PROGRESS_H
#define KVRUN_COMMON_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

struct progress;

/* How far the work is, in the unit of its total (bytes for a MiB display).
 * Called from the progress thread. */
typedef uint64_t (*progress_sample_fn)(void *data);

void progress_set_enabled(bool on);

/* Start the line for what (copied). With total > 0 and fn, it shows
 * fn(data) of total as MiB and a percentage; otherwise the time so far.
 * NULL (and nothing drawn) when progress is off or stderr is not a
 * terminal, or when the thread cannot start. */
struct progress *progress_start(const char *what, uint64_t total, progress_sample_fn fn, void *data);

/* Stop the thread and clear the line. NULL is fine. */
void progress_stop(struct progress *p);

/* The text of the line for what after elapsed_ms with done of total
 * (total 0: time only), for tests and the thread. */
void progress_format(const char *what, uint64_t done, uint64_t total, int64_t elapsed_ms, char *buf, size_t size);

#endif
