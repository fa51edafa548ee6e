/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <string.h>

#include "common/error.h"
#include "config.h"
#include "runtime/cli/cli-args.h"
#include "runtime/cli/cli-global.h"
#include "runtime/cli/cli-help.h"

/* Raw strings as given; checked after parsing. */
struct global_raw {
	const char *log_format;
	const char *rootless;
	bool help, version;
};

#define GLOBAL_NFLAGS 11

static void global_flags(struct cli_context *ctx, struct global_raw *raw, struct cli_flag out[GLOBAL_NFLAGS])
{
	const struct cli_flag flags[GLOBAL_NFLAGS] = {
	    {"debug", NULL, CLI_BOOL, &ctx->debug, "enable debug logging"},
	    {"log", NULL, CLI_STRING, &ctx->log_path,
	     "set the log file to write kvrun logs to (default is '/dev/stderr')"},
	    {"log-format", NULL, CLI_STRING, &raw->log_format,
	     "set the log format ('text' (default), or 'json') (default: \"text\")"},
	    {"root", NULL, CLI_STRING, &ctx->root,
	     "root directory for storage of container state (this should be located in tmpfs) (default: "
	     "\"" KVRUN_DEFAULT_ROOT "\")"},
	    {"criu", NULL, CLI_STRING, &ctx->criu, "accepted for compatibility with runc; unused (default: \"criu\")"},
	    {"systemd-cgroup", NULL, CLI_BOOL, &ctx->systemd_cgroup,
	     "enable systemd cgroup support, expects cgroupsPath to be of form \"slice:prefix:name\" for e.g. "
	     "\"system.slice:kvrun:434234\""},
	    {"rootless", NULL, CLI_STRING, &raw->rootless,
	     "ignore cgroup permission errors ('true', 'false', or 'auto') (default: \"auto\")"},
	    {"kernel", NULL, CLI_STRING, &ctx->kernel,
	     "guest kernel for the containers this call creates (below the io.kvrun.kernel annotation, above "
	     "$KVRUN_KERNEL and the config file; see docs/kernels.md)"},
	    {"help", "h", CLI_BOOL, &raw->help, "show help"},
	    {"version", "v", CLI_BOOL, &raw->version, "print the version"},
	    CLI_FLAG_END,
	};

	memcpy(out, flags, sizeof(flags));
}

/* The global "command" (its --help is a flag of its own). */
static const struct cli_command global_cmd = {.name = ""};

static int parse_rootless(const char *s, enum rootless_mode *ret)
{
	bool b;

	if (!strcmp(s, "auto")) {
		*ret = ROOTLESS_AUTO;
		return 0;
	}
	if (cli_parse_bool(s, &b) < 0)
		return err_set(-EINVAL, "invalid --rootless value: %s (want true, false or auto)", s);
	*ret = b ? ROOTLESS_TRUE : ROOTLESS_FALSE;
	return 0;
}

int cli_global_parse(struct cli_context *ctx, int argc, char **argv, int *ret_index)
{
	struct global_raw raw = {"text", "auto", false, false};
	struct cli_flag flags[GLOBAL_NFLAGS];
	int r, idx;

	*ctx = (struct cli_context){.root = KVRUN_DEFAULT_ROOT, .criu = "criu"};
	global_flags(ctx, &raw, flags);
	r = cli_parse(&global_cmd, flags, argc, argv, &idx);
	if (r < 0)
		return r;
	r = log_format_parse(raw.log_format, &ctx->log_format);
	if (r < 0)
		return r;
	r = parse_rootless(raw.rootless, &ctx->rootless);
	if (r < 0)
		return r;
	if (!*ctx->root)
		return err_set(-EINVAL, "--root must not be empty");
	*ret_index = idx;
	if (raw.help)
		return CLI_GLOBAL_HELP;
	if (raw.version)
		return CLI_GLOBAL_VERSION;
	return idx < argc ? CLI_GLOBAL_RUN : CLI_GLOBAL_HELP;
}

void cli_global_print_help(const struct cli_command *const *commands, FILE *f)
{
	struct cli_context ctx;
	struct global_raw raw;
	struct cli_flag flags[GLOBAL_NFLAGS];

	global_flags(&ctx, &raw, flags);
	cli_print_main_help(commands, flags, f);
}

void cli_global_print_version(FILE *f)
{
	fprintf(f, "kvrun version %s\ncommit: %s\nspec: %s\n", KVRUN_VERSION, KVRUN_COMMIT, KVRUN_OCI_VERSION);
}
