/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun ps <id> [ps options]`: the processes of a container. With
 * --format json, the host pids that stand for it (the monitor and the exec
 * proxies: what containerd's shim matches against its pid files); as a
 * table, the guest's process table of the container printed as procps's
 * ps prints runc's (ps-table.h), whatever the image holds. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "runtime/cli/cli-args.h"
#include "common/log.h"
#include "runtime/cli/launch-member.h"
#include "runtime/cli/ps-table.h"
#include "runtime/store/monitor-client.h"
#include "runtime/store/state.h"

#define PS_TIMEOUT_MS 30000

static int print_json(const char *dir, pid_t member_host_pid)
{
	_cleanup_free_ char *detail = NULL;
	char *p, *end;
	int r, n = 0;

	/* An app container of a pod: its host process only. */
	if (member_host_pid > 0 && asprintf(&detail, "%d", (int)member_host_pid) < 0)
		return -ENOMEM;
	r = member_host_pid > 0 ? 0 : monitor_call(dir, "ps", PS_TIMEOUT_MS, &detail);
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

/* The table: the guest's processes, formatted here. */
static int print_table(const char *dir, uint32_t member, char **args, int nargs)
{
	struct proto_msg msg = {0};
	struct ps_format *f = NULL;
	int r;

	r = ps_format_parse(args, nargs, &f);
	if (r >= 0)
		r = monitor_procs(dir, member, PS_TIMEOUT_MS, &msg);
	if (r >= 0 && msg.u.ps.truncated)
		log_warn("the container has more than %d processes: the first ones are shown", PROTO_PS_MAX_PROCS);
	if (r >= 0)
		r = ps_table_print(f, &msg.u.ps, time(NULL), stdout);
	proto_msg_free(&msg);
	ps_format_free(f);
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
	_cleanup_free_ char *dir = NULL;
	uint32_t member = 0;
	pid_t host_pid = 0;
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
	/* An app container of a pod: in its sandbox's VM. */
	r = launch_member_sandbox(c, ctx->root, &dir, &member);
	if (r < 0)
		return r;
	if (r > 0)
		host_pid = c->state->pid;
	else if (!(dir = strdup(c->dir)))
		return -ENOMEM;
	container_free(TAKE_PTR(c));
	if (strcmp(format, "json") == 0)
		return print_json(dir, host_pid);
	return print_table(dir, member, argv + i + 1, argc - i - 1);
}

const struct cli_command cli_cmd_ps = {
    .name = "ps",
    .summary = "ps displays the processes running inside a container",
    .args = "<container-id> [ps options]",
    .text = "With --format json: the host pids of the container (its VM monitor and the\n"
	    "proxies of exec'd processes). As a table: the container's processes as ps\n"
	    "[ps options] (default -ef) prints them, read from the VM (no ps program is\n"
	    "needed in the image). Options: -e -A -a -d, a x g (every process of the\n"
	    "container), -f, -j, u, -o/o/--format KEYWORD[=HEADER],... and w.",
    .run = run_ps,
};
