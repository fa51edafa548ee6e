/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The wire protocol's messages as tables of fields (tag, kind, offset in
 * the C struct): protocol-codec.c walks them to encode, decode and free
 * every message, so the three can never disagree.
 */
#include <stddef.h>

#include "common/cleanup.h"
#include "common/protocol-fields.h"
#include "common/protocol.h"

#define FLD(t, k, type, member)                               \
	{                                                     \
		t, k, offsetof(type, member), 0, NO_HAS, NULL \
	}
#define FLD_HAS(t, k, type, member, hasm)                                   \
	{                                                                   \
		t, k, offsetof(type, member), 0, offsetof(type, hasm), NULL \
	}
#define FLD_CNT(t, k, type, member, cnt)                                        \
	{                                                                       \
		t, k, offsetof(type, member), offsetof(type, cnt), NO_HAS, NULL \
	}
#define FLD_RECV(t, type, member, cnt, d)                                          \
	{                                                                          \
		t, F_RECV, offsetof(type, member), offsetof(type, cnt), NO_HAS, &d \
	}
#define FLD_RECP(t, type, member, d)                             \
	{                                                        \
		t, F_RECP, offsetof(type, member), 0, NO_HAS, &d \
	}
#define FLD_SIZED(t, k, type, member)                                                   \
	{                                                                               \
		t, k, offsetof(type, member), sizeof(((type *)0)->member), NO_HAS, NULL \
	}
#define FLD_RECA(t, type, member, cnt, d)                                           \
	{                                                                           \
		t, F_RECA, offsetof(type, member), offsetof(type, cnt), NO_HAS, &d, \
		    sizeof(((type *)0)->member) / sizeof(((type *)0)->member[0])    \
	}
#define DESC(name, type, arr)                                                              \
	_Static_assert(ARRAY_SIZE(arr) <= PROTO_MAX_FIELDS, #name " has too many fields"); \
	static const struct desc name = {sizeof(type), arr, ARRAY_SIZE(arr)}

/* Tags are per record; never reuse a number with another meaning. */
static const struct field hello_fields[] = {
    FLD(1, F_U32, struct proto_hello, version_min),
    FLD(2, F_U32, struct proto_hello, version_max),
    FLD(3, F_STR, struct proto_hello, agent),
    {4, F_RAW, offsetof(struct proto_hello, token), PROTO_TOKEN_BYTES, offsetof(struct proto_hello, has_token), NULL},
};
DESC(hello_desc, struct proto_hello, hello_fields);

static const struct field rlimit_fields[] = {
    FLD(1, F_STR, struct proto_rlimit, type),
    FLD(2, F_U64, struct proto_rlimit, soft),
    FLD(3, F_U64, struct proto_rlimit, hard),
};
DESC(rlimit_desc, struct proto_rlimit, rlimit_fields);

static const struct field sched_fields[] = {
    FLD(1, F_U32, struct proto_sched, policy),   FLD(2, F_I32, struct proto_sched, nice),
    FLD(3, F_U32, struct proto_sched, priority), FLD(4, F_U64, struct proto_sched, flags),
    FLD(5, F_U64, struct proto_sched, runtime),  FLD(6, F_U64, struct proto_sched, deadline),
    FLD(7, F_U64, struct proto_sched, period),
};
DESC(sched_desc, struct proto_sched, sched_fields);

static const struct field extra_fd_fields[] = {
    FLD(1, F_U32, struct proto_extra_fd, port),
    FLD(2, F_U32, struct proto_extra_fd, mode),
};
DESC(extra_fd_desc, struct proto_extra_fd, extra_fd_fields);

static const struct field process_fields[] = {
    FLD(1, F_STRV, struct proto_process, args),
    FLD(2, F_STRV, struct proto_process, env),
    FLD(3, F_STR, struct proto_process, cwd),
    FLD(4, F_U32, struct proto_process, uid),
    FLD(5, F_U32, struct proto_process, gid),
    FLD_CNT(6, F_U32V, struct proto_process, additional_gids, n_additional_gids),
    FLD(7, F_STR, struct proto_process, user),
    FLD_HAS(8, F_U32, struct proto_process, umask, has_umask),
    FLD(9, F_BOOL, struct proto_process, terminal),
    FLD(10, F_U16, struct proto_process, rows),
    FLD(11, F_U16, struct proto_process, cols),
    FLD(12, F_BOOL, struct proto_process, has_caps),
    FLD(13, F_U64, struct proto_process, cap_bounding),
    FLD(14, F_U64, struct proto_process, cap_effective),
    FLD(15, F_U64, struct proto_process, cap_inheritable),
    FLD(16, F_U64, struct proto_process, cap_permitted),
    FLD(17, F_U64, struct proto_process, cap_ambient),
    FLD_RECV(18, struct proto_process, rlimits, n_rlimits, rlimit_desc),
    FLD(19, F_BOOL, struct proto_process, no_new_privileges),
    FLD_HAS(20, F_I32, struct proto_process, oom_score_adj, has_oom_score_adj),
    FLD(21, F_U32, struct proto_process, stdin_port),
    FLD(22, F_U32, struct proto_process, stdout_port),
    FLD(23, F_U32, struct proto_process, stderr_port),
    {24, F_RAW, offsetof(struct proto_process, token), PROTO_TOKEN_BYTES, offsetof(struct proto_process, has_token),
     NULL},
    FLD_HAS(25, F_U32, struct proto_process, ioprio, has_ioprio),
    FLD_RECP(26, struct proto_process, sched, sched_desc),
    FLD_RECV(27, struct proto_process, extra_fds, n_extra_fds, extra_fd_desc),
    FLD(28, F_U32, struct proto_process, container),
};
DESC(process_desc, struct proto_process, process_fields);

static const struct field mount_fields[] = {
    FLD(1, F_STR, struct proto_mount, destination),
    FLD(2, F_STR, struct proto_mount, type),
    FLD(3, F_STR, struct proto_mount, source),
    FLD(4, F_STRV, struct proto_mount, options),
    {5, F_BYTES, offsetof(struct proto_mount, data), offsetof(struct proto_mount, data_len),
     offsetof(struct proto_mount, has_data), NULL},
    FLD(6, F_U32, struct proto_mount, data_mode),
    FLD(7, F_STR, struct proto_mount, share),
    FLD(8, F_STR, struct proto_mount, share_path),
};
DESC(mount_desc, struct proto_mount, mount_fields);

static const struct field keyval_fields[] = {
    FLD(1, F_STR, struct proto_keyval, key),
    FLD(2, F_STR, struct proto_keyval, value),
};
DESC(keyval_desc, struct proto_keyval, keyval_fields);

static const struct field scarg_fields[] = {
    FLD(1, F_U32, struct proto_seccomp_arg, index),
    FLD(2, F_U64, struct proto_seccomp_arg, value),
    FLD(3, F_U64, struct proto_seccomp_arg, value_two),
    FLD(4, F_STR, struct proto_seccomp_arg, op),
};
DESC(scarg_desc, struct proto_seccomp_arg, scarg_fields);

static const struct field scrule_fields[] = {
    FLD(1, F_STRV, struct proto_seccomp_rule, names),
    FLD(2, F_STR, struct proto_seccomp_rule, action),
    FLD_HAS(3, F_U32, struct proto_seccomp_rule, errno_ret, has_errno_ret),
    FLD_RECV(4, struct proto_seccomp_rule, args, n_args, scarg_desc),
};
DESC(scrule_desc, struct proto_seccomp_rule, scrule_fields);

static const struct field seccomp_fields[] = {
    FLD(1, F_STR, struct proto_seccomp, default_action),
    FLD_HAS(2, F_U32, struct proto_seccomp, default_errno_ret, has_default_errno_ret),
    FLD(3, F_STRV, struct proto_seccomp, architectures),
    FLD(4, F_STRV, struct proto_seccomp, flags),
    FLD_RECV(5, struct proto_seccomp, rules, n_rules, scrule_desc),
};
DESC(seccomp_desc, struct proto_seccomp, seccomp_fields);

static const struct field device_fields[] = {
    FLD(1, F_STR, struct proto_device, path),  FLD(2, F_U32, struct proto_device, type),
    FLD(3, F_U32, struct proto_device, major), FLD(4, F_U32, struct proto_device, minor),
    FLD(5, F_U32, struct proto_device, mode),  FLD(6, F_U32, struct proto_device, uid),
    FLD(7, F_U32, struct proto_device, gid),
};
DESC(device_desc, struct proto_device, device_fields);

static const struct field device_rule_fields[] = {
    FLD(1, F_U32, struct proto_device_rule, type),       FLD(2, F_BOOL, struct proto_device_rule, has_major),
    FLD(3, F_BOOL, struct proto_device_rule, has_minor), FLD(4, F_U32, struct proto_device_rule, major),
    FLD(5, F_U32, struct proto_device_rule, minor),      FLD(6, F_U32, struct proto_device_rule, access),
};
DESC(device_rule_desc, struct proto_device_rule, device_rule_fields);

static const struct field cgroup_set_fields[] = {
    FLD(1, F_STR, struct proto_cgroup_set, file),
    FLD(2, F_STR, struct proto_cgroup_set, value),
    FLD(3, F_STR, struct proto_cgroup_set, field),
    FLD(4, F_BOOL, struct proto_cgroup_set, optional),
};
DESC(cgroup_set_desc, struct proto_cgroup_set, cgroup_set_fields);

static const struct field id_map_fields[] = {
    FLD(1, F_U32, struct proto_id_map, container_id),
    FLD(2, F_U32, struct proto_id_map, host_id),
    FLD(3, F_U32, struct proto_id_map, size),
};
DESC(id_map_desc, struct proto_id_map, id_map_fields);

static const struct field hook_fields[] = {
    FLD(1, F_STR, struct proto_hook, path),
    FLD(2, F_STRV, struct proto_hook, args),
    FLD(3, F_STRV, struct proto_hook, env),
    FLD_HAS(4, F_U32, struct proto_hook, timeout, has_timeout),
};
DESC(hook_desc, struct proto_hook, hook_fields);

/* struct net_config (common/net-config.h): fixed arrays, decoded in place. */
static const struct field netaddr_fields[] = {
    FLD(1, F_U8, struct net_config_addr, family),
    FLD(2, F_U8, struct net_config_addr, prefixlen),
    FLD_SIZED(3, F_RAW, struct net_config_addr, addr),
};
DESC(netaddr_desc, struct net_config_addr, netaddr_fields);

static const struct field netroute_fields[] = {
    FLD(1, F_U8, struct net_config_route, family),     FLD(2, F_U8, struct net_config_route, dst_len),
    FLD_SIZED(3, F_RAW, struct net_config_route, dst), FLD_SIZED(4, F_RAW, struct net_config_route, gw),
    FLD(5, F_U8, struct net_config_route, has_gw),     FLD(6, F_U8, struct net_config_route, scope),
    FLD(7, F_U32, struct net_config_route, metric),
};
DESC(netroute_desc, struct net_config_route, netroute_fields);

static const struct field netiface_fields[] = {
    FLD_SIZED(1, F_CSTR, struct net_config_iface, name),
    FLD_SIZED(2, F_RAW, struct net_config_iface, mac),
    FLD(3, F_U32, struct net_config_iface, mtu),
    FLD_RECA(4, struct net_config_iface, addrs, nr_addrs, netaddr_desc),
    FLD_RECA(5, struct net_config_iface, routes, nr_routes, netroute_desc),
    FLD_SIZED(6, F_RAW, struct net_config_iface, dev_mac),
};
DESC(netiface_desc, struct net_config_iface, netiface_fields);

static const struct field netcfg_fields[] = {
    FLD_RECA(1, struct net_config, ifaces, nr_ifaces, netiface_desc),
};
DESC(netcfg_desc, struct net_config, netcfg_fields);

static const struct field start_fields[] = {
    FLD_RECP(1, struct proto_start, process, process_desc), /* see start_desc_fixup */
    FLD(2, F_STR, struct proto_start, hostname),
    FLD(3, F_STR, struct proto_start, domainname),
    FLD_RECV(4, struct proto_start, mounts, n_mounts, mount_desc),
    FLD(5, F_STRV, struct proto_start, masked_paths),
    FLD(6, F_STRV, struct proto_start, readonly_paths),
    FLD_RECV(7, struct proto_start, sysctl, n_sysctl, keyval_desc),
    FLD_RECP(8, struct proto_start, seccomp, seccomp_desc),
    FLD(9, F_BOOL, struct proto_start, root_readonly),
    FLD(10, F_STR, struct proto_start, rootfs_propagation),
    FLD(11, F_STR, struct proto_start, root_device),
    FLD(12, F_STR, struct proto_start, root_fstype),
    FLD(13, F_STR, struct proto_start, root_path),
    FLD_RECV(14, struct proto_start, create_container_hooks, n_create_container_hooks, hook_desc),
    FLD_RECV(15, struct proto_start, start_container_hooks, n_start_container_hooks, hook_desc),
    FLD(16, F_STR, struct proto_start, state_json),
    FLD_RECP(17, struct proto_start, net, netcfg_desc),
    FLD_HAS(18, F_U64, struct proto_start, realtime_ns, has_realtime),
    {19, F_RAW, offsetof(struct proto_start, seed), PROTO_SEED_BYTES, offsetof(struct proto_start, has_seed), NULL},
    FLD(20, F_BOOL, struct proto_start, allow_vsock),
    FLD_RECV(21, struct proto_start, devices, n_devices, device_desc),
    FLD(22, F_BOOL, struct proto_start, device_filter),
    FLD(23, F_BOOL, struct proto_start, device_default_allow),
    FLD_RECV(24, struct proto_start, device_rules, n_device_rules, device_rule_desc),
    FLD_RECV(25, struct proto_start, cgroup, n_cgroup, cgroup_set_desc),
    FLD(26, F_BOOL, struct proto_start, user_ns),
    FLD_RECV(27, struct proto_start, uid_mappings, n_uid_mappings, id_map_desc),
    FLD_RECV(28, struct proto_start, gid_mappings, n_gid_mappings, id_map_desc),
    FLD(29, F_BOOL, struct proto_start, cgroup_ns),
    FLD_HAS(30, F_U32, struct proto_start, personality, has_personality),
};
DESC(start_desc, struct proto_start, start_fields);

static const struct field started_fields[] = {
    FLD(1, F_U32, struct proto_started, pid),
};
DESC(started_desc, struct proto_started, started_fields);

static const struct field signal_fields[] = {
    FLD(1, F_U32, struct proto_signal, pid),
    FLD(2, F_U32, struct proto_signal, signo),
    FLD(3, F_BOOL, struct proto_signal, all),
};
DESC(signal_desc, struct proto_signal, signal_fields);

static const struct field resize_fields[] = {
    FLD(1, F_U32, struct proto_resize, pid),
    FLD(2, F_U16, struct proto_resize, rows),
    FLD(3, F_U16, struct proto_resize, cols),
};
DESC(resize_desc, struct proto_resize, resize_fields);

static const struct field exit_fields[] = {
    FLD(1, F_U32, struct proto_exit, pid),
    FLD(2, F_U32, struct proto_exit, status),
    FLD(3, F_BOOL, struct proto_exit, init),
};
DESC(exit_desc, struct proto_exit, exit_fields);

static const struct field stats_fields[] = {
    FLD(1, F_U64, struct proto_stats, cpu_usage_usec),  FLD(2, F_U64, struct proto_stats, cpu_user_usec),
    FLD(3, F_U64, struct proto_stats, cpu_system_usec), FLD(4, F_U64, struct proto_stats, memory_current),
    FLD(5, F_U64, struct proto_stats, memory_max),      FLD(6, F_U64, struct proto_stats, memory_total),
    FLD(7, F_U64, struct proto_stats, pids_current),    FLD(8, F_U32, struct proto_stats, container),
};
DESC(stats_desc, struct proto_stats, stats_fields);

static const struct field update_fields[] = {
    FLD_HAS(1, F_U64, struct proto_update, pids_max, has_pids_max),
    FLD_HAS(2, F_U64, struct proto_update, memory_max, has_memory_max),
    FLD(3, F_U32, struct proto_update, container),
    FLD_HAS(4, F_U32, struct proto_update, frozen, has_frozen),
    FLD_HAS(5, F_U64, struct proto_update, cpu_quota, has_cpu_quota),
    FLD_HAS(6, F_U64, struct proto_update, cpu_period, has_cpu_period),
    FLD_HAS(7, F_U64, struct proto_update, cpu_weight, has_cpu_weight),
    FLD(8, F_STR, struct proto_update, cpuset_cpus),
};
DESC(update_desc, struct proto_update, update_fields);

static const struct field oom_fields[] = {
    FLD(1, F_U64, struct proto_oom, oom_kill),
    FLD(2, F_U64, struct proto_oom, oom),
    FLD(3, F_U32, struct proto_oom, container),
};
DESC(oom_desc, struct proto_oom, oom_fields);

static const struct field network_fields[] = {
    FLD_RECP(1, struct proto_network, net, netcfg_desc),
    FLD_HAS(2, F_U64, struct proto_network, realtime_ns, has_realtime),
};
DESC(network_desc, struct proto_network, network_fields);

static const struct field ps_proc_fields[] = {
    FLD(1, F_U32, struct proto_ps_proc, pid),        FLD(2, F_U32, struct proto_ps_proc, ppid),
    FLD(3, F_U32, struct proto_ps_proc, pgid),       FLD(4, F_U32, struct proto_ps_proc, sid),
    FLD(5, F_U32, struct proto_ps_proc, uid),        FLD(6, F_U32, struct proto_ps_proc, gid),
    FLD(7, F_U32, struct proto_ps_proc, tty),        FLD(8, F_STR, struct proto_ps_proc, stat),
    FLD(9, F_I32, struct proto_ps_proc, nice),       FLD(10, F_U32, struct proto_ps_proc, threads),
    FLD(11, F_U64, struct proto_ps_proc, cpu_ticks), FLD(12, F_U64, struct proto_ps_proc, start_ticks),
    FLD(13, F_U64, struct proto_ps_proc, vsize_kb),  FLD(14, F_U64, struct proto_ps_proc, rss_kb),
    FLD(15, F_STR, struct proto_ps_proc, comm),      FLD(16, F_STRV, struct proto_ps_proc, args),
    FLD(17, F_STRV, struct proto_ps_proc, env),
};
DESC(ps_proc_desc, struct proto_ps_proc, ps_proc_fields);

static const struct field ps_fields[] = {
    FLD_RECV(1, struct proto_ps, procs, n_procs, ps_proc_desc),
    FLD(2, F_U64, struct proto_ps, hz),
    FLD(3, F_U64, struct proto_ps, boot_time),
    FLD(4, F_U64, struct proto_ps, uptime_cs),
    FLD(5, F_U64, struct proto_ps, mem_total_kb),
    FLD(6, F_BOOL, struct proto_ps, truncated),
    FLD(7, F_U32, struct proto_ps, container),
};
DESC(ps_desc, struct proto_ps, ps_fields);

static const struct field error_fields[] = {
    FLD(1, F_U32, struct proto_error, err),
    FLD(2, F_STR, struct proto_error, message),
};
DESC(error_desc, struct proto_error, error_fields);

const struct desc *proto_desc_of(uint16_t type)
{
	switch (type) {
	case PROTO_MSG_HELLO:
		return &hello_desc;
	case PROTO_MSG_START:
		return &start_desc;
	case PROTO_MSG_READY:
	case PROTO_MSG_STARTED:
	case PROTO_MSG_GO:
		return &started_desc;
	case PROTO_MSG_EXEC:
		return &process_desc;
	case PROTO_MSG_SIGNAL:
		return &signal_desc;
	case PROTO_MSG_RESIZE:
		return &resize_desc;
	case PROTO_MSG_EXIT:
		return &exit_desc;
	case PROTO_MSG_STATS:
		return &stats_desc;
	case PROTO_MSG_ERROR:
		return &error_desc;
	case PROTO_MSG_UPDATE:
		return &update_desc;
	case PROTO_MSG_OOM:
		return &oom_desc;
	case PROTO_MSG_NETWORK:
		return &network_desc;
	case PROTO_MSG_PS:
		return &ps_desc;
	}
	return NULL;
}

const char *proto_type_name(uint16_t type)
{
	static const char *const names[] = {
	    [PROTO_MSG_HELLO] = "HELLO",   [PROTO_MSG_START] = "START",     [PROTO_MSG_READY] = "READY",
	    [PROTO_MSG_GO] = "GO",         [PROTO_MSG_STARTED] = "STARTED", [PROTO_MSG_EXEC] = "EXEC",
	    [PROTO_MSG_SIGNAL] = "SIGNAL", [PROTO_MSG_RESIZE] = "RESIZE",   [PROTO_MSG_EXIT] = "EXIT",
	    [PROTO_MSG_STATS] = "STATS",   [PROTO_MSG_ERROR] = "ERROR",     [PROTO_MSG_UPDATE] = "UPDATE",
	    [PROTO_MSG_OOM] = "OOM",       [PROTO_MSG_NETWORK] = "NETWORK", [PROTO_MSG_PS] = "PS",
	};

	if (type < ARRAY_SIZE(names) && names[type])
		return names[type];
	return "UNKNOWN";
}

/* The table says F_RECP for uniformity; the walker treats field 1 of
 * start_desc as an embedded record (no pointer) through this check. */
bool proto_field_embedded(const struct desc *d, const struct field *f)
{
	return d == &start_desc && f->tag == 1;
}

#define DEV_RWM (PROTO_DEV_ACC_READ | PROTO_DEV_ACC_WRITE | PROTO_DEV_ACC_MKNOD)
#define DEV(t, maj, min, acc)                                                              \
	{                                                                                  \
		(uint32_t)(t), (maj) >= 0, (min) >= 0, (uint32_t)((maj) >= 0 ? (maj) : 0), \
		    (uint32_t)((min) >= 0 ? (min) : 0), (acc)                              \
	}

const struct proto_device_rule proto_default_device_rules[] = {
    DEV('b', -1, -1, PROTO_DEV_ACC_MKNOD),
    DEV('c', -1, -1, PROTO_DEV_ACC_MKNOD),
    DEV('c', 1, 3, DEV_RWM),
    DEV('c', 1, 5, DEV_RWM),
    DEV('c', 1, 7, DEV_RWM),
    DEV('c', 1, 8, DEV_RWM),
    DEV('c', 1, 9, DEV_RWM),
    DEV('c', 5, 0, DEV_RWM),
    DEV('c', 5, 2, DEV_RWM),
    DEV('c', 10, 200, DEV_RWM),
    DEV('c', 136, -1, DEV_RWM),
};
const size_t proto_n_default_device_rules = sizeof(proto_default_device_rules) / sizeof(proto_default_device_rules[0]);
