/* SPDX-License-Identifier: Apache-2.0 */
/* The root disk cache: hits share one image by hard link, any change to
 * the rootfs or its mount points is a new image, a key that differs is
 * never served, a missing image is rebuilt, pruning keeps what containers
 * use and drops the least recently used, failures leave nothing. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "runtime/host/rootfs-cache.h"
#include "tap.h"

static char tmp[] = "/tmp/kvrun-rootfs-cache-XXXXXX";
static char rootfs[2048], cache[256];
static bool have_tools;

struct ctr {
	char dir[300], disk[320], base[320];
	int lock;
};

static void ctr_init(struct ctr *c, const char *name)
{
	snprintf(c->dir, sizeof(c->dir), "%s/%s", tmp, name);
	snprintf(c->disk, sizeof(c->disk), "%s/rootfs.img", c->dir);
	snprintf(c->base, sizeof(c->base), "%s/rootfs.base", c->dir);
	mkdir(c->dir, 0700);
	c->lock = -1;
}

static int prepare(struct ctr *c, const char *cache_dir, const struct rootfs_mount_point *pts, size_t n)
{
	return rootfs_disk_prepare(&(struct rootfs_disk_req){.rootfs = rootfs,
	                                                     .cache_dir = cache_dir,
	                                                     .cache_max = 1ULL << 40,
	                                                     .disk = c->disk,
	                                                     .base_link = c->base,
	                                                     .points = pts,
	                                                     .npoints = n},
	                           &c->lock);
}

static void ctr_remove(struct ctr *c)
{
	if (c->lock >= 0)
		close(c->lock);
	c->lock = -1;
	unlink(c->disk);
	unlink(c->base);
	rmdir(c->dir);
}

/* Files in the cache whose names end with suffix. */
static int count(const char *suffix)
{
	DIR *d = opendir(cache);
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d))) {
		size_t l = strlen(de->d_name), m = strlen(suffix);

		n += l >= m && strcmp(de->d_name + l - m, suffix) == 0;
	}
	if (d)
		closedir(d);
	return n;
}

static ino_t ino_of(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_ino : 0;
}

/* Whether someone holds the image locked (in use): an exclusive lock
 * cannot be had. */
static bool in_use(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool used = fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0;

	if (fd >= 0)
		close(fd);
	return used;
}

/* The one file of the cache with suffix (the first found). */
static void find_one(const char *suffix, char *out, size_t len)
{
	DIR *d = opendir(cache);
	struct dirent *de;

	out[0] = 0;
	while (d && (de = readdir(d))) {
		size_t l = strlen(de->d_name), m = strlen(suffix);

		if (l >= m && strcmp(de->d_name + l - m, suffix) == 0) {
			snprintf(out, len, "%s/%s", cache, de->d_name);
			break;
		}
	}
	if (d)
		closedir(d);
}

/* The cached image with inode ino. */
static void find_ino(ino_t ino, char *out, size_t len)
{
	DIR *d = opendir(cache);
	struct dirent *de;

	out[0] = 0;
	while (d && (de = readdir(d))) {
		char p[600];

		snprintf(p, sizeof(p), "%s/%s", cache, de->d_name);
		if (ino_of(p) == ino) {
			snprintf(out, len, "%s", p);
			break;
		}
	}
	if (d)
		closedir(d);
}

static bool image_file_is(const char *img, const char *path, const char *want)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "debugfs -R 'cat %s' %s 2>/dev/null | grep -qx '%s'", path, img, want);
	return system(cmd) == 0;
}

TEST(setup)
{
	char motd[2100];

	have_tools = system("command -v mke2fs >/dev/null 2>&1 && command -v debugfs >/dev/null 2>&1") == 0;
	if (!have_tools)
		tap_skip_all("mke2fs/debugfs (e2fsprogs) not installed");
	if (!mkdtemp(tmp))
		tap_skip_all("mkdtemp failed");
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", tmp);
	snprintf(cache, sizeof(cache), "%s/cache/rootfs", tmp);
	snprintf(motd, sizeof(motd), "%s/etc/motd", rootfs);
	is_int(mkdir_p(rootfs, 0755), 0);
	is_int(mkdir_p(motd, 0755), 0);
	rmdir(motd);
	is_int(write_file_atomic(motd, "hello\n", 6, 0644), 0);
}

TEST(hits_share_one_image)
{
	struct ctr a, b;
	char img[512];

	ctr_init(&a, "a");
	ctr_init(&b, "b");
	is_int(prepare(&a, cache, NULL, 0), 1);
	is_int(count(".img"), 1);
	is_int(count(".key"), 1);
	find_one(".img", img, sizeof(img));
	ok(ino_of(a.base) == ino_of(img), "the container's base leads to the cached image");
	ok(a.lock >= 0 && in_use(img), "create holds the image locked");
	ok(image_file_is(img, "/etc/motd", "hello"), "the image holds the rootfs");
	{
		struct stat st;

		ok(stat(a.disk, &st) == 0 && st.st_size == 0, "the overlay is an empty file");
	}
	is_int(prepare(&b, cache, NULL, 0), 1);
	is_int(count(".img"), 1);
	ok(ino_of(b.base) == ino_of(img), "the second container links the same image");
	ctr_remove(&a);
	ok(in_use(img), "still in use by the second container");
	ctr_remove(&b);
	ok(!in_use(img), "unused once both are gone");
}

TEST(changes_make_new_images)
{
	struct rootfs_mount_point pt = {.path = "/data", .file = false};
	struct ctr c;
	char motd[2100], img[512];
	int before = count(".img");

	snprintf(motd, sizeof(motd), "%s/etc/motd", rootfs);
	/* Same size, new content. */
	is_int(write_file_atomic(motd, "HELLO\n", 6, 0644), 0);
	ctr_init(&c, "c");
	is_int(prepare(&c, cache, NULL, 0), 1);
	is_int(count(".img"), before + 1);
	snprintf(img, sizeof(img), "%s", c.base);
	ok(image_file_is(img, "/etc/motd", "HELLO"), "the new image has the new content");
	ctr_remove(&c);
	/* Only the mode. */
	chmod(motd, 0600);
	ctr_init(&c, "c");
	is_int(prepare(&c, cache, NULL, 0), 1);
	is_int(count(".img"), before + 2);
	ctr_remove(&c);
	/* Only a mount point to create. */
	ctr_init(&c, "c");
	is_int(prepare(&c, cache, &pt, 1), 1);
	is_int(count(".img"), before + 3);
	{
		char cmd[700];

		snprintf(cmd, sizeof(cmd), "debugfs -R 'stat /data' %s 2>/dev/null | grep -q 'Type: directory'",
		         c.base);
		ok(system(cmd) == 0, "the mount point is in that image");
	}
	ctr_remove(&c);
}

/* A tree like an engine's rootfs over shared layers: new directories, an
 * empty file and a symlink, and the data file app (a hard link to
 * shared_app, or a copy when copy). */
static void make_tree(const char *root, const char *shared_app, bool copy, const char *link_target)
{
	char p[2048];

	snprintf(p, sizeof(p), "%s/etc", root);
	mkdir_p(p, 0755);
	snprintf(p, sizeof(p), "%s/bin", root);
	mkdir_p(p, 0755);
	snprintf(p, sizeof(p), "%s/etc/hosts", root);
	write_file_atomic(p, "", 0, 0644);
	snprintf(p, sizeof(p), "%s/etc/mtab", root);
	if (symlink(link_target, p) < 0)
		abort();
	snprintf(p, sizeof(p), "%s/bin/app", root);
	if (copy ? write_file_atomic(p, "#!/bin/sh\n", 10, 0755) < 0 : link(shared_app, p) < 0)
		abort();
}

TEST(engine_style_rootfs_hits)
{
	char saved[2048], shared[300], o[4][300];
	ino_t img[4];
	struct ctr c;

	snprintf(saved, sizeof(saved), "%s", rootfs);
	snprintf(shared, sizeof(shared), "%s/layer-app", tmp);
	is_int(write_file_atomic(shared, "#!/bin/sh\n", 10, 0755), 0);
	for (int i = 0; i < 4; i++) {
		snprintf(o[i], sizeof(o[i]), "%s/o%d", tmp, i);
		/* 2: the data file a copy (another inode); 3: another symlink target. */
		make_tree(o[i], shared, i == 2, i == 3 ? "/proc/self/mounts" : "/proc/mounts");
	}
	for (int i = 0; i < 4; i++) {
		snprintf(rootfs, sizeof(rootfs), "%s", o[i]);
		ctr_init(&c, "o");
		is_int(prepare(&c, cache, NULL, 0), 1);
		img[i] = ino_of(c.base);
		ctr_remove(&c);
	}
	snprintf(rootfs, sizeof(rootfs), "%s", saved);
	ok(img[0] && img[0] == img[1], "new directories, empty file and symlink over the same data file: one image");
	ok(img[2] && img[2] != img[0], "the data file a copy (another inode): another image");
	ok(img[3] && img[3] != img[0], "another symlink target: another image");
}

TEST(no_cache_builds_a_private_image)
{
	struct ctr c;
	int before = count(".img");

	ctr_init(&c, "p");
	is_int(prepare(&c, NULL, NULL, 0), 0);
	ok(access(c.base, F_OK) < 0, "no base link");
	ok(image_file_is(c.disk, "/etc/motd", "HELLO"), "the disk is the whole image");
	is_int(count(".img"), before);
	ctr_remove(&c);
}

TEST(a_different_key_is_never_served)
{
	struct ctr c;
	char key[800], img[700];
	ino_t used;

	/* The current rootfs's entry, its key replaced by another text. */
	ctr_init(&c, "k");
	is_int(prepare(&c, cache, NULL, 0), 1);
	used = ino_of(c.base);
	ctr_remove(&c);
	find_ino(used, img, sizeof(img));
	snprintf(key, sizeof(key), "%.*s.key", (int)(strlen(img) - 4), img);
	is_int(write_file_atomic(key, "another rootfs\n", 15, 0600), 0);
	ctr_init(&c, "k");
	is_int(prepare(&c, cache, NULL, 0), 0);
	ok(access(c.base, F_OK) < 0, "not linked: a private image");
	ok(image_file_is(c.disk, "/etc/motd", "HELLO"), "the private image holds the rootfs");
	ctr_remove(&c);
	/* The image gone too: the entry is rebuilt with the right key. */
	unlink(img);
	ctr_init(&c, "k");
	is_int(prepare(&c, cache, NULL, 0), 1);
	ok(ino_of(c.base) == ino_of(img), "rebuilt in place");
	ctr_remove(&c);
}

TEST(failures_leave_nothing)
{
	struct ctr c;
	char saved[2048];
	DIR *d;
	int n = 0;

	snprintf(saved, sizeof(saved), "%s", rootfs);
	snprintf(rootfs, sizeof(rootfs), "%s/missing", tmp);
	ctr_init(&c, "f");
	ok(prepare(&c, cache, NULL, 0) == -ENOENT, "a missing rootfs: -ENOENT (%s)", err_msg());
	err_clear();
	d = opendir(c.dir);
	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	is_int(n, 2); /* . and .. */
	ctr_remove(&c);
	snprintf(rootfs, sizeof(rootfs), "%s", saved);
}

static void age(const char *path, time_t secs)
{
	struct timespec ts[2];

	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[0].tv_sec -= secs;
	ts[1] = ts[0];
	utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW);
}

TEST(prune_keeps_used_and_recent_images)
{
	struct ctr c;
	char used_img[512], tmp_old[600], tmp_new[600];
	int images = count(".img");

	ok(images >= 3, "several unused images to prune (%d)", images);
	/* One in use. */
	ctr_init(&c, "u");
	is_int(prepare(&c, cache, NULL, 0), 1);
	snprintf(used_img, sizeof(used_img), "%s", c.base);
	snprintf(tmp_old, sizeof(tmp_old), "%s/0000000000000000.img.tmp-1", cache);
	snprintf(tmp_new, sizeof(tmp_new), "%s/0000000000000001.img.tmp-1", cache);
	is_int(write_file_atomic(tmp_old, "x", 1, 0600), 0);
	is_int(write_file_atomic(tmp_new, "x", 1, 0600), 0);
	age(tmp_old, 2 * 3600);
	/* A budget as big as everything: only the abandoned build goes. */
	is_int(rootfs_cache_prune(cache, 1ULL << 40), 0);
	ok(access(tmp_old, F_OK) < 0, "a build abandoned for two hours is removed");
	ok(access(tmp_new, F_OK) == 0, "a build in progress is kept");
	unlink(tmp_new);
	is_int(count(".img"), images);
	/* No budget: every unused image goes, the used one stays. */
	ok(rootfs_cache_prune(cache, 0) == images - 1, "every unused image removed");
	is_int(count(".img"), 1);
	is_int(count(".key"), 1);
	ok(ino_of(c.base) != 0 && in_use(c.base), "the image in use is kept");
	ctr_remove(&c);
}

TEST(prune_drops_the_least_recently_used_first)
{
	char motd[2100];
	struct ctr c;
	char older[512], left[512];
	struct stat st;
	ino_t newer;

	snprintf(motd, sizeof(motd), "%s/etc/motd", rootfs);
	/* The image left by the last test becomes the older one. */
	find_one(".img", older, sizeof(older));
	age(older, 600);
	is_int(write_file_atomic(motd, "third\n", 6, 0644), 0);
	ctr_init(&c, "l");
	is_int(prepare(&c, cache, NULL, 0), 1);
	newer = ino_of(c.base);
	stat(c.base, &st);
	ctr_remove(&c);
	/* Room for one: the older goes. */
	is_int(rootfs_cache_prune(cache, (uint64_t)st.st_blocks * 512), 1);
	ok(access(older, F_OK) < 0, "the least recently used image is removed");
	is_int(count(".img"), 1);
	find_one(".img", left, sizeof(left));
	ok(ino_of(left) == newer, "the recently used one is kept");
}

TEST(cleanup)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	is_int(system(cmd), 0);
}

TAP_MAIN()
