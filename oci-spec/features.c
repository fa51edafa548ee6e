/* SPDX-License-Identifier: Apache-2.0 */
/* features.json (runtime-spec features-linux), as `runc features` prints it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "oci-spec/features.h"
#include "oci-spec/gojson.h"
#include "oci-spec/jparse.h"
#include "common/spec-support.h"

static const char *const hooks[] = {
    "prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop", NULL,
};

/* They name host files (kernel, initrd, module tree) read into the VM. */
static const char *const unsafe_annotations[] = {
    "io.kvrun.",
    NULL,
};

static struct oci_features kvrun_features = {
    .oci_version_min = "1.0.0",
    .oci_version_max = KVRUN_OCI_VERSION,
    .hooks = hooks,
    .unsafe_annotations = unsafe_annotations,
    .linux_features =
	{
	    .present = true,
	    /* The host's cgroup drivers (runtime/host/cgroup.h): v1, v2 and
	     * hybrid hierarchies, systemd's system bus; no rdma limits. */
	    .cgroup = {.present = true,
                       .v1 = OCI_TRUE,
                       .v2 = OCI_TRUE,
                       .systemd = OCI_TRUE,
                       .systemd_user = OCI_FALSE,
                       .rdma = OCI_FALSE},
	    .seccomp = {.present = true,
                        .enabled = OCI_TRUE,
                        /* What guest-init applies, not all config.json may name. */
                        .actions = spec_seccomp_actions,
                        .operators = spec_seccomp_operators,
                        .archs = spec_seccomp_archs},
	    .apparmor_enabled = OCI_FALSE,
	    .selinux_enabled = OCI_FALSE,
	    .intel_rdt_enabled = OCI_FALSE,
	    .idmap_mounts = OCI_FALSE,
	},
};

const struct oci_features *oci_features_kvrun(void)
{
	/* Not constant expressions: the capability table lives in names.c,
	 * what guest-init applies in common/spec-support.c. */
	kvrun_features.linux_features.capabilities = oci_capability_names();
	kvrun_features.mount_options = spec_mount_option_names();
	kvrun_features.linux_features.namespaces = spec_namespace_names();
	return &kvrun_features;
}

static void set_list(json_t *o, const char *key, const char *const *list, int *r)
{
	if (list)
		jset(o, key, jstrv(list), r);
}

static void set_bool(json_t *o, const char *key, enum oci_tristate b, int *r)
{
	if (b != OCI_UNSET)
		jset(o, key, json_boolean(b == OCI_TRUE), r);
}

/* {"enabled": b} under key, when b is set. */
static void set_enabled(json_t *o, const char *key, enum oci_tristate b, int *r)
{
	json_t *e;

	if (b == OCI_UNSET)
		return;
	e = json_object();
	set_bool(e, "enabled", b, r);
	jset(o, key, e, r);
}

static json_t *linux_tree(const struct oci_features *f, int *r)
{
	json_t *lx = json_object(), *cg, *sc, *me;

	set_list(lx, "namespaces", f->linux_features.namespaces, r);
	set_list(lx, "capabilities", f->linux_features.capabilities, r);
	if (f->linux_features.cgroup.present) {
		cg = json_object();
		set_bool(cg, "v1", f->linux_features.cgroup.v1, r);
		set_bool(cg, "v2", f->linux_features.cgroup.v2, r);
		set_bool(cg, "systemd", f->linux_features.cgroup.systemd, r);
		set_bool(cg, "systemdUser", f->linux_features.cgroup.systemd_user, r);
		set_bool(cg, "rdma", f->linux_features.cgroup.rdma, r);
		jset(lx, "cgroup", cg, r);
	}
	if (f->linux_features.seccomp.present) {
		sc = json_object();
		set_bool(sc, "enabled", f->linux_features.seccomp.enabled, r);
		set_list(sc, "actions", f->linux_features.seccomp.actions, r);
		set_list(sc, "operators", f->linux_features.seccomp.operators, r);
		set_list(sc, "archs", f->linux_features.seccomp.archs, r);
		set_list(sc, "knownFlags", f->linux_features.seccomp.known_flags, r);
		set_list(sc, "supportedFlags", f->linux_features.seccomp.supported_flags, r);
		jset(lx, "seccomp", sc, r);
	}
	set_enabled(lx, "apparmor", f->linux_features.apparmor_enabled, r);
	set_enabled(lx, "selinux", f->linux_features.selinux_enabled, r);
	set_enabled(lx, "intelRdt", f->linux_features.intel_rdt_enabled, r);
	if (f->linux_features.idmap_mounts != OCI_UNSET) {
		me = json_object();
		set_enabled(me, "idmap", f->linux_features.idmap_mounts, r);
		jset(lx, "mountExtensions", me, r);
	}
	return lx;
}

static int cmp_kv(const void *a, const void *b)
{
	return strcmp(((const struct oci_kv *)a)->key, ((const struct oci_kv *)b)->key);
}

static json_t *annotations_tree(const struct oci_map *m, int *r)
{
	_cleanup_free_ struct oci_kv *items = calloc(m->n + 1, sizeof(*items));
	json_t *o = json_object();

	if (!items) {
		*r = -ENOMEM;
		return o;
	}
	memcpy(items, m->items, m->n * sizeof(*items));
	qsort(items, m->n, sizeof(*items), cmp_kv);
	for (size_t i = 0; i < m->n; i++)
		jset(o, items[i].key, json_string_nocheck(items[i].value), r);
	return o;
}

int oci_features_to_json(const struct oci_features *f, char **ret)
{
	_cleanup_json_ json_t *o = json_object();
	_cleanup_free_ char *out = NULL;
	int r = 0;

	if (f->oci_version_min)
		jset(o, "ociVersionMin", json_string(f->oci_version_min), &r);
	if (f->oci_version_max)
		jset(o, "ociVersionMax", json_string(f->oci_version_max), &r);
	set_list(o, "hooks", f->hooks, &r);
	set_list(o, "mountOptions", f->mount_options, &r);
	if (f->linux_features.present)
		jset(o, "linux", linux_tree(f, &r), &r);
	if (f->annotations && f->annotations->n)
		jset(o, "annotations", annotations_tree(f->annotations, &r), &r);
	set_list(o, "potentiallyUnsafeConfigAnnotations", f->unsafe_annotations, &r);
	if (r < 0)
		return r;
	r = gojson_dump(o, "    ", &out);
	if (r < 0)
		return r;
	if (asprintf(ret, "%s\n", out) < 0)
		return -ENOMEM;
	return 0;
}
