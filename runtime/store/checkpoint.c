/* SPDX-License-Identifier: Apache-2.0 */
/* A checkpoint's image directory (layout.h names its files). */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/fileio.h"
#include "runtime/store/checkpoint.h"
#include "runtime/store/layout.h"

int checkpoint_check_cgroups_mode(const char *mode)
{
	static const char *const modes[] = {"soft", "full", "strict", "ignore"};

	if (!mode)
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(modes); i++)
		if (!strcmp(mode, modes[i]))
			return 0;
	return err_set(-EINVAL, "Invalid manage cgroups mode");
}

int checkpoint_copy_file(const char *src, const char *dst)
{
	_cleanup_close_ int in = open(src, O_RDONLY | O_CLOEXEC);
	_cleanup_close_ int out = -1;
	int r;

	if (in < 0)
		return err_setsys(-errno, "open %s", src);
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0)
		return err_setsys(-errno, "create %s", dst);
	if (ioctl(out, FICLONE, in) == 0)
		return 0;
	r = fd_copy_sparse(in, out);
	if (r < 0) {
		unlink(dst);
		return err_setsys(r, "copy %s to %s", src, dst);
	}
	return 0;
}

int checkpoint_check_image(const char *dir)
{
	_cleanup_free_ char *mark = NULL;

	if (asprintf(&mark, "%s/%s", dir, MONITOR_CHECKPOINT_MARK) < 0)
		return -ENOMEM;
	if (access(mark, F_OK) < 0)
		return err_set(-EINVAL, "%s is not a complete kvrun checkpoint", dir);
	return 0;
}
