/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kernel modules from the initramfs. kvrun writes the files and their
 * order at build time, so no dependency resolution (libkmod) is needed in
 * the guest: finit_module() each listed file in turn.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/error.h"
#include "guest-init/guest-init.h"

static int load_one(const char *dir, char *line)
{
	_cleanup_close_ int fd = -1;
	char path[PATH_MAX];
	char *params;

	line[strcspn(line, "\n")] = '\0';
	params = strchr(line, ' ');
	if (params)
		*params++ = '\0';
	if (!line[0] || line[0] == '#')
		return 0;
	if (strstr(line, "..") || line[0] == '/')
		return err_set(-EINVAL, "module name %s", line);
	snprintf(path, sizeof(path), "%s/%s", dir, line);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_setsys(-errno, "open module %s", path);
	if (syscall(SYS_finit_module, fd, params ? params : "", 0) < 0 && errno != EEXIST)
		return err_setsys(-errno, "load module %s", path);
	return 1;
}

int gi_load_modules(const char *dir, const char *list_path)
{
	_cleanup_fclose_ FILE *f = fopen(list_path, "re");
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	int n = 0;

	if (!f)
		return errno == ENOENT ? 0 : err_setsys(-errno, "open %s", list_path);
	while (getline(&line, &cap, f) > 0) {
		int r = load_one(dir, line);

		if (r < 0)
			return r;
		n += r;
	}
	return n;
}
