/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every config.json field kvrun's parser reads is applied or refused, and
 * this table says which, with a check for each:
 *
 * - GUEST: the field changes START (what guest-init applies);
 * - VM: it changes the VM's vCPUs or memory;
 * - HOSTCG: it changes what the host cgroup driver writes (a fake hybrid
 *   tree: v1 controllers and cgroup2);
 * - CHECK: a check of its own (host hooks, the cgroup path, annotations...);
 * - REFUSED: create refuses it, naming it, before anything is built;
 * - NOOP: accepted without effect, for the reason given (as under runc).
 *
 * A case is a config.json (a base, plus text in three places) whose
 * checks must hold against the base. While the cases are parsed, the
 * parser reports every member it looks up (oci_spec_observe_fields()):
 * a field it reads that no case names fails the test, and so does a case
 * naming a field it does not read.
 */
#include <errno.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/fileio.h"
#include "oci-spec/spec.h"
#include "runtime/host/cgroup.h"
#include "runtime/host/netns.h"
#include "runtime/monitor/guest-spec.h"
#include "runtime/sandbox/vm-config.h"
#include "runtime/store/bundle.h"
#include "runtime/store/hooks.h"
#include "tap.h"

enum {
	GUEST = 1,
	VM = 2,
	HOSTCG = 4,
	CHECK = 8,
	REFUSED = 16,
	NOOP = 32,
};

struct field_case {
	const char *paths; /* the fields it covers, space-separated */
	unsigned how;
	const char *process, *top, *linux_; /* added to the base (see spec_text) */
	const char *why; /* REFUSED: the error names this; NOOP: the reason */
	bool (*check)(const struct oci_spec *with);
	const char *base_linux; /* when the base needs more than namespaces */
};

#define NS_BASE "{\"type\":\"network\"},{\"type\":\"mount\"},{\"type\":\"uts\"},{\"type\":\"ipc\"},{\"type\":\"pid\"}"
#define USERNS                                                                                                     \
	",\"namespaces\":[" NS_BASE ",{\"type\":\"user\"}],\"uidMappings\":[{\"containerID\":0,\"hostID\":100000," \
	"\"size\":65536}],\"gidMappings\":[{\"containerID\":0,\"hostID\":100000,\"size\":65536}]"
#define HOOK(kind, extra)                                                                                             \
	",\"hooks\":{\"" kind "\":[{\"path\":\"/bin/sh\",\"args\":[\"sh\",\"-c\",\"exit 0\"],\"env\":[\"A=1\"]" extra \
	"}]}"

static char tmp[] = "/tmp/kvrun-fields-XXXXXX";

static bool check_hooks(const struct oci_spec *s);
static bool check_cgroups_path(const struct oci_spec *s);
static bool check_annotations(const struct oci_spec *s);
static bool check_netns_path(const struct oci_spec *s);
static bool check_root_path(const struct oci_spec *s);
static bool check_oci_version(const struct oci_spec *s);

// clang-format off
static const struct field_case cases[] = {
    {"ociVersion", CHECK, "", "", "", NULL, check_oci_version},
    {"root.path", CHECK, "", ",\"root\":{\"path\":\"other\"}", "", NULL, check_root_path},
    {"root.readonly", GUEST, "", ",\"root\":{\"path\":\"rootfs\",\"readonly\":true}", ""},
    {"hostname", GUEST, "", ",\"hostname\":\"h\"", ""},
    {"domainname", GUEST, "", ",\"domainname\":\"d\"", ""},
    {"annotations", CHECK, "", ",\"annotations\":{\"io.kvrun.kernel\":\"/no/such/kernel\"}", "", NULL,
     check_annotations},
    {"mounts[].destination mounts[].type mounts[].source mounts[].options", GUEST, "",
     ",\"mounts\":[{\"destination\":\"/t\",\"type\":\"tmpfs\",\"source\":\"tmpfs\",\"options\":[\"nosuid\"]}]", ""},
    {"mounts[].uidMappings[].containerID mounts[].uidMappings[].hostID mounts[].uidMappings[].size", REFUSED, "",
     ",\"mounts\":[{\"destination\":\"/t\",\"type\":\"tmpfs\",\"uidMappings\":[{\"containerID\":0,\"hostID\":1,"
     "\"size\":1}]}]", "", "mounts[0].uidMappings"},
    {"mounts[].gidMappings[].containerID mounts[].gidMappings[].hostID mounts[].gidMappings[].size", REFUSED, "",
     ",\"mounts\":[{\"destination\":\"/t\",\"type\":\"tmpfs\",\"gidMappings\":[{\"containerID\":0,\"hostID\":1,"
     "\"size\":1}]}]", "", "mounts[0].gidMappings"},
    /* Host hooks run by kvrun itself; the container's two by guest-init. */
    {"hooks.prestart[].path hooks.prestart[].args hooks.prestart[].env hooks.prestart[].timeout", CHECK, "",
     HOOK("prestart", ",\"timeout\":5"), "", NULL, check_hooks},
    {"hooks.createRuntime[].path hooks.createRuntime[].args hooks.createRuntime[].env hooks.createRuntime[].timeout",
     CHECK, "", HOOK("createRuntime", ",\"timeout\":5"), "", NULL, check_hooks},
    {"hooks.poststart[].path hooks.poststart[].args hooks.poststart[].env hooks.poststart[].timeout", CHECK, "",
     HOOK("poststart", ",\"timeout\":5"), "", NULL, check_hooks},
    {"hooks.poststop[].path hooks.poststop[].args hooks.poststop[].env hooks.poststop[].timeout", CHECK, "",
     HOOK("poststop", ",\"timeout\":5"), "", NULL, check_hooks},
    {"hooks.createContainer[].path hooks.createContainer[].args hooks.createContainer[].env", GUEST, "",
     HOOK("createContainer", ""), ""},
    {"hooks.createContainer[].timeout", GUEST, "", HOOK("createContainer", ",\"timeout\":5"), ""},
    {"hooks.startContainer[].path hooks.startContainer[].args hooks.startContainer[].env "
     "hooks.startContainer[].timeout", GUEST, "", HOOK("startContainer", ",\"timeout\":5"), ""},
    /* process */
    {"process.args", GUEST, ",\"args\":[\"true\"]", "", ""},
    {"process.env", GUEST, ",\"env\":[\"A=1\"]", "", ""},
    {"process.cwd", GUEST, ",\"cwd\":\"/tmp\"", "", ""},
    {"process.terminal", GUEST, ",\"terminal\":true", "", ""},
    {"process.consoleSize.height process.consoleSize.width", GUEST, ",\"consoleSize\":{\"height\":5,\"width\":7}",
     "", ""},
    {"process.user.uid", GUEST, ",\"user\":{\"uid\":1}", "", ""},
    {"process.user.gid", GUEST, ",\"user\":{\"gid\":1}", "", ""},
    {"process.user.umask", GUEST, ",\"user\":{\"umask\":63}", "", ""},
    {"process.user.additionalGids", GUEST, ",\"user\":{\"additionalGids\":[5]}", "", ""},
    {"process.capabilities.bounding", GUEST, ",\"capabilities\":{\"bounding\":[\"CAP_KILL\"]}", "", ""},
    {"process.capabilities.effective", GUEST, ",\"capabilities\":{\"effective\":[\"CAP_KILL\"]}", "", ""},
    {"process.capabilities.inheritable", GUEST, ",\"capabilities\":{\"inheritable\":[\"CAP_KILL\"]}", "", ""},
    {"process.capabilities.permitted", GUEST, ",\"capabilities\":{\"permitted\":[\"CAP_KILL\"]}", "", ""},
    {"process.capabilities.ambient", GUEST, ",\"capabilities\":{\"ambient\":[\"CAP_KILL\"]}", "", ""},
    {"process.rlimits[].type process.rlimits[].hard process.rlimits[].soft", GUEST,
     ",\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":9,\"soft\":8}]", "", ""},
    {"process.noNewPrivileges", GUEST, ",\"noNewPrivileges\":true", "", ""},
    {"process.oomScoreAdj", GUEST, ",\"oomScoreAdj\":5", "", ""},
    {"process.ioPriority.class process.ioPriority.priority", GUEST,
     ",\"ioPriority\":{\"class\":\"IOPRIO_CLASS_IDLE\",\"priority\":3}", "", ""},
    {"process.scheduler.policy process.scheduler.nice", GUEST,
     ",\"scheduler\":{\"policy\":\"SCHED_BATCH\",\"nice\":3}", "", ""},
    {"process.scheduler.priority process.scheduler.flags", GUEST,
     ",\"scheduler\":{\"policy\":\"SCHED_FIFO\",\"priority\":3,\"flags\":[\"SCHED_FLAG_RESET_ON_FORK\"]}", "", ""},
    {"process.scheduler.runtime process.scheduler.deadline process.scheduler.period", GUEST,
     ",\"scheduler\":{\"policy\":\"SCHED_DEADLINE\",\"runtime\":1000000,\"deadline\":2000000,\"period\":3000000}",
     "", ""},
    {"process.apparmorProfile", REFUSED, ",\"apparmorProfile\":\"docker-default\"", "", "",
     "process.apparmorProfile: apparmor profile \"docker-default\" is set, but AppArmor is not enabled"},
    {"process.apparmorProfile", NOOP, ",\"apparmorProfile\":\"unconfined\"", "", "",
     "unconfined: no AppArmor policy confines anything in the VM"},
    {"process.selinuxLabel", REFUSED, ",\"selinuxLabel\":\"system_u:system_r:container_t:s0\"", "", "",
     "process.selinuxLabel: selinux label is specified in config, but SELinux is not enabled"},
    {"process.execCPUAffinity.initial", REFUSED, ",\"execCPUAffinity\":{\"initial\":\"0\"}", "", "",
     "process.execCPUAffinity.initial: CPU affinity is not supported"},
    {"process.execCPUAffinity.final", REFUSED, ",\"execCPUAffinity\":{\"final\":\"0\"}", "", "",
     "process.execCPUAffinity.final: CPU affinity is not supported"},
    /* linux */
    {"linux.namespaces[].type", GUEST, "", "", ",\"namespaces\":[" NS_BASE ",{\"type\":\"cgroup\"}]"},
    {"linux.namespaces[].path", CHECK, "", "",
     ",\"namespaces\":[{\"type\":\"network\",\"path\":\"/var/run/netns/x\"},{\"type\":\"mount\"},{\"type\":\"uts\"}]",
     NULL, check_netns_path},
    {"linux.namespaces[].path", REFUSED, "", "",
     ",\"namespaces\":[" NS_BASE ",{\"type\":\"cgroup\",\"path\":\"/proc/1/ns/cgroup\"}]",
     "linux.namespaces[5].path: joining the cgroup namespace at /proc/1/ns/cgroup is not supported"},
    {"linux.namespaces[].type", REFUSED, "", "", ",\"namespaces\":[" NS_BASE ",{\"type\":\"time\"}]",
     "linux.namespaces[5]: time namespaces are not supported"},
    {"linux.uidMappings[].containerID linux.uidMappings[].hostID linux.uidMappings[].size "
     "linux.gidMappings[].containerID linux.gidMappings[].hostID linux.gidMappings[].size",
     GUEST, "", "", USERNS},
    {"linux.devices[].path linux.devices[].type linux.devices[].major linux.devices[].minor "
     "linux.devices[].fileMode linux.devices[].uid linux.devices[].gid",
     GUEST, "", "",
     ",\"devices\":[{\"path\":\"/dev/fuse\",\"type\":\"c\",\"major\":10,\"minor\":229,\"fileMode\":384,\"uid\":1,"
     "\"gid\":2}]"},
    {"linux.cgroupsPath", CHECK, "", "", ",\"cgroupsPath\":\"/a/b\"", NULL, check_cgroups_path},
    {"linux.resources.devices[].allow linux.resources.devices[].type linux.resources.devices[].major "
     "linux.resources.devices[].minor linux.resources.devices[].access",
     GUEST, "", "",
     ",\"resources\":{\"devices\":[{\"allow\":true,\"type\":\"c\",\"major\":10,\"minor\":229,\"access\":\"rw\"}]}"},
    {"linux.resources.memory.limit", GUEST | VM | HOSTCG, "", "", ",\"resources\":{\"memory\":{\"limit\":134217728}}"},
    {"linux.resources.memory.reservation", GUEST, "", "",
     ",\"resources\":{\"memory\":{\"reservation\":67108864}}"},
    {"linux.resources.memory.swap", GUEST, "", "",
     ",\"resources\":{\"memory\":{\"limit\":134217728,\"swap\":268435456}}", NULL, NULL,
     ",\"resources\":{\"memory\":{\"limit\":134217728}}"},
    {"linux.resources.memory.kernel", REFUSED, "", "", ",\"resources\":{\"memory\":{\"kernel\":1048576}}",
     "linux.resources.memory.kernel: kernel memory limits are not supported"},
    {"linux.resources.memory.kernelTCP", REFUSED, "", "", ",\"resources\":{\"memory\":{\"kernelTCP\":1048576}}",
     "linux.resources.memory.kernelTCP"},
    {"linux.resources.memory.swappiness", REFUSED, "", "", ",\"resources\":{\"memory\":{\"swappiness\":10}}",
     "linux.resources.memory.swappiness"},
    {"linux.resources.memory.disableOOMKiller", REFUSED, "", "",
     ",\"resources\":{\"memory\":{\"disableOOMKiller\":true}}", "linux.resources.memory.disableOOMKiller"},
    {"linux.resources.memory.useHierarchy", REFUSED, "", "", ",\"resources\":{\"memory\":{\"useHierarchy\":false}}",
     "linux.resources.memory.useHierarchy"},
    {"linux.resources.memory.useHierarchy", NOOP, "", "", ",\"resources\":{\"memory\":{\"useHierarchy\":true}}",
     "cgroup v2 is always hierarchical"},
    {"linux.resources.memory.checkBeforeUpdate", NOOP, "", "",
     ",\"resources\":{\"memory\":{\"checkBeforeUpdate\":true}}",
     "it concerns update (runc compares a new limit with the usage); at create there is no usage"},
    {"linux.resources.cpu.shares", HOSTCG, "", "", ",\"resources\":{\"cpu\":{\"shares\":512}}"},
    {"linux.resources.cpu.quota", VM | HOSTCG, "", "", ",\"resources\":{\"cpu\":{\"quota\":200000}}"},
    {"linux.resources.cpu.period", VM | HOSTCG, "", "", ",\"resources\":{\"cpu\":{\"quota\":200000,\"period\":50000}}",
     NULL, NULL, ",\"resources\":{\"cpu\":{\"quota\":200000}}"},
    {"linux.resources.cpu.burst", HOSTCG, "", "", ",\"resources\":{\"cpu\":{\"burst\":1000}}"},
    {"linux.resources.cpu.cpus", VM | HOSTCG, "", "", ",\"resources\":{\"cpu\":{\"cpus\":\"0-1\"}}"},
    {"linux.resources.cpu.mems", HOSTCG, "", "", ",\"resources\":{\"cpu\":{\"mems\":\"1\"}}"},
    {"linux.resources.cpu.realtimeRuntime", REFUSED, "", "", ",\"resources\":{\"cpu\":{\"realtimeRuntime\":1}}",
     "linux.resources.cpu.realtimeRuntime"},
    {"linux.resources.cpu.realtimePeriod", REFUSED, "", "", ",\"resources\":{\"cpu\":{\"realtimePeriod\":1}}",
     "linux.resources.cpu.realtimePeriod"},
    {"linux.resources.cpu.idle", REFUSED, "", "", ",\"resources\":{\"cpu\":{\"idle\":1}}", "linux.resources.cpu.idle"},
    {"linux.resources.pids.limit", GUEST | HOSTCG, "", "", ",\"resources\":{\"pids\":{\"limit\":10}}"},
    {"linux.resources.blockIO.weight", REFUSED, "", "", ",\"resources\":{\"blockIO\":{\"weight\":10}}",
     "linux.resources.blockIO.weight"},
    {"linux.resources.blockIO.leafWeight", REFUSED, "", "", ",\"resources\":{\"blockIO\":{\"leafWeight\":10}}",
     "linux.resources.blockIO.leafWeight"},
    {"linux.resources.blockIO.weightDevice[].major linux.resources.blockIO.weightDevice[].minor "
     "linux.resources.blockIO.weightDevice[].weight linux.resources.blockIO.weightDevice[].leafWeight",
     REFUSED, "", "",
     ",\"resources\":{\"blockIO\":{\"weightDevice\":[{\"major\":8,\"minor\":0,\"weight\":10,\"leafWeight\":10}]}}",
     "linux.resources.blockIO.weightDevice"},
    {"linux.resources.blockIO.throttleReadBpsDevice[].major linux.resources.blockIO.throttleReadBpsDevice[].minor "
     "linux.resources.blockIO.throttleReadBpsDevice[].rate",
     REFUSED, "", "",
     ",\"resources\":{\"blockIO\":{\"throttleReadBpsDevice\":[{\"major\":8,\"minor\":0,\"rate\":10}]}}",
     "linux.resources.blockIO.throttleReadBpsDevice"},
    {"linux.resources.blockIO.throttleWriteBpsDevice[].major linux.resources.blockIO.throttleWriteBpsDevice[].minor "
     "linux.resources.blockIO.throttleWriteBpsDevice[].rate",
     REFUSED, "", "",
     ",\"resources\":{\"blockIO\":{\"throttleWriteBpsDevice\":[{\"major\":8,\"minor\":0,\"rate\":10}]}}",
     "linux.resources.blockIO.throttleWriteBpsDevice"},
    {"linux.resources.blockIO.throttleReadIOPSDevice[].major linux.resources.blockIO.throttleReadIOPSDevice[].minor "
     "linux.resources.blockIO.throttleReadIOPSDevice[].rate",
     REFUSED, "", "",
     ",\"resources\":{\"blockIO\":{\"throttleReadIOPSDevice\":[{\"major\":8,\"minor\":0,\"rate\":10}]}}",
     "linux.resources.blockIO.throttleReadIOPSDevice"},
    {"linux.resources.blockIO.throttleWriteIOPSDevice[].major "
     "linux.resources.blockIO.throttleWriteIOPSDevice[].minor linux.resources.blockIO.throttleWriteIOPSDevice[].rate",
     REFUSED, "", "",
     ",\"resources\":{\"blockIO\":{\"throttleWriteIOPSDevice\":[{\"major\":8,\"minor\":0,\"rate\":10}]}}",
     "linux.resources.blockIO.throttleWriteIOPSDevice"},
    {"linux.resources.hugepageLimits[].pageSize linux.resources.hugepageLimits[].limit", GUEST, "", "",
     ",\"resources\":{\"hugepageLimits\":[{\"pageSize\":\"2MB\",\"limit\":0}]}"},
    {"linux.resources.network.classID", REFUSED, "", "", ",\"resources\":{\"network\":{\"classID\":1}}",
     "linux.resources.network.classID"},
    {"linux.resources.network.priorities[].name linux.resources.network.priorities[].priority", REFUSED, "", "",
     ",\"resources\":{\"network\":{\"priorities\":[{\"name\":\"eth0\",\"priority\":1}]}}",
     "linux.resources.network.priorities"},
    {"linux.resources.rdma.*.hcaHandles linux.resources.rdma.*.hcaObjects", REFUSED, "", "",
     ",\"resources\":{\"rdma\":{\"K\":{\"hcaHandles\":1,\"hcaObjects\":1}}}", "linux.resources.rdma"},
    {"linux.resources.unified", GUEST, "", "", ",\"resources\":{\"unified\":{\"memory.high\":\"100000000\"}}"},
    {"linux.sysctl", GUEST, "", "", ",\"sysctl\":{\"kernel.msgmax\":\"9\"}"},
    {"linux.seccomp.defaultAction linux.seccomp.architectures linux.seccomp.flags", GUEST, "", "",
     ",\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"architectures\":[\"SCMP_ARCH_X86_64\"],"
     "\"flags\":[\"SECCOMP_FILTER_FLAG_LOG\"]}"},
    {"linux.seccomp.defaultErrnoRet", GUEST, "", "",
     ",\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultErrnoRet\":5}", NULL, NULL,
     ",\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ERRNO\"}"},
    {"linux.seccomp.syscalls[].names linux.seccomp.syscalls[].action linux.seccomp.syscalls[].errnoRet "
     "linux.seccomp.syscalls[].args[].index linux.seccomp.syscalls[].args[].value "
     "linux.seccomp.syscalls[].args[].valueTwo linux.seccomp.syscalls[].args[].op",
     GUEST, "", "",
     ",\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"mkdir\"],\"action\":"
     "\"SCMP_ACT_ERRNO\",\"errnoRet\":1,\"args\":[{\"index\":0,\"value\":1,\"valueTwo\":2,\"op\":\"SCMP_CMP_EQ\"}]}]}"},
    {"linux.seccomp.listenerPath", REFUSED, "", "",
     ",\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"listenerPath\":\"/run/l.sock\"}",
     "linux.seccomp.listenerPath: seccomp notifications cannot leave the VM"},
    {"linux.seccomp.listenerMetadata", REFUSED, "", "",
     ",\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"listenerMetadata\":\"m\"}",
     "linux.seccomp.listenerMetadata"},
    {"linux.rootfsPropagation", GUEST, "", "", ",\"rootfsPropagation\":\"rslave\""},
    {"linux.maskedPaths", GUEST, "", "", ",\"maskedPaths\":[\"/proc/kcore\"]"},
    {"linux.readonlyPaths", GUEST, "", "", ",\"readonlyPaths\":[\"/proc/sys\"]"},
    {"linux.mountLabel", REFUSED, "", "", ",\"mountLabel\":\"system_u:object_r:container_file_t:s0\"",
     "linux.mountLabel: a mount label is specified in config, but SELinux is not enabled"},
    {"linux.personality.domain", GUEST, "", "", ",\"personality\":{\"domain\":\"LINUX32\"}"},
    {"linux.personality.flags", REFUSED, "", "", ",\"personality\":{\"domain\":\"LINUX\",\"flags\":[\"x\"]}",
     "linux.personality.flags: personality flags are not supported"},
    {"linux.timeOffsets.*.secs linux.timeOffsets.*.nanosecs", REFUSED, "", "",
     ",\"timeOffsets\":{\"monotonic\":{\"secs\":1,\"nanosecs\":2}}", "linux.timeOffsets"},
    {"linux.intelRdt.closID linux.intelRdt.l3CacheSchema linux.intelRdt.memBwSchema", REFUSED, "", "",
     ",\"intelRdt\":{\"closID\":\"c\",\"l3CacheSchema\":\"L3:0=f\",\"memBwSchema\":\"MB:0=50\"}",
     "linux.intelRdt: intelRdt is specified in config, but Intel RDT is not available"},
};
// clang-format on

/* ---- the fields the parser reads ---- */

static char **seen;
static size_t n_seen;

/* "mounts[3].type" -> "mounts[].type"; the member after rdma. and
 * timeOffsets. (a name of the user's) -> "*". */
static void normalize(const char *path, char *out, size_t size)
{
	size_t o = 0;

	for (const char *p = path; *p && o < size - 1; p++) {
		if (*p == '[') {
			while (*p && *p != ']')
				p++;
			if (o < size - 3) {
				out[o++] = '[';
				out[o++] = ']';
			}
			if (!*p)
				break;
			continue;
		}
		out[o++] = *p;
		out[o] = 0;
		if ((o >= 5 && strcmp(out + o - 5, "rdma.") == 0) ||
		    (o >= 12 && strcmp(out + o - 12, "timeOffsets.") == 0)) {
			while (p[1] && p[1] != '.')
				p++;
			out[o++] = '*';
		}
	}
	out[o] = 0;
}

static void observe(const char *path, void *data)
{
	char norm[512];

	normalize(path, norm, sizeof(norm));
	for (size_t i = 0; i < n_seen; i++)
		if (strcmp(seen[i], norm) == 0)
			return;
	seen = realloc(seen, (n_seen + 1) * sizeof(*seen));
	seen[n_seen++] = strdup(norm);
}

/* An object or array of objects whose members were looked up too. */
static bool is_container(const char *path)
{
	size_t len = strlen(path);

	for (size_t i = 0; i < n_seen; i++)
		if (strncmp(seen[i], path, len) == 0 && (seen[i][len] == '.' || strncmp(seen[i] + len, "[].", 3) == 0))
			return true;
	return false;
}

static bool case_names(const struct field_case *c, const char *path)
{
	size_t len = strlen(path);

	for (const char *p = c->paths; (p = strstr(p, path)); p += len)
		if ((p == c->paths || p[-1] == ' ') && (p[len] == ' ' || p[len] == 0))
			return true;
	return false;
}

/* ---- specs ---- */

static struct oci_spec *spec_text(const char *process, const char *top, const char *linux_)
{
	struct oci_spec *s = NULL;
	char *json = NULL;

	if (asprintf(&json,
	             "{\"ociVersion\":\"1.2.0\",\"root\":{\"path\":\"rootfs\"},\"process\":{\"args\":[\"sh\"],"
	             "\"cwd\":\"/\"%s}%s,\"linux\":{\"namespaces\":[" NS_BASE "]%s}}",
	             process, top, linux_) < 0)
		return NULL;
	if (oci_spec_parse(json, strlen(json), "config.json", &s) < 0)
		printf("# %s\n# %s\n", err_msg(), json);
	free(json);
	return s;
}

static bool start_frame(const struct oci_spec *s, uint8_t **ret, size_t *ret_len)
{
	struct proto_msg m = {.type = PROTO_MSG_START};
	int r = guest_spec_from_oci(s, NULL, NULL, &m.u.start);

	if (r < 0) {
		printf("# START: %s\n", err_msg());
		return false;
	}
	r = proto_encode(&m, ret, ret_len);
	proto_start_free(&m.u.start);
	return r >= 0;
}

static bool differs_in_start(const struct oci_spec *a, const struct oci_spec *b)
{
	_cleanup_free_ uint8_t *x = NULL, *y = NULL;
	size_t nx, ny;

	if (!start_frame(a, &x, &nx) || !start_frame(b, &y, &ny))
		return false;
	return nx != ny || memcmp(x, y, nx) != 0;
}

static bool differs_in_vm(const struct oci_spec *a, const struct oci_spec *b)
{
	const struct oci_linux_resources *ra = a->linux_spec->resources, *rb = b->linux_spec->resources;
	unsigned int ca = 0, cb = 0;

	vm_plan_cpus(ra, 1, &ca);
	vm_plan_cpus(rb, 1, &cb);
	return ca != cb || vm_plan_memory(ra, 1 << 30) != vm_plan_memory(rb, 1 << 30);
}

/* ---- the host cgroup driver on a fake hybrid tree ---- */

static const char *const cg_files[] = {
    "memory/c/cgroup.procs",  "memory/c/memory.limit_in_bytes", "cpu/c/cgroup.procs",  "cpu/c/cpu.cfs_period_us",
    "cpu/c/cpu.cfs_quota_us", "cpu/c/cpu.cfs_burst_us",         "cpu/c/cpu.shares",    "cpuset/c/cgroup.procs",
    "cpuset/c/cpuset.cpus",   "cpuset/c/cpuset.mems",           "pids/c/cgroup.procs", "pids/c/pids.max",
    "unified/c/cgroup.procs", "unified/c/cpu.weight",
};

static void cg_write(const char *rel, const char *text)
{
	char f[600], d[600];

	snprintf(f, sizeof(f), "%s/cg/%s", tmp, rel);
	snprintf(d, sizeof(d), "%s", f);
	*strrchr(d, '/') = 0;
	mkdir_p(d, 0755);
	write_file_atomic(f, text, strlen(text), 0644);
}

/* Everything the driver wrote for s's resources, in one string. */
static char *host_cgroup(const struct oci_spec *s)
{
	char *all = strdup(""), f[600], *v, *n;

	for (size_t i = 0; i < ARRAY_SIZE(cg_files); i++)
		cg_write(cg_files[i], "");
	cg_write("cpuset/cpuset.cpus", "0-7\n");
	cg_write("cpuset/cpuset.mems", "0\n");
	cg_write("self", "5:pids:/\n4:memory:/\n3:cpuset:/\n1:cpu:/\n0::/\n");
	if (cgroup_enter("/c", NULL, s->linux_spec->resources, 1) < 0)
		printf("# cgroup_enter: %s\n", err_msg());
	for (size_t i = 0; i < ARRAY_SIZE(cg_files); i++) {
		snprintf(f, sizeof(f), "%s/cg/%s", tmp, cg_files[i]);
		v = NULL;
		read_file_all(f, 4096, &v, NULL);
		if (asprintf(&n, "%s%s=%s;", all, cg_files[i], v ? v : "") >= 0) {
			free(all);
			all = n;
		}
		free(v);
	}
	return all;
}

static bool differs_in_host_cgroup(const struct oci_spec *a, const struct oci_spec *b)
{
	_cleanup_free_ char *x = host_cgroup(a), *y = host_cgroup(b);

	return strcmp(x, y) != 0;
}

/* ---- checks of their own ---- */

static bool check_oci_version(const struct oci_spec *s)
{
	struct oci_spec *bad = spec_text("", ",\"ociVersion\":\"\"", "");
	bool r = oci_spec_validate(s) == 0 && oci_spec_validate(bad) < 0 && strstr(err_msg(), "ociVersion");

	oci_spec_free(bad);
	return r;
}

static bool check_root_path(const struct oci_spec *s)
{
	_cleanup_free_ char *dir = NULL, *cfg = NULL;
	struct bundle *b = NULL;
	bool r;

	if (asprintf(&dir, "%s/bundle/other", tmp) < 0 || mkdir_p(dir, 0755) < 0)
		return false;
	*strrchr(dir, '/') = 0;
	if (asprintf(&cfg, "%s/config.json", dir) < 0)
		return false;
	const char *json = "{\"ociVersion\":\"1.2.0\",\"root\":{\"path\":\"other\"}}";

	write_file_atomic(cfg, json, strlen(json), 0644);
	r = bundle_load(dir, &b) == 0 && strcmp(strrchr(b->rootfs, '/'), "/other") == 0 &&
	    strcmp(s->root->path, "other") == 0;
	bundle_free(b);
	return r;
}

static bool check_hooks(const struct oci_spec *s)
{
	char out[300], script[400];
	struct oci_state st = {0};
	struct oci_hook_list *l = NULL;
	_cleanup_free_ char *got = NULL;

	for (int k = 0; k < OCI_HOOK__MAX; k++)
		if (s->hooks.list[k].n)
			l = (struct oci_hook_list *)&s->hooks.list[k];
	if (!l)
		return false;
	/* Its own args and env, and its timeout. */
	snprintf(out, sizeof(out), "%s/hook-out", tmp);
	unlink(out);
	snprintf(script, sizeof(script), "echo $A $0 > %s", out);
	free(l->hooks[0].args[2]);
	l->hooks[0].args[2] = strdup(script);
	st.id = (char *)"c";
	st.oci_version = (char *)"1.2.0";
	if (hooks_run(s, (enum oci_hook_kind)(l - s->hooks.list), &st) < 0 || read_file_all(out, 64, &got, NULL) < 0 ||
	    strcmp(got, "1 sh\n") != 0)
		return false;
	free(l->hooks[0].args[2]);
	l->hooks[0].args[2] = strdup("sleep 10");
	l->hooks[0].timeout = 1;
	return hooks_run(s, (enum oci_hook_kind)(l - s->hooks.list), &st) < 0 && strstr(err_msg(), "timeout after 1");
}

static bool check_cgroups_path(const struct oci_spec *s)
{
	_cleanup_free_ char *path = NULL;

	return cgroup_resolve(s->linux_spec->cgroups_path, false, &path) == 0 && strcmp(path, "/a/b") == 0;
}

static bool check_annotations(const struct oci_spec *s)
{
	struct vm_plan p = {0};
	int r = vm_plan_make(s, NULL, &p);

	vm_plan_done(&p);
	return r < 0 && strstr(err_msg(), "/no/such/kernel") && strstr(err_msg(), "io.kvrun.kernel");
}

static bool check_netns_path(const struct oci_spec *s)
{
	const char *p = NULL;

	return netns_path_from_spec(s, &p) == 0 && p && strcmp(p, "/var/run/netns/x") == 0;
}

/* ---- the tests ---- */

static void check_case(const struct field_case *c)
{
	struct oci_spec *base = spec_text("", "", c->base_linux ? c->base_linux : "");
	struct oci_spec *with = spec_text(c->process, c->top, c->linux_);
	int r;

	if (!ok(base && with, "%s: parses", c->paths))
		goto out;
	ok(oci_spec_validate(with) == 0, "%s: a valid config.json (%s)", c->paths, err_msg());
	err_clear();
	r = guest_spec_check(with, NULL);
	if (c->how == REFUSED) {
		ok(r < 0 && strstr(err_msg(), c->why), "%s: refused naming it (%s)", c->paths, err_msg());
		ok(guest_spec_check(base, NULL) == 0, "%s: the base is not", c->paths);
		goto out;
	}
	ok(r == 0, "%s: accepted (%s)", c->paths, r < 0 ? err_msg() : "");
	if (c->how & GUEST)
		ok(differs_in_start(base, with), "%s: reaches the guest (START)", c->paths);
	if (c->how & VM)
		ok(differs_in_vm(base, with), "%s: shapes the VM (vCPUs, memory)", c->paths);
	if (c->how & HOSTCG)
		ok(differs_in_host_cgroup(base, with), "%s: written to the host cgroup", c->paths);
	if (c->how & CHECK)
		ok(c->check(with), "%s: applied (%s)", c->paths, err_msg());
	if (c->how & NOOP)
		ok(!differs_in_start(base, with) && !differs_in_vm(base, with), "%s: no effect: %s", c->paths, c->why);
out:
	oci_spec_free(base);
	oci_spec_free(with);
}

TEST(cases)
{
	oci_spec_observe_fields(observe, NULL);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		check_case(&cases[i]);
	oci_spec_observe_fields(NULL, NULL);
}

TEST(every_field_read_has_a_case)
{
	size_t missing = 0;

	ok(n_seen > 100, "the parser looked up %zu fields", n_seen);
	for (size_t i = 0; i < n_seen; i++) {
		bool named = false;

		if (is_container(seen[i]))
			continue;
		for (size_t j = 0; j < ARRAY_SIZE(cases) && !named; j++)
			named = case_names(&cases[j], seen[i]);
		if (!named) {
			printf("# %s is parsed, but neither applied nor refused here\n", seen[i]);
			missing++;
		}
	}
	is_int(missing, 0);
}

TEST(every_case_names_a_field_read)
{
	size_t stale = 0;

	for (size_t j = 0; j < ARRAY_SIZE(cases); j++) {
		_cleanup_free_ char *paths = strdup(cases[j].paths);
		char *save = NULL;

		for (char *p = strtok_r(paths, " ", &save); p; p = strtok_r(NULL, " ", &save)) {
			bool found = false;

			for (size_t i = 0; i < n_seen && !found; i++)
				found = strcmp(seen[i], p) == 0 && !is_container(p);
			if (!found) {
				printf("# a case names %s, which the parser does not read (as a field)\n", p);
				stale++;
			}
		}
	}
	is_int(stale, 0);
}

struct tap_test tap_tests[TAP_MAX_TESTS];
int tap_nr_tests, tap_count, tap_failed;
const char *tap_current = "";

int main(void)
{
	char cg[300], self[300], cmd[300];

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!mkdtemp(tmp))
		tap_skip_all("cannot make a temporary directory");
	snprintf(cg, sizeof(cg), "%s/cg", tmp);
	snprintf(self, sizeof(self), "%s/cg/self", tmp);
	cgroup_mount_root = cg;
	cgroup_self_file = self;
	/* No kernel from the environment: the annotation's must be looked up. */
	unsetenv("KVRUN_KERNEL");
	setenv("KVRUN_CONFIG", "/nonexistent/kvrun-config.json", 1);
	for (int i = 0; i < tap_nr_tests; i++) {
		tap_current = tap_tests[i].name;
		tap_tests[i].fn();
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", tmp);
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}
