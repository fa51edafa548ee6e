/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Typed view of an OCI runtime-spec (1.2) bundle config.json and of a
 * standalone process.json (`exec --process`).
 *
 * Conventions for every struct below:
 * - strings are malloc'd, NUL-terminated, and NULL when the field is absent
 *   (or JSON null); an empty JSON string gives "".
 * - string lists (char **) are NULL-terminated; the pointer itself is NULL
 *   when the field is absent, and points at { NULL } for an empty array.
 * - arrays of structs come as a pointer plus an n_ count (NULL/0 when absent).
 * - optional scalars carry a has_<field> flag; optional sub-objects carry a
 *   `present` flag or are pointers that are NULL when absent.
 * Everything is owned by the top-level object and released by its _free().
 *
 * Parsing follows Go's encoding/json as runc uses it: unknown fields are
 * ignored, a key that appears twice keeps its last value, field names also
 * match case-insensitively, JSON null leaves a field absent. Numbers must be
 * integers in the range of the Go type (uid: uint32, memory limit: int64...).
 *
 * Errors are recorded with err_set() (common/error.h); messages start with
 * the name given by the caller (usually the file name), e.g.
 *   "config.json: line 3, column 7: ..."          (syntax)
 *   "config.json: process.args[2]: expected a string"  (type)
 *   "config.json: process.cwd: must be an absolute path"  (validation)
 */
#ifndef KVRUN_OCI_SPEC_SPEC_H
#define KVRUN_OCI_SPEC_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest config.json / process.json accepted (runc has no limit; this only
 * guards against reading something absurd). */
#define OCI_SPEC_MAX_SIZE (64u << 20)

/* Ordered string -> string map (annotations, sysctl, unified...). Keys are
 * unique; document order is kept. */
struct oci_kv {
	char *key;
	char *value;
};

struct oci_map {
	struct oci_kv *items;
	size_t n;
};

/* Value of key, or NULL when absent. */
const char *oci_map_get(const struct oci_map *m, const char *key);
/* Set key to value (both copied), replacing an existing entry in place or
 * appending. 0 or -ENOMEM. */
int oci_map_set(struct oci_map *m, const char *key, const char *value);
void oci_map_clear(struct oci_map *m);

/* Number of entries of a NULL-terminated string list (0 for NULL). */
size_t oci_strv_length(char *const *v);
void oci_strv_free(char **v);

/* ---- process ---------------------------------------------------------- */

struct oci_console_size {
	bool present;
	uint32_t height;
	uint32_t width;
};

struct oci_user {
	uint32_t uid;
	uint32_t gid;
	bool has_umask;
	uint32_t umask;
	uint32_t *additional_gids;
	size_t n_additional_gids;
};

struct oci_capabilities {
	char **bounding;
	char **effective;
	char **inheritable;
	char **permitted;
	char **ambient;
};

struct oci_rlimit {
	char *type; /* "RLIMIT_NOFILE"... */
	uint64_t hard;
	uint64_t soft;
};

struct oci_io_priority {
	bool present;
	char *class; /* IOPRIO_CLASS_RT, IOPRIO_CLASS_BE, IOPRIO_CLASS_IDLE */
	int32_t priority;
};

struct oci_scheduler {
	bool present;
	char *policy; /* SCHED_OTHER... */
	int32_t nice;
	int32_t priority;
	char **flags;
	uint64_t runtime;
	uint64_t deadline;
	uint64_t period;
};

struct oci_exec_cpu_affinity {
	char *initial; /* cpu list, e.g. "0-3,7" */
	char *final;
};

struct oci_process {
	bool terminal;
	struct oci_console_size console_size;
	struct oci_user user;
	char **args;
	char **env;
	char *cwd;
	struct oci_capabilities *capabilities; /* NULL when absent */
	struct oci_rlimit *rlimits;
	size_t n_rlimits;
	bool no_new_privileges;
	char *apparmor_profile;
	bool has_oom_score_adj;
	int32_t oom_score_adj;
	char *selinux_label;
	struct oci_io_priority io_priority;
	struct oci_scheduler scheduler;
	struct oci_exec_cpu_affinity exec_cpu_affinity;
	/* "commandLine" (Windows only) is ignored. */
};

/* ---- root, mounts, hooks ---------------------------------------------- */

struct oci_root {
	char *path;
	bool readonly;
};

struct oci_id_mapping {
	uint32_t container_id;
	uint32_t host_id;
	uint32_t size;
};

struct oci_mount {
	char *destination;
	char *type;
	char *source;
	char **options;
	struct oci_id_mapping *uid_mappings;
	size_t n_uid_mappings;
	struct oci_id_mapping *gid_mappings;
	size_t n_gid_mappings;
};

struct oci_hook {
	char *path;
	char **args;
	char **env;
	bool has_timeout;
	int64_t timeout; /* seconds, > 0 when present and valid */
};

enum oci_hook_kind {
	OCI_HOOK_PRESTART,
	OCI_HOOK_CREATE_RUNTIME,
	OCI_HOOK_CREATE_CONTAINER,
	OCI_HOOK_START_CONTAINER,
	OCI_HOOK_POSTSTART,
	OCI_HOOK_POSTSTOP,
	OCI_HOOK__MAX,
};

/* JSON name of a hook kind ("prestart", "createRuntime"...). */
const char *oci_hook_kind_name(enum oci_hook_kind kind);

struct oci_hook_list {
	struct oci_hook *hooks;
	size_t n;
};

struct oci_hooks {
	struct oci_hook_list list[OCI_HOOK__MAX]; /* indexed by enum oci_hook_kind */
};

/* ---- linux ------------------------------------------------------------ */

enum oci_namespace_kind {
	OCI_NS_UNKNOWN = -1,
	OCI_NS_PID,
	OCI_NS_NETWORK,
	OCI_NS_MOUNT,
	OCI_NS_IPC,
	OCI_NS_UTS,
	OCI_NS_USER,
	OCI_NS_CGROUP,
	OCI_NS_TIME,
	OCI_NS__MAX,
};

/* "pid" -> OCI_NS_PID...; OCI_NS_UNKNOWN for anything else. */
enum oci_namespace_kind oci_namespace_kind_from_name(const char *name);
/* OCI name of a kind, NULL when out of range. */
const char *oci_namespace_kind_name(enum oci_namespace_kind kind);

struct oci_namespace {
	char *type;
	enum oci_namespace_kind kind; /* resolved from type at parse time */
	char *path; /* NULL: create a new namespace */
};

struct oci_linux_device {
	char *path;
	char *type; /* "c", "b", "u" or "p" */
	int64_t major;
	int64_t minor;
	bool has_file_mode;
	uint32_t file_mode;
	bool has_uid;
	uint32_t uid;
	bool has_gid;
	uint32_t gid;
};

struct oci_device_cgroup {
	bool allow;
	char *type; /* NULL or "a": all */
	bool has_major;
	int64_t major;
	bool has_minor;
	int64_t minor;
	char *access; /* "rwm" subset */
};

struct oci_memory {
	bool present;
	bool has_limit;
	int64_t limit;
	bool has_reservation;
	int64_t reservation;
	bool has_swap;
	int64_t swap;
	bool has_kernel;
	int64_t kernel;
	bool has_kernel_tcp;
	int64_t kernel_tcp;
	bool has_swappiness;
	uint64_t swappiness;
	bool has_disable_oom_killer;
	bool disable_oom_killer;
	bool has_use_hierarchy;
	bool use_hierarchy;
	bool has_check_before_update;
	bool check_before_update;
};

struct oci_cpu {
	bool present;
	bool has_shares;
	uint64_t shares;
	bool has_quota;
	int64_t quota;
	bool has_burst;
	uint64_t burst;
	bool has_period;
	uint64_t period;
	bool has_realtime_runtime;
	int64_t realtime_runtime;
	bool has_realtime_period;
	uint64_t realtime_period;
	char *cpus;
	char *mems;
	bool has_idle;
	int64_t idle;
};

struct oci_pids {
	bool present;
	int64_t limit;
};

struct oci_weight_device {
	int64_t major;
	int64_t minor;
	bool has_weight;
	uint16_t weight;
	bool has_leaf_weight;
	uint16_t leaf_weight;
};

struct oci_throttle_device {
	int64_t major;
	int64_t minor;
	uint64_t rate;
};

struct oci_throttle_list {
	struct oci_throttle_device *devices;
	size_t n;
};

struct oci_block_io {
	bool present;
	bool has_weight;
	uint16_t weight;
	bool has_leaf_weight;
	uint16_t leaf_weight;
	struct oci_weight_device *weight_devices;
	size_t n_weight_devices;
	struct oci_throttle_list throttle_read_bps;
	struct oci_throttle_list throttle_write_bps;
	struct oci_throttle_list throttle_read_iops;
	struct oci_throttle_list throttle_write_iops;
};

struct oci_hugepage_limit {
	char *page_size; /* "2MB", "1GB" */
	uint64_t limit;
};

struct oci_interface_priority {
	char *name;
	uint32_t priority;
};

struct oci_network {
	bool present;
	bool has_class_id;
	uint32_t class_id;
	struct oci_interface_priority *priorities;
	size_t n_priorities;
};

struct oci_rdma {
	char *device; /* key of linux.resources.rdma */
	bool has_hca_handles;
	uint32_t hca_handles;
	bool has_hca_objects;
	uint32_t hca_objects;
};

struct oci_linux_resources {
	struct oci_device_cgroup *devices;
	size_t n_devices;
	struct oci_memory memory;
	struct oci_cpu cpu;
	struct oci_pids pids;
	struct oci_block_io block_io;
	struct oci_hugepage_limit *hugepage_limits;
	size_t n_hugepage_limits;
	struct oci_network network;
	struct oci_rdma *rdma;
	size_t n_rdma;
	struct oci_map unified;
};

struct oci_seccomp_arg {
	uint32_t index;
	uint64_t value;
	uint64_t value_two;
	char *op; /* SCMP_CMP_* */
};

struct oci_seccomp_syscall {
	char **names;
	char *action; /* SCMP_ACT_* */
	bool has_errno_ret;
	uint32_t errno_ret;
	struct oci_seccomp_arg *args;
	size_t n_args;
};

struct oci_seccomp {
	char *default_action;
	bool has_default_errno_ret;
	uint32_t default_errno_ret;
	char **architectures; /* SCMP_ARCH_* */
	char **flags; /* SECCOMP_FILTER_FLAG_* */
	char *listener_path;
	char *listener_metadata;
	struct oci_seccomp_syscall *syscalls;
	size_t n_syscalls;
};

struct oci_personality {
	bool present;
	char *domain; /* LINUX or LINUX32 */
	char **flags;
};

struct oci_time_offset {
	char *clock; /* key of linux.timeOffsets: "monotonic", "boottime" */
	int64_t secs;
	uint32_t nanosecs;
};

/* Parsed so that configs carrying it load; kvrun does not apply it. */
struct oci_intel_rdt {
	bool present;
	char *clos_id;
	char *l3_cache_schema;
	char *mem_bw_schema;
};

struct oci_linux {
	struct oci_namespace *namespaces;
	size_t n_namespaces;
	struct oci_id_mapping *uid_mappings;
	size_t n_uid_mappings;
	struct oci_id_mapping *gid_mappings;
	size_t n_gid_mappings;
	struct oci_linux_device *devices;
	size_t n_devices;
	char *cgroups_path;
	struct oci_linux_resources *resources; /* NULL when absent */
	struct oci_map sysctl;
	struct oci_seccomp *seccomp; /* NULL when absent */
	char *rootfs_propagation;
	char **masked_paths;
	char **readonly_paths;
	char *mount_label;
	struct oci_personality personality;
	struct oci_time_offset *time_offsets;
	size_t n_time_offsets;
	struct oci_intel_rdt intel_rdt;
};

/* ---- config.json ------------------------------------------------------ */

struct oci_spec {
	char *name; /* the name given to load/parse, prefixed to messages */
	char *oci_version;
	struct oci_process *process; /* NULL when absent */
	struct oci_root *root; /* NULL when absent */
	char *hostname;
	char *domainname;
	struct oci_mount *mounts;
	size_t n_mounts;
	struct oci_hooks hooks;
	struct oci_map annotations;
	/* "linux" itself is a predefined macro in GNU C. */
	struct oci_linux *linux_spec; /* NULL when absent */
};

/* Read and parse the config.json at path. Messages are prefixed with path
 * as given. On success *ret is owned by the caller (oci_spec_free()).
 * Returns 0, -errno from reading, or -EINVAL for malformed JSON or a field
 * of the wrong type. No semantic checks: see oci_spec_validate(). */
int oci_spec_load(const char *path, struct oci_spec **ret);

/* Parse len bytes of JSON (need not be NUL-terminated); name prefixes the
 * messages and is kept in (*ret)->name. */
int oci_spec_parse(const char *json, size_t len, const char *name, struct oci_spec **ret);

void oci_spec_free(struct oci_spec *s);

/* runc-like semantic checks: ociVersion and root.path present; when
 * process is present (it is optional here; `create` needs it), args
 * non-empty, cwd absolute, rlimit types known, unique and soft <= hard,
 * oomScoreAdj/ioPriority/scheduler in range; namespace types known and not
 * repeated, namespace paths absolute, a new user namespace has uid and gid
 * mappings and mappings come with a user namespace; mount destinations,
 * hook paths, device paths, masked/readonly paths absolute; hook timeouts
 * positive; seccomp actions/operators/archs/flags known, arg index <= 5,
 * SCMP_ACT_NOTIFY with a listenerPath; rootfsPropagation, personality and
 * timeOffsets clocks known; a hostname only with a private uts namespace.
 * Capability names are not checked (runc ignores unknown ones).
 * The first problem found is recorded as "<name>: <json.path>: <what>"
 * (e.g. "config.json: linux.namespaces[3].type: duplicate namespace \"pid\"")
 * and -EINVAL returned; 0 when fine. */
int oci_spec_validate(const struct oci_spec *s);

/* Standalone process.json (the "process" object of config.json). */
int oci_process_load(const char *path, struct oci_process **ret);
int oci_process_parse(const char *json, size_t len, const char *name, struct oci_process **ret);
void oci_process_free(struct oci_process *p);
/* The process checks of oci_spec_validate(); messages are
 * "<name>: <prefix>.<field>: ..." (prefix "process" for config.json, NULL
 * for a standalone process.json, giving "<name>: cwd: ..."). */
int oci_process_validate(const struct oci_process *p, const char *name, const char *prefix);

/* linux.resources-shaped JSON (`update --resources`). */
int oci_resources_parse(const char *json, size_t len, const char *name, struct oci_linux_resources **ret);
void oci_resources_free(struct oci_linux_resources *r);

/* For tests that list what the parser reads: fn is called with the JSON
 * path ("linux.resources.pids.limit", "mounts[0].type") of every member
 * the parsers look up, present or not, in the order they look. NULL stops
 * it. Not thread-safe; not for product code. */
typedef void (*oci_field_observer_fn)(const char *path, void *data);
void oci_spec_observe_fields(oci_field_observer_fn fn, void *data);

/* ---- name tables -------------------------------------------------------- */

/* "RLIMIT_NOFILE" -> RLIMIT_NOFILE, or -EINVAL. */
int oci_rlimit_from_name(const char *name);
/* A signal as runc kill reads it: a decimal integer (Go's Atoi: "9",
 * "+9", "034"; 0 asks only whether the process is there), or a name of
 * signals 1..31 in any case, with or without SIG ("KILL", "sigkill").
 * -EINVAL for anything else; -ERANGE for an integer that is no signal
 * (runc accepts it, and the kill then fails with EINVAL). */
int oci_signal_from_name(const char *name);
/* "CAP_SYS_ADMIN" -> 21, or -EINVAL. */
int oci_capability_from_name(const char *name);
/* Names of all capabilities kvrun knows, in number order (NULL-terminated,
 * static storage). */
const char *const *oci_capability_names(void);
/* Whether a seccomp action / operator / arch / flag name is known. */
bool oci_seccomp_action_known(const char *name);
bool oci_seccomp_operator_known(const char *name);
bool oci_seccomp_arch_known(const char *name);
bool oci_seccomp_flag_known(const char *name);

#endif
