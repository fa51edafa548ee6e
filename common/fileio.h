/* SPDX-License-Identifier: Apache-2.0 */
/* Whole-file helpers with errno-style returns. */
#ifndef KVRUN_COMMON_FILEIO_H
#define KVRUN_COMMON_FILEIO_H

#include <stddef.h>
#include <sys/types.h>

/* Read all of path (at most max bytes) into a NUL-terminated malloc'd buffer.
 * On success *ret_buf is owned by the caller and *ret_len (if not NULL) is
 * the length without the terminator. -EFBIG when the file exceeds max. */
int read_file_all(const char *path, size_t max, char **ret_buf, size_t *ret_len);

/* Write len bytes of data to path atomically: a temporary file in the same
 * directory, fsync'd, then renamed over path. */
int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode);

/* The same without the fsync, for caches: readers never see a partial
 * file, and a write lost in a crash is only a miss. */
int write_file_replace(const char *path, const void *data, size_t len, mode_t mode);

/* write() all of buf, retrying on EINTR and short writes. */
int write_all(int fd, const void *buf, size_t len);

/* mkdir -p with the given mode for created components. */
int mkdir_p(const char *path, mode_t mode);

/* rm -rf that does not follow symlinks and does not cross mount points. */
int rm_rf(const char *path);

/* Copy len bytes at off of in to the same offset of out, with
 * copy_file_range() (pread/pwrite where that cannot: another file system
 * on an older kernel, or a seccomp filter without it). */
int fd_copy_range(int in, int out, off_t off, off_t len);

/* Copy the file open as in to out (emptied and sized first): its data
 * with fd_copy_range(), its holes left holes. No path is opened. Negative
 * errno, no message, on failure. */
int fd_copy_sparse(int in, int out);

/* Close every descriptor of the process but the n in keep (negative ones
 * are ignored). 0 or a negative errno. */
int fd_close_all_except(const int *keep, size_t n);

/* Point stdin, stdout and stderr at /dev/null (best effort): a process
 * that must not hold the caller's stdio. */
void stdio_to_null(void);

/* Close every descriptor numbered from and up that is not close-on-exec:
 * those came from whoever started us (an engine's log file...), since
 * kvrun opens its own close-on-exec. A process that stands for the
 * container (the monitor, an exec proxy) keeps only stdio of them, as
 * runc's init keeps only stdio and --preserve-fds. Returns how many were
 * closed, or -errno when /proc/self/fd cannot be read. */
int fd_close_inherited(int from);

#endif
