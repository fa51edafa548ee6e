/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/hash.h"
#include "common/fileio.h"
#include "common/log.h"
#include "runtime/host/rootfs-cache.h"

/* How long a create waits for a pruner to let go of a cached image. */
#define CACHE_LOCK_WAIT_MS (10 * 1000)

/* Raised whenever the images built for one key text would differ (mke2fs
 * options, the layout of the text). */
#define CACHE_FORMAT 2
#define ABANDONED_S (60 * 60)
#define ID_LEN 16

/* The whole key: the format, the image size, the mount point commands and
 * the rootfs's entries. */
static int make_key(const struct rootfs_disk_req *q, const struct rootfs_scan *s, char **ret, size_t *ret_len)
{
	_cleanup_free_ char *script = NULL;
	size_t slen;
	FILE *out;
	int r;

	r = rootfs_mount_point_script(q->rootfs, q->points, q->npoints, &script, &slen);
	if (r < 0)
		return r;
	out = open_memstream(ret, ret_len);
	if (!out)
		return -ENOMEM;
	fprintf(out, "kvrun root disk %d\nsize %" PRIu64 "\npoints %zu\n", CACHE_FORMAT, rootfs_image_size(s), slen);
	if (slen)
		fwrite(script, 1, slen, out);
	fwrite(s->key, 1, s->key_len, out);
	if (fclose(out) != 0) {
		free(*ret);
		return -ENOMEM;
	}
	return 0;
}

static int entry_path(const char *dir, const char *id, const char *suffix, char **ret)
{
	return asprintf(ret, "%s/%s%s", dir, id, suffix) < 0 ? -ENOMEM : 0;
}

/* 1: id's key holds exactly key; 0: no key; -EEXIST: another text (a
 * hash collision, or a key torn by a crash). */
static int key_matches(const char *path, const char *key, size_t len)
{
	_cleanup_free_ char *saved = NULL;
	size_t slen;
	int r;

	r = read_file_all(path, len + 1, &saved, &slen);
	if (r == -ENOENT)
		return 0;
	if (r < 0 && r != -EFBIG)
		return r;
	return r >= 0 && slen == len && memcmp(saved, key, len) == 0 ? 1 : -EEXIST;
}

/* Take the cached image for the container: open and share-lock it (a
 * pruner removes only images it can lock exclusively), check that the
 * name still leads to it (not removed between the open and the lock),
 * point the container's base link at it and make its empty overlay. 1 and
 * the locked fd, or 0 when the image is not there (any more). */
static int use_image(const struct rootfs_disk_req *q, const char *img, int *ret_lock)
{
	_cleanup_close_ int fd = open(img, O_RDONLY | O_CLOEXEC);
	_cleanup_close_ int ov = -1;
	struct stat a, b;

	if (fd < 0)
		return errno == ENOENT ? 0 : err_setsys(-errno, "open %s", img);
	/* A pruner holds its exclusive lock only while it removes the image:
	 * wait for that, not for ever. */
	for (int waited = 0; flock(fd, LOCK_SH | LOCK_NB) < 0; waited += 10) {
		struct timespec ts = {0, 10 * 1000 * 1000};

		if (errno == EINTR)
			continue;
		if (errno != EWOULDBLOCK)
			return err_setsys(-errno, "lock %s", img);
		if (waited >= CACHE_LOCK_WAIT_MS)
			return err_set(-EBUSY, "the root disk cache's image %s stayed locked for %d s", img,
			               CACHE_LOCK_WAIT_MS / 1000);
		nanosleep(&ts, NULL);
	}
	if (fstat(fd, &a) < 0 || stat(img, &b) < 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev)
		return 0;
	if (symlink(img, q->base_link) < 0)
		return err_setsys(-errno, "link %s to %s", q->base_link, img);
	ov = open(q->disk, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (ov < 0) {
		int r = err_setsys(-errno, "create %s", q->disk);

		unlink(q->base_link);
		return r;
	}
	/* Its modification time is its last use, for pruning. */
	futimens(fd, NULL);
	*ret_lock = TAKE_FD(fd);
	return 1;
}

/* Build the image for key into the cache: the key first, then the image
 * renamed into place, so that an image is never seen with another key. */
static int build_image(const struct rootfs_disk_req *q, const struct rootfs_scan *s, const char *keyp, const char *img,
                       const char *key, size_t len)
{
	_cleanup_free_ char *tmp = NULL;
	int r;

	if (asprintf(&tmp, "%s.tmp-%d", img, (int)getpid()) < 0)
		return -ENOMEM;
	unlink(tmp);
	r = rootfs_image_build_scanned(q->rootfs, s, tmp, q->points, q->npoints);
	if (r < 0)
		return r;
	r = write_file_replace(keyp, key, len, 0600);
	if (r < 0)
		r = err_setsys(r, "write %s", keyp);
	if (r >= 0 && rename(tmp, img) < 0)
		r = err_setsys(-errno, "rename %s", tmp);
	if (r < 0)
		unlink(tmp);
	return r;
}

/* 1 served from the cache, 0 the cache cannot serve this key (collision),
 * < 0 an error of the cache's (the caller builds a private image). */
static int from_cache(const struct rootfs_disk_req *q, const struct rootfs_scan *s, int *ret_lock)
{
	_cleanup_free_ char *key = NULL, *keyp = NULL, *img = NULL;
	char id[ID_LEN + 1];
	size_t len;
	int r;

	r = make_key(q, s, &key, &len);
	if (r < 0)
		return r;
	snprintf(id, sizeof(id), "%016" PRIx64, fnv1a64(key, len));
	if (entry_path(q->cache_dir, id, ".key", &keyp) < 0 || entry_path(q->cache_dir, id, ".img", &img) < 0)
		return -ENOMEM;
	r = mkdir_p(q->cache_dir, 0700);
	if (r < 0)
		return err_setsys(r, "create %s", q->cache_dir);
	r = key_matches(keyp, key, len);
	if (r == 1) {
		r = use_image(q, img, ret_lock);
		if (r != 0) {
			if (r > 0)
				log_debug("root disk: cached image %s", img);
			return r;
		}
	} else if (r == -EEXIST && access(img, F_OK) == 0) {
		log_debug("root disk: %s holds another rootfs's image", img);
		return 0;
	} else if (r < 0 && r != -EEXIST) {
		return err_setsys(r, "read %s", keyp);
	}
	r = build_image(q, s, keyp, img, key, len);
	if (r < 0)
		return r;
	log_debug("root disk: built into the cache as %s", img);
	r = use_image(q, img, ret_lock);
	/* Pruned at once by another create: served next time. */
	return r == 0 ? err_set(-ENOENT, "%s vanished", img) : r;
}

int rootfs_disk_prepare(const struct rootfs_disk_req *q, int *ret_lock)
{
	struct rootfs_scan s;
	int r;

	*ret_lock = -1;
	r = rootfs_scan(q->rootfs, q->cache_dir != NULL, &s);
	if (r < 0)
		return r;
	if (q->cache_dir) {
		r = from_cache(q, &s, ret_lock);
		if (r > 0 || r == -ENOMEM) {
			int p = r > 0 ? rootfs_cache_prune(q->cache_dir, q->cache_max) : 0;

			if (p < 0)
				log_debug("pruning %s: %s", q->cache_dir, strerror(-p));
			rootfs_scan_done(&s);
			return r;
		}
		/* mke2fs's own errors are the rootfs's: a private build would
		 * fail the same way. */
		if (r == -EIO) {
			rootfs_scan_done(&s);
			return r;
		}
		if (r < 0)
			log_debug("root disk cache: %s; building a private image", err_msg());
		err_clear();
	}
	r = rootfs_image_build_scanned(q->rootfs, &s, q->disk, q->points, q->npoints);
	rootfs_scan_done(&s);
	return r < 0 ? r : 0;
}

/* ---- pruning ------------------------------------------------------------ */

struct unused {
	char name[ID_LEN + 8];
	struct timespec used;
	uint64_t bytes;
	int fd; /* locked exclusively: no container uses it */
};

static int by_use(const void *a, const void *b)
{
	const struct unused *x = a, *y = b;

	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	if (x->used.tv_nsec != y->used.tv_nsec)
		return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
	return 0;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* name with its 4-character suffix (".img", ".key") replaced by suffix
 * into out (ID_LEN + 8 bytes); false when it does not fit. */
static bool other_file(const char *name, const char *suffix, char out[ID_LEN + 8])
{
	size_t n = strlen(name);

	if (n < 4 || n - 4 + strlen(suffix) >= ID_LEN + 8)
		return false;
	memcpy(out, name, n - 4);
	strcpy(out + n - 4, suffix);
	return true;
}

/* Drop an image (locked by us): its key first, so that a create never
 * finds a key whose image is half gone. */
static void drop(int dfd, const char *img_name)
{
	char key[ID_LEN + 8];

	if (other_file(img_name, ".key", key))
		unlinkat(dfd, key, 0);
	unlinkat(dfd, img_name, 0);
}

/* A key whose image is gone (a build that died between the two). */
static bool orphan_key(int dfd, const char *name)
{
	char img[ID_LEN + 8];

	if (!has_suffix(name, ".key") || strlen(name) != ID_LEN + 4 || !other_file(name, ".img", img))
		return false;
	return faccessat(dfd, img, F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT;
}

/* An image no container uses: open and locked exclusively (fd), or -1. */
static int lock_unused(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

int rootfs_cache_prune(const char *dir, uint64_t max)
{
	struct unused *list = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	time_t now = time(NULL);
	struct dirent *de;
	int removed = 0, r = 0;
	DIR *d;

	d = opendir(dir);
	if (!d)
		return -errno;
	while (r >= 0 && (de = readdir(d))) {
		struct stat st;
		int fd;

		if (de->d_name[0] == '.' || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		/* ".tmp-": an image being built; ".tmp.": a key being written. */
		if (strstr(de->d_name, ".tmp") || orphan_key(dirfd(d), de->d_name)) {
			if (now - st.st_mtim.tv_sec > ABANDONED_S)
				unlinkat(dirfd(d), de->d_name, 0);
			continue;
		}
		if (!S_ISREG(st.st_mode) || !has_suffix(de->d_name, ".img") || strlen(de->d_name) >= sizeof(list->name))
			continue;
		fd = lock_unused(dirfd(d), de->d_name);
		if (fd < 0)
			continue;
		if (n == cap) {
			struct unused *nl = realloc(list, (cap = cap ? cap * 2 : 16) * sizeof(*list));

			if (!nl) {
				close(fd);
				r = -ENOMEM;
				break;
			}
			list = nl;
		}
		snprintf(list[n].name, sizeof(list[n].name), "%s", de->d_name);
		list[n].used = st.st_mtim;
		list[n].bytes = (uint64_t)st.st_blocks * 512;
		list[n].fd = fd;
		total += list[n++].bytes;
	}
	if (n)
		qsort(list, n, sizeof(*list), by_use);
	for (size_t i = 0; i < n; i++) {
		if (r >= 0 && total > max) {
			drop(dirfd(d), list[i].name);
			total -= list[i].bytes;
			removed++;
		}
		close(list[i].fd);
	}
	free(list);
	closedir(d);
	return r < 0 ? r : removed;
}
