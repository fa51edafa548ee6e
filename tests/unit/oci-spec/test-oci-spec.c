/* SPDX-License-Identifier: Apache-2.0 */
/* Parsing config.json fixtures (runc, docker, podman, every field) into the
 * typed structs, and the Go-like decoding rules. */
#include <stdint.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>

#include "fixtures.h"
#include "oci-spec/spec.h"

static struct oci_spec *load(const char *name)
{
	struct oci_spec *s = NULL;
	int r = oci_spec_load(fixture(name), &s);

	if (!ok(r == 0, "load %s", name))
		printf("#   %s\n", err_msg());
	if (s) {
		r = oci_spec_validate(s);
		if (!ok(r == 0, "validate %s", name))
			printf("#   %s\n", err_msg());
	}
	return s;
}

static struct oci_spec *parse(const char *json)
{
	struct oci_spec *s = NULL;
	int r = oci_spec_parse(json, strlen(json), "inline.json", &s);

	if (!ok(r == 0, "parse %s", json))
		printf("#   %s\n", err_msg());
	return s;
}

static const struct oci_namespace *find_ns(const struct oci_linux *l, enum oci_namespace_kind k)
{
	for (size_t i = 0; i < l->n_namespaces; i++)
		if (l->namespaces[i].kind == k)
			return &l->namespaces[i];
	return NULL;
}

TEST(runc_spec)
{
	struct oci_spec *s = load("runc-spec.json");

	if (!s)
		return;
	is_str(s->oci_version, "1.0.2-dev");
	ok(s->process && s->process->terminal, "terminal");
	is_int(s->process->user.uid, 0);
	is_int(oci_strv_length(s->process->args), 1);
	is_str(s->process->args[0], "sh");
	is_str(s->process->env[1], "TERM=xterm");
	is_str(s->process->cwd, "/");
	is_int(oci_strv_length(s->process->capabilities->bounding), 3);
	ok(s->process->capabilities->inheritable == NULL, "inheritable absent");
	is_str(s->process->capabilities->ambient[2], "CAP_NET_BIND_SERVICE");
	is_int(s->process->n_rlimits, 1);
	is_str(s->process->rlimits[0].type, "RLIMIT_NOFILE");
	is_int(s->process->rlimits[0].hard, 1024);
	ok(s->process->no_new_privileges, "noNewPrivileges");
	ok(!s->process->has_oom_score_adj, "no oomScoreAdj");
	ok(!s->process->user.has_umask, "no umask");
	is_str(s->root->path, "rootfs");
	ok(s->root->readonly, "readonly root");
	is_str(s->hostname, "runc");
	ok(s->domainname == NULL, "no domainname");
	is_int(s->n_mounts, 7);
	is_str(s->mounts[0].destination, "/proc");
	ok(s->mounts[0].options == NULL, "proc has no options");
	is_str(s->mounts[2].options[5], "gid=5");
	is_int(s->linux_spec->n_namespaces, 5);
	is_int(s->linux_spec->namespaces[1].kind, OCI_NS_NETWORK);
	ok(s->linux_spec->namespaces[1].path == NULL, "new netns");
	is_int(s->linux_spec->resources->n_devices, 1);
	ok(!s->linux_spec->resources->devices[0].allow, "deny all devices");
	is_str(s->linux_spec->resources->devices[0].access, "rwm");
	ok(!s->linux_spec->resources->memory.present, "no memory section");
	is_int(oci_strv_length(s->linux_spec->masked_paths), 10);
	is_str(s->linux_spec->readonly_paths[4], "/proc/sysrq-trigger");
	ok(s->linux_spec->seccomp == NULL, "no seccomp");
	oci_spec_free(s);
}

TEST(docker)
{
	struct oci_spec *s = load("docker.json");
	const struct oci_linux *l;

	if (!s)
		return;
	ok(!s->process->terminal, "no terminal");
	ok(!s->process->console_size.present, "no consoleSize");
	is_int(s->process->user.n_additional_gids, 11);
	is_int(s->process->user.additional_gids[10], 27);
	is_str(s->process->args[2], "daemon off;");
	is_int(oci_strv_length(s->process->capabilities->bounding), 14);
	is_str(s->process->capabilities->effective[13], "CAP_AUDIT_WRITE");
	ok(s->process->capabilities->ambient == NULL, "no ambient");
	is_int(s->process->n_rlimits, 2);
	ok(s->process->rlimits[1].hard == UINT64_MAX, "RLIM_INFINITY hard");
	ok(s->process->rlimits[1].soft == UINT64_MAX, "RLIM_INFINITY soft");
	is_str(s->process->apparmor_profile, "docker-default");
	ok(s->process->has_oom_score_adj && s->process->oom_score_adj == 0, "oomScoreAdj 0 present");
	ok(!s->root->readonly, "rw root");
	is_int(s->n_mounts, 10);
	is_str(s->mounts[7].destination, "/etc/resolv.conf");
	is_str(s->mounts[7].source,
	       "/var/lib/docker/containers/4f6d9c1c2b3a5e7f90a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a6b/"
	       "resolv.conf");
	is_str(s->mounts[8].destination, "/etc/hostname");
	is_str(s->mounts[9].destination, "/etc/hosts");
	is_str(s->mounts[9].type, "bind");
	is_str(s->mounts[9].options[0], "rbind");
	is_int(s->hooks.list[OCI_HOOK_PRESTART].n, 1);
	is_str(s->hooks.list[OCI_HOOK_PRESTART].hooks[0].path, "/proc/1234/exe");
	is_str(s->hooks.list[OCI_HOOK_PRESTART].hooks[0].args[0], "libnetwork-setkey");
	ok(s->hooks.list[OCI_HOOK_PRESTART].hooks[0].has_timeout, "hook timeout");
	is_int(s->hooks.list[OCI_HOOK_PRESTART].hooks[0].timeout, 30);
	is_int(s->hooks.list[OCI_HOOK_POSTSTOP].n, 0);
	l = s->linux_spec;
	is_str(oci_map_get(&l->sysctl, "net.ipv4.ping_group_range"), "0 2147483647");
	is_int(l->resources->n_devices, 4);
	ok(l->resources->devices[2].has_major && !l->resources->devices[2].has_minor, "wildcard minor");
	is_int(l->resources->devices[2].major, 136);
	is_str(l->resources->devices[1].type, "c");
	ok(l->resources->memory.has_limit && l->resources->memory.limit == 536870912, "memory.limit");
	ok(l->resources->memory.has_swap && l->resources->memory.swap == 1073741824, "memory.swap");
	ok(l->resources->memory.has_disable_oom_killer && !l->resources->memory.disable_oom_killer, "oom killer on");
	ok(!l->resources->memory.has_reservation, "no reservation");
	ok(l->resources->cpu.has_quota && l->resources->cpu.quota == 150000, "cpu.quota");
	ok(l->resources->cpu.has_period && l->resources->cpu.period == 100000, "cpu.period");
	is_int(l->resources->cpu.shares, 1024);
	is_str(l->resources->cpu.cpus, "0-1");
	ok(l->resources->pids.present && l->resources->pids.limit == 100, "pids.limit");
	ok(l->resources->block_io.has_weight && l->resources->block_io.weight == 500, "blkio weight");
	is_str(l->cgroups_path, "system.slice:docker:4f6d9c1c2b3a5e7f90a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a6b");
	is_str(find_ns(l, OCI_NS_NETWORK)->path, "/var/run/docker/netns/1a2b3c4d5e6f");
	ok(find_ns(l, OCI_NS_USER) == NULL, "no userns");
	ok(find_ns(l, OCI_NS_CGROUP) != NULL, "cgroupns");
	is_int(l->n_devices, 1);
	is_str(l->devices[0].path, "/dev/fuse");
	ok(l->devices[0].has_file_mode && l->devices[0].file_mode == 8630, "fileMode");
	ok(l->devices[0].has_uid && l->devices[0].has_gid, "device uid/gid");
	is_int(l->devices[0].minor, 229);
	is_str(l->seccomp->default_action, "SCMP_ACT_ERRNO");
	ok(l->seccomp->has_default_errno_ret && l->seccomp->default_errno_ret == 1, "defaultErrnoRet");
	is_str(l->seccomp->architectures[2], "SCMP_ARCH_X32");
	is_int(l->seccomp->n_syscalls, 5);
	is_str(l->seccomp->syscalls[0].names[4], "write");
	ok(!l->seccomp->syscalls[0].has_errno_ret, "no errnoRet");
	is_int(l->seccomp->syscalls[2].args[0].value, 4294967295LL);
	is_int(l->seccomp->syscalls[3].args[0].value, 2114060288);
	is_str(l->seccomp->syscalls[3].args[0].op, "SCMP_CMP_MASKED_EQ");
	ok(l->seccomp->syscalls[4].has_errno_ret && l->seccomp->syscalls[4].errno_ret == 38, "errnoRet 38");
	is_int(oci_strv_length(l->masked_paths), 11);
	is_str(l->masked_paths[10], "/sys/devices/virtual/powercap");
	oci_spec_free(s);
}

TEST(docker_cgroupfs)
{
	struct oci_spec *s = load("docker-cgroupfs.json");

	if (!s)
		return;
	is_str(s->linux_spec->cgroups_path, "/docker/4f6d9c1c2b3a5e7f90a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a6b");
	ok(s->process->terminal, "terminal");
	ok(s->process->console_size.present, "consoleSize");
	is_int(s->process->console_size.height, 24);
	is_int(s->process->console_size.width, 80);
	ok(s->linux_spec->seccomp == NULL, "no seccomp");
	oci_spec_free(s);
}

TEST(podman)
{
	struct oci_spec *s = load("podman.json");
	const struct oci_linux *l;

	if (!s)
		return;
	is_str(s->oci_version, "1.1.0");
	ok(s->process->user.has_umask && s->process->user.umask == 022, "umask 0022");
	is_int(s->process->user.uid, 1000);
	is_str(s->process->cwd, "/home/user");
	ok(s->process->capabilities->effective && !s->process->capabilities->effective[0], "empty effective");
	ok(s->process->capabilities->inheritable && !s->process->capabilities->inheritable[0], "empty inheritable");
	is_int(s->process->oom_score_adj, 200);
	is_str(s->process->selinux_label, "system_u:system_r:container_t:s0:c123,c456");
	is_str(s->mounts[6].destination, "/run/.containerenv");
	is_str(s->mounts[6].options[1], "rprivate");
	is_int(s->hooks.list[OCI_HOOK_CREATE_RUNTIME].n, 1);
	is_str(s->hooks.list[OCI_HOOK_CREATE_RUNTIME].hooks[0].env[0], "container=podman");
	ok(!s->hooks.list[OCI_HOOK_CREATE_RUNTIME].hooks[0].has_timeout, "no timeout");
	is_int(s->hooks.list[OCI_HOOK_POSTSTOP].hooks[0].timeout, 10);
	is_str(s->hooks.list[OCI_HOOK_POSTSTOP].hooks[0].args[3], "container");
	is_int(s->annotations.n, 8);
	is_str(s->annotations.items[0].key, "io.container.manager");
	is_str(oci_map_get(&s->annotations, "io.container.manager"), "libpod");
	is_str(oci_map_get(&s->annotations, "org.systemd.property.TimeoutStopUSec"), "uint64 10000000");
	ok(oci_map_get(&s->annotations, "missing") == NULL, "missing annotation");
	l = s->linux_spec;
	is_int(l->n_uid_mappings, 2);
	is_int(l->uid_mappings[1].container_id, 1);
	is_int(l->uid_mappings[1].host_id, 100000);
	is_int(l->gid_mappings[1].size, 65536);
	ok(find_ns(l, OCI_NS_USER) && !find_ns(l, OCI_NS_USER)->path, "new userns");
	is_str(find_ns(l, OCI_NS_NETWORK)->path, "/run/user/1000/netns/netns-7e1c4f5a-2b3d-4e6f-8a9b-0c1d2e3f4a5b");
	is_str(oci_map_get(&l->resources->unified, "io.weight"), "default 100");
	is_int(l->resources->pids.limit, 2048);
	is_str(l->cgroups_path, "user.slice:libpod:f1e2d3c4b5a6978877665544332211ffeeddccbbaa99887766554433221100ff");
	is_int(l->seccomp->default_errno_ret, 38);
	is_str(l->mount_label, "system_u:object_r:container_file_t:s0:c123,c456");
	oci_spec_free(s);
}

static void check_full_process(const struct oci_process *p)
{
	ok(p->console_size.present && p->console_size.height == 50 && p->console_size.width == 132, "consoleSize");
	ok(p->user.uid == UINT32_MAX, "uid 2^32-1");
	is_int(p->user.gid, 5);
	is_int(p->user.umask, 077);
	is_int(p->user.additional_gids[0], 7);
	is_str(p->args[1], "--flag");
	is_str(p->env[0], "A=1");
	is_str(p->cwd, "/work");
	is_str(p->capabilities->inheritable[0], "CAP_NET_ADMIN");
	is_str(p->capabilities->permitted[1], "CAP_NET_ADMIN");
	is_str(p->capabilities->ambient[0], "CAP_NET_ADMIN");
	ok(p->rlimits[0].hard == 9223372036854775808ULL, "hard limit above INT64_MAX");
	is_int(p->rlimits[0].soft, 65536);
	is_str(p->apparmor_profile, "unconfined");
	is_int(p->oom_score_adj, -999);
	is_str(p->selinux_label, "system_u:system_r:spc_t:s0");
	ok(p->io_priority.present, "ioPriority");
	is_str(p->io_priority.class, "IOPRIO_CLASS_BE");
	is_int(p->io_priority.priority, 4);
	ok(p->scheduler.present, "scheduler");
	is_str(p->scheduler.policy, "SCHED_DEADLINE");
	is_int(p->scheduler.nice, -5);
	is_int(p->scheduler.priority, 7);
	is_str(p->scheduler.flags[1], "SCHED_FLAG_RECLAIM");
	is_int(p->scheduler.runtime, 10000000);
	is_int(p->scheduler.deadline, 20000000);
	is_int(p->scheduler.period, 30000000);
	is_str(p->exec_cpu_affinity.initial, "0");
	is_str(p->exec_cpu_affinity.final, "0-3,7");
}

static void check_full_resources(const struct oci_linux_resources *r)
{
	const struct oci_block_io *b = &r->block_io;

	ok(r->devices[0].allow, "allow");
	is_str(r->devices[0].type, "b");
	is_str(r->devices[0].access, "r");
	is_int(r->memory.limit, 1073741824);
	is_int(r->memory.reservation, 536870912);
	is_int(r->memory.swap, -1);
	ok(r->memory.has_kernel && r->memory.kernel == 0, "kernel");
	is_int(r->memory.kernel_tcp, 1048576);
	is_int(r->memory.swappiness, 60);
	ok(r->memory.disable_oom_killer, "disableOOMKiller");
	ok(r->memory.has_use_hierarchy && r->memory.use_hierarchy, "useHierarchy");
	ok(r->memory.has_check_before_update && r->memory.check_before_update, "checkBeforeUpdate");
	is_int(r->cpu.shares, 512);
	is_int(r->cpu.quota, -1);
	ok(r->cpu.has_burst && r->cpu.burst == 1000, "burst");
	is_int(r->cpu.realtime_runtime, 950000);
	is_int(r->cpu.realtime_period, 1000000);
	is_str(r->cpu.mems, "0");
	ok(r->cpu.has_idle && r->cpu.idle == 1, "idle");
	is_int(r->pids.limit, -1);
	is_int(b->weight, 10);
	is_int(b->leaf_weight, 1000);
	is_int(b->weight_devices[0].weight, 500);
	is_int(b->weight_devices[0].leaf_weight, 300);
	is_int(b->throttle_read_bps.devices[0].rate, 600);
	is_int(b->throttle_write_bps.devices[0].minor, 16);
	is_int(b->throttle_read_iops.devices[0].rate, 800);
	is_int(b->throttle_write_iops.devices[0].rate, 900);
	is_int(r->n_hugepage_limits, 2);
	is_str(r->hugepage_limits[0].page_size, "2MB");
	is_int(r->hugepage_limits[0].limit, 209715200);
	is_int(r->network.class_id, 1048577);
	is_str(r->network.priorities[1].name, "eth1");
	is_int(r->network.priorities[1].priority, 1000);
	is_int(r->n_rdma, 2);
	is_str(r->rdma[0].device, "mlx5_1");
	is_int(r->rdma[0].hca_handles, 3);
	ok(!r->rdma[1].has_hca_handles && r->rdma[1].hca_objects == 1000, "rdma mlx4_0");
	is_str(oci_map_get(&r->unified, "pids.max"), "max");
}

TEST(full)
{
	struct oci_spec *s = load("full.json");
	const struct oci_linux *l;
	const struct oci_seccomp *sc;

	if (!s)
		return;
	check_full_process(s->process);
	is_str(s->domainname, "example.org");
	is_int(s->mounts[0].uid_mappings[0].host_id, 200000);
	is_int(s->mounts[0].gid_mappings[0].size, 2000);
	for (int k = 0; k < OCI_HOOK__MAX; k++)
		ok(s->hooks.list[k].n >= 1, "hook %s", oci_hook_kind_name(k));
	is_str(s->hooks.list[OCI_HOOK_CREATE_CONTAINER].hooks[0].env[0], "K=V");
	is_int(s->hooks.list[OCI_HOOK_START_CONTAINER].hooks[0].timeout, 5);
	is_str(s->hooks.list[OCI_HOOK_POSTSTART].hooks[1].path, "/hooks/poststart2");
	/* Document order is kept. */
	is_str(s->annotations.items[0].key, "z.last");
	is_str(s->annotations.items[2].value, "<&>");
	l = s->linux_spec;
	ok(find_ns(l, OCI_NS_TIME) != NULL, "time namespace");
	is_int(l->n_namespaces, 8);
	is_str(l->devices[0].type, "b");
	ok(!l->devices[0].has_uid, "device uid absent");
	check_full_resources(l->resources);
	is_str(oci_map_get(&l->sysctl, "kernel.shmmax"), "4294967295");
	sc = l->seccomp;
	ok(!sc->has_default_errno_ret, "no defaultErrnoRet");
	is_str(sc->flags[1], "SECCOMP_FILTER_FLAG_SPEC_ALLOW");
	is_str(sc->listener_path, "/run/seccomp-agent.sock");
	is_str(sc->listener_metadata, "agent-metadata");
	is_str(sc->syscalls[0].action, "SCMP_ACT_NOTIFY");
	is_int(sc->syscalls[1].args[1].index, 5);
	ok(sc->syscalls[1].args[1].value == UINT64_MAX, "arg value 2^64-1");
	is_int(sc->syscalls[1].args[1].value_two, 3);
	is_str(l->rootfs_propagation, "rslave");
	is_str(l->personality.domain, "LINUX32");
	ok(l->personality.flags && !l->personality.flags[0], "empty personality flags");
	is_int(l->n_time_offsets, 2);
	is_str(l->time_offsets[0].clock, "monotonic");
	is_int(l->time_offsets[0].secs, 86400);
	is_int(l->time_offsets[0].nanosecs, 500);
	is_int(l->time_offsets[1].secs, -3600);
	ok(l->intel_rdt.present, "intelRdt");
	is_str(l->intel_rdt.clos_id, "guaranteed");
	is_str(l->intel_rdt.mem_bw_schema, "MB:0=20;1=70");
	oci_spec_free(s);
}

TEST(go_decoding_rules)
{
	struct oci_spec *s;

	/* Last duplicate wins; keys match case-insensitively; null is absent;
	 * unknown fields are ignored. */
	s = parse("{\"ociVersion\":\"1\",\"hostname\":\"a\",\"hostname\":\"b\",\"HOSTNAME\":\"c\","
	          "\"process\":{\"Args\":[\"x\",null],\"cwd\":null,\"unknown\":{\"deep\":[1]}},\"root\":null}");
	if (s) {
		is_str(s->hostname, "c");
		is_str(s->process->args[0], "x");
		is_str(s->process->args[1], "");
		ok(s->process->cwd == NULL, "null cwd is absent");
		ok(s->root == NULL, "null root is absent");
		oci_spec_free(s);
	}
	s = parse("{\"hostname\":\"exact\",\"HostName\":\"folded\"}");
	if (s) {
		is_str(s->hostname, "folded");
		oci_spec_free(s);
	}
	/* Integers above INT64_MAX are rewritten before jansson sees them;
	 * digits inside strings (even after escaped quotes) are left alone. */
	s = parse("{\"hostname\":\"\\\" 99999999999999999999\",\"process\":{\"rlimits\":[{\"type\":\"RLIMIT_AS\","
	          "\"hard\":18446744073709551615,\"soft\":9223372036854775807}]}}");
	if (s) {
		is_str(s->hostname, "\" 99999999999999999999");
		ok(s->process->rlimits[0].hard == UINT64_MAX, "hard 2^64-1");
		ok(s->process->rlimits[0].soft == INT64_MAX, "soft 2^63-1");
		oci_spec_free(s);
	}
	s = parse("{}");
	if (s) {
		ok(!s->process && !s->root && !s->linux_spec, "empty spec");
		is_str(s->name, "inline.json");
		oci_spec_free(s);
	}
}

TEST(process_json)
{
	struct oci_process *p = NULL;
	size_t len = 0;
	_cleanup_free_ char *buf = fixture_read("full.json", &len);
	const char *start, *json = "{\"terminal\":true,\"args\":[\"/bin/sh\"],\"cwd\":\"/tmp\",\"env\":[\"A=b\"]}";
	int r;

	r = oci_process_parse(json, strlen(json), "process.json", &p);
	ok(r == 0, "parse process.json");
	if (p) {
		ok(p->terminal, "terminal");
		is_str(p->args[0], "/bin/sh");
		is_int(oci_process_validate(p, "process.json", NULL), 0);
		free(p->cwd);
		p->cwd = strdup("tmp");
		is_int(oci_process_validate(p, "process.json", NULL), -EINVAL);
		is_str(err_msg(), "process.json: cwd: must be an absolute path, got \"tmp\"");
		oci_process_free(p);
	}
	/* The "process" object of full.json, on its own. */
	if (!buf)
		return;
	start = strstr(buf, "\"process\": ") + strlen("\"process\": ");
	r = oci_process_parse(start, strstr(start, "\n\t},") + 3 - start, "process.json", &p);
	if (!ok(r == 0, "parse full.json's process"))
		printf("#   %s\n", err_msg());
	if (r == 0) {
		check_full_process(p);
		oci_process_free(p);
	}
	r = oci_process_load(fixture("missing.json"), &p);
	is_int(r, -ENOENT);
}

TEST(resources_json)
{
	struct oci_linux_resources *res = NULL;
	const char *json = "{\"memory\":{\"limit\":268435456},\"cpu\":{\"quota\":50000,\"period\":100000},"
			   "\"pids\":{\"limit\":64},\"blockIO\":{\"weight\":100}}";
	int r;

	r = oci_resources_parse(json, strlen(json), "resources.json", &res);
	ok(r == 0, "parse resources");
	if (res) {
		is_int(res->memory.limit, 268435456);
		ok(res->cpu.present && res->cpu.quota == 50000, "cpu quota");
		ok(!res->cpu.has_shares, "no shares");
		is_int(res->pids.limit, 64);
		is_int(res->block_io.weight, 100);
		oci_resources_free(res);
	}
	json = "{\"memory\":{\"limit\":\"1g\"}}";
	r = oci_resources_parse(json, strlen(json), "-", &res);
	is_int(r, -EINVAL);
	is_str(err_msg(), "-: memory.limit: expected an integer");
}

TEST(names)
{
	is_int(oci_rlimit_from_name("RLIMIT_NOFILE"), RLIMIT_NOFILE);
	is_int(oci_rlimit_from_name("NOFILE"), -EINVAL);
	is_int(oci_signal_from_name("KILL"), SIGKILL);
	is_int(oci_signal_from_name("SIGTERM"), SIGTERM);
	is_int(oci_signal_from_name("sigusr1"), SIGUSR1);
	is_int(oci_signal_from_name("9"), 9);
	is_int(oci_signal_from_name("SIGNOPE"), -EINVAL);
	/* runc's spellings (Go's Atoi, x/sys/unix's names 1..31). */
	is_int(oci_signal_from_name("0"), 0);
	is_int(oci_signal_from_name("+28"), 28);
	is_int(oci_signal_from_name("028"), 28);
	is_int(oci_signal_from_name("64"), 64);
	is_int(oci_signal_from_name("65"), -ERANGE);
	is_int(oci_signal_from_name("-1"), -ERANGE);
	is_int(oci_signal_from_name("99999999999999999999"), -EINVAL);
	is_int(oci_signal_from_name(" 28"), -EINVAL);
	is_int(oci_signal_from_name("0x1c"), -EINVAL);
	is_int(oci_signal_from_name("Winch"), SIGWINCH);
	is_int(oci_signal_from_name("SIGSTKFLT"), 16);
	is_int(oci_signal_from_name("SIGRTMIN+3"), -EINVAL);
	is_int(oci_signal_from_name("RTMIN"), -EINVAL);
	is_int(oci_signal_from_name("SIGIOT"), -EINVAL);
	is_int(oci_signal_from_name("CLD"), -EINVAL);
	is_int(oci_capability_from_name("CAP_SYS_ADMIN"), 21);
	is_int(oci_capability_from_name("CAP_CHECKPOINT_RESTORE"), 40);
	is_int(oci_capability_from_name("CAP_NOPE"), -EINVAL);
	is_str(oci_capability_names()[0], "CAP_CHOWN");
	is_int(oci_namespace_kind_from_name("network"), OCI_NS_NETWORK);
	is_int(oci_namespace_kind_from_name("net"), OCI_NS_UNKNOWN);
	is_str(oci_namespace_kind_name(OCI_NS_TIME), "time");
	is_str(oci_hook_kind_name(OCI_HOOK_CREATE_RUNTIME), "createRuntime");
	ok(oci_seccomp_action_known("SCMP_ACT_KILL_PROCESS"), "action known");
	ok(!oci_seccomp_operator_known("SCMP_CMP_XX"), "operator unknown");
}

TAP_MAIN()
