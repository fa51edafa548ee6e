/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "runtime/rootfs-image.h"

#define FREE_SPACE_MIN (256ULL << 20)
#define IMAGE_ALIGN (1ULL << 20)

/* nftw() has no user pointer; usage is computed on one thread at a time. */
static uint64_t usage_bytes, usage_inodes;

static int count_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)path;
	(void)flag;
	(void)ftw;
	/* ext4 stores small files in whole 4 KiB blocks: count at least one. */
	usage_bytes += st->st_blocks * 512ULL > 4096 ? (uint64_t)st->st_blocks * 512ULL : 4096;
	usage_inodes++;
	return 0;
}

int rootfs_dir_usage(const char *dir, uint64_t *ret_bytes, uint64_t *ret_inodes)
{
	usage_bytes = usage_inodes = 0;
	if (nftw(dir, count_entry, 64, FTW_PHYS | FTW_MOUNT) < 0)
		return err_setsys(-errno, "reading rootfs %s", dir);
	*ret_bytes = usage_bytes;
	*ret_inodes = usage_inodes;
	return 0;
}

/* Run mke2fs; its stderr goes to a pipe so that its message can be shown. */
static int run_mke2fs(const char *dir, const char *image, uint64_t inodes)
{
	char nino[32], errbuf[512] = "";
	int pfd[2], status;
	ssize_t n;
	size_t len = 0;
	pid_t pid;

	snprintf(nino, sizeof(nino), "%" PRIu64, inodes * 2 + 4096);
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return err_setsys(-errno, "pipe");
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return err_setsys(-errno, "fork");
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(pfd[1], STDERR_FILENO);
		/* No journal: the image lives as long as the container, and
		 * skipping it saves writing it at create time. */
		execlp("mke2fs", "mke2fs", "-q", "-F", "-t", "ext4", "-O", "^has_journal", "-N", nino, "-E",
		       "lazy_itable_init=1,nodiscard", "-d", dir, image, (char *)NULL);
		dprintf(STDERR_FILENO, "cannot run mke2fs: %m (install e2fsprogs)");
		_exit(127);
	}
	close(pfd[1]);
	while (len < sizeof(errbuf) - 1 && (n = read(pfd[0], errbuf + len, sizeof(errbuf) - 1 - len)) > 0)
		len += (size_t)n;
	errbuf[len] = 0;
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	while (len && (errbuf[len - 1] == '\n' || errbuf[len - 1] == ' '))
		errbuf[--len] = 0;
	for (char *p = errbuf; *p; p++)
		if (*p == '\n')
			*p = ' ';
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return err_set(-EIO, "building the root disk from %s failed: %s", dir,
		               *errbuf ? errbuf : "mke2fs failed");
	return 0;
}

int rootfs_image_build(const char *dir, const char *image)
{
	uint64_t used, inodes, size;
	int fd, r;

	r = rootfs_dir_usage(dir, &used, &inodes);
	if (r < 0)
		return r;
	/* Metadata (inode tables, bitmaps) is about 2% plus the inodes. */
	size = used + used / 16 + inodes * 256 + (16ULL << 20);
	size += used > FREE_SPACE_MIN ? used : FREE_SPACE_MIN;
	size = (size + IMAGE_ALIGN - 1) & ~(IMAGE_ALIGN - 1);
	fd = open(image, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return err_setsys(-errno, "create %s", image);
	r = ftruncate(fd, (off_t)size) < 0 ? err_setsys(-errno, "size %s", image) : 0;
	close(fd);
	if (r >= 0)
		r = run_mke2fs(dir, image, inodes);
	if (r < 0)
		unlink(image);
	else
		log_debug("root disk %s: %" PRIu64 " MiB for %" PRIu64 " MiB in %" PRIu64 " files", image, size >> 20,
		          used >> 20, inodes);
	return r;
}
