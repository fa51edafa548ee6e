/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "runtime/store/layout.h"
#include "runtime/store/pod.h"
#include "runtime/store/state.h"

static bool streq_ptr(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

void pod_ref_clear(struct pod_ref *p)
{
	free(p->sandbox_id);
	free(p->source);
	*p = (struct pod_ref){0};
}

/* One engine's pair of annotations: its role, or -EINVAL. */
static int engine_role(const struct oci_map *ann, const char *type_key, const char *sandbox_key,
                       enum pod_role *ret_role, const char **ret_sandbox)
{
	const char *type = oci_map_get(ann, type_key);
	const char *sandbox = oci_map_get(ann, sandbox_key);

	*ret_sandbox = sandbox;
	if (!type) {
		/* A sandbox id alone says nothing of the role. */
		*ret_role = POD_ROLE_NONE;
		return 0;
	}
	if (!strcmp(type, "sandbox"))
		*ret_role = POD_ROLE_SANDBOX;
	else if (!strcmp(type, "container"))
		*ret_role = POD_ROLE_CONTAINER;
	else
		return err_set(-EINVAL, "annotation %s: \"%s\" is neither \"sandbox\" nor \"container\"", type_key,
		               type);
	if (*ret_role == POD_ROLE_CONTAINER && !sandbox)
		return err_set(-EINVAL, "annotation %s is \"container\" but %s is missing: which pod is it of?",
		               type_key, sandbox_key);
	if (sandbox && container_id_validate(sandbox) < 0)
		return err_set(-EINVAL, "annotation %s: \"%s\" is not a valid container id", sandbox_key, sandbox);
	return 0;
}

static int ref_set(struct pod_ref *ret, enum pod_role role, const char *sandbox, const char *source)
{
	struct pod_ref p = {.role = role};

	if ((sandbox && !(p.sandbox_id = strdup(sandbox))) || !(p.source = strdup(source))) {
		pod_ref_clear(&p);
		return -ENOMEM;
	}
	*ret = p;
	return 0;
}

int pod_from_annotations(const struct oci_map *ann, struct pod_ref *ret)
{
	enum pod_role cri, crio;
	const char *cri_sb, *crio_sb;
	int r;

	r = engine_role(ann, POD_ANN_CRI_TYPE, POD_ANN_CRI_SANDBOX, &cri, &cri_sb);
	if (r < 0)
		return r;
	/* podman shares CRI-O's annotation package: its containers are
	 * recognised by their namespace paths, not by keys it may copy. */
	crio = POD_ROLE_NONE;
	crio_sb = NULL;
	if (!streq_ptr(oci_map_get(ann, POD_ANN_MANAGER), "libpod"))
		r = engine_role(ann, POD_ANN_CRIO_TYPE, POD_ANN_CRIO_SANDBOX, &crio, &crio_sb);
	if (r < 0)
		return r;
	if (cri != POD_ROLE_NONE && crio != POD_ROLE_NONE &&
	    (cri != crio || (cri_sb && crio_sb && strcmp(cri_sb, crio_sb))))
		return err_set(-EINVAL, "annotations %s/%s and %s/%s name different pods or roles", POD_ANN_CRI_TYPE,
		               POD_ANN_CRI_SANDBOX, POD_ANN_CRIO_TYPE, POD_ANN_CRIO_SANDBOX);
	if (cri == POD_ROLE_NONE && crio == POD_ROLE_NONE) {
		*ret = (struct pod_ref){.role = POD_ROLE_NONE};
		return 0;
	}
	r = cri != POD_ROLE_NONE ? ref_set(ret, cri, cri_sb ? cri_sb : crio_sb, "annotation " POD_ANN_CRI_SANDBOX)
	                         : ref_set(ret, crio, crio_sb, "annotation " POD_ANN_CRIO_SANDBOX);
	/* CRI-O's pods may have no sandbox container (drop_infra_ctr). */
	if (r >= 0)
		ret->sandbox_optional = crio != POD_ROLE_NONE;
	return r;
}

/* The name /proc/<pid>/ns/ gives a namespace of this kind. */
static const char *proc_ns_name(enum oci_namespace_kind kind)
{
	static const char *const names[OCI_NS__MAX] = {
	    [OCI_NS_PID] = "pid", [OCI_NS_NETWORK] = "net", [OCI_NS_MOUNT] = "mnt",     [OCI_NS_IPC] = "ipc",
	    [OCI_NS_UTS] = "uts", [OCI_NS_USER] = "user",   [OCI_NS_CGROUP] = "cgroup", [OCI_NS_TIME] = "time",
	};

	return kind >= 0 && kind < OCI_NS__MAX ? names[kind] : NULL;
}

/* The pid of a path written /proc/<pid>/ns/<name of kind>, or 0. */
static pid_t proc_ns_pid(const char *path, enum oci_namespace_kind kind)
{
	const char *type = proc_ns_name(kind);
	char tail[32];
	int pid, n = 0;

	if (!type || sscanf(path, "/proc/%d/ns/%31s%n", &pid, tail, &n) != 2 || (size_t)n != strlen(path) || pid <= 0)
		return 0;
	return strcmp(tail, type) ? 0 : (pid_t)pid;
}

static bool same_file(const struct stat *a, const char *path)
{
	struct stat b;

	return path && *path && stat(path, &b) == 0 && a->st_dev == b.st_dev && a->st_ino == b.st_ino;
}

/* Whether the live container c has the namespace: its monitor by pid, or
 * for the network the namespace its VM serves (by identity: the monitor
 * stays in it, and the state names the engine's path), unless that is the
 * caller's own (a monitor without a namespace of its own shares ours). */
static bool serves_ns(const struct oci_state *s, const struct oci_namespace *ns, const struct stat *st,
                      const struct stat *own)
{
	char mine[PATH_MAX];

	if (s->pid > 0 && proc_ns_pid(ns->path, ns->kind) == s->pid)
		return true;
	if (ns->kind != OCI_NS_NETWORK || !st || (own && own->st_dev == st->st_dev && own->st_ino == st->st_ino))
		return false;
	if (same_file(st, oci_map_get(&s->private_data, STATE_KEY_NETNS)))
		return true;
	if (s->pid <= 0 ||
	    snprintf(mine, sizeof(mine), "%s/%d/ns/net", container_proc_root, (int)s->pid) >= (int)sizeof(mine))
		return false;
	return same_file(st, mine);
}

int pod_sandbox_from_ns(const char *root, const struct oci_namespace *ns, char **ret_id)
{
	char **ids = NULL, self[PATH_MAX];
	struct stat st, own;
	bool have_st, have_own;
	int r, found = 0;

	if (!ns->path)
		return 0;
	have_st = stat(ns->path, &st) == 0;
	have_own = snprintf(self, sizeof(self), "%s/self/ns/net", container_proc_root) < (int)sizeof(self) &&
	           stat(self, &own) == 0;
	r = container_list_ids(root, &ids);
	if (r < 0)
		return r;
	for (size_t i = 0; ids[i] && !found; i++) {
		_cleanup_container_ struct container *c = NULL;

		/* A snapshot without the lock: a create in progress holds it. */
		if (container_load(root, ids[i], false, &c) < 0) {
			err_clear();
			continue;
		}
		if (c->state->status == OCI_STATUS_STOPPED || c->state->status == OCI_STATUS_CREATING)
			continue;
		if (!serves_ns(c->state, ns, have_st ? &st : NULL, have_own ? &own : NULL))
			continue;
		*ret_id = strdup(ids[i]);
		found = *ret_id ? 1 : -ENOMEM;
	}
	container_ids_free(ids);
	return found;
}

bool pod_is_podman_infra(const struct oci_spec *spec)
{
	const struct oci_map *ann = &spec->annotations;
	char *const *args = spec->process ? spec->process->args : NULL;

	return streq_ptr(oci_map_get(ann, POD_ANN_MANAGER), "libpod") && !oci_map_get(ann, POD_ANN_CRIO_TYPE) &&
	       !oci_map_get(ann, POD_ANN_CRIO_SANDBOX) && args && streq_ptr(args[0], POD_PODMAN_INFRA_CMD) &&
	       streq_ptr(args[1], POD_PODMAN_INFRA_ARG) && !args[2];
}

int pod_classify(const char *root, const struct oci_spec *spec, struct pod_ref *ret)
{
	static const enum oci_namespace_kind joined[] = {OCI_NS_NETWORK, OCI_NS_IPC, OCI_NS_UTS};
	int r = pod_from_annotations(&spec->annotations, ret);

	if (r < 0 || ret->role != POD_ROLE_NONE)
		return r;
	if (pod_is_podman_infra(spec))
		return ref_set(ret, POD_ROLE_SANDBOX, NULL,
		               "podman's infra container (annotation " POD_ANN_MANAGER
		               "=libpod, process " POD_PODMAN_INFRA_CMD " " POD_PODMAN_INFRA_ARG ")");
	if (!spec->linux_spec)
		return 0;
	for (size_t k = 0; k < ARRAY_SIZE(joined); k++)
		for (size_t i = 0; i < spec->linux_spec->n_namespaces; i++) {
			const struct oci_namespace *ns = &spec->linux_spec->namespaces[i];
			_cleanup_free_ char *id = NULL, *src = NULL;

			if (ns->kind != joined[k] || !ns->path)
				continue;
			r = pod_sandbox_from_ns(root, ns, &id);
			if (r <= 0)
				return r;
			if (asprintf(&src, "%s namespace %s", ns->type, ns->path) < 0)
				return -ENOMEM;
			return ref_set(ret, POD_ROLE_CONTAINER, id, src);
		}
	return 0;
}

int pod_check_sandbox(const char *root, const struct pod_ref *p)
{
	_cleanup_container_ struct container *c = NULL;
	int r;

	if (p->role != POD_ROLE_CONTAINER)
		return 0;
	r = container_load(root, p->sandbox_id, false, &c);
	if (r == -ENOENT && p->sandbox_optional) {
		err_clear();
		return 0;
	}
	if (r == -ENOENT)
		return err_set(-ENOENT,
		               "pod sandbox %s (from %s) does not exist under %s: create the pod's sandbox container "
		               "first",
		               p->sandbox_id, p->source, root);
	if (r < 0)
		return err_prefix(r, "pod sandbox %s (from %s)", p->sandbox_id, p->source);
	if (c->state->status == OCI_STATUS_STOPPED || c->state->status == OCI_STATUS_CREATING)
		return err_set(-ESRCH,
		               "pod sandbox %s (from %s) is %s: a container cannot join a pod whose VM is not up",
		               p->sandbox_id, p->source, oci_status_name(c->state->status));
	return 1;
}

/* A decimal integer annotation into *ret (left alone when absent). */
static int size_field(const struct oci_map *ann, const char *key, bool allow_none, uint64_t *ret)
{
	const char *v = oci_map_get(ann, key);
	char *end;
	unsigned long long n;

	if (!v)
		return 0;
	if (allow_none && !strcmp(v, "-1")) {
		*ret = 0;
		return 0;
	}
	errno = 0;
	n = strtoull(v, &end, 10);
	if (!*v || *end || v[0] == '-' || v[0] == '+' || errno)
		return err_set(-EINVAL, "annotation %s: \"%s\" is not a number%s", key, v, allow_none ? " or -1" : "");
	*ret = n;
	return 0;
}

int pod_size_from_annotations(const struct oci_map *ann, struct pod_size *ret)
{
	struct pod_size z = {0};
	int r;

	r = size_field(ann, POD_ANN_CRI_MEMORY, false, &z.memory);
	if (r >= 0)
		r = size_field(ann, POD_ANN_CRI_CPU_QUOTA, true, &z.cpu_quota);
	if (r >= 0)
		r = size_field(ann, POD_ANN_CRI_CPU_PERIOD, false, &z.cpu_period);
	if (r < 0)
		return r;
	*ret = z;
	return 0;
}
