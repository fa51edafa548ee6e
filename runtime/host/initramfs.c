/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/hash.h"
#include "common/fileio.h"
#include "runtime/host/initramfs.h"

/* Bump when the layout below changes, so old cache entries are not used. */
#define INITRAMFS_FORMAT 1
#define INITRAMFS_MAX_INPUT (256u << 20)

struct cpio {
	uint8_t *p;
	size_t len, cap;
	uint32_t ino;
};

static int cpio_put(struct cpio *c, const void *data, size_t len)
{
	size_t pad = (4 - (len & 3)) & 3;

	if (c->len + len + pad > c->cap) {
		size_t cap = c->cap ? c->cap : 1 << 16;
		uint8_t *np;

		while (cap < c->len + len + pad)
			cap *= 2;
		np = realloc(c->p, cap);
		if (!np)
			return -ENOMEM;
		c->p = np;
		c->cap = cap;
	}
	if (len)
		memcpy(c->p + c->len, data, len);
	memset(c->p + c->len + len, 0, pad);
	c->len += len + pad;
	return 0;
}

/* One newc entry: header, name (NUL-terminated, padded), data (padded).
 * The 110-byte header plus the name is padded as one unit, which works
 * because 110 + namesize is what gets rounded up to 4. */
static int cpio_entry(struct cpio *c, const char *name, uint32_t mode, uint32_t rmaj, uint32_t rmin, const void *data,
                      size_t len)
{
	char hdr[110];
	size_t nlen = strlen(name) + 1;
	uint8_t *buf;
	int r;

	if (len > UINT32_MAX)
		return -EFBIG;
	const uint32_t f[13] = {++c->ino, mode, 0,    0,    S_ISDIR(mode) ? 2 : 1, 0, (uint32_t)len,
	                        0,        0,    rmaj, rmin, (uint32_t)nlen,        0};

	memcpy(hdr, "070701", 6);
	for (int i = 0; i < 13; i++) {
		static const char hex[] = "0123456789ABCDEF";

		for (int d = 0; d < 8; d++)
			hdr[6 + i * 8 + d] = hex[(f[i] >> (28 - 4 * d)) & 0xf];
	}
	buf = malloc(110 + nlen);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, hdr, 110);
	memcpy(buf + 110, name, nlen);
	r = cpio_put(c, buf, 110 + nlen);
	free(buf);
	if (r >= 0)
		r = cpio_put(c, data, len);
	return r;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static uint32_t key_add(uint32_t crc, const char *name, const void *data, size_t len)
{
	uint64_t n = len;

	crc = (uint32_t)crc32(crc, (const Bytef *)name, (uInt)strlen(name) + 1);
	crc = (uint32_t)crc32(crc, (const Bytef *)&n, sizeof(n));
	for (size_t off = 0; off < len;) {
		uInt chunk = (uInt)(len - off > (1u << 30) ? 1u << 30 : len - off);

		crc = (uint32_t)crc32(crc, (const Bytef *)data + off, chunk);
		off += chunk;
	}
	return crc;
}

static int add_file(struct cpio *c, const char *src, const char *dst, uint32_t mode, uint32_t *key)
{
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r;

	r = read_file_all(src, INITRAMFS_MAX_INPUT, &data, &len);
	if (r < 0)
		return err_setsys(r, "read %s", src);
	*key = key_add(*key, dst, data, len);
	return cpio_entry(c, dst, S_IFREG | mode, 0, 0, data, len);
}

static int add_modules(struct cpio *c, const char *const *mods, uint32_t *key)
{
	_cleanup_free_ char *list = strdup("");
	char dst[PATH_MAX];
	int r;

	if (!list)
		return -ENOMEM;
	for (const char *const *m = mods; *m; m++) {
		const char *bn = base_name(*m);
		char *nl;

		if (!bn[0] || strchr(bn, ' '))
			return err_set(-EINVAL, "bad module file name %s", *m);
		snprintf(dst, sizeof(dst), "lib/modules/kvrun/%s", bn);
		r = add_file(c, *m, dst, 0644, key);
		if (r < 0)
			return r;
		if (asprintf(&nl, "%s%s\n", list, bn) < 0)
			return -ENOMEM;
		free(list);
		list = nl;
	}
	*key = key_add(*key, "load-order", list, strlen(list));
	return cpio_entry(c, "lib/modules/kvrun/load-order", S_IFREG | 0644, 0, 0, list, strlen(list));
}

int initramfs_build(const struct initramfs_spec *spec, uint8_t **ret_buf, size_t *ret_len, uint32_t *ret_key)
{
	static const char *const dirs[] = {"dev", "proc", "sys",         "run",
	                                   "tmp", "lib",  "lib/modules", "lib/modules/kvrun"};
	bool mods = spec->modules && spec->modules[0];
	uint32_t key = INITRAMFS_FORMAT;
	struct cpio c = {0};
	int r = 0;

	if (!spec->init_path)
		return err_set(-EINVAL, "initramfs: no init binary");
	for (size_t i = 0; r >= 0 && i < ARRAY_SIZE(dirs); i++)
		if (mods || strncmp(dirs[i], "lib", 3) != 0)
			r = cpio_entry(&c, dirs[i], S_IFDIR | 0755, 0, 0, NULL, 0);
	/* The kernel opens /dev/console for init's stdio before devtmpfs exists. */
	if (r >= 0)
		r = cpio_entry(&c, "dev/console", S_IFCHR | 0600, 5, 1, NULL, 0);
	if (r >= 0)
		r = add_file(&c, spec->init_path, "init", 0755, &key);
	if (r >= 0 && mods)
		r = add_modules(&c, spec->modules, &key);
	if (r >= 0)
		r = cpio_entry(&c, "TRAILER!!!", 0, 0, 0, NULL, 0);
	if (r < 0) {
		free(c.p);
		return r;
	}
	*ret_buf = c.p;
	*ret_len = c.len;
	*ret_key = key;
	return 0;
}

/* What the inputs are, by identity (path, device, inode, size,
 * modification and change times; the change time moves with any change
 * to a file and cannot be set back): text for the index that names the
 * image without reading them. -errno when an input cannot be stat'ed (the
 * build then says what is wrong). */
static int inputs_text(const struct initramfs_spec *spec, char **ret, size_t *ret_len)
{
	FILE *out = open_memstream(ret, ret_len);
	int r = 0;

	if (!out)
		return -ENOMEM;
	fprintf(out, "kvrun initramfs inputs %d\n", INITRAMFS_FORMAT);
	for (size_t i = 0; r >= 0 && (i == 0 || (spec->modules && spec->modules[i - 1])); i++) {
		const char *path = i == 0 ? spec->init_path : spec->modules[i - 1];
		struct stat st;

		if (stat(path, &st) < 0)
			r = -errno;
		else
			fprintf(out, "%zu:%s %llu %llu %lld %lld.%09ld %lld.%09ld\n", strlen(path), path,
			        (unsigned long long)st.st_dev, (unsigned long long)st.st_ino, (long long)st.st_size,
			        (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, (long long)st.st_ctim.tv_sec,
			        st.st_ctim.tv_nsec);
	}
	if (fclose(out) != 0 && r >= 0)
		r = -ENOMEM;
	if (r < 0) {
		free(*ret);
		*ret = NULL;
	}
	return r;
}

/* The image the index names for these inputs, if it is there. */
static char *index_lookup(const char *index, const char *text, size_t tlen, const char *cache_dir)
{
	_cleanup_free_ char *saved = NULL;
	char *path = NULL;
	struct stat st;
	size_t len;

	if (read_file_all(index, tlen + PATH_MAX, &saved, &len) < 0 || len <= tlen || memcmp(saved, text, tlen) != 0 ||
	    strchr(saved + tlen, '/') || asprintf(&path, "%s/%s", cache_dir, saved + tlen) < 0)
		return NULL;
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
		free(path);
		return NULL;
	}
	return path;
}

/* Record that text's inputs make image path (not synced: a lost index is
 * a build). */
static void index_write(const char *index, const char *text, size_t tlen, const char *path)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t blen = strlen(base);
	_cleanup_free_ char *buf = malloc(tlen + blen);

	if (!buf)
		return;
	memcpy(buf, text, tlen);
	memcpy(buf + tlen, base, blen);
	write_file_replace(index, buf, tlen + blen, 0644);
}

int initramfs_get(const struct initramfs_spec *spec, const char *cache_dir, char **ret_path, int *ret_hit)
{
	_cleanup_free_ uint8_t *buf = NULL;
	_cleanup_free_ char *path = NULL, *text = NULL, *index = NULL;
	size_t len, tlen = 0;
	struct stat st;
	uint32_t key;
	int r;

	/* The inputs unchanged since an image was made from them: that image,
	 * without reading them (templates make this part of every create). */
	if (inputs_text(spec, &text, &tlen) >= 0) {
		if (asprintf(&index, "%s/initramfs-inputs-%016llx", cache_dir,
		             (unsigned long long)fnv1a64(text, tlen)) < 0)
			return -ENOMEM;
		path = index_lookup(index, text, tlen, cache_dir);
		if (path) {
			if (ret_hit)
				*ret_hit = 1;
			*ret_path = TAKE_PTR(path);
			return 0;
		}
	}
	/* Building in memory is cheap next to a boot (a few MB, no
	 * compression); it also gives the content hash that names the file. */
	r = initramfs_build(spec, &buf, &len, &key);
	if (r < 0)
		return r;
	if (asprintf(&path, "%s/initramfs-%08x-%zu.cpio", cache_dir, key, len) < 0)
		return -ENOMEM;
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size == len) {
		if (ret_hit)
			*ret_hit = 1;
	} else {
		r = mkdir_p(cache_dir, 0755);
		if (r < 0)
			return err_setsys(r, "create %s", cache_dir);
		r = write_file_atomic(path, buf, len, 0644);
		if (r < 0)
			return err_setsys(r, "write %s", path);
		if (ret_hit)
			*ret_hit = 0;
	}
	if (index)
		index_write(index, text, tlen, path);
	*ret_path = TAKE_PTR(path);
	return 0;
}
