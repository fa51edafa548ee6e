/* SPDX-License-Identifier: Apache-2.0 */
/* The "linux" section of config.json, and linux.resources. */
#include <errno.h>
#include <string.h>

#include "oci-spec/parse.h"

/* linux.uidMappings and gidMappings, and a mount's (spec-parse.c). */
int parse_id_mapping(struct jctx *c, json_t *v, void *elem)
{
	struct oci_id_mapping *m = elem;
	int r;

	r = jget_u32(c, v, "containerID", &m->container_id, NULL);
	if (r >= 0)
		r = jget_u32(c, v, "hostID", &m->host_id, NULL);
	if (r >= 0)
		r = jget_u32(c, v, "size", &m->size, NULL);
	return r;
}

static int parse_namespace(struct jctx *c, json_t *v, void *elem)
{
	struct oci_namespace *ns = elem;
	int r;

	r = jget_string(c, v, "type", &ns->type);
	if (r >= 0)
		r = jget_string(c, v, "path", &ns->path);
	ns->kind = oci_namespace_kind_from_name(ns->type);
	return r;
}

static int parse_device(struct jctx *c, json_t *v, void *elem)
{
	struct oci_linux_device *d = elem;
	int r;

	r = jget_string(c, v, "path", &d->path);
	if (r >= 0)
		r = jget_string(c, v, "type", &d->type);
	if (r >= 0)
		r = jget_i64(c, v, "major", &d->major, NULL);
	if (r >= 0)
		r = jget_i64(c, v, "minor", &d->minor, NULL);
	if (r >= 0)
		r = jget_u32(c, v, "fileMode", &d->file_mode, &d->has_file_mode);
	if (r >= 0)
		r = jget_u32(c, v, "uid", &d->uid, &d->has_uid);
	if (r >= 0)
		r = jget_u32(c, v, "gid", &d->gid, &d->has_gid);
	return r;
}

static int parse_device_cgroup(struct jctx *c, json_t *v, void *elem)
{
	struct oci_device_cgroup *d = elem;
	int r;

	r = jget_bool(c, v, "allow", &d->allow, NULL);
	if (r >= 0)
		r = jget_string(c, v, "type", &d->type);
	if (r >= 0)
		r = jget_i64(c, v, "major", &d->major, &d->has_major);
	if (r >= 0)
		r = jget_i64(c, v, "minor", &d->minor, &d->has_minor);
	if (r >= 0)
		r = jget_string(c, v, "access", &d->access);
	return r;
}

static int parse_memory(struct jctx *c, json_t *v, struct oci_memory *m)
{
	int r;

	m->present = true;
	r = jget_i64(c, v, "limit", &m->limit, &m->has_limit);
	if (r >= 0)
		r = jget_i64(c, v, "reservation", &m->reservation, &m->has_reservation);
	if (r >= 0)
		r = jget_i64(c, v, "swap", &m->swap, &m->has_swap);
	if (r >= 0)
		r = jget_i64(c, v, "kernel", &m->kernel, &m->has_kernel);
	if (r >= 0)
		r = jget_i64(c, v, "kernelTCP", &m->kernel_tcp, &m->has_kernel_tcp);
	if (r >= 0)
		r = jget_u64(c, v, "swappiness", &m->swappiness, &m->has_swappiness);
	if (r >= 0)
		r = jget_bool(c, v, "disableOOMKiller", &m->disable_oom_killer, &m->has_disable_oom_killer);
	if (r >= 0)
		r = jget_bool(c, v, "useHierarchy", &m->use_hierarchy, &m->has_use_hierarchy);
	if (r >= 0)
		r = jget_bool(c, v, "checkBeforeUpdate", &m->check_before_update, &m->has_check_before_update);
	return r;
}

static int parse_cpu(struct jctx *c, json_t *v, struct oci_cpu *cpu)
{
	int r;

	cpu->present = true;
	r = jget_u64(c, v, "shares", &cpu->shares, &cpu->has_shares);
	if (r >= 0)
		r = jget_i64(c, v, "quota", &cpu->quota, &cpu->has_quota);
	if (r >= 0)
		r = jget_u64(c, v, "burst", &cpu->burst, &cpu->has_burst);
	if (r >= 0)
		r = jget_u64(c, v, "period", &cpu->period, &cpu->has_period);
	if (r >= 0)
		r = jget_i64(c, v, "realtimeRuntime", &cpu->realtime_runtime, &cpu->has_realtime_runtime);
	if (r >= 0)
		r = jget_u64(c, v, "realtimePeriod", &cpu->realtime_period, &cpu->has_realtime_period);
	if (r >= 0)
		r = jget_string(c, v, "cpus", &cpu->cpus);
	if (r >= 0)
		r = jget_string(c, v, "mems", &cpu->mems);
	if (r >= 0)
		r = jget_i64(c, v, "idle", &cpu->idle, &cpu->has_idle);
	return r;
}

static int parse_pids(struct jctx *c, json_t *v, struct oci_pids *p)
{
	p->present = true;
	return jget_i64(c, v, "limit", &p->limit, NULL);
}

static int parse_weight_device(struct jctx *c, json_t *v, void *elem)
{
	struct oci_weight_device *d = elem;
	int r;

	r = jget_i64(c, v, "major", &d->major, NULL);
	if (r >= 0)
		r = jget_i64(c, v, "minor", &d->minor, NULL);
	if (r >= 0)
		r = jget_u16(c, v, "weight", &d->weight, &d->has_weight);
	if (r >= 0)
		r = jget_u16(c, v, "leafWeight", &d->leaf_weight, &d->has_leaf_weight);
	return r;
}

static int parse_throttle_device(struct jctx *c, json_t *v, void *elem)
{
	struct oci_throttle_device *d = elem;
	int r;

	r = jget_i64(c, v, "major", &d->major, NULL);
	if (r >= 0)
		r = jget_i64(c, v, "minor", &d->minor, NULL);
	if (r >= 0)
		r = jget_u64(c, v, "rate", &d->rate, NULL);
	return r;
}

static int parse_throttle_list(struct jctx *c, json_t *v, const char *key, struct oci_throttle_list *l)
{
	return jget_struct_array(c, v, key, sizeof(struct oci_throttle_device), parse_throttle_device,
	                         (void **)&l->devices, &l->n);
}

static int parse_block_io(struct jctx *c, json_t *v, struct oci_block_io *b)
{
	int r;

	b->present = true;
	r = jget_u16(c, v, "weight", &b->weight, &b->has_weight);
	if (r >= 0)
		r = jget_u16(c, v, "leafWeight", &b->leaf_weight, &b->has_leaf_weight);
	if (r >= 0)
		r = jget_struct_array(c, v, "weightDevice", sizeof(struct oci_weight_device), parse_weight_device,
		                      (void **)&b->weight_devices, &b->n_weight_devices);
	if (r >= 0)
		r = parse_throttle_list(c, v, "throttleReadBpsDevice", &b->throttle_read_bps);
	if (r >= 0)
		r = parse_throttle_list(c, v, "throttleWriteBpsDevice", &b->throttle_write_bps);
	if (r >= 0)
		r = parse_throttle_list(c, v, "throttleReadIOPSDevice", &b->throttle_read_iops);
	if (r >= 0)
		r = parse_throttle_list(c, v, "throttleWriteIOPSDevice", &b->throttle_write_iops);
	return r;
}

static int parse_hugepage_limit(struct jctx *c, json_t *v, void *elem)
{
	struct oci_hugepage_limit *h = elem;
	int r;

	r = jget_string(c, v, "pageSize", &h->page_size);
	if (r >= 0)
		r = jget_u64(c, v, "limit", &h->limit, NULL);
	return r;
}

static int parse_interface_priority(struct jctx *c, json_t *v, void *elem)
{
	struct oci_interface_priority *p = elem;
	int r;

	r = jget_string(c, v, "name", &p->name);
	if (r >= 0)
		r = jget_u32(c, v, "priority", &p->priority, NULL);
	return r;
}

static int parse_network(struct jctx *c, json_t *v, struct oci_network *n)
{
	int r;

	n->present = true;
	r = jget_u32(c, v, "classID", &n->class_id, &n->has_class_id);
	if (r >= 0)
		r = jget_struct_array(c, v, "priorities", sizeof(struct oci_interface_priority),
		                      parse_interface_priority, (void **)&n->priorities, &n->n_priorities);
	return r;
}

static int parse_rdma(struct jctx *c, const char *key, json_t *v, void *elem)
{
	struct oci_rdma *rd = elem;
	int r = 0;

	rd->device = strdup(key);
	if (!rd->device)
		return -ENOMEM;
	if (!v)
		return 0;
	r = jget_u32(c, v, "hcaHandles", &rd->hca_handles, &rd->has_hca_handles);
	if (r >= 0)
		r = jget_u32(c, v, "hcaObjects", &rd->hca_objects, &rd->has_hca_objects);
	return r;
}

int parse_resources(struct jctx *c, json_t *v, struct oci_linux_resources *res)
{
	int r;

	r = jget_struct_array(c, v, "devices", sizeof(struct oci_device_cgroup), parse_device_cgroup,
	                      (void **)&res->devices, &res->n_devices);
	if (r >= 0)
		r = WITH_OBJECT(c, v, "memory", parse_memory, &res->memory);
	if (r >= 0)
		r = WITH_OBJECT(c, v, "cpu", parse_cpu, &res->cpu);
	if (r >= 0)
		r = WITH_OBJECT(c, v, "pids", parse_pids, &res->pids);
	if (r >= 0)
		r = WITH_OBJECT(c, v, "blockIO", parse_block_io, &res->block_io);
	if (r >= 0)
		r = jget_struct_array(c, v, "hugepageLimits", sizeof(struct oci_hugepage_limit), parse_hugepage_limit,
		                      (void **)&res->hugepage_limits, &res->n_hugepage_limits);
	if (r >= 0)
		r = WITH_OBJECT(c, v, "network", parse_network, &res->network);
	if (r >= 0)
		r = jget_struct_map(c, v, "rdma", sizeof(struct oci_rdma), parse_rdma, (void **)&res->rdma,
		                    &res->n_rdma);
	if (r >= 0)
		r = jget_map(c, v, "unified", &res->unified);
	return r;
}

static int parse_seccomp_arg(struct jctx *c, json_t *v, void *elem)
{
	struct oci_seccomp_arg *a = elem;
	int r;

	r = jget_u32(c, v, "index", &a->index, NULL);
	if (r >= 0)
		r = jget_u64(c, v, "value", &a->value, NULL);
	if (r >= 0)
		r = jget_u64(c, v, "valueTwo", &a->value_two, NULL);
	if (r >= 0)
		r = jget_string(c, v, "op", &a->op);
	return r;
}

static int parse_seccomp_syscall(struct jctx *c, json_t *v, void *elem)
{
	struct oci_seccomp_syscall *s = elem;
	int r;

	r = jget_strv(c, v, "names", &s->names);
	if (r >= 0)
		r = jget_string(c, v, "action", &s->action);
	if (r >= 0)
		r = jget_u32(c, v, "errnoRet", &s->errno_ret, &s->has_errno_ret);
	if (r >= 0)
		r = jget_struct_array(c, v, "args", sizeof(struct oci_seccomp_arg), parse_seccomp_arg,
		                      (void **)&s->args, &s->n_args);
	return r;
}

static int parse_seccomp(struct jctx *c, json_t *v, struct oci_linux *l)
{
	struct oci_seccomp *s;
	int r;

	s = l->seccomp = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	r = jget_string(c, v, "defaultAction", &s->default_action);
	if (r >= 0)
		r = jget_u32(c, v, "defaultErrnoRet", &s->default_errno_ret, &s->has_default_errno_ret);
	if (r >= 0)
		r = jget_strv(c, v, "architectures", &s->architectures);
	if (r >= 0)
		r = jget_strv(c, v, "flags", &s->flags);
	if (r >= 0)
		r = jget_string(c, v, "listenerPath", &s->listener_path);
	if (r >= 0)
		r = jget_string(c, v, "listenerMetadata", &s->listener_metadata);
	if (r >= 0)
		r = jget_struct_array(c, v, "syscalls", sizeof(struct oci_seccomp_syscall), parse_seccomp_syscall,
		                      (void **)&s->syscalls, &s->n_syscalls);
	return r;
}

static int parse_personality(struct jctx *c, json_t *v, struct oci_personality *p)
{
	int r;

	p->present = true;
	r = jget_string(c, v, "domain", &p->domain);
	if (r >= 0)
		r = jget_strv(c, v, "flags", &p->flags);
	return r;
}

static int parse_time_offset(struct jctx *c, const char *key, json_t *v, void *elem)
{
	struct oci_time_offset *t = elem;
	int r;

	t->clock = strdup(key);
	if (!t->clock)
		return -ENOMEM;
	if (!v)
		return 0;
	r = jget_i64(c, v, "secs", &t->secs, NULL);
	if (r >= 0)
		r = jget_u32(c, v, "nanosecs", &t->nanosecs, NULL);
	return r;
}

static int parse_intel_rdt(struct jctx *c, json_t *v, struct oci_intel_rdt *rdt)
{
	int r;

	rdt->present = true;
	r = jget_string(c, v, "closID", &rdt->clos_id);
	if (r >= 0)
		r = jget_string(c, v, "l3CacheSchema", &rdt->l3_cache_schema);
	if (r >= 0)
		r = jget_string(c, v, "memBwSchema", &rdt->mem_bw_schema);
	return r;
}

static int alloc_and_parse_resources(struct jctx *c, json_t *v, struct oci_linux *l)
{
	l->resources = calloc(1, sizeof(*l->resources));
	if (!l->resources)
		return -ENOMEM;
	return parse_resources(c, v, l->resources);
}

int parse_linux(struct jctx *c, json_t *v, struct oci_linux *l)
{
	int r;

	r = jget_struct_array(c, v, "namespaces", sizeof(struct oci_namespace), parse_namespace,
	                      (void **)&l->namespaces, &l->n_namespaces);
	if (r >= 0)
		r = jget_struct_array(c, v, "uidMappings", sizeof(struct oci_id_mapping), parse_id_mapping,
		                      (void **)&l->uid_mappings, &l->n_uid_mappings);
	if (r >= 0)
		r = jget_struct_array(c, v, "gidMappings", sizeof(struct oci_id_mapping), parse_id_mapping,
		                      (void **)&l->gid_mappings, &l->n_gid_mappings);
	if (r >= 0)
		r = jget_struct_array(c, v, "devices", sizeof(struct oci_linux_device), parse_device,
		                      (void **)&l->devices, &l->n_devices);
	if (r >= 0)
		r = jget_string(c, v, "cgroupsPath", &l->cgroups_path);
	if (r >= 0)
		r = WITH_OBJECT(c, v, "resources", alloc_and_parse_resources, l);
	if (r >= 0)
		r = jget_map(c, v, "sysctl", &l->sysctl);
	if (r >= 0)
		r = WITH_OBJECT(c, v, "seccomp", parse_seccomp, l);
	if (r >= 0)
		r = jget_string(c, v, "rootfsPropagation", &l->rootfs_propagation);
	if (r >= 0)
		r = jget_strv(c, v, "maskedPaths", &l->masked_paths);
	if (r >= 0)
		r = jget_strv(c, v, "readonlyPaths", &l->readonly_paths);
	if (r >= 0)
		r = jget_string(c, v, "mountLabel", &l->mount_label);
	if (r >= 0)
		r = WITH_OBJECT(c, v, "personality", parse_personality, &l->personality);
	if (r >= 0)
		r = jget_struct_map(c, v, "timeOffsets", sizeof(struct oci_time_offset), parse_time_offset,
		                    (void **)&l->time_offsets, &l->n_time_offsets);
	if (r >= 0)
		r = WITH_OBJECT(c, v, "intelRdt", parse_intel_rdt, &l->intel_rdt);
	return r;
}
