/* SPDX-License-Identifier: Apache-2.0 */
/* The runtime entries that register kvrun with each engine, shown by
 * `kvrun check` and written by `kvrun check --fix` (docs/engines.md). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/fileio.h"
#include "oci-spec/docker-config.h"
#include "runtime/host/engine-probe.h"

#define CONFIG_MAX (4 << 20)

/* containerd's runtime table for its config file's version. */
static int containerd_snippet(int version, const char *path, char **ret)
{
	const char *table = version >= 3   ? "plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.kvrun"
	                    : version == 1 ? "plugins.cri.containerd.runtimes.kvrun"
	                                   : "plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.kvrun";

	if (asprintf(ret,
	             "%s[%s]\n  runtime_type = \"io.containerd.runc.v2\"\n  [%s.options]\n    BinaryName = \"%s\"\n",
	             version == 0 ? "version = 2\n\n" : "", table, table, path) < 0)
		return -ENOMEM;
	return 0;
}

int engine_snippet(const struct engine_status *s, const char *kvrun_path, char **ret)
{
	int n = -1;

	switch (s->id) {
	case ENGINE_DOCKER:
		n = asprintf(ret, "{\n  \"runtimes\": {\n    \"kvrun\": { \"path\": \"%s\" }\n  }\n}\n", kvrun_path);
		break;
	case ENGINE_PODMAN:
		n = asprintf(ret, "[engine.runtimes]\nkvrun = [\"%s\"]\n", kvrun_path);
		break;
	case ENGINE_CONTAINERD:
		return containerd_snippet(s->config_version, kvrun_path, ret);
	case ENGINE_CRIO:
		n = asprintf(ret,
		             "[crio.runtime.runtimes.kvrun]\nruntime_path = \"%s\"\nruntime_type = \"oci\"\n"
		             "runtime_root = \"/run/kvrun\"\n",
		             kvrun_path);
		break;
	case ENGINE_COUNT:
		break;
	}
	return n < 0 ? -ENOMEM : 0;
}

/* Copy path to "<path>.kvrun-backup" when it exists; its text (or NULL,
 * length 0) in *ret_text. */
static int backup(const char *path, char **ret_backup, char **ret_text, size_t *ret_len)
{
	_cleanup_free_ char *copy = NULL;
	int r;

	*ret_text = NULL;
	*ret_len = 0;
	r = read_file_all(path, CONFIG_MAX, ret_text, ret_len);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return err_setsys(r, "read %s", path);
	if (asprintf(&copy, "%s.kvrun-backup", path) < 0)
		return -ENOMEM;
	r = write_file_atomic(copy, *ret_text, *ret_len, 0644);
	if (r < 0)
		return err_setsys(r, "back up %s to %s", path, copy);
	*ret_backup = TAKE_PTR(copy);
	return 0;
}

/* The new content of the engine's file, from its old text. */
static int new_content(const struct engine_status *s, const char *kvrun_path, const char *old, size_t len, char **ret)
{
	_cleanup_free_ char *snippet = NULL, *json = NULL;
	int r;

	if (s->id == ENGINE_DOCKER) {
		r = docker_config_add_runtime(old ? old : "", len, "kvrun", kvrun_path, &json);
		if (r < 0)
			return err_prefix(r, "%s", s->config);
		return asprintf(ret, "%s\n", json) < 0 ? -ENOMEM : 0;
	}
	r = engine_snippet(s, kvrun_path, &snippet);
	if (r < 0)
		return r;
	/* containerd: the tables at the end of its file; podman and CRI-O: a
	 * drop-in of kvrun's own, replaced. */
	if (s->id == ENGINE_CONTAINERD && old && len)
		return asprintf(ret, "%s%s\n%s", old, old[len - 1] == '\n' ? "" : "\n", snippet) < 0 ? -ENOMEM : 0;
	*ret = TAKE_PTR(snippet);
	return 0;
}

int engine_fix(const char *root, const struct engine_status *s, const char *kvrun_path, char **ret_backup)
{
	_cleanup_free_ char *path = NULL, *old = NULL, *text = NULL, *dir = NULL;
	size_t len;
	int r;

	*ret_backup = NULL;
	if (s->runtime && !s->other_kvrun)
		return 0;
	if (s->runtime && !strcmp(s->runtime, "kvrun"))
		return err_set(-EEXIST, "%s: runtime \"kvrun\" names %s, not %s: change it by hand", s->name,
		               s->runtime_path ? s->runtime_path : "no binary", kvrun_path);
	if (asprintf(&path, "%s%s", root ? root : "", s->config) < 0 || !(dir = strdup(path)))
		return -ENOMEM;
	*strrchr(dir, '/') = 0;
	r = mkdir_p(dir, 0755);
	if (r < 0)
		return err_setsys(r, "create %s", dir);
	r = backup(path, ret_backup, &old, &len);
	if (r >= 0)
		r = new_content(s, kvrun_path, old, len, &text);
	if (r >= 0 && (r = write_file_atomic(path, text, strlen(text), 0644)) < 0)
		err_setsys(r, "write %s", path);
	return r < 0 ? r : 1;
}
