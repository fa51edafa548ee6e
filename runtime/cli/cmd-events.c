/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun events <id>`: container statistics and events. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/cleanup.h"

#include "common/error.h"
#include "runtime/cli/cli-args.h"
#include "runtime/cli/launch-member.h"
#include "runtime/store/monitor-client.h"
#include "runtime/store/state.h"

#define STATS_TIMEOUT_MS 30000

static unsigned long long field(const char *detail, const char *key)
{
	size_t n = strlen(key);

	for (const char *p = detail; (p = strstr(p, key)); p += n)
		if ((p == detail || p[-1] == ' ') && p[n] == '=')
			return strtoull(p + n + 1, NULL, 10);
	return 0;
}

/* One event in runc's format, with the guest cgroup's figures (cgroup v2
 * names as guest-init reads them: usec, converted to runc's ns). */
static int print_stats(const char *dir, uint32_t member, const char *id)
{
	_cleanup_free_ char *d = NULL, *vm = NULL;
	unsigned long long limit;
	char req[32] = "stats";
	int r;

	/* An app container of a pod: its cgroup in the sandbox's VM. */
	if (member)
		snprintf(req, sizeof(req), "stats %u", member);
	r = monitor_call(dir, req, STATS_TIMEOUT_MS, &d);
	if (r < 0)
		return r;
	limit = field(d, "memory_max");
	if (!limit)
		limit = field(d, "memory_total");
	/* kvrun's own: what the VM's data path cost so far (exits, doorbells,
	 * interrupts, requests), beside runc's fields; a monitor without it
	 * (an older kvrun) leaves it out, and so does an app container of a
	 * pod, whose VM is the pod's. */
	if (member || monitor_call(dir, "vmstats", STATS_TIMEOUT_MS, &vm) < 0 || !vm || vm[0] != '{') {
		free(vm);
		vm = NULL;
	}
	printf("{\"type\":\"stats\",\"id\":\"%s\",\"data\":{"
	       "\"cpu\":{\"usage\":{\"total\":%llu,\"kernel\":%llu,\"user\":%llu},\"throttling\":{}},"
	       "\"memory\":{\"usage\":{\"limit\":%llu,\"usage\":%llu,\"max\":0,\"failcnt\":0},"
	       "\"swap\":{\"limit\":0,\"usage\":0,\"max\":0,\"failcnt\":0},"
	       "\"kernel\":{\"limit\":0,\"usage\":0,\"max\":0,\"failcnt\":0},"
	       "\"kernelTCP\":{\"limit\":0,\"usage\":0,\"max\":0,\"failcnt\":0},\"raw\":{}},"
	       "\"pids\":{\"current\":%llu},\"blkio\":{},\"hugetlb\":{},\"intel_rdt\":{}%s%s}}\n",
	       id, field(d, "cpu_usage_usec") * 1000, field(d, "cpu_system_usec") * 1000,
	       field(d, "cpu_user_usec") * 1000, limit, field(d, "memory_current"), field(d, "pids_current"),
	       vm ? ",\"kvrun_vm\":" : "", vm ? vm : "");
	return fflush(stdout) == 0 ? 0 : err_setsys(-errno, "write");
}

/* Until the interval ends: each line from the monitor is an event, printed
 * as runc does ({"type":"oom","id":...}). Returns 1 when the monitor
 * closed the connection (the container's process ended). */
static int wait_events(int sub, long long interval_ns, const char *id)
{
	int64_t deadline = clock_now_ms() + interval_ns / 1000000;
	char line[64];
	size_t len = 0;

	for (;;) {
		int64_t left = deadline - clock_now_ms();
		struct pollfd p = {.fd = sub, .events = POLLIN};
		ssize_t n;

		if (left <= 0)
			return 0;
		n = poll(&p, 1, (int)left);
		if (n < 0 && errno != EINTR)
			return err_setsys(-errno, "poll");
		if (n <= 0)
			continue;
		n = read(sub, line + len, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 1;
		if (line[len] != '\n' && len + 2 < sizeof(line)) {
			len++;
			continue;
		}
		line[len] = 0;
		len = 0;
		if (strcmp(line, "oom") == 0) {
			printf("{\"type\":\"oom\",\"id\":\"%s\"}\n", id);
			if (fflush(stdout) != 0)
				return err_setsys(-errno, "write");
		}
	}
}

/* An app container of a pod: its figures each interval and its OOM events
 * (the sandbox's monitor tells them apart: "events <guest pid>") until it
 * ends (the monitor then closes the subscription, and refuses the
 * figures). */
static int member_events(const char *dir, uint32_t member, long long interval_ns, const char *id)
{
	int sub = monitor_subscribe_member(dir, member, STATS_TIMEOUT_MS), r;

	if (sub < 0)
		return sub;
	for (;;) {
		if (print_stats(dir, member, id) < 0) {
			err_clear();
			r = 0;
			break;
		}
		r = wait_events(sub, interval_ns, id);
		if (r != 0)
			break;
	}
	close(sub);
	return r > 0 ? 0 : r;
}

static int run_events(struct cli_context *ctx, int argc, char **argv)
{
	const char *interval = "5s";
	bool stats = false;
	const struct cli_flag flags[] = {
	    {"interval", NULL, CLI_STRING, &interval, "set the stats collection interval (default: 5s)"},
	    {"stats", NULL, CLI_BOOL, &stats, "display the container's stats then exit"},
	    CLI_FLAG_END,
	};
	_cleanup_container_ struct container *c = NULL;
	_cleanup_free_ char *dir = NULL;
	uint32_t member = 0;
	long long ns;
	int r, i, sub;

	r = cli_parse_args(&cli_cmd_events, flags, argc, argv, CLI_ARGS_EXACT, 1, &i);
	if (r != 0)
		return r < 0 ? r : 0;
	if (cli_parse_duration(interval, &ns) < 0)
		return err_set(-EINVAL, "invalid value \"%s\" for flag -interval: parse error", interval);
	if (ns <= 0)
		return err_set(-EINVAL, "duration interval must be greater than 0");
	r = container_peek_for(ctx->root, argv[i], CONTAINER_OP_EVENTS, &c);
	if (r < 0)
		return r;
	r = launch_member_sandbox(c, ctx->root, &dir, &member);
	if (r < 0)
		return r;
	if (r == 0 && !(dir = strdup(c->dir)))
		return -ENOMEM;
	container_free(TAKE_PTR(c));
	if (stats)
		return print_stats(dir, member, argv[i]);
	if (member)
		return member_events(dir, member, ns, argv[i]);
	sub = monitor_subscribe(dir, STATS_TIMEOUT_MS);
	if (sub < 0)
		return sub;
	for (;;) {
		r = print_stats(dir, 0, argv[i]);
		/* The process may end between two intervals: the monitor then
		 * refuses the stats call, and the subscription's end follows. */
		if (r < 0 && wait_events(sub, (long long)STATS_TIMEOUT_MS * 1000000, argv[i]) == 1)
			r = 1;
		else if (r >= 0)
			r = wait_events(sub, ns, argv[i]);
		if (r != 0)
			break;
	}
	close(sub);
	/* The container's process ended: so do its events, as with runc. */
	return r > 0 ? 0 : r;
}

const struct cli_command cli_cmd_events = {
    .name = "events",
    .summary = "display container events such as OOM notifications, cpu, memory, and IO usage statistics",
    .args = "<container-id>",
    .text = "Where \"<container-id>\" is the name for the instance of the container.\n\n"
	    "DESCRIPTION:\n"
	    "   The events command displays information about the container. By default the\n"
	    "information is displayed once every 5 seconds.",
    .run = run_events,
};
