/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun spec`: write an example config.json into a bundle. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "common/error.h"
#include "common/fileio.h"
#include "oci-spec/defaults.h"
#include "runtime/cli/cli-args.h"

/* O_EXCL: never replace a config.json, even one that appears meanwhile. */
static int write_new_file(const char *path, const char *data)
{
	int fd, r;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
	if (fd < 0) {
		if (errno == EEXIST)
			return err_set(-EEXIST, "File config.json exists. Remove it first");
		return err_setsys(-errno, "create %s", path);
	}
	r = write_all(fd, data, strlen(data));
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r < 0) {
		unlink(path);
		return err_setsys(r, "write %s", path);
	}
	return 0;
}

static int run_spec(struct cli_context *ctx, int argc, char **argv)
{
	const char *bundle = NULL;
	bool rootless = false;
	const struct cli_flag flags[] = {
	    {"bundle", "b", CLI_STRING, &bundle, "path to the root of the bundle directory"},
	    {"rootless", NULL, CLI_BOOL, &rootless, "generate a configuration for a rootless container"},
	    CLI_FLAG_END,
	};
	_cleanup_free_ char *json = NULL;
	char path[PATH_MAX];
	struct stat st;
	int r, i;

	r = cli_parse_args(&cli_cmd_spec, flags, argc, argv, CLI_ARGS_EXACT, 0, &i);
	if (r != 0)
		return r < 0 ? r : 0;
	if (!bundle || !*bundle)
		bundle = ".";
	if (stat(bundle, &st) < 0)
		return err_setsys(-errno, "bundle %s", bundle);
	if (!S_ISDIR(st.st_mode))
		return err_set(-ENOTDIR, "bundle %s is not a directory", bundle);
	if (snprintf(path, sizeof(path), "%s/config.json", bundle) >= (int)sizeof(path))
		return err_set(-ENAMETOOLONG, "bundle path too long");
	r = oci_spec_default_json(rootless, &json);
	if (r < 0)
		return r;
	return write_new_file(path, json);
}

const struct cli_command cli_cmd_spec = {
    .name = "spec",
    .summary = "create a new specification file",
    .text = "DESCRIPTION:\n"
	    "   The spec command creates the new specification file named \"config.json\" for\n"
	    "the bundle.\n\n"
	    "The spec generated is just a starter file. Editing of the spec is required to\n"
	    "achieve desired results. For example, the newly generated spec includes an args\n"
	    "parameter that is initially set to call the \"sh\" command when the container is\n"
	    "started. Calling \"sh\" may work for an ubuntu container or busybox, but will not\n"
	    "work for containers that do not include the \"sh\" program.\n\n"
	    "EXAMPLE:\n"
	    "    mkdir -p hello/rootfs && cd hello\n"
	    "    tar -C rootfs -xf hello-world.tar\n"
	    "    kvrun spec\n"
	    "    sed -i 's;\"sh\";\"/hello\";' config.json\n"
	    "    kvrun run container1\n\n"
	    "Pass --rootless to generate a spec for a rootless container: it maps root in\n"
	    "the container to the calling user.",
    .run = run_spec,
};
