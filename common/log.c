/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stdio.h>

#include "common/log.h"

static enum log_level max_level = LOG_LEVEL_WARN;
static log_sink_fn sink;
static void *sink_opaque;

void log_set_max_level(enum log_level max)
{
	max_level = max;
}

enum log_level log_get_max_level(void)
{
	return max_level;
}

void log_set_sink(log_sink_fn fn, void *opaque)
{
	sink = fn;
	sink_opaque = opaque;
}

const char *log_level_name(enum log_level level)
{
	static const char *const names[] = {"error", "warning", "info", "debug"};

	return level <= LOG_LEVEL_DEBUG ? names[level] : "debug";
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	char buf[2048];
	va_list ap;

	if (level > max_level)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (sink)
		sink(level, buf, sink_opaque);
	else
		fprintf(stderr, "kvrun: %s: %s\n", log_level_name(level), buf);
}
