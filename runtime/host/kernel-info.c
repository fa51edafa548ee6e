/* SPDX-License-Identifier: Apache-2.0 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "runtime/host/kernel-info.h"

/* Linux's UTS release is at most 64 bytes. */
#define RELEASE_MAX 65

/* Copy the release (up to the first space or NUL) starting at p, with at
 * most end - p bytes; -ENOENT when it is empty, not printable, or could
 * name another directory (it becomes a path component). */
static int copy_release(const char *p, const char *end, char **ret)
{
	size_t n = 0;

	while (p + n < end && n < RELEASE_MAX && p[n] > ' ' && p[n] < 0x7f && p[n] != '/')
		n++;
	if (n == 0 || n == RELEASE_MAX || (p + n < end && p[n] != ' ' && p[n] != '\0'))
		return -ENOENT;
	if (p[0] == '.' && (n == 1 || (n == 2 && p[1] == '.')))
		return -ENOENT;
	*ret = strndup(p, n);
	return *ret ? 0 : -ENOMEM;
}

/* bzImage boot protocol: "HdrS" at 0x202, the protocol version at 0x206,
 * and at 0x20e the offset (from 0x200) of a NUL-terminated string that
 * starts with the release ("6.1.0-57-cloud-amd64 (debian-kernel@...) #1"). */
static int bzimage_version(const uint8_t *b, size_t len, char **ret)
{
	uint16_t proto, off;

	if (len < 0x210 || memcmp(b + 0x202, "HdrS", 4) != 0)
		return -ENOEXEC;
	proto = (uint16_t)(b[0x206] | b[0x207] << 8);
	off = (uint16_t)(b[0x20e] | b[0x20f] << 8);
	if (proto < 0x200 || off == 0 || 0x200u + off >= len)
		return -ENOENT;
	return copy_release((const char *)b + 0x200 + off, (const char *)b + len, ret);
}

/* An ELF vmlinux has linux_banner, "Linux version 6.12.5 (user@host) ...";
 * the same words also occur in format strings ("Linux version %s"), so the
 * first occurrence followed by a digit wins. */
static int banner_version(const uint8_t *b, size_t len, char **ret)
{
	static const char needle[] = "Linux version ";
	const size_t nlen = sizeof(needle) - 1;
	const uint8_t *p = b, *end = b + len;

	while ((p = memmem(p, (size_t)(end - p), needle, nlen)) != NULL) {
		p += nlen;
		if (p < end && *p >= '0' && *p <= '9' && copy_release((const char *)p, (const char *)end, ret) == 0)
			return 0;
	}
	return -ENOENT;
}

/* Where an ELF64 vmlinux keeps .rodata (linux_banner is at its start):
 * 0 and the range, or -ENOENT when buf is no such file or has no such
 * section. Every offset is checked against len. */
static int elf_rodata(const uint8_t *b, size_t len, size_t *ret_off, size_t *ret_size)
{
	Elf64_Ehdr eh;
	Elf64_Shdr strs, sh;

	/* Copies, not casts: a file's offsets need not be aligned. */
	if (len < sizeof(eh) || memcmp(b, ELFMAG, SELFMAG) != 0 || b[EI_CLASS] != ELFCLASS64)
		return -ENOENT;
	memcpy(&eh, b, sizeof(eh));
	if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > len ||
	    (len - eh.e_shoff) / sizeof(Elf64_Shdr) < eh.e_shnum || eh.e_shstrndx >= eh.e_shnum)
		return -ENOENT;
	memcpy(&strs, b + eh.e_shoff + (size_t)eh.e_shstrndx * sizeof(sh), sizeof(strs));
	if (strs.sh_offset > len || strs.sh_size > len - strs.sh_offset)
		return -ENOENT;
	for (unsigned int i = 0; i < eh.e_shnum; i++) {
		memcpy(&sh, b + eh.e_shoff + (size_t)i * sizeof(sh), sizeof(sh));
		if (sh.sh_name >= strs.sh_size || strs.sh_size - sh.sh_name < sizeof(".rodata") ||
		    memcmp(b + strs.sh_offset + sh.sh_name, ".rodata", sizeof(".rodata")) != 0)
			continue;
		if (sh.sh_type != SHT_PROGBITS || sh.sh_offset > len || sh.sh_size > len - sh.sh_offset)
			return -ENOENT;
		*ret_off = sh.sh_offset;
		*ret_size = sh.sh_size;
		return 0;
	}
	return -ENOENT;
}

int kernel_version_from_image(const void *buf, size_t len, char **ret)
{
	size_t off, size;
	int r = bzimage_version(buf, len, ret);

	if (r != -ENOEXEC)
		return r;
	/* .rodata first: a vmlinux is tens of MB, its banner near the start
	 * of .rodata. */
	if (elf_rodata(buf, len, &off, &size) == 0 && banner_version((const uint8_t *)buf + off, size, ret) == 0)
		return 0;
	return banner_version(buf, len, ret);
}

int kernel_version_read(const char *path, char **ret)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	void *map;
	int r;

	if (fd < 0)
		return err_setsys(-errno, "kernel %s", path);
	if (fstat(fd, &st) < 0)
		return err_setsys(-errno, "kernel %s", path);
	if (st.st_size == 0)
		return -ENOENT;
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		return err_setsys(-errno, "map kernel %s", path);
	r = kernel_version_from_image(map, (size_t)st.st_size, ret);
	munmap(map, (size_t)st.st_size);
	return r;
}

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int kernel_module_dir(const char *kernel_path, const char *version, char **ret)
{
	_cleanup_free_ char *dir = strdup(kernel_path);
	char *slash, *p;

	*ret = NULL;
	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		if (asprintf(&p, "%s/../lib/modules/%s", *dir ? dir : "", version) < 0)
			return -ENOMEM;
		if (is_dir(p)) {
			*ret = realpath(p, NULL);
			free(p);
			return *ret ? 1 : -ENOMEM;
		}
		free(p);
	}
	if (asprintf(&p, "/lib/modules/%s", version) < 0)
		return -ENOMEM;
	if (is_dir(p)) {
		*ret = p;
		return 1;
	}
	free(p);
	return 0;
}

bool kernel_config_says_no_modules(const char *kernel_path)
{
	_cleanup_free_ char *cfg = NULL;
	_cleanup_fclose_ FILE *f = NULL;
	const char *slash = strrchr(kernel_path, '/');
	char line[256];

	if (asprintf(&cfg, "%.*sconfig", slash ? (int)(slash - kernel_path + 1) : 0, kernel_path) < 0)
		return false;
	f = fopen(cfg, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (!strcmp(line, "# CONFIG_MODULES is not set\n"))
			return true;
	return false;
}
