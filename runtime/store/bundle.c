/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/error.h"
#include "runtime/store/bundle.h"

void bundle_free(struct bundle *b)
{
	if (!b)
		return;
	oci_spec_free(b->spec);
	free(b->path);
	free(b->rootfs);
	free(b);
}

static int check_dir(const char *what, const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return err_setsys(-errno, "%s %s", what, path);
	if (!S_ISDIR(st.st_mode))
		return err_set(-ENOTDIR, "%s %s is not a directory", what, path);
	return 0;
}

static int load_config(struct bundle *b)
{
	char path[PATH_MAX];
	int r;

	snprintf(path, sizeof(path), "%s/config.json", b->path);
	r = oci_spec_load(path, &b->spec);
	if (r == -ENOENT)
		return err_set(r, "bundle %s has no config.json", b->path);
	if (r < 0)
		return r;
	return oci_spec_validate(b->spec);
}

static int resolve_rootfs(struct bundle *b)
{
	const char *root = b->spec->root ? b->spec->root->path : NULL;
	int r;

	if (!root || !*root)
		return err_set(-EINVAL, "%s/config.json: root.path: missing", b->path);
	if (root[0] == '/')
		b->rootfs = strdup(root);
	else if (asprintf(&b->rootfs, "%s/%s", b->path, root) < 0)
		b->rootfs = NULL;
	if (!b->rootfs)
		return -ENOMEM;
	r = check_dir("rootfs", b->rootfs);
	return r;
}

int bundle_load(const char *path, struct bundle **ret)
{
	struct bundle *b;
	char *abs;
	int r;

	if (!path || !*path)
		path = ".";
	r = check_dir("bundle", path);
	if (r < 0)
		return r;
	abs = realpath(path, NULL);
	if (!abs)
		return err_setsys(-errno, "bundle %s", path);
	b = calloc(1, sizeof(*b));
	if (!b) {
		free(abs);
		return -ENOMEM;
	}
	b->path = abs;
	r = load_config(b);
	if (r >= 0)
		r = resolve_rootfs(b);
	if (r < 0) {
		bundle_free(b);
		return r;
	}
	*ret = b;
	return 0;
}
