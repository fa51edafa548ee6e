/* SPDX-License-Identifier: Apache-2.0 */
/* Unix socket addresses for paths longer than sun_path (common/unix-socket.h). */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "common/unix-socket.h"
#include "tap.h"

static char dir[] = "/tmp/kvrun-unix-XXXXXX";
static char deep[512]; /* dir/ddd...d: its sockets' paths do not fit sun_path */

/* One byte through a fresh connection of listener, from fd. */
static bool passes_byte(int listener, int fd)
{
	int a = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
	char c = 0;
	bool r = a >= 0 && write(fd, "x", 1) == 1 && read(a, &c, 1) == 1 && c == 'x';

	if (a >= 0)
		close(a);
	return r;
}

TEST(short_path_as_is)
{
	struct sockaddr_un sa;
	char path[256];
	int dirfd = 0;

	ok(mkdtemp(dir) != NULL, "mkdtemp");
	snprintf(path, sizeof(path), "%s/s.sock", dir);
	is_int(unix_sockaddr(path, &sa, &dirfd), 0);
	is_int(dirfd, -1);
	is_str(sa.sun_path, path);
	is_int(sa.sun_family, AF_UNIX);
}

TEST(long_path_through_its_directory)
{
	struct sockaddr_un sa;
	char sub[151], path[600], cwd[PATH_MAX];
	int dirfd = -1, l, fd;
	struct stat st;

	memset(sub, 'd', sizeof(sub) - 1);
	sub[sizeof(sub) - 1] = '\0';
	snprintf(deep, sizeof(deep), "%s/%s", dir, sub);
	is_int(mkdir(deep, 0700), 0);
	snprintf(path, sizeof(path), "%s/l.sock", deep);
	ok(strlen(path) >= sizeof(sa.sun_path), "path of %zu bytes", strlen(path));
	is_int(unix_sockaddr(path, &sa, &dirfd), 0);
	ok(dirfd >= 0, "a descriptor of the directory");
	ok(strncmp(sa.sun_path, "/proc/self/fd/", 14) == 0, "address %s", sa.sun_path);
	l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ok(bind(l, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(l, 4) == 0, "bound and listening");
	close(dirfd);
	ok(stat(path, &st) == 0 && S_ISSOCK(st.st_mode), "the socket is at the long path");

	/* Reached by its name from inside the directory: the same socket. */
	ok(getcwd(cwd, sizeof(cwd)) && chdir(deep) == 0, "chdir into the directory");
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sa = (struct sockaddr_un){.sun_family = AF_UNIX, .sun_path = "l.sock"};
	is_int(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ok(passes_byte(l, fd), "relative connect reaches it");
	close(fd);
	is_int(chdir(cwd), 0);

	fd = unix_connect(path, 0, NULL);
	ok(fd >= 0, "unix_connect to the long path");
	ok(fd >= 0 && passes_byte(l, fd), "and talks to the listener");
	if (fd >= 0)
		close(fd);
	close(l);
}

TEST(listen_on_a_long_path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX, .sun_path = "m.sock"};
	char path[600], cwd[PATH_MAX];
	int l, l2, fd;

	snprintf(path, sizeof(path), "%s/m.sock", deep);
	l = unix_listen(path, 4);
	ok(l >= 0, "unix_listen on the long path");
	ok(getcwd(cwd, sizeof(cwd)) && chdir(deep) == 0, "chdir into the directory");
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	is_int(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ok(l >= 0 && passes_byte(l, fd), "a relative connect reaches the listener");
	close(fd);
	is_int(chdir(cwd), 0);
	/* A socket file left at the path is replaced. */
	l2 = unix_listen(path, 4);
	ok(l2 >= 0, "listening again at the path");
	fd = unix_connect(path, 0, NULL);
	ok(fd >= 0 && l2 >= 0 && passes_byte(l2, fd), "a connect reaches the new listener");
	ok(accept4(l, NULL, NULL, SOCK_CLOEXEC) < 0 && errno == EAGAIN, "not the old one");
	if (fd >= 0)
		close(fd);
	snprintf(path, sizeof(path), "%s/missing/m.sock", dir);
	is_int(unix_listen(path, 4), -ENOENT);
	ok(strstr(err_msg(), "listen on") && strstr(err_msg(), path), "says so: %s", err_msg());
	close(l);
	close(l2);
}

TEST(what_cannot_be_reached)
{
	struct sockaddr_un sa;
	char path[700], name[200];
	int dirfd = 0;

	/* The name alone does not fit after /proc/self/fd/N/. */
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	is_int(unix_sockaddr(path, &sa, &dirfd), -ENAMETOOLONG);
	ok(strstr(err_msg(), "socket name") != NULL, "says so: %s", err_msg());
	is_int(dirfd, -1);
	/* No directory to go through. */
	is_int(unix_sockaddr(name, &sa, &dirfd), -ENAMETOOLONG);
	snprintf(path, sizeof(path), "%s/missing/l.sock", deep);
	is_int(unix_sockaddr(path, &sa, &dirfd), -ENOENT);
	snprintf(path, sizeof(path), "%s/none.sock", dir);
	is_int(unix_connect(path, 0, NULL), -ENOENT);
	ok(strstr(err_msg(), "connect to") && strstr(err_msg(), path), "names the path: %s", err_msg());
	is_int(unix_connect(path, 0, "the peer"), -ENOENT);
	ok(strstr(err_msg(), "connect to the peer") != NULL, "or what it is: %s", err_msg());
	rm_rf(dir);
}

TAP_MAIN()
