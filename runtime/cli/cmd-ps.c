/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun ps <id> [ps options]`: the processes of a container. With
 * --format json, the host pids that stand for it (the monitor and the exec
 * proxies: what containerd's shim matches against its pid files); as a
 * table, `ps` run inside the container (the processes live in the VM). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "runtime/cli/cli-args.h"
#include "runtime/cli/exec-proxy.h"
#include "runtime/monitor/guest-spec.h"
#include "runtime/store/monitor-client.h"
#include "runtime/store/state.h"

#define PS_TIMEOUT_MS 30000

static int print_json(const char *dir)
{
	_cleanup_free_ char *detail = NULL;
	char *p, *end;
	int r, n = 0;

	r = monitor_call(dir, "ps", PS_TIMEOUT_MS, &detail);
	if (r < 0)
		return r;
	putchar('[');
	for (p = detail; *p; p = end) {
		long pid = strtol(p, &end, 10);

		if (end == p)
			break;
		printf("%s%ld", n++ ? "," : "", pid);
	}
	puts("]");
	return fflush(stdout) == 0 ? 0 : err_setsys(-errno, "write");
}

/* `ps [args]` (default -ef) in the container, its output on ours. */
static int run_guest_ps(const char *dir, const char *bundle, char **args, int nargs)
{
	_cleanup_free_ char *config = NULL;
	struct oci_spec *spec = NULL;
	struct proto_process proc = {0};
	char **v;
	int r;

	if (asprintf(&config, "%s/config.json", bundle) < 0)
		return -ENOMEM;
	r = oci_spec_load(config, &spec);
	if (r >= 0 && !spec->process)
		r = err_set(-EINVAL, "%s: process: missing", config);
	if (r >= 0)
		r = guest_process_from_oci(spec->process, &proc);
	oci_spec_free(spec);
	if (r < 0)
		return r;
	v = calloc((size_t)nargs + 3, sizeof(char *));
	if (!v) {
		proto_process_free(&proc);
		return -ENOMEM;
	}
	v[0] = strdup("ps");
	for (int k = 0; k < nargs; k++)
		v[k + 1] = strdup(args[k]);
	if (!nargs)
		v[1] = strdup("-ef");
	for (size_t k = 0; proc.args[k]; k++)
		free(proc.args[k]);
	free(proc.args);
	proc.args = v;
	proc.terminal = false;
	r = exec_proxy_run(&(struct exec_proxy_opts){.dir = dir, .proc = &proc});
	proto_process_free(&proc);
	return r;
}

static int run_ps(struct cli_context *ctx, int argc, char **argv)
{
	const char *format = "table";
	const struct cli_flag flags[] = {
	    {"format", "f", CLI_STRING, &format, "select one of: table or json (default: \"table\")"},
	    CLI_FLAG_END,
	};
	_cleanup_container_ struct container *c = NULL;
	_cleanup_free_ char *dir = NULL, *bundle = NULL;
	int r, i;

	r = cli_parse_args(&cli_cmd_ps, flags, argc, argv, CLI_ARGS_MIN, 1, &i);
	if (r != 0)
		return r < 0 ? r : 0;
	if (strcmp(format, "table") && strcmp(format, "json"))
		return err_set(-EINVAL, "invalid format option");
	r = container_load(ctx->root, argv[i], false, &c);
	if (r < 0)
		return r;
	if (c->state->status == OCI_STATUS_STOPPED)
		return err_set(-ESRCH, "container not running");
	dir = strdup(c->dir);
	bundle = strdup(c->state->bundle ? c->state->bundle : ".");
	if (!dir || !bundle)
		return -ENOMEM;
	container_free(TAKE_PTR(c));
	if (strcmp(format, "json") == 0)
		return print_json(dir);
	return run_guest_ps(dir, bundle, argv + i + 1, argc - i - 1);
}

const struct cli_command cli_cmd_ps = {
    .name = "ps",
    .summary = "ps displays the processes running inside a container",
    .args = "<container-id> [ps options]",
    .text = "With --format json: the host pids of the container (its VM monitor and the\n"
	    "proxies of exec'd processes). As a table: ps [ps options] (default -ef) run\n"
	    "inside the container, which must have a ps program.",
    .run = run_ps,
};
