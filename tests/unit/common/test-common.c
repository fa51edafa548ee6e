/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "common/error.h"
#include "common/fileio.h"
#include "tap.h"

TEST(err_set_and_prefix)
{
	err_clear();
	is_str(err_msg(), "");
	is_int(err_set(-EINVAL, "bad %s", "thing"), -EINVAL);
	is_str(err_msg(), "bad thing");
	is_int(err_prefix(-EINVAL, "config.json"), -EINVAL);
	is_str(err_msg(), "config.json: bad thing");
	err_clear();
	is_int(err_prefix(-ENOENT, "open x"), -ENOENT);
	is_str(err_msg(), "open x: No such file or directory");
	err_setsys(-EACCES, "open %s", "y");
	is_str(err_msg(), "open y: Permission denied");
}

TEST(atomic_write_and_read)
{
	char dir[] = "/tmp/kvrun-test-XXXXXX";
	char path[256], *buf = NULL;
	size_t len = 0;
	struct stat st;

	ok(mkdtemp(dir) != NULL, "mkdtemp");
	snprintf(path, sizeof(path), "%s/a/b/c", dir);
	is_int(mkdir_p(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/a/b/c/f", dir);
	is_int(write_file_atomic(path, "hello", 5, 0600), 0);
	is_int(read_file_all(path, 1 << 20, &buf, &len), 0);
	is_str(buf, "hello");
	is_int(len, 5);
	free(buf);
	is_int(read_file_all(path, 2, &buf, &len), -EFBIG);
	is_int(stat(path, &st), 0);
	is_int(st.st_mode & 0777, 0600);
	snprintf(path, sizeof(path), "%s/missing", dir);
	is_int(read_file_all(path, 10, &buf, &len), -ENOENT);
	is_int(rm_rf(dir), 0);
	ok(stat(dir, &st) < 0 && errno == ENOENT, "rm_rf removed the tree");
	is_int(rm_rf(dir), 0);
}

/* mkdir_p: the whole path first, the parents only when one is missing;
 * what exists already is fine, a file in the way is not. */
TEST(mkdir_p_paths)
{
	char dir[] = "/tmp/kvrun-test-XXXXXX";
	char path[256];
	mode_t um = umask(022);
	struct stat st;
	int fd;

	umask(um);
	ok(mkdtemp(dir) != NULL, "mkdtemp");
	snprintf(path, sizeof(path), "%s/a//b/c/", dir);
	is_int(mkdir_p(path, 0750), 0);
	snprintf(path, sizeof(path), "%s/a/b/c", dir);
	ok(stat(path, &st) == 0 && S_ISDIR(st.st_mode), "a//b/c/ made, doubled and trailing slashes too");
	is_int(st.st_mode & 0777, 0750 & ~um);
	snprintf(path, sizeof(path), "%s/a", dir);
	ok(stat(path, &st) == 0 && S_ISDIR(st.st_mode), "its parents made");
	snprintf(path, sizeof(path), "%s/a/b/c", dir);
	is_int(mkdir_p(path, 0755), 0);
	is_int(mkdir_p(dir, 0755), 0);
	is_int(mkdir_p("/", 0755), 0);
	snprintf(path, sizeof(path), "%s/a/f", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	ok(fd >= 0, "a file");
	close(fd);
	snprintf(path, sizeof(path), "%s/a/f/g/h", dir);
	is_int(mkdir_p(path, 0755), -ENOTDIR);
	is_int(mkdir_p("", 0755), -EINVAL);
	is_int(rm_rf(dir), 0);
}

TAP_MAIN()
