/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where kvrun's log lines go, in runc's formats: logrus text
 * (`time="..." level=error msg="..."`) or JSON
 * (`{"level":"error","msg":"...","time":"..."}`, one object a line, which
 * containerd's shim reads back from --log to report the last error).
 */
#ifndef KVRUN_RUNTIME_LOG_SINK_H
#define KVRUN_RUNTIME_LOG_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

enum log_format {
	LOG_FORMAT_TEXT,
	LOG_FORMAT_JSON,
};

/* "text" or "json"; -EINVAL with err_msg() "invalid log-format: X". */
int log_format_parse(const char *s, enum log_format *ret);

/* Send common/log.h messages to path (opened O_APPEND|O_CREAT, 0644), or to
 * stderr when path is NULL or empty, formatted as fmt. debug lowers the
 * threshold to LOG_LEVEL_DEBUG. Returns 0 or a negative errno (err_msg() set);
 * on failure the stderr sink stays in place. */
int log_sink_setup(const char *path, enum log_format fmt, bool debug);

/* Report a fatal error as runc does: one line through the sink; when the sink
 * is a file, also the bare message on stderr (callers such as go-runc read
 * stderr, the shim reads the file). */
void log_sink_report_error(const char *msg);

/* Close the log file, if any, and restore the default sink. */
void log_sink_close(void);

/* The log file's descriptor, or -1 when logging goes to stderr. */
int log_sink_fd(void);

/* Format one line (without newline) into buf as the sink would; exposed for
 * tests. t is the time stamp. Returns the length, truncated to size - 1. */
size_t log_format_line(enum log_format fmt, const char *level, const char *msg, time_t t, char *buf, size_t size);

#endif
