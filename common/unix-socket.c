/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/unix-socket.h"

int unix_sockaddr(const char *path, struct sockaddr_un *ret, int *ret_dirfd)
{
	_cleanup_free_ char *dir = NULL;
	const char *slash = strrchr(path, '/');
	int fd, n;

	*ret = (struct sockaddr_un){.sun_family = AF_UNIX};
	*ret_dirfd = -1;
	if (strlen(path) < sizeof(ret->sun_path)) {
		strcpy(ret->sun_path, path);
		return 0;
	}
	if (!slash || slash == path || !(dir = strndup(path, (size_t)(slash - path))))
		return err_set(-ENAMETOOLONG, "socket path %s is longer than %zu bytes", path,
		               sizeof(ret->sun_path) - 1);
	fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return err_setsys(-errno, "open %s", dir);
	n = snprintf(ret->sun_path, sizeof(ret->sun_path), "/proc/self/fd/%d/%s", fd, slash + 1);
	if (n < 0 || (size_t)n >= sizeof(ret->sun_path)) {
		close(fd);
		return err_set(-ENAMETOOLONG, "socket name %s is longer than %zu bytes", slash + 1,
		               sizeof(ret->sun_path) - 1);
	}
	*ret_dirfd = fd;
	return 0;
}

int unix_listen(const char *path, int backlog)
{
	_cleanup_close_ int dirfd = -1;
	struct sockaddr_un sa;
	int fd, r;

	r = unix_sockaddr(path, &sa, &dirfd);
	if (r < 0)
		return r;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return err_setsys(-errno, "socket");
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, backlog) < 0) {
		r = err_setsys(-errno, "listen on %s", path);
		close(fd);
		return r;
	}
	return fd;
}

int unix_connect(const char *path, int flags, const char *what)
{
	_cleanup_close_ int dirfd = -1, fd = -1;
	struct sockaddr_un sa;
	int r;

	r = unix_sockaddr(path, &sa, &dirfd);
	if (r < 0)
		return r;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
	if (fd < 0)
		return err_setsys(-errno, "socket");
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS)
		return err_setsys(-errno, "connect to %s", what ? what : path);
	return TAKE_FD(fd);
}
