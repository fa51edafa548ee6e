/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "config.h"
#include "runtime/host/install-paths.h"

const char *install_dir_configured(enum install_dir dir)
{
	switch (dir) {
	case INSTALL_BINDIR:
		return KVRUN_BINDIR;
	case INSTALL_LIBEXECDIR:
		return KVRUN_LIBEXECDIR;
	case INSTALL_DATADIR:
		return KVRUN_DATADIR;
	}
	return KVRUN_DATADIR;
}

int install_root(const char *exe, char **ret)
{
	char buf[PATH_MAX];
	const char *bindir = KVRUN_BINDIR;
	size_t n, blen = strlen(bindir);
	char *slash;

	if (!exe) {
		ssize_t len = readlink("/proc/self/exe", buf, sizeof(buf) - 1);

		if (len <= 0)
			len = 0;
		buf[len] = 0;
	} else {
		if (strlen(exe) >= sizeof(buf))
			return -ENAMETOOLONG;
		strcpy(buf, exe);
	}
	slash = strrchr(buf, '/');
	n = slash ? (size_t)(slash - buf) : 0;
	/* The binary's directory is <root><bindir>: the root is what comes
	 * before; anything else (the build tree) has none. */
	if (n > blen && !strncmp(buf + n - blen, bindir, blen) && bindir[0] == '/')
		*ret = strndup(buf, n - blen);
	else
		*ret = strdup("");
	return *ret ? 0 : -ENOMEM;
}

int install_path(enum install_dir dir, const char *rel, char **ret)
{
	_cleanup_free_ char *root = NULL;
	int r = install_root(NULL, &root);

	if (r < 0)
		return r;
	if (asprintf(ret, "%s%s%s%s", root, install_dir_configured(dir), rel ? "/" : "", rel ? rel : "") < 0)
		return -ENOMEM;
	return 0;
}

int install_default_kernel(char **ret)
{
	return install_path(INSTALL_DATADIR, "kernel/vmlinux", ret);
}
