/* SPDX-License-Identifier: Apache-2.0 */
/* kvrun's entry point: global flags, logging, then one verb. Errors from
 * every layer come back as a negative errno plus err_msg() and are reported
 * here, once. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "common/log.h"
#include "common/progress.h"
#include "runtime/cli/cli-args.h"
#include "runtime/cli/cli-global.h"
#include "runtime/cli/commands.h"
#include "runtime/cli/log-sink.h"
#include "vmm/vm.h"

static int report(int r)
{
	const char *msg = err_msg();

	log_sink_report_error(*msg ? msg : strerror(-r));
	return 1;
}

static int run_verb(struct cli_context *ctx, int argc, char **argv)
{
	const struct cli_command *cmd = cli_command_find(ctx->commands, argv[0]);
	int r;

	if (!cmd)
		return report(err_set(-EINVAL, "unknown command \"%s\" (see 'kvrun --help')", argv[0]));
	log_debug("running %s", cmd->name);
	err_clear();
	r = cmd->run(ctx, argc, argv);
	if (r < 0) {
		report(r);
		return ctx->fail_status ? ctx->fail_status : 1;
	}
	return r;
}

int main(int argc, char **argv)
{
	uint64_t t_start_ns = vm_now_ns();
	struct cli_context ctx;
	int r, idx;

	/* Errors before --log is known still read like runc's. */
	log_sink_setup(NULL, LOG_FORMAT_TEXT, false);
	r = cli_global_parse(&ctx, argc, argv, &idx);
	if (r < 0)
		return report(r);
	ctx.t_start_ns = t_start_ns;
	ctx.commands = cli_commands;
	if (r == CLI_GLOBAL_VERSION) {
		cli_global_print_version(stdout);
		return 0;
	}
	if (r == CLI_GLOBAL_HELP) {
		cli_global_print_help(cli_commands, stdout);
		return 0;
	}
	/* Under an engine (a log file, JSON logging) no progress lines. */
	progress_set_enabled(!ctx.log_path && ctx.log_format == LOG_FORMAT_TEXT);
	r = log_sink_setup(ctx.log_path, ctx.log_format, ctx.debug);
	if (r < 0)
		return report(r);
	r = run_verb(&ctx, argc - idx, argv + idx);
	fflush(stdout);
	log_sink_close();
	return r;
}
