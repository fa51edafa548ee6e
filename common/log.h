/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Logging. Library layers log at debug level only; the CLI decides where
 * messages go (stderr, a --log file in text or runc's JSON format) by
 * installing a sink.
 */
#ifndef KVRUN_COMMON_LOG_H
#define KVRUN_COMMON_LOG_H

#include "common/cleanup.h"

enum log_level {
	LOG_LEVEL_ERROR = 0,
	LOG_LEVEL_WARN,
	LOG_LEVEL_INFO,
	LOG_LEVEL_DEBUG,
};

/* A sink receives each formatted message (no trailing newline). */
typedef void (*log_sink_fn)(enum log_level level, const char *msg, void *opaque);

/* Messages above max are dropped before formatting. Default: LOG_LEVEL_WARN. */
void log_set_max_level(enum log_level max);
enum log_level log_get_max_level(void);

/* Install a sink; NULL restores the default (stderr, "kvrun: level: msg"). */
void log_set_sink(log_sink_fn fn, void *opaque);

void log_msg(enum log_level level, const char *fmt, ...) _printf_(2, 3);

/* "error", "warning", "info", "debug" (runc's logrus names). */
const char *log_level_name(enum log_level level);

#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...)                                         \
	do {                                                   \
		if (log_get_max_level() >= LOG_LEVEL_DEBUG)    \
			log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__); \
	} while (0)

#endif
