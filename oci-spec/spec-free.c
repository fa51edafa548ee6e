/* SPDX-License-Identifier: Apache-2.0 */
/* Destructors for everything spec.h hands out. All accept NULL. */
#include <stdlib.h>

#include "oci-spec/parse.h"

static void id_mappings_free(struct oci_id_mapping *m)
{
	free(m);
}

void process_clear(struct oci_process *p)
{
	free(p->user.additional_gids);
	oci_strv_free(p->args);
	oci_strv_free(p->env);
	free(p->cwd);
	if (p->capabilities) {
		oci_strv_free(p->capabilities->bounding);
		oci_strv_free(p->capabilities->effective);
		oci_strv_free(p->capabilities->inheritable);
		oci_strv_free(p->capabilities->permitted);
		oci_strv_free(p->capabilities->ambient);
		free(p->capabilities);
	}
	for (size_t i = 0; i < p->n_rlimits; i++)
		free(p->rlimits[i].type);
	free(p->rlimits);
	free(p->apparmor_profile);
	free(p->selinux_label);
	free(p->io_priority.class);
	free(p->scheduler.policy);
	oci_strv_free(p->scheduler.flags);
	free(p->exec_cpu_affinity.initial);
	free(p->exec_cpu_affinity.final);
}

void oci_process_free(struct oci_process *p)
{
	if (!p)
		return;
	process_clear(p);
	free(p);
}

static void throttle_list_clear(struct oci_throttle_list *l)
{
	free(l->devices);
}

void resources_clear(struct oci_linux_resources *r)
{
	for (size_t i = 0; i < r->n_devices; i++) {
		free(r->devices[i].type);
		free(r->devices[i].access);
	}
	free(r->devices);
	free(r->cpu.cpus);
	free(r->cpu.mems);
	free(r->block_io.weight_devices);
	throttle_list_clear(&r->block_io.throttle_read_bps);
	throttle_list_clear(&r->block_io.throttle_write_bps);
	throttle_list_clear(&r->block_io.throttle_read_iops);
	throttle_list_clear(&r->block_io.throttle_write_iops);
	for (size_t i = 0; i < r->n_hugepage_limits; i++)
		free(r->hugepage_limits[i].page_size);
	free(r->hugepage_limits);
	for (size_t i = 0; i < r->network.n_priorities; i++)
		free(r->network.priorities[i].name);
	free(r->network.priorities);
	for (size_t i = 0; i < r->n_rdma; i++)
		free(r->rdma[i].device);
	free(r->rdma);
	oci_map_clear(&r->unified);
}

void oci_resources_free(struct oci_linux_resources *r)
{
	if (!r)
		return;
	resources_clear(r);
	free(r);
}

static void seccomp_free(struct oci_seccomp *s)
{
	if (!s)
		return;
	free(s->default_action);
	oci_strv_free(s->architectures);
	oci_strv_free(s->flags);
	free(s->listener_path);
	free(s->listener_metadata);
	for (size_t i = 0; i < s->n_syscalls; i++) {
		struct oci_seccomp_syscall *sc = &s->syscalls[i];
		oci_strv_free(sc->names);
		free(sc->action);
		for (size_t j = 0; j < sc->n_args; j++)
			free(sc->args[j].op);
		free(sc->args);
	}
	free(s->syscalls);
	free(s);
}

void linux_clear(struct oci_linux *l)
{
	for (size_t i = 0; i < l->n_namespaces; i++) {
		free(l->namespaces[i].type);
		free(l->namespaces[i].path);
	}
	free(l->namespaces);
	id_mappings_free(l->uid_mappings);
	id_mappings_free(l->gid_mappings);
	for (size_t i = 0; i < l->n_devices; i++) {
		free(l->devices[i].path);
		free(l->devices[i].type);
	}
	free(l->devices);
	free(l->cgroups_path);
	oci_resources_free(l->resources);
	oci_map_clear(&l->sysctl);
	seccomp_free(l->seccomp);
	free(l->rootfs_propagation);
	oci_strv_free(l->masked_paths);
	oci_strv_free(l->readonly_paths);
	free(l->mount_label);
	free(l->personality.domain);
	oci_strv_free(l->personality.flags);
	for (size_t i = 0; i < l->n_time_offsets; i++)
		free(l->time_offsets[i].clock);
	free(l->time_offsets);
	free(l->intel_rdt.clos_id);
	free(l->intel_rdt.l3_cache_schema);
	free(l->intel_rdt.mem_bw_schema);
}

static void mount_clear(struct oci_mount *m)
{
	free(m->destination);
	free(m->type);
	free(m->source);
	oci_strv_free(m->options);
	id_mappings_free(m->uid_mappings);
	id_mappings_free(m->gid_mappings);
}

static void hooks_clear(struct oci_hooks *hooks)
{
	for (int k = 0; k < OCI_HOOK__MAX; k++) {
		for (size_t i = 0; i < hooks->list[k].n; i++) {
			struct oci_hook *h = &hooks->list[k].hooks[i];
			free(h->path);
			oci_strv_free(h->args);
			oci_strv_free(h->env);
		}
		free(hooks->list[k].hooks);
	}
}

void oci_spec_free(struct oci_spec *s)
{
	if (!s)
		return;
	free(s->name);
	free(s->oci_version);
	oci_process_free(s->process);
	if (s->root)
		free(s->root->path);
	free(s->root);
	free(s->hostname);
	free(s->domainname);
	for (size_t i = 0; i < s->n_mounts; i++)
		mount_clear(&s->mounts[i]);
	free(s->mounts);
	hooks_clear(&s->hooks);
	oci_map_clear(&s->annotations);
	if (s->linux_spec)
		linux_clear(s->linux_spec);
	free(s->linux_spec);
	free(s);
}
