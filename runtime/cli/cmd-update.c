/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun update <id>`: change a container's resource limits. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/fileio.h"
#include "oci-spec/spec.h"
#include "runtime/cli/launch-member.h"
#include "runtime/host/cgroup.h"
#include "runtime/cli/cli-args.h"
#include "runtime/store/monitor-client.h"
#include "runtime/monitor/guest-linux.h"
#include "runtime/monitor/monitor.h"
#include "runtime/store/state.h"

#define UPDATE_TIMEOUT_MS 30000

struct update_opts {
	const char *resources;
	unsigned long long blkio_weight;
	const char *cpu_period, *cpu_quota, *cpu_share, *cpu_rt_period, *cpu_rt_runtime;
	const char *cpuset_cpus, *cpuset_mems;
	const char *memory, *memory_reservation, *memory_swap;
	long long pids_limit;
	const char *l3_cache_schema, *mem_bw_schema;
};

/* docker's units.RAMInBytes: "512m", "1.5g", "1024", binary multiples. */
static int parse_ram(const char *s, long long *ret)
{
	static const char units[] = "bkmgtp";
	const char *u;
	char *end;
	double v;
	int shift = 0;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	v = strtod(s, &end);
	if (*end == ' ')
		end++;
	if (*end && (u = strchr(units, tolower((unsigned char)*end)))) {
		shift = (int)(u - units) * 10;
		end++;
		if (shift && (*end == 'i' || *end == 'I'))
			end++;
		if (shift && (*end == 'b' || *end == 'B'))
			end++;
	}
	if (*end)
		return -EINVAL;
	v *= (double)(1ULL << shift);
	if (v > 9.2e18)
		return -ERANGE;
	*ret = (long long)v;
	return 0;
}

static int check_value(const char *name, const char *v, char kind)
{
	unsigned long long u;
	long long l;
	int r;

	if (!v)
		return 0;
	if (kind == 'u')
		r = cli_parse_uint(v, &u);
	else if (kind == 'i')
		r = cli_parse_int(v, &l);
	else
		r = !strcmp(v, "-1") ? 0 : parse_ram(v, &l);
	if (r < 0)
		return err_set(-EINVAL, "invalid value for %s: %s", name, v);
	return 0;
}

static int check_values(const struct update_opts *o)
{
	const struct {
		const char *name, *value;
		char kind; /* u: uint64, i: int64, m: memory size or -1 */
	} vals[] = {
	    {"cpu-period", o->cpu_period, 'u'},
	    {"cpu-quota", o->cpu_quota, 'i'},
	    {"cpu-share", o->cpu_share, 'u'},
	    {"cpu-rt-period", o->cpu_rt_period, 'u'},
	    {"cpu-rt-runtime", o->cpu_rt_runtime, 'i'},
	    {"memory", o->memory, 'm'},
	    {"memory-reservation", o->memory_reservation, 'm'},
	    {"memory-swap", o->memory_swap, 'm'},
	};

	for (size_t k = 0; k < ARRAY_SIZE(vals); k++) {
		int r = check_value(vals[k].name, vals[k].value, vals[k].kind);

		if (r < 0)
			return r;
	}
	if (o->blkio_weight && (o->blkio_weight < 10 || o->blkio_weight > 1000))
		return err_set(-EINVAL, "invalid value for blkio-weight: %llu (range is 10 to 1000)", o->blkio_weight);
	return 0;
}

/* --resources FILE or '-': linux.resources JSON, parsed through oci-spec. */
static int read_resources(const char *path, struct oci_linux_resources **ret)
{
	_cleanup_free_ char *json = NULL;
	size_t len;
	int r;

	r = read_file_all(!strcmp(path, "-") ? "/dev/stdin" : path, OCI_SPEC_MAX_SIZE, &json, &len);
	if (r < 0)
		return err_setsys(r, "read resources from %s", !strcmp(path, "-") ? "standard input" : path);
	return oci_resources_parse(json, len, !strcmp(path, "-") ? "<stdin>" : path, ret);
}

/* The flags as linux.resources; the ones a VM cannot change fail here. */
static int flags_to_resources(const struct update_opts *o, struct oci_linux_resources *res)
{
	const struct {
		const char *name;
		bool set;
	} fixed[] = {
	    {"blkio-weight", o->blkio_weight != 0},          {"cpu-rt-period", o->cpu_rt_period != NULL},
	    {"cpu-rt-runtime", o->cpu_rt_runtime != NULL},   {"cpuset-mems", o->cpuset_mems != NULL},
	    {"l3-cache-schema", o->l3_cache_schema != NULL}, {"mem-bw-schema", o->mem_bw_schema != NULL},
	};
	long long v;

	for (size_t k = 0; k < ARRAY_SIZE(fixed); k++)
		if (fixed[k].set)
			return err_set(-ENOTSUP,
			               "updating %s is not supported: only the memory limit, the pids limit "
			               "and cpu shares/quota/period can change for a running VM",
			               fixed[k].name);
	if (o->memory) {
		if (!strcmp(o->memory, "-1"))
			v = 0;
		else if (parse_ram(o->memory, &v) < 0)
			return err_set(-EINVAL, "invalid value for memory: %s", o->memory);
		res->memory.has_limit = true;
		res->memory.limit = v;
	}
	if (o->pids_limit) {
		res->pids.present = true;
		res->pids.limit = o->pids_limit;
	}
	if (o->cpu_quota && cli_parse_int(o->cpu_quota, &v) == 0)
		res->cpu.has_quota = true, res->cpu.quota = v;
	if (o->cpu_period)
		res->cpu.has_period = cli_parse_uint(o->cpu_period, (unsigned long long *)&res->cpu.period) == 0;
	if (o->cpu_share)
		res->cpu.has_shares = cli_parse_uint(o->cpu_share, (unsigned long long *)&res->cpu.shares) == 0;
	/* An app container of a pod's only (apply()). */
	if (o->cpuset_cpus && !(res->cpu.cpus = strdup(o->cpuset_cpus)))
		return -ENOMEM;
	return 0;
}

/* What a running VM cannot take: anything but memory.limit, pids.limit
 * and cpu shares/quota/period (zero/empty values mean "unchanged", as in
 * runc). The VM has no swap, and soft limits have no host meaning: swap
 * and reservation are accepted and ignored. */
static int check_changeable(const struct oci_linux_resources *r)
{
	const char *bad = NULL;

	if (r->cpu.mems && *r->cpu.mems)
		bad = "cpu.mems";
	else if (r->cpu.has_realtime_runtime && r->cpu.realtime_runtime)
		bad = "cpu.realtimeRuntime";
	else if (r->cpu.has_realtime_period && r->cpu.realtime_period)
		bad = "cpu.realtimePeriod";
	else if (r->memory.has_kernel && r->memory.kernel)
		bad = "memory.kernel";
	else if (r->memory.has_kernel_tcp && r->memory.kernel_tcp)
		bad = "memory.kernelTCP";
	else if (r->block_io.has_weight && r->block_io.weight)
		bad = "blockIO.weight";
	else if (r->n_hugepage_limits)
		bad = "hugepageLimits";
	else if (r->n_devices)
		bad = "devices";
	else if (r->n_rdma)
		bad = "rdma";
	if (bad)
		return err_set(-ENOTSUP,
		               "updating %s is not supported: only memory.limit, pids.limit and cpu "
		               "shares/quota/period can change for a running VM",
		               bad);
	return 0;
}

static int apply(const char *root, const struct container *c, const struct oci_linux_resources *res)
{
	const char *cg = oci_map_get(&c->state->private_data, STATE_KEY_CGROUP);
	bool cpu = (res->cpu.has_quota && res->cpu.quota) || (res->cpu.has_shares && res->cpu.shares);
	_cleanup_free_ char *sandbox_dir = NULL;
	const char *dir = c->dir;
	uint32_t member = 0;
	char req[400];
	bool app;
	int r;

	/* An app container of a pod: its cgroup in the sandbox's VM. */
	r = launch_member_sandbox(c, root, &sandbox_dir, &member);
	if (r < 0)
		return r;
	app = r > 0;
	if (!app && res->cpu.cpus && *res->cpu.cpus)
		return err_set(-ENOTSUP, "updating cpuset-cpus (cpu.cpus) is not supported: only the memory limit, the "
		                         "pids limit and cpu shares/quota/period can change for a running VM (and the "
		                         "cpus of an app container of a pod)");
	if (app)
		dir = sandbox_dir;
	/* An app container of a pod: its CPU limits in its guest cgroup (the
	 * VM's CPUs are the pod's), converted as runc's cgroup v2 manager
	 * does: quota -1 "max", shares into cpu.weight. */
	if (app && (cpu || (res->cpu.has_period && res->cpu.period) || (res->cpu.cpus && *res->cpu.cpus))) {
		if (res->cpu.has_shares && res->cpu.shares && (res->cpu.shares < 2 || res->cpu.shares > 262144))
			return err_set(-EINVAL, "invalid value for cpu-share: %llu (range is 2 to 262144)",
			               (unsigned long long)res->cpu.shares);
		if (res->cpu.cpus && strpbrk(res->cpu.cpus, " \t\n"))
			return err_set(-EINVAL, "invalid value for cpuset-cpus: \"%s\" (a CPU list such as 0-1,3)",
			               res->cpu.cpus);
		if (res->cpu.has_quota && res->cpu.quota < -1)
			return err_set(-EINVAL, "invalid value for cpu-quota: %lld (-1 for none, or microseconds)",
			               (long long)res->cpu.quota);
		snprintf(req, sizeof(req), "cpu %u %d %lld %llu %llu %s", member,
		         res->cpu.has_quota && res->cpu.quota != 0,
		         (long long)(res->cpu.quota > 0 ? res->cpu.quota : 0),
		         (unsigned long long)(res->cpu.has_period ? res->cpu.period : 0),
		         (unsigned long long)(res->cpu.has_shares ? guest_cpu_weight(res->cpu.shares) : 0),
		         res->cpu.cpus && *res->cpu.cpus ? res->cpu.cpus : "-");
		r = monitor_call(dir, req, UPDATE_TIMEOUT_MS, NULL);
		if (r < 0)
			return r;
		cpu = false;
	}
	if (cpu && !cg)
		return err_set(-ENOTSUP, "updating cpu limits needs a container with linux.cgroupsPath (they apply to "
		                         "its VM on the host)");
	if (res->pids.present || (res->memory.has_limit && res->memory.limit)) {
		snprintf(req, sizeof(req), "update %d %lld %d %lld %u", res->pids.present,
		         (long long)(res->pids.limit > 0 ? res->pids.limit : 0),
		         res->memory.has_limit && res->memory.limit,
		         (long long)(res->memory.limit > 0 ? res->memory.limit : 0), member);
		r = monitor_call(dir, req, UPDATE_TIMEOUT_MS, NULL);
		if (r < 0)
			return r;
	}
	/* With a systemd unit, systemd is told too (runc's update does). An
	 * app container's host cgroup holds only its member proxy: no limits
	 * there (docs/runtime.md, "Pods"). */
	return cg && !app ? cgroup_update_unit(cg, oci_map_get(&c->state->private_data, STATE_KEY_CGROUP_BASE),
	                                       oci_map_get(&c->state->private_data, STATE_KEY_CGROUP_UNIT), res)
	                  : 0;
}

static int run_update(struct cli_context *ctx, int argc, char **argv)
{
	struct update_opts o = {0};
	const struct cli_flag flags[] = {
	    {"resources", "r", CLI_STRING, &o.resources,
	     "path to the file containing the resources to update or '-' to read from the standard input"},
	    {"blkio-weight", NULL, CLI_UINT, &o.blkio_weight,
	     "Specifies per cgroup weight, range is from 10 to 1000 (default: 0)"},
	    {"cpu-period", NULL, CLI_STRING, &o.cpu_period,
	     "CPU CFS period to be used for hardcapping (in usecs). 0 to use system default"},
	    {"cpu-quota", NULL, CLI_STRING, &o.cpu_quota,
	     "CPU CFS hardcap limit (in usecs). Allowed cpu time in a given period"},
	    {"cpu-share", NULL, CLI_STRING, &o.cpu_share, "CPU shares (relative weight vs. other containers)"},
	    {"cpu-rt-period", NULL, CLI_STRING, &o.cpu_rt_period,
	     "CPU realtime period to be used for hardcapping (in usecs). 0 to use system default"},
	    {"cpu-rt-runtime", NULL, CLI_STRING, &o.cpu_rt_runtime,
	     "CPU realtime hardcap limit (in usecs). Allowed cpu time in a given period"},
	    {"cpuset-cpus", NULL, CLI_STRING, &o.cpuset_cpus, "CPU(s) to use"},
	    {"cpuset-mems", NULL, CLI_STRING, &o.cpuset_mems, "Memory node(s) to use"},
	    {"memory", NULL, CLI_STRING, &o.memory, "Memory limit (in bytes)"},
	    {"memory-reservation", NULL, CLI_STRING, &o.memory_reservation,
	     "Memory reservation or soft_limit (in bytes)"},
	    {"memory-swap", NULL, CLI_STRING, &o.memory_swap,
	     "Total memory usage (memory + swap); set '-1' to enable unlimited swap"},
	    {"pids-limit", NULL, CLI_INT, &o.pids_limit,
	     "Maximum number of pids allowed in the container (default: 0)"},
	    {"l3-cache-schema", NULL, CLI_STRING, &o.l3_cache_schema, "The string of Intel RDT/CAT L3 cache schema"},
	    {"mem-bw-schema", NULL, CLI_STRING, &o.mem_bw_schema,
	     "The string of Intel RDT/MBA memory bandwidth schema"},
	    CLI_FLAG_END,
	};
	_cleanup_container_ struct container *c = NULL;
	struct oci_linux_resources *res = NULL;
	int r, i;

	r = cli_parse_args(&cli_cmd_update, flags, argc, argv, CLI_ARGS_EXACT, 1, &i);
	if (r != 0)
		return r < 0 ? r : 0;
	/* As runc: with --resources, the other flags are ignored. */
	if (o.resources) {
		r = read_resources(o.resources, &res);
	} else {
		r = check_values(&o);
		if (r >= 0 && !(res = calloc(1, sizeof(*res))))
			r = -ENOMEM;
		if (r >= 0)
			r = flags_to_resources(&o, res);
	}
	if (r >= 0)
		r = check_changeable(res);
	if (r >= 0)
		r = container_load_for(ctx->root, argv[i], CONTAINER_OP_UPDATE, &c);
	if (r >= 0)
		r = apply(ctx->root, c, res);
	oci_resources_free(res);
	return r;
}

const struct cli_command cli_cmd_update = {
    .name = "update",
    .summary = "update container resource constraints",
    .args = "<container-id>",
    .text = "The accepted format of --resources is the \"linux.resources\" object of\n"
	    "config.json (unchanged values can be omitted):\n\n"
	    "{\n"
	    "  \"memory\": { \"limit\": 0, \"reservation\": 0, \"swap\": 0 },\n"
	    "  \"cpu\": { \"shares\": 0, \"quota\": 0, \"period\": 0, \"realtimeRuntime\": 0,\n"
	    "           \"realtimePeriod\": 0, \"cpus\": \"\", \"mems\": \"\" },\n"
	    "  \"blockIO\": { \"weight\": 0 }\n"
	    "}\n\n"
	    "Note: if data is to be read from a file or the standard input, all\n"
	    "other options are ignored.",
    .run = run_update,
};
