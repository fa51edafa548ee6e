/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <string.h>

#include "common/error.h"

static __thread char err_buf[1024];

int err_set(int negerr, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err_buf, sizeof(err_buf), fmt, ap);
	va_end(ap);
	return negerr;
}

int err_setsys(int negerr, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(err_buf, sizeof(err_buf), fmt, ap);
	va_end(ap);
	n = strlen(err_buf);
	snprintf(err_buf + n, sizeof(err_buf) - n, ": %s", strerror(-negerr));
	return negerr;
}

int err_prefix(int negerr, const char *fmt, ...)
{
	char old[sizeof(err_buf)];
	va_list ap;
	size_t n;

	if (err_buf[0])
		memcpy(old, err_buf, sizeof(old));
	else
		snprintf(old, sizeof(old), "%s", strerror(-negerr));
	va_start(ap, fmt);
	vsnprintf(err_buf, sizeof(err_buf), fmt, ap);
	va_end(ap);
	n = strlen(err_buf);
	snprintf(err_buf + n, sizeof(err_buf) - n, ": %s", old);
	return negerr;
}

const char *err_msg(void)
{
	return err_buf;
}

void err_clear(void)
{
	err_buf[0] = '\0';
}
