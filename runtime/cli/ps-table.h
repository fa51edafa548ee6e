/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kvrun ps ID [ps options]` as a table: the container's processes (the
 * guest's PS answer, common/protocol.h) printed the way procps's ps prints
 * them on the host for `runc ps`, for the ps options runc's users pass.
 *
 * Supported: selection options (-e -A -a -d, BSD a x g), all of which mean
 * every process of the container (the caller's terminal and user mean
 * nothing inside the VM); formats -f, -j, BSD u, -o/o/--format with the
 * keywords of ps_table_keywords(), "key=header"; w and -w (no width limit
 * anyway). Refused, naming the option: selection by list (-p, -u, -C,
 * ...), the other formats (-l, -F, v, BSD j), threads (-L, -T, H), sorting
 * and trees. As with runc, which looks for the PID column in ps's header,
 * an output without a header or without a "PID" column is an error.
 */
#ifndef KVRUN_RUNTIME_CLI_PS_TABLE_H
#define KVRUN_RUNTIME_CLI_PS_TABLE_H

#include <stdio.h>
#include <time.h>

#include "common/protocol.h"

struct ps_format;

/* Parse ps's options (args[0..nargs), none meaning "-ef"). -EINVAL with
 * the message for an option that is not supported or malformed. */
int ps_format_parse(char *const *args, int nargs, struct ps_format **ret);
void ps_format_free(struct ps_format *f);

/* Print the header and one line per process of ps (sorted by pid) to
 * out; now is the host's time, against which start times are shown as
 * procps does (time of day for today's, else the date). */
int ps_table_print(const struct ps_format *f, const struct proto_ps *ps, time_t now, FILE *out);

/* The -o keywords, NULL-terminated (for the help and the docs). */
const char *const *ps_table_keywords(void);

#endif
