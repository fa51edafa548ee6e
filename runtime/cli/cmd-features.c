/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun features`: what this runtime supports, as runtime-spec features JSON. */
#include <stdio.h>

#include "oci-spec/features.h"
#include "runtime/cli/cli-args.h"

/* What kvrun does with mounts, which the spec's lists cannot say: bind
 * mounts are virtio-fs shares of the host's files, other mounts are made
 * in the guest, the root filesystem is a disk image or shared, and the
 * locks on shared directories are the host's or the guest's
 * (docs/runtime.md). */
static const char *const annotations[][2] = {
    {"io.kvrun.mounts.bind", "virtio-fs: host directories and regular files, live; ro, nosuid, nodev, noexec, "
                             "bind and rbind applied in the guest"},
    {"io.kvrun.mounts.guest", "proc, sysfs, tmpfs, devpts, mqueue, cgroup2 and other file systems: in the guest"},
    {"io.kvrun.rootfs", "block,virtiofs"},
    {"io.kvrun.fs.locks", "host,guest"},
};

static int features_json(char **ret)
{
	struct oci_features f = *oci_features_kvrun();
	struct oci_map ann = {0};
	int r = 0;

	for (size_t i = 0; r >= 0 && i < ARRAY_SIZE(annotations); i++)
		r = oci_map_set(&ann, annotations[i][0], annotations[i][1]);
	f.annotations = &ann;
	if (r >= 0)
		r = oci_features_to_json(&f, ret);
	oci_map_clear(&ann);
	return r;
}

static int run_features(struct cli_context *ctx, int argc, char **argv)
{
	const struct cli_flag flags[] = {CLI_FLAG_END};
	_cleanup_free_ char *json = NULL;
	int r, i;

	r = cli_parse_args(&cli_cmd_features, flags, argc, argv, CLI_ARGS_EXACT, 0, &i);
	if (r != 0)
		return r < 0 ? r : 0;
	r = features_json(&json);
	if (r < 0)
		return r;
	fputs(json, stdout);
	return 0;
}

const struct cli_command cli_cmd_features = {
    .name = "features",
    .summary = "show the enabled features",
    .text = "DESCRIPTION:\n"
	    "   Show the enabled features.\n"
	    "   The result is parsable as a JSON.\n"
	    "   See https://github.com/opencontainers/runtime-spec/blob/main/features.md for the type\n"
	    "   definition.",
    .run = run_features,
};
