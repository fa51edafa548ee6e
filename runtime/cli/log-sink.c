/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/error.h"
#include "common/fileio.h"
#include "common/log.h"
#include "runtime/cli/log-sink.h"

static struct {
	int fd; /* -1: stderr */
	enum log_format fmt;
} sink = {-1, LOG_FORMAT_TEXT};

int log_format_parse(const char *s, enum log_format *ret)
{
	if (!strcmp(s, "text"))
		*ret = LOG_FORMAT_TEXT;
	else if (!strcmp(s, "json"))
		*ret = LOG_FORMAT_JSON;
	else
		return err_set(-EINVAL, "invalid log-format: %s", s);
	return 0;
}

/* Appends to a bounded buffer; output is truncated, never overrun. */
struct buf {
	char *p;
	size_t size, len;
};

static void put(struct buf *b, const char *s, size_t n)
{
	for (size_t i = 0; i < n && b->len + 1 < b->size; i++)
		b->p[b->len++] = s[i];
	b->p[b->len] = '\0';
}

static void puts_(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

/* RFC 3339 with the local zone, as Go's time.RFC3339 ("Z" for UTC). */
static void put_time(struct buf *b, time_t t)
{
	struct tm tm;
	char s[64];
	size_t n;
	long off;

	localtime_r(&t, &tm);
	n = strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%S", &tm);
	off = tm.tm_gmtoff;
	if (off == 0)
		snprintf(s + n, sizeof(s) - n, "Z");
	else
		snprintf(s + n, sizeof(s) - n, "%c%02ld:%02ld", off < 0 ? '-' : '+', labs(off) / 3600,
		         labs(off) % 3600 / 60);
	puts_(b, s);
}

/* s in double quotes with ", \ and control characters escaped: JSON's
 * \u%04x (and \r) when json, Go %q's \x%02x otherwise. */
static void put_quoted(struct buf *b, const char *s, bool json)
{
	put(b, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[8];

		if (c == '"' || c == '\\')
			snprintf(esc, sizeof(esc), "\\%c", c);
		else if (c == '\n')
			snprintf(esc, sizeof(esc), "\\n");
		else if (c == '\t')
			snprintf(esc, sizeof(esc), "\\t");
		else if (c == '\r' && json)
			snprintf(esc, sizeof(esc), "\\r");
		else if (c < 0x20 || c == 0x7f)
			snprintf(esc, sizeof(esc), json ? "\\u%04x" : "\\x%02x", c);
		else
			esc[0] = (char)c, esc[1] = 0;
		puts_(b, esc);
	}
	put(b, "\"", 1);
}

/* A JSON string (with quotes). */
static void put_json_string(struct buf *b, const char *s)
{
	put_quoted(b, s, true);
}

/* logrus quotes a text value unless it is made only of these characters. */
static bool text_needs_quoting(const char *s)
{
	if (!*s)
		return true;
	for (; *s; s++)
		if (!strchr("-._/@^+", *s) && !(*s >= 'a' && *s <= 'z') && !(*s >= 'A' && *s <= 'Z') &&
		    !(*s >= '0' && *s <= '9'))
			return true;
	return false;
}

/* A text value, quoted like Go's %q when it needs to be. */
static void put_text_value(struct buf *b, const char *s)
{
	if (!text_needs_quoting(s))
		puts_(b, s);
	else
		put_quoted(b, s, false);
}

size_t log_format_line(enum log_format fmt, const char *level, const char *msg, time_t t, char *out, size_t size)
{
	struct buf b = {out, size, 0};

	if (!size)
		return 0;
	out[0] = '\0';
	if (fmt == LOG_FORMAT_JSON) {
		/* Keys in logrus's (sorted) order. */
		puts_(&b, "{\"level\":");
		put_json_string(&b, level);
		puts_(&b, ",\"msg\":");
		put_json_string(&b, msg);
		puts_(&b, ",\"time\":\"");
		put_time(&b, t);
		puts_(&b, "\"}");
	} else {
		puts_(&b, "time=\"");
		put_time(&b, t);
		puts_(&b, "\" level=");
		puts_(&b, level);
		puts_(&b, " msg=");
		put_text_value(&b, msg);
	}
	return b.len;
}

static void sink_write(enum log_level level, const char *msg, void *opaque)
{
	char line[4096];
	size_t n;

	n = log_format_line(sink.fmt, log_level_name(level), msg, time(NULL), line, sizeof(line) - 1);
	line[n++] = '\n';
	/* One write() per line so that lines from concurrent kvrun processes
	 * appending to the same file do not interleave. */
	(void)write_all(sink.fd >= 0 ? sink.fd : STDERR_FILENO, line, n);
}

/* Is fd the same file as our stderr (`--log /dev/stderr`)? */
static bool same_as_stderr(int fd)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && fstat(STDERR_FILENO, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int log_sink_setup(const char *path, enum log_format fmt, bool debug)
{
	int fd = -1;

	if (path && *path) {
		fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);
		if (fd < 0)
			return err_setsys(-errno, "open log file %s", path);
		if (same_as_stderr(fd)) {
			close(fd);
			fd = -1;
		}
	}
	log_sink_close();
	sink.fd = fd;
	sink.fmt = fmt;
	/* A log file gets the VM's progress (restored or booted, times);
	 * stderr, which a foreground container's own stderr shares, only
	 * warnings and errors unless --debug, as runc's. */
	log_set_max_level(debug ? LOG_LEVEL_DEBUG : fd >= 0 ? LOG_LEVEL_INFO : LOG_LEVEL_WARN);
	log_set_sink(sink_write, NULL);
	return 0;
}

void log_sink_report_error(const char *msg)
{
	log_error("%s", msg);
	if (sink.fd >= 0)
		fprintf(stderr, "%s\n", msg);
}

void log_sink_close(void)
{
	if (sink.fd >= 0)
		close(sink.fd);
	sink.fd = -1;
	log_set_sink(NULL, NULL);
}

int log_sink_fd(void)
{
	return sink.fd;
}
