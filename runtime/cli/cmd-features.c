/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun features`: what this runtime supports, as runtime-spec features JSON. */
#include <stdio.h>

#include "oci-spec/features.h"
#include "runtime/cli/cli-args.h"

static int run_features(struct cli_context *ctx, int argc, char **argv)
{
	const struct cli_flag flags[] = {CLI_FLAG_END};
	_cleanup_free_ char *json = NULL;
	int r, i;

	r = cli_parse_args(&cli_cmd_features, flags, argc, argv, CLI_ARGS_EXACT, 0, &i);
	if (r != 0)
		return r < 0 ? r : 0;
	r = oci_features_to_json(oci_features_kvrun(), &json);
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
