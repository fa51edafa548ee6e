/* SPDX-License-Identifier: Apache-2.0 */
/* The initramfs cpio: parsed back entry by entry, and the cache. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fileio.h"
#include "runtime/host/initramfs.h"
#include "tap.h"

struct entry {
	char name[128];
	unsigned int mode, size, rmaj, rmin;
	const uint8_t *data;
};

static unsigned int hex8(const uint8_t *p)
{
	char b[9];

	memcpy(b, p, 8);
	b[8] = '\0';
	return (unsigned int)strtoul(b, NULL, 16);
}

/* Parse a newc archive into at most max entries; -1 on a format error. */
static int parse(const uint8_t *p, size_t len, struct entry *e, int max)
{
	size_t off = 0;
	int n = 0;

	while (off + 110 <= len && n < max) {
		unsigned int nsz;

		if (memcmp(p + off, "070701", 6) != 0)
			return -1;
		e[n].mode = hex8(p + off + 14);
		e[n].size = hex8(p + off + 54);
		e[n].rmaj = hex8(p + off + 78);
		e[n].rmin = hex8(p + off + 86);
		nsz = hex8(p + off + 94);
		if (nsz == 0 || nsz > sizeof(e[n].name) || off + 110 + nsz > len || p[off + 110 + nsz - 1] != '\0')
			return -1;
		memcpy(e[n].name, p + off + 110, nsz);
		off = (off + 110 + nsz + 3) & ~(size_t)3;
		if (off + e[n].size > len)
			return -1;
		e[n].data = p + off;
		off = (off + e[n].size + 3) & ~(size_t)3;
		if (strcmp(e[n++].name, "TRAILER!!!") == 0)
			return off == len ? n : -1;
	}
	return -1;
}

static const struct entry *find(const struct entry *e, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(e[i].name, name) == 0)
			return &e[i];
	return NULL;
}

static char dir[] = "/tmp/kvrun-initramfs-XXXXXX";
static char init_path[256], mod_a[256], mod_b[256], cache[256];

static void make_inputs(void)
{
	ok(mkdtemp(dir) != NULL, "mkdtemp");
	snprintf(init_path, sizeof(init_path), "%s/kvrun-init", dir);
	snprintf(mod_a, sizeof(mod_a), "%s/vsock.ko", dir);
	snprintf(mod_b, sizeof(mod_b), "%s/virtio_vsock.ko", dir);
	snprintf(cache, sizeof(cache), "%s/cache/sub", dir);
	write_file_atomic(init_path,
	                  "\x7f"
	                  "ELF fake init",
	                  14, 0755);
	write_file_atomic(mod_a, "modA", 4, 0644);
	write_file_atomic(mod_b, "module-b!", 9, 0644);
}

TEST(layout_without_modules)
{
	struct initramfs_spec spec = {.init_path = init_path};
	struct entry e[32];
	uint8_t *buf;
	size_t len;
	uint32_t key;
	int n;

	make_inputs();
	is_int(initramfs_build(&spec, &buf, &len, &key), 0);
	ok(len % 4 == 0, "archive is 4-byte aligned");
	n = parse(buf, len, e, 32);
	ok(n > 0, "parses as newc (%d entries)", n);
	const struct entry *init = find(e, n, "init");
	ok(init && init->mode == (S_IFREG | 0755) && init->size == 14, "init is a 0755 file of 14 bytes");
	ok(init && memcmp(init->data,
	                  "\x7f"
	                  "ELF fake init",
	                  14) == 0,
	   "init content");
	const struct entry *con = find(e, n, "dev/console");
	ok(con && con->mode == (S_IFCHR | 0600) && con->rmaj == 5 && con->rmin == 1, "dev/console 5:1");
	static const char *const dirs[] = {"dev", "proc", "sys", "run", "tmp"};
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		const struct entry *d = find(e, n, dirs[i]);

		ok(d && d->mode == (S_IFDIR | 0755), "directory %s", dirs[i]);
	}
	ok(!find(e, n, "lib/modules/kvrun/load-order"), "no module list without modules");
	free(buf);
}

TEST(modules_and_cache)
{
	const char *mods[] = {mod_a, mod_b, NULL};
	struct initramfs_spec spec = {.init_path = init_path, .modules = mods};
	char *p1 = NULL, *p2 = NULL, *p3 = NULL, *data = NULL;
	struct entry e[32];
	struct stat st1, st2;
	size_t len;
	int hit = -1, n;

	is_int(initramfs_get(&spec, cache, &p1, &hit), 0);
	is_int(hit, 0);
	is_int(read_file_all(p1, 1 << 20, &data, &len), 0);
	n = parse((uint8_t *)data, len, e, 32);
	ok(n > 0, "cached file parses (%d entries)", n);
	const struct entry *a = find(e, n, "lib/modules/kvrun/vsock.ko");
	const struct entry *b = find(e, n, "lib/modules/kvrun/virtio_vsock.ko");
	const struct entry *lo = find(e, n, "lib/modules/kvrun/load-order");
	ok(a && a->size == 4 && a->mode == (S_IFREG | 0644), "module a");
	ok(b && b->size == 9 && memcmp(b->data, "module-b!", 9) == 0, "module b");
	ok(lo && lo->size == strlen("vsock.ko\nvirtio_vsock.ko\n") &&
	       memcmp(lo->data, "vsock.ko\nvirtio_vsock.ko\n", lo->size) == 0,
	   "load-order lists the modules in order");
	ok(find(e, n, "lib/modules/kvrun") != NULL, "module directory");
	free(data);

	stat(p1, &st1);
	is_int(initramfs_get(&spec, cache, &p2, &hit), 0);
	is_int(hit, 1);
	is_str(p2, p1);
	stat(p2, &st2);
	ok(st1.st_ino == st2.st_ino && st1.st_mtime == st2.st_mtime, "cache hit reuses the same file");
	{
		/* The inputs' index names the image; without the image it is a build. */
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "ls %s/initramfs-inputs-* >/dev/null 2>&1", cache);
		is_int(system(cmd), 0);
		unlink(p1);
		free(p2);
		p2 = NULL;
		is_int(initramfs_get(&spec, cache, &p2, &hit), 0);
		is_int(hit, 0);
		is_str(p2, p1);
		ok(access(p1, R_OK) == 0, "the image is written again");
	}

	/* A changed input is a different image. */
	write_file_atomic(mod_b, "module-B!", 9, 0644);
	is_int(initramfs_get(&spec, cache, &p3, &hit), 0);
	is_int(hit, 0);
	ok(strcmp(p3, p1) != 0, "new content, new cache entry");

	spec.init_path = "/nonexistent/kvrun-init";
	free(p2);
	p2 = NULL;
	is_int(initramfs_get(&spec, cache, &p2, &hit), -ENOENT);
	free(p1);
	free(p2);
	free(p3);
	rm_rf(dir);
}

TAP_MAIN()
