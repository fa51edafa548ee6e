/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fileio.h"

int read_file_all(const char *path, size_t max, char **ret_buf, size_t *ret_len)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 4096;
	ssize_t n;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (len == cap) {
			char *nb;

			cap *= 2;
			nb = realloc(buf, cap + 1);
			if (!nb)
				return -ENOMEM;
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max)
			return -EFBIG;
	}
	buf[len] = '\0';
	if (ret_len)
		*ret_len = len;
	*ret_buf = TAKE_PTR(buf);
	return 0;
}

int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int write_replace(const char *path, const void *data, size_t len, mode_t mode, bool sync)
{
	char tmp[PATH_MAX];
	int fd, r;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	r = write_all(fd, data, len);
	if (r == 0 && sync && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
	return write_replace(path, data, len, mode, true);
}

int write_file_replace(const char *path, const void *data, size_t len, mode_t mode)
{
	return write_replace(path, data, len, mode, false);
}

/* The whole path first: where it exists already (the usual case) that is
 * one mkdir, not one per component. Only a missing parent makes the walk
 * up. buf is restored before returning. */
static int mkdir_p_in(char *buf, mode_t mode)
{
	char *slash, *end;
	int r;

	if (mkdir(buf, mode) == 0 || errno == EEXIST)
		return 0;
	if (errno != ENOENT)
		return -errno;
	slash = strrchr(buf, '/');
	for (end = slash; end && end > buf && end[-1] == '/'; end--)
		;
	if (!end || end == buf)
		return -ENOENT; /* no parent to make: / or the cwd is missing */
	*end = '\0';
	r = mkdir_p_in(buf, mode);
	*end = '/';
	if (r < 0)
		return r;
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, path, n + 1);
	/* A trailing slash names the same directory. */
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = '\0';
	return mkdir_p_in(buf, mode);
}

static int rm_rf_at(int parent, const char *name, dev_t dev)
{
	struct stat st;
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	int fd, r = 0;

	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(parent, name, 0) < 0 && errno != ENOENT ? -errno : 0;
	if (st.st_dev != dev)
		return -EXDEV;
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		int q;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		q = rm_rf_at(dirfd(d), de->d_name, dev);
		if (q < 0 && r == 0)
			r = q;
	}
	if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT && r == 0)
		r = -errno;
	return r;
}

int rm_rf(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	return rm_rf_at(AT_FDCWD, path, st.st_dev);
}

#define COPY_CHUNK (1 << 20)

/* pread/pwrite where copy_file_range cannot (another file system on an
 * older kernel, or a jail without it). */
static int copy_plain(int in, int out, off_t off, off_t len)
{
	_cleanup_free_ char *buf = malloc(COPY_CHUNK);

	if (!buf)
		return -ENOMEM;
	while (len > 0) {
		ssize_t n = pread(in, buf, len < COPY_CHUNK ? (size_t)len : COPY_CHUNK, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		for (ssize_t done = 0; done < n;) {
			ssize_t w = pwrite(out, buf + done, (size_t)(n - done), off + done);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return w < 0 ? -errno : -EIO;
			done += w;
		}
		off += n;
		len -= n;
	}
	return 0;
}

int fd_copy_range(int in, int out, off_t off, off_t len)
{
	off_t in_off = off, out_off = off;

	while (len > 0) {
		ssize_t n = copy_file_range(in, &in_off, out, &out_off, (size_t)len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 &&
		    (errno == EXDEV || errno == EINVAL || errno == EOPNOTSUPP || errno == ENOSYS || errno == EPERM))
			return copy_plain(in, out, in_off, len);
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		len -= n;
	}
	return 0;
}

int fd_copy_sparse(int in, int out)
{
	struct stat st;
	off_t pos = 0;

	if (fstat(in, &st) < 0)
		return -errno;
	/* Sized first: what is not copied below stays a hole. */
	if (ftruncate(out, 0) < 0 || ftruncate(out, st.st_size) < 0)
		return -errno;
	while (pos < st.st_size) {
		off_t data = lseek(in, pos, SEEK_DATA), hole;
		int r;

		if (data < 0 && errno == ENXIO)
			break; /* only a hole is left */
		if (data < 0)
			return -errno;
		hole = lseek(in, data, SEEK_HOLE);
		if (hole < 0)
			return -errno;
		if (hole > st.st_size)
			hole = st.st_size;
		r = fd_copy_range(in, out, data, hole - data);
		if (r < 0)
			return r;
		pos = hole;
	}
	return 0;
}

void stdio_to_null(void)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return;
	for (int i = 0; i < 3; i++)
		dup2(fd, i);
	if (fd > 2)
		close(fd);
}

int fd_close_inherited(int from)
{
	DIR *d = opendir("/proc/self/fd");
	int fds[256], n = 0, closed = 0;
	struct dirent *de;

	if (!d)
		return -errno;
	/* Collected first: closing while reading the directory would close
	 * under readdir's feet. Past the array, another pass. */
	while ((de = readdir(d))) {
		char *end;
		long fd = strtol(de->d_name, &end, 10);
		int flags;

		if (*end || end == de->d_name || fd < from || fd == dirfd(d))
			continue;
		flags = fcntl((int)fd, F_GETFD);
		if (flags >= 0 && !(flags & FD_CLOEXEC) && n < (int)(sizeof(fds) / sizeof(fds[0])))
			fds[n++] = (int)fd;
	}
	closedir(d);
	for (int i = 0; i < n; i++)
		closed += close(fds[i]) == 0;
	if (n == (int)(sizeof(fds) / sizeof(fds[0]))) {
		int r = fd_close_inherited(from);

		return r < 0 ? r : closed + r;
	}
	return closed;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

int fd_close_all_except(const int *keep, size_t n)
{
	_cleanup_free_ int *sorted = malloc((n + 1) * sizeof(*sorted));
	unsigned int from = 0;
	size_t m = 0;

	if (!sorted)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (keep[i] >= 0)
			sorted[m++] = keep[i];
	qsort(sorted, m, sizeof(*sorted), cmp_int);
	for (size_t i = 0; i <= m; i++) {
		unsigned int to = i < m ? (unsigned int)sorted[i] : ~0u;

		if (to > from && close_range(from, to - 1, 0) < 0)
			return -errno;
		if (i < m)
			from = to + 1;
	}
	return 0;
}
