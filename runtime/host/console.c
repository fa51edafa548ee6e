/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/unix-socket.h"
#include "runtime/host/console.h"

int console_open_pty(int *ret_master, int *ret_slave, char *ret_name, size_t size)
{
	_cleanup_close_ int master = -1, slave = -1;
	struct termios t;

	master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0)
		return err_setsys(-errno, "open /dev/ptmx");
	if (grantpt(master) < 0 || unlockpt(master) < 0 || ptsname_r(master, ret_name, size) != 0)
		return err_setsys(-errno, "set up a pty");
	slave = open(ret_name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (slave < 0)
		return err_setsys(-errno, "open %s", ret_name);
	/* Echo, ^C and line editing happen in the guest's pty: the host's
	 * passes bytes through untouched. */
	if (tcgetattr(slave, &t) == 0) {
		cfmakeraw(&t);
		tcsetattr(slave, TCSANOW, &t);
	}
	*ret_master = TAKE_FD(master);
	*ret_slave = TAKE_FD(slave);
	return 0;
}

int console_send_fd(const char *path, int fd, const char *name)
{
	return console_send_fd_as(path, fd, name, "console socket", "the pty master");
}

int console_send_fd_as(const char *path, int fd, const char *name, const char *socket_what, const char *fd_what)
{
	_cleanup_close_ int sock = -1;
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = (void *)name, .iov_len = strlen(name)};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *cm;
	_cleanup_free_ char *what = NULL;

	if (asprintf(&what, "%s %s", socket_what, path) < 0)
		return -ENOMEM;
	sock = unix_connect(path, 0, what);
	if (sock < 0)
		return sock;
	memset(u.buf, 0, sizeof(u.buf));
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	if (sendmsg(sock, &msg, MSG_NOSIGNAL) < 0)
		return err_setsys(-errno, "send %s to %s %s", fd_what, socket_what, path);
	return 0;
}

int console_make_raw(int fd, struct termios *saved)
{
	struct termios t;

	if (tcgetattr(fd, saved) < 0)
		return -errno;
	t = *saved;
	cfmakeraw(&t);
	/* Keep output processing off too: the guest's pty already did it. */
	return tcsetattr(fd, TCSANOW, &t) < 0 ? -errno : 0;
}

void console_restore(int fd, const struct termios *saved)
{
	tcsetattr(fd, TCSANOW, saved);
}

int console_get_size(int fd, unsigned *ret_rows, unsigned *ret_cols)
{
	struct winsize ws;

	if (ioctl(fd, TIOCGWINSZ, &ws) < 0)
		return -errno;
	*ret_rows = ws.ws_row;
	*ret_cols = ws.ws_col;
	return 0;
}

int console_set_size(int fd, unsigned rows, unsigned cols)
{
	struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};

	if (!rows || !cols)
		return 0;
	return ioctl(fd, TIOCSWINSZ, &ws) < 0 ? -errno : 0;
}
