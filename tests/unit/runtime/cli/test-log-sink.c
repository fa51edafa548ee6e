/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "common/log.h"
#include "runtime/cli/log-sink.h"
#include "tap.h"

/* 2024-01-02T03:04:05Z */
#define T0 ((time_t)1704164645)

TEST(json_line)
{
	char buf[256];

	setenv("TZ", "UTC", 1);
	tzset();
	log_format_line(LOG_FORMAT_JSON, "error", "container \"x\" does not exist\n\t", T0, buf, sizeof(buf));
	is_str(buf, "{\"level\":\"error\",\"msg\":\"container \\\"x\\\" does not "
	            "exist\\n\\t\",\"time\":\"2024-01-02T03:04:05Z\"}");
}

TEST(text_line)
{
	char buf[256];

	setenv("TZ", "UTC", 1);
	tzset();
	log_format_line(LOG_FORMAT_TEXT, "error", "no such \"thing\"", T0, buf, sizeof(buf));
	is_str(buf, "time=\"2024-01-02T03:04:05Z\" level=error msg=\"no such \\\"thing\\\"\"");
	log_format_line(LOG_FORMAT_TEXT, "debug", "plain-word", T0, buf, sizeof(buf));
	is_str(buf, "time=\"2024-01-02T03:04:05Z\" level=debug msg=plain-word");
}

TEST(control_characters)
{
	char buf[256];

	setenv("TZ", "UTC", 1);
	tzset();
	log_format_line(LOG_FORMAT_JSON, "info",
	                "a\rb\x01"
	                "c\\",
	                T0, buf, sizeof(buf));
	is_str(buf, "{\"level\":\"info\",\"msg\":\"a\\rb\\u0001c\\\\\",\"time\":\"2024-01-02T03:04:05Z\"}");
	log_format_line(LOG_FORMAT_TEXT, "info",
	                "a\rb\x01"
	                "c\\",
	                T0, buf, sizeof(buf));
	is_str(buf, "time=\"2024-01-02T03:04:05Z\" level=info msg=\"a\\x0db\\x01c\\\\\"");
}

TEST(time_zone_offset)
{
	char buf[256];

	setenv("TZ", "EST5", 1);
	tzset();
	log_format_line(LOG_FORMAT_JSON, "info", "m", T0, buf, sizeof(buf));
	is_str(buf, "{\"level\":\"info\",\"msg\":\"m\",\"time\":\"2024-01-01T22:04:05-05:00\"}");
	setenv("TZ", "UTC", 1);
	tzset();
}

TEST(truncation)
{
	char buf[16];
	size_t n;

	n = log_format_line(LOG_FORMAT_JSON, "error", "a long message that does not fit", T0, buf, sizeof(buf));
	is_int(n, sizeof(buf) - 1);
	is_int(strlen(buf), sizeof(buf) - 1);
}

TEST(format_names)
{
	enum log_format f;

	is_int(log_format_parse("json", &f), 0);
	is_int(f, LOG_FORMAT_JSON);
	is_int(log_format_parse("text", &f), 0);
	is_int(f, LOG_FORMAT_TEXT);
	is_int(log_format_parse("xml", &f), -EINVAL);
	is_str(err_msg(), "invalid log-format: xml");
}

TEST(file_sink_appends_and_filters_debug)
{
	char path[] = "/tmp/kvrun-log-XXXXXX";
	_cleanup_free_ char *text = NULL;
	int fd = mkstemp(path);

	ok(fd >= 0, "temp file");
	write_all(fd, "old line\n", 9);
	close(fd);
	is_int(log_sink_setup(path, LOG_FORMAT_JSON, false), 0);
	log_debug("hidden");
	log_error("boom");
	log_sink_close();
	is_int(read_file_all(path, 4096, &text, NULL), 0);
	ok(!strncmp(text, "old line\n{\"level\":\"error\",\"msg\":\"boom\",\"time\":\"", 47), "appended JSON line");
	ok(!strstr(text, "hidden"), "debug dropped without --debug");
	free(TAKE_PTR(text));
	is_int(log_sink_setup(path, LOG_FORMAT_TEXT, true), 0);
	log_debug("shown");
	log_sink_close();
	is_int(read_file_all(path, 4096, &text, NULL), 0);
	ok(strstr(text, " level=debug msg=shown\n") != NULL, "debug line with --debug");
	unlink(path);
}

TEST(unwritable_log_path)
{
	is_int(log_sink_setup("/nonexistent-dir/log.json", LOG_FORMAT_JSON, false), -ENOENT);
	ok(strstr(err_msg(), "/nonexistent-dir/log.json") != NULL, "message names the file: %s", err_msg());
}

TAP_MAIN()
