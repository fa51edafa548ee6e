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
	_cleanup_close_ int fd = -1;
	int n;

	*ret = (struct sockaddr_un){.sun_family = AF_UNIX};
	*ret_dirfd = -1;
	if (strlen(path) < sizeof(ret->sun_path)) {
		memcpy(ret->sun_path, path, strlen(path) + 1);
		return 0;
	}
	if (!slash || slash == path || !(dir = strndup(path, (size_t)(slash - path))))
		return err_set(-ENAMETOOLONG, "socket path %s is longer than %zu bytes", path,
		               sizeof(ret->sun_path) - 1);
	fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return err_setsys(-errno, "open %s", dir);
	n = snprintf(ret->sun_path, sizeof(ret->sun_path), "/proc/self/fd/%d/%s", fd, slash + 1);
	if (n < 0 || (size_t)n >= sizeof(ret->sun_path))
		return err_set(-ENAMETOOLONG, "socket name %s is longer than %zu bytes", slash + 1,
		               sizeof(ret->sun_path) - 1);
	*ret_dirfd = TAKE_FD(fd);
	return 0;
}

/* A stream socket with flags, and the address of path for it (dirfd as
 * unix_sockaddr() gives it). */
static int socket_for(const char *path, int flags, struct sockaddr_un *sa, int *dirfd)
{
	int fd, r = unix_sockaddr(path, sa, dirfd);

	if (r < 0)
		return r;
	fd = socket(AF_UNIX, SOCK_STREAM | flags, 0);
	if (fd < 0)
		return err_setsys(-errno, "socket");
	return fd;
}

int unix_connect(const char *path, int flags)
{
	_cleanup_close_ int dirfd = -1;
	struct sockaddr_un sa;
	_cleanup_close_ int fd = socket_for(path, flags, &sa, &dirfd);

	if (fd < 0)
		return fd;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return err_setsys(-errno, "connect to %s", path);
	return TAKE_FD(fd);
}

int unix_listen(const char *path, int flags, int backlog)
{
	_cleanup_close_ int dirfd = -1;
	struct sockaddr_un sa;
	_cleanup_close_ int fd = socket_for(path, flags, &sa, &dirfd);

	if (fd < 0)
		return fd;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, backlog) < 0)
		return err_setsys(-errno, "listen on %s", path);
	return TAKE_FD(fd);
}
