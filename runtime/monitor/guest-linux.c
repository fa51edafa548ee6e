/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The parts of config.json's "linux" that guest-init applies to the
 * container beyond its mounts: the cgroup limits runc writes at create
 * (cgroup v2 files of the container's cgroup in the VM), devices and
 * their cgroup filter, user and cgroup namespaces, personality and the
 * SELinux mount label.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>

#include "common/error.h"
#include "runtime/monitor/device-rules.h"
#include "runtime/monitor/guest-linux.h"

struct sets {
	struct proto_cgroup_set *v;
	size_t n, cap;
};

static int set_add(struct sets *s, const char *file, const char *value, const char *field, bool optional)
{
	struct proto_cgroup_set *c;

	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;
		struct proto_cgroup_set *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	c = &s->v[s->n++];
	*c = (struct proto_cgroup_set){strdup(file), strdup(value), strdup(field), optional};
	return c->file && c->value && c->field ? 0 : -ENOMEM;
}

static int set_i64(struct sets *s, const char *file, int64_t v, const char *field)
{
	char buf[32];

	if (v == -1)
		return set_add(s, file, "max", field, false);
	snprintf(buf, sizeof(buf), "%" PRId64, v);
	return set_add(s, file, buf, field, false);
}

/* runc's conversion of the v1 memory+swap limit into memory.swap.max. */
static int swap_value(const struct oci_memory *m, int64_t *ret)
{
	int64_t mem = m->has_limit ? m->limit : 0, swap = m->swap;

	if (mem == -1 && swap == 0)
		*ret = -1;
	else if (swap == -1 || swap == 0 || mem == -1)
		*ret = swap;
	else if (mem == 0)
		return err_set(-EINVAL, "linux.resources.memory.swap: unable to set swap limit without memory limit");
	else if (mem < 0)
		return err_set(-EINVAL, "linux.resources.memory.limit: invalid memory value: %" PRId64, mem);
	else if (swap < mem)
		return err_set(-EINVAL, "linux.resources.memory.swap: memory+swap limit should be >= memory limit");
	else
		*ret = swap - mem;
	return 0;
}

/* As runc's cgroup v2 manager: pids, memory, hugetlb, then unified. The
 * CPU limits are the host's (they limit the whole VM). */
static int memory_sets(const struct oci_memory *m, struct sets *s)
{
	int64_t swap = 0;
	int r = 0;

	if (!m->has_limit && !m->has_reservation && !m->has_swap)
		return 0;
	if (m->has_swap && (r = swap_value(m, &swap)) < 0)
		return r;
	/* No swap device in the VM: a limit on swap holds with or without the
	 * file, which a kernel without swap support does not have. */
	if (m->has_swap && (swap || m->swap > 0)) {
		char v[32];

		snprintf(v, sizeof(v), "%" PRId64, swap);
		r = set_add(s, "memory.swap.max", swap == -1 ? "max" : v, "linux.resources.memory.swap", true);
	}
	if (r >= 0 && m->has_limit && m->limit)
		r = set_i64(s, "memory.max", m->limit, "linux.resources.memory.limit");
	if (r >= 0 && m->has_reservation && m->reservation)
		r = set_i64(s, "memory.low", m->reservation, "linux.resources.memory.reservation");
	return r;
}

static int hugetlb_sets(const struct oci_linux_resources *res, struct sets *s)
{
	char file[96], field[64], v[32];
	int r = 0;

	for (size_t i = 0; i < res->n_hugepage_limits && r >= 0; i++) {
		const struct oci_hugepage_limit *h = &res->hugepage_limits[i];

		if (!h->page_size || !*h->page_size || strchr(h->page_size, '/'))
			return err_set(-EINVAL, "linux.resources.hugepageLimits[%zu].pageSize: invalid page size", i);
		snprintf(file, sizeof(file), "hugetlb.%s.max", h->page_size);
		snprintf(field, sizeof(field), "linux.resources.hugepageLimits[%zu]", i);
		snprintf(v, sizeof(v), "%" PRIu64, h->limit);
		r = set_add(s, file, v, field, false);
		snprintf(file, sizeof(file), "hugetlb.%s.rsvd.max", h->page_size);
		if (r >= 0)
			r = set_add(s, file, v, field, true);
	}
	return r;
}

static int unified_sets(const struct oci_map *u, struct sets *s)
{
	char field[300];
	int r = 0;

	for (size_t i = 0; i < u->n && r >= 0; i++) {
		const char *k = u->items[i].key;

		snprintf(field, sizeof(field), "linux.resources.unified[\"%s\"]", k);
		if (strchr(k, '/') || !strchr(k, '.') || k[0] == '.')
			return err_set(-EINVAL, "%s: must be a cgroup file name, CONTROLLER.PARAMETER", field);
		r = set_add(s, k, u->items[i].value, field, false);
	}
	return r;
}

static int cgroup_sets(const struct oci_linux_resources *res, struct proto_start *st)
{
	struct sets s = {0};
	int r = 0;

	if (res->pids.present && res->pids.limit > 0)
		r = set_i64(&s, "pids.max", res->pids.limit, "linux.resources.pids.limit");
	if (r >= 0)
		r = memory_sets(&res->memory, &s);
	if (r >= 0)
		r = hugetlb_sets(res, &s);
	if (r >= 0)
		r = unified_sets(&res->unified, &s);
	st->cgroup = s.v;
	st->n_cgroup = s.n;
	return r;
}

uint64_t guest_cpu_weight(uint64_t shares)
{
	return shares ? 1 + ((shares - 2) * 9999) / 262142 : 0;
}

int guest_linux_cpu_sets(const struct oci_cpu *c, struct proto_start *st)
{
	struct sets s = {st->cgroup, st->n_cgroup, st->n_cgroup};
	char v[64];
	int r = 0;

	if (!c)
		return 0;
	if (c->has_shares && c->shares && (c->shares < 2 || c->shares > 262144))
		return err_set(-EINVAL, "linux.resources.cpu.shares: %" PRIu64 " is out of range (2 to 262144)",
		               c->shares);
	/* runc: "max" or the quota, then the period when there is one. */
	if ((c->has_quota && c->quota) || (c->has_period && c->period)) {
		int n = c->has_quota && c->quota > 0 ? snprintf(v, sizeof(v), "%" PRId64, c->quota)
		                                     : snprintf(v, sizeof(v), "max");

		if (c->has_period && c->period)
			snprintf(v + n, sizeof(v) - (size_t)n, " %" PRIu64, c->period);
		r = set_add(&s, "cpu.max", v, "linux.resources.cpu.quota", false);
	}
	if (r >= 0 && c->has_shares && c->shares) {
		snprintf(v, sizeof(v), "%" PRIu64, guest_cpu_weight(c->shares));
		r = set_add(&s, "cpu.weight", v, "linux.resources.cpu.shares", false);
	}
	if (r >= 0 && c->cpus && *c->cpus)
		r = set_add(&s, "cpuset.cpus", c->cpus, "linux.resources.cpu.cpus", false);
	st->cgroup = s.v;
	st->n_cgroup = s.n;
	return r;
}

static int id_maps(const struct oci_id_mapping *m, size_t n, struct proto_id_map **ret, size_t *ret_n)
{
	if (!n)
		return 0;
	*ret = calloc(n, sizeof(**ret));
	if (!*ret)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		(*ret)[i] = (struct proto_id_map){m[i].container_id, m[i].host_id, m[i].size};
	*ret_n = n;
	return 0;
}

static int namespaces(const struct oci_linux *l, struct proto_start *s)
{
	int r;

	for (size_t i = 0; i < l->n_namespaces; i++) {
		if (l->namespaces[i].kind == OCI_NS_USER)
			s->user_ns = true;
		else if (l->namespaces[i].kind == OCI_NS_CGROUP)
			s->cgroup_ns = true;
	}
	if (!s->user_ns)
		return 0;
	r = id_maps(l->uid_mappings, l->n_uid_mappings, &s->uid_mappings, &s->n_uid_mappings);
	if (r >= 0)
		r = id_maps(l->gid_mappings, l->n_gid_mappings, &s->gid_mappings, &s->n_gid_mappings);
	return r;
}

int guest_linux_from_oci(const struct oci_linux *l, struct proto_start *s)
{
	int r;

	r = device_rules_from_oci(l ? l->resources : NULL, s);
	if (r < 0 || !l)
		return r;
	if ((r = device_nodes_from_oci(l, s)) < 0 || (r = namespaces(l, s)) < 0)
		return r;
	if (l->resources && (r = cgroup_sets(l->resources, s)) < 0)
		return r;
	if (l->personality.present && l->personality.domain) {
		s->has_personality = true;
		s->personality = strcmp(l->personality.domain, "LINUX32") == 0 ? PER_LINUX32 : PER_LINUX;
	}
	return 0;
}
