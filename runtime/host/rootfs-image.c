/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/progress.h"
#include "common/path.h"
#include "runtime/host/rootfs-image.h"

#define FREE_SPACE_MIN (256ULL << 20)
#define IMAGE_ALIGN (1ULL << 20)

/* nftw() has no user pointer; a scan runs on one thread at a time. */
static struct rootfs_scan *scan;
static size_t scan_prefix;

/* One entry's line of the key. What makes the content is in it, and no
 * more, so that engines' root filesystems hit: they are overlay mounts
 * whose image layers are shared but whose top layers (and so the root
 * directory, and docker's empty /etc/hosts and the like) are new for
 * every container. A directory's content is its entries, which have lines
 * of their own; an empty file's, a symlink's (its target) and a device
 * node's are all in the line. A file with data is known by its inode:
 * number, size, modification and change time; the change time moves with
 * every change to the inode (data, mode, owner, xattrs, links) and cannot
 * be set back, so another file cannot pass for it. The name's length comes
 * first: any byte may be in a name. */
static void key_line(FILE *out, const char *path, const char *rel, const struct stat *st)
{
	char target[PATH_MAX];
	ssize_t n;

	fprintf(out, "%zu:%s %o %u %u ", strlen(rel), rel, st->st_mode, st->st_uid, st->st_gid);
	if (S_ISDIR(st->st_mode)) {
		fputs("d\n", out);
	} else if (S_ISLNK(st->st_mode)) {
		n = readlink(path, target, sizeof(target) - 1);
		target[n < 0 ? 0 : n] = 0;
		fprintf(out, "l %zu:%s\n", strlen(target), target);
	} else if (S_ISREG(st->st_mode) && st->st_size == 0) {
		fprintf(out, "e %llu\n", (unsigned long long)st->st_nlink);
	} else if (S_ISREG(st->st_mode)) {
		fprintf(out, "f %lld %lld.%09ld %lld.%09ld %llu %llu\n", (long long)st->st_size,
		        (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec, (long long)st->st_ctim.tv_sec,
		        st->st_ctim.tv_nsec, (unsigned long long)st->st_ino, (unsigned long long)st->st_nlink);
	} else {
		fprintf(out, "n %llu\n", (unsigned long long)st->st_rdev);
	}
}

static int count_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)flag;
	(void)ftw;
	/* ext4 stores small files in whole 4 KiB blocks: count at least one. */
	scan->bytes += st->st_blocks * 512ULL > 4096 ? (uint64_t)st->st_blocks * 512ULL : 4096;
	scan->inodes++;
	if (scan->key_out)
		key_line(scan->key_out, path, path + scan_prefix, st);
	return 0;
}

int rootfs_scan(const char *dir, bool want_key, struct rootfs_scan *ret)
{
	int r = 0;

	*ret = (struct rootfs_scan){0};
	if (want_key && !(ret->key_out = open_memstream(&ret->key, &ret->key_len)))
		return -ENOMEM;
	scan = ret;
	scan_prefix = strlen(dir);
	if (nftw(dir, count_entry, 64, FTW_PHYS | FTW_MOUNT) < 0)
		r = err_setsys(-errno, "reading rootfs %s", dir);
	scan = NULL;
	if (ret->key_out && fclose(ret->key_out) != 0 && r >= 0)
		r = -ENOMEM;
	ret->key_out = NULL;
	if (r < 0)
		rootfs_scan_done(ret);
	return r;
}

void rootfs_scan_done(struct rootfs_scan *s)
{
	free(s->key);
	*s = (struct rootfs_scan){0};
}

/* Run an e2fsprogs tool with stdin from in_fd (or /dev/null when < 0) and
 * stdout to /dev/null; its stderr lands in errbuf (newlines made spaces,
 * the first skip_lines lines dropped). Returns the wait status or < 0. */
static int run_tool(char *const argv[], int in_fd, unsigned int skip_lines, char *errbuf, size_t errlen)
{
	char raw[2048];
	int pfd[2], status;
	ssize_t n;
	size_t len = 0;
	pid_t pid;
	char *p;

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

		dup2(in_fd >= 0 ? in_fd : null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(pfd[1], STDERR_FILENO);
		execvp(argv[0], argv);
		dprintf(STDERR_FILENO, "%scannot run %s: %m (install e2fsprogs)", skip_lines ? "\n" : "", argv[0]);
		_exit(127);
	}
	close(pfd[1]);
	while (len < sizeof(raw) - 1 && (n = read(pfd[0], raw + len, sizeof(raw) - 1 - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		len += (size_t)n;
	}
	raw[len] = 0;
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	p = raw;
	for (unsigned int i = 0; i < skip_lines && p; i++)
		p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL;
	len = p ? strlen(p) : 0;
	if (len >= errlen)
		len = errlen - 1;
	memcpy(errbuf, p ? p : "", len);
	errbuf[len] = 0;
	while (len && (errbuf[len - 1] == '\n' || errbuf[len - 1] == ' '))
		errbuf[--len] = 0;
	for (p = errbuf; *p; p++)
		if (*p == '\n')
			*p = ' ';
	return status;
}

static int run_mke2fs(const char *dir, const char *image, uint64_t inodes)
{
	char nino[32], errbuf[512];
	int status;

	snprintf(nino, sizeof(nino), "%" PRIu64, inodes * 2 + 4096);
	/* No journal: the image lives as long as the container, and skipping
	 * it saves writing it at create time. The inode tables written now
	 * (a few MiB at most: the inode count is fixed below): left lazy, the
	 * guest kernel's ext4lazyinit thread zeroes them after every mount,
	 * in the background of the container's start, a cost per container
	 * instead of once per image. */
	char *const argv[] = {"mke2fs",
	                      "-q",
	                      "-F",
	                      "-t",
	                      "ext4",
	                      "-O",
	                      "^has_journal",
	                      "-N",
	                      nino,
	                      "-E",
	                      "lazy_itable_init=0,nodiscard",
	                      "-d",
	                      (char *)dir,
	                      (char *)image,
	                      NULL};

	status = run_tool(argv, -1, 0, errbuf, sizeof(errbuf));
	if (status < 0)
		return status;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return err_set(-EIO, "building the root disk from %s failed: %s", dir,
		               *errbuf ? errbuf : "mke2fs failed");
	return 0;
}

struct made {
	char **paths;
	size_t n;
};

static bool made_has(const struct made *m, const char *path)
{
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->paths[i], path) == 0)
			return true;
	return false;
}

static int made_add(struct made *m, const char *path)
{
	char **np = realloc(m->paths, (m->n + 1) * sizeof(*np));

	if (!np)
		return -ENOMEM;
	m->paths = np;
	if (!(m->paths[m->n] = strdup(path)))
		return -ENOMEM;
	m->n++;
	return 0;
}

/* debugfs reads its commands with quotes; paths it cannot quote are left
 * for the guest to report. */
static bool quotable(const char *s)
{
	for (; *s; s++)
		if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20)
			return false;
	return true;
}

/* Commands for one mount point: each missing component of its resolved
 * path, the last an empty file when it is a file mount point. An existing
 * non-directory in the way is left for the guest to report, as runc's
 * mkdir would. */
static int plan_point(const char *dir, const struct rootfs_mount_point *pt, struct made *made, FILE *out)
{
	char path[PATH_MAX], full[PATH_MAX * 2];
	struct stat st;
	char *p;
	int r;

	r = path_resolve_in(dir, pt->path, path, sizeof(path));
	if (r < 0 || !path[0] || !quotable(path))
		return 0;
	for (p = path + 1;; p++) {
		bool last = !strchr(p, '/');

		p = last ? p + strlen(p) : strchr(p, '/');
		*p = '\0';
		snprintf(full, sizeof(full), "%s%s", dir, path);
		if (!made_has(made, path)) {
			if (lstat(full, &st) == 0) {
				if (!S_ISDIR(st.st_mode))
					return 0;
			} else if (last && pt->file) {
				char *slash = strrchr(path, '/');

				*slash = '\0';
				fprintf(out, "cd \"%s\"\nwrite /dev/null \"%s\"\n", path[0] ? path : "/", slash + 1);
				*slash = '/';
				fprintf(out, "sif \"%s\" mode 0100755\ncd /\n", path);
				r = made_add(made, path);
			} else {
				fprintf(out, "mkdir \"%s\"\n", path);
				r = made_add(made, path);
			}
			if (r < 0)
				return r;
		}
		if (last)
			return 0;
		*p = '/';
	}
}

int rootfs_mount_point_script(const char *dir, const struct rootfs_mount_point *points, size_t n, char **ret,
                              size_t *ret_len)
{
	struct made made = {0};
	FILE *out;
	int r = 0;

	*ret = NULL;
	*ret_len = 0;
	out = open_memstream(ret, ret_len);
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; r >= 0 && i < n; i++)
		if (points[i].path && points[i].path[0] == '/')
			r = plan_point(dir, &points[i], &made, out);
	if (fclose(out) != 0 && r >= 0)
		r = -ENOMEM;
	for (size_t i = 0; i < made.n; i++)
		free(made.paths[i]);
	free(made.paths);
	if (r < 0) {
		free(*ret);
		*ret = NULL;
	}
	return r;
}

/* Create the missing mount points in the image with debugfs: a failed
 * debugfs command leaves the file system inconsistent, so the script
 * only creates what does not exist, each path once. */
static int add_mount_points(const char *dir, const char *image, const struct rootfs_mount_point *points, size_t n)
{
	_cleanup_free_ char *script = NULL;
	_cleanup_close_ int fd = -1;
	char errbuf[512];
	size_t len;
	int r, status;

	r = rootfs_mount_point_script(dir, points, n, &script, &len);
	if (r < 0 || !len)
		return r;
	fd = memfd_create("kvrun-mount-points", MFD_CLOEXEC);
	if (fd < 0)
		return err_setsys(-errno, "memfd_create");
	r = write_all(fd, script, len);
	if (r < 0 || lseek(fd, 0, SEEK_SET) < 0)
		return err_setsys(r < 0 ? r : -errno, "mount point script");
	char *const argv[] = {"debugfs", "-w", "-f", "-", (char *)image, NULL};

	/* debugfs prints its version first and exits 0 even when a command
	 * failed: anything else on stderr is an error. */
	status = run_tool(argv, fd, 1, errbuf, sizeof(errbuf));
	if (status < 0)
		return status;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || *errbuf)
		return err_set(-EIO, "creating mount points in the root disk failed: %s",
		               *errbuf ? errbuf : "debugfs failed");
	return 0;
}

/* What mke2fs has written of the image so far (it is sparse). */
static uint64_t image_written(void *image)
{
	struct stat st;

	return stat(image, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
}

uint64_t rootfs_image_size(const struct rootfs_scan *s)
{
	/* Metadata (inode tables, bitmaps) is about 2% plus the inodes. */
	uint64_t size = s->bytes + s->bytes / 16 + s->inodes * 256 + (16ULL << 20);

	size += s->bytes > FREE_SPACE_MIN ? s->bytes : FREE_SPACE_MIN;
	return (size + IMAGE_ALIGN - 1) & ~(IMAGE_ALIGN - 1);
}

int rootfs_image_build_scanned(const char *dir, const struct rootfs_scan *s, const char *image,
                               const struct rootfs_mount_point *points, size_t n)
{
	uint64_t size = rootfs_image_size(s);
	int fd, r;

	fd = open(image, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return err_setsys(-errno, "create %s", image);
	r = ftruncate(fd, (off_t)size) < 0 ? err_setsys(-errno, "size %s", image) : 0;
	close(fd);
	if (r >= 0) {
		_cleanup_free_ char *what = NULL;
		struct progress *pg = NULL;

		if (asprintf(&what, "root disk image of %s", dir) >= 0)
			pg = progress_start(what, s->bytes, image_written, (void *)image);
		r = run_mke2fs(dir, image, s->inodes);
		progress_stop(pg);
	}
	if (r >= 0)
		r = add_mount_points(dir, image, points, n);
	if (r < 0)
		unlink(image);
	else
		log_debug("root disk %s: %" PRIu64 " MiB for %" PRIu64 " MiB in %" PRIu64 " files", image, size >> 20,
		          s->bytes >> 20, s->inodes);
	return r;
}

int rootfs_image_build(const char *dir, const char *image, const struct rootfs_mount_point *points, size_t n)
{
	struct rootfs_scan s;
	int r;

	r = rootfs_scan(dir, false, &s);
	if (r < 0)
		return r;
	r = rootfs_image_build_scanned(dir, &s, image, points, n);
	rootfs_scan_done(&s);
	return r;
}
