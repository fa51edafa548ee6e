/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Error context. Functions return >= 0 on success and a negative errno on
 * failure; the function that detects a failure may record a human-readable
 * message with err_set(), and callers on the way up may prepend context with
 * err_prefix(). The CLI prints err_msg() once, at the top. The message is
 * per thread.
 */
#ifndef KVRUN_COMMON_ERROR_H
#define KVRUN_COMMON_ERROR_H

#include "common/cleanup.h"

/* Record "fmt..." as the current error and return negerr (a negative errno),
 * so that `return err_set(-EINVAL, "bad %s", x);` reads naturally. */
int err_set(int negerr, const char *fmt, ...) _printf_(2, 3);

/* Like err_set(), with ": strerror(-negerr)" appended. */
int err_setsys(int negerr, const char *fmt, ...) _printf_(2, 3);

/* Prepend "fmt...: " to the current message (or to strerror(-negerr) when
 * none is set) and return negerr. */
int err_prefix(int negerr, const char *fmt, ...) _printf_(2, 3);

/* The current message, or "" when none was recorded. Never NULL. */
const char *err_msg(void);

/* Forget the current message. */
void err_clear(void);

#endif
