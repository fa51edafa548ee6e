/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Host terminals for containers: the pty pair whose master goes to a
 * --console-socket (as runc sends it) and raw mode for a caller's tty.
 */
#ifndef KVRUN_RUNTIME_CONSOLE_H
#define KVRUN_RUNTIME_CONSOLE_H

#include <stdbool.h>
#include <termios.h>

/* Open a new pty pair: *ret_master and *ret_slave (O_CLOEXEC; the slave
 * O_NOCTTY, in raw mode, since the line discipline that matters is the
 * guest's) and the slave's name in ret_name (size bytes). */
int console_open_pty(int *ret_master, int *ret_slave, char *ret_name, size_t size);

/* Connect to the unix stream socket at path and send fd with SCM_RIGHTS:
 * exactly one fd in one control message, the payload being name (runc's
 * utils.SendFile). The caller keeps fd. */
int console_send_fd(const char *path, int fd, const char *name);

/* The same, for another socket: what names it and the fd in errors
 * ("pidfd socket", "the container's pidfd"). */
int console_send_fd_as(const char *path, int fd, const char *name, const char *socket_what, const char *fd_what);

/* Put the terminal fd in raw mode, saving its settings in *saved. */
int console_make_raw(int fd, struct termios *saved);

/* Restore what console_make_raw() saved. */
void console_restore(int fd, const struct termios *saved);

/* The window size of the terminal fd: 0 and rows/cols, or -errno. */
int console_get_size(int fd, unsigned *ret_rows, unsigned *ret_cols);

/* Set the window size of the terminal fd (a pty's either end): 0 or
 * -errno. A size with a 0 in it (none known) leaves fd's as it is. */
int console_set_size(int fd, unsigned rows, unsigned cols);

#endif
