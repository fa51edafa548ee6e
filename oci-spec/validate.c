/* SPDX-License-Identifier: Apache-2.0 */
/* Semantic checks of a parsed config.json, in the spirit of runc's. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "oci-spec/parse.h"

/* Run check with key pushed on the path. */
#define AT_KEY(c, key, expr)                             \
	({                                               \
		size_t _old = jctx_push_key((c), (key)); \
		int _r = (expr);                         \
		jctx_pop((c), _old);                     \
		_r;                                      \
	})
#define AT_INDEX(c, i, expr)                              \
	({                                                \
		size_t _oldi = jctx_push_index((c), (i)); \
		int _ri = (expr);                         \
		jctx_pop((c), _oldi);                     \
		_ri;                                      \
	})

static bool one_of(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(s, *list) == 0)
			return true;
	return false;
}

static int check_required(struct jctx *c, const char *s)
{
	if (!s || !*s)
		return jctx_error(c, "required field is missing");
	return 0;
}

static int check_abs(struct jctx *c, const char *s)
{
	if (!s || !*s)
		return jctx_error(c, "required field is missing");
	if (s[0] != '/')
		return jctx_error(c, "must be an absolute path, got \"%s\"", s);
	return 0;
}

static int check_abs_list(struct jctx *c, char **v)
{
	int r = 0;

	for (size_t i = 0; v && v[i] && r >= 0; i++)
		r = AT_INDEX(c, i, check_abs(c, v[i]));
	return r;
}

static int check_rlimits(struct jctx *c, const struct oci_process *p)
{
	for (size_t i = 0; i < p->n_rlimits; i++) {
		const struct oci_rlimit *rl = &p->rlimits[i];
		size_t old = jctx_push_index(c, i);
		int r = 0;
		if (!rl->type)
			r = AT_KEY(c, "type", jctx_error(c, "required field is missing"));
		else if (oci_rlimit_from_name(rl->type) < 0)
			r = AT_KEY(c, "type", jctx_error(c, "unknown rlimit \"%s\"", rl->type));
		else if (rl->soft > rl->hard)
			r = jctx_error(c, "soft limit %" PRIu64 " is above hard limit %" PRIu64, rl->soft, rl->hard);
		for (size_t j = 0; j < i && r >= 0; j++)
			if (strcmp(p->rlimits[j].type, rl->type) == 0)
				r = AT_KEY(c, "type", jctx_error(c, "%s given twice", rl->type));
		jctx_pop(c, old);
		if (r < 0)
			return r;
	}
	return 0;
}

static int check_io_priority(struct jctx *c, const struct oci_io_priority *io)
{
	static const char *const classes[] = {"IOPRIO_CLASS_RT", "IOPRIO_CLASS_BE", "IOPRIO_CLASS_IDLE", NULL};

	if (!io->class || !one_of(io->class, classes))
		return AT_KEY(c, "class", jctx_error(c, "unknown I/O priority class \"%s\"", io->class ?: ""));
	if (io->priority < 0 || io->priority > 7)
		return AT_KEY(c, "priority", jctx_error(c, "must be between 0 and 7"));
	return 0;
}

static int check_scheduler(struct jctx *c, const struct oci_scheduler *s)
{
	static const char *const policies[] = {"SCHED_OTHER", "SCHED_FIFO", "SCHED_RR",       "SCHED_BATCH",
	                                       "SCHED_ISO",   "SCHED_IDLE", "SCHED_DEADLINE", NULL};

	if (!s->policy || !one_of(s->policy, policies))
		return AT_KEY(c, "policy", jctx_error(c, "unknown scheduling policy \"%s\"", s->policy ?: ""));
	if (s->nice < -20 || s->nice > 19)
		return AT_KEY(c, "nice", jctx_error(c, "must be between -20 and 19"));
	return 0;
}

static int check_process(struct jctx *c, const struct oci_process *p)
{
	int r;

	if (!p->args || !p->args[0])
		return AT_KEY(c, "args", jctx_error(c, "must not be empty"));
	r = AT_KEY(c, "cwd", check_abs(c, p->cwd));
	if (r >= 0)
		r = AT_KEY(c, "rlimits", check_rlimits(c, p));
	if (r >= 0 && p->has_oom_score_adj && (p->oom_score_adj < -1000 || p->oom_score_adj > 1000))
		r = AT_KEY(c, "oomScoreAdj", jctx_error(c, "must be between -1000 and 1000"));
	if (r >= 0 && p->io_priority.present)
		r = AT_KEY(c, "ioPriority", check_io_priority(c, &p->io_priority));
	if (r >= 0 && p->scheduler.present)
		r = AT_KEY(c, "scheduler", check_scheduler(c, &p->scheduler));
	return r;
}

int oci_process_validate(const struct oci_process *p, const char *name, const char *prefix)
{
	struct jctx c;

	jctx_init(&c, name, prefix);
	return check_process(&c, p);
}

static int check_hooks(struct jctx *c, const struct oci_hooks *hooks)
{
	for (int k = 0; k < OCI_HOOK__MAX; k++) {
		size_t old = jctx_push_key(c, oci_hook_kind_name(k));
		int r = 0;
		for (size_t i = 0; i < hooks->list[k].n && r >= 0; i++) {
			const struct oci_hook *h = &hooks->list[k].hooks[i];
			size_t o = jctx_push_index(c, i);
			r = AT_KEY(c, "path", check_abs(c, h->path));
			if (r >= 0 && h->has_timeout && h->timeout <= 0)
				r = AT_KEY(c, "timeout", jctx_error(c, "must be positive, got %" PRId64, h->timeout));
			jctx_pop(c, o);
		}
		jctx_pop(c, old);
		if (r < 0)
			return r;
	}
	return 0;
}

static int check_mounts(struct jctx *c, const struct oci_spec *s)
{
	int r = 0;

	for (size_t i = 0; i < s->n_mounts && r >= 0; i++)
		r = AT_INDEX(c, i, AT_KEY(c, "destination", check_abs(c, s->mounts[i].destination)));
	return r;
}

static bool has_namespace(const struct oci_linux *l, enum oci_namespace_kind kind, bool *ret_new)
{
	for (size_t i = 0; l && i < l->n_namespaces; i++)
		if (l->namespaces[i].kind == kind) {
			if (ret_new)
				*ret_new = !l->namespaces[i].path || !*l->namespaces[i].path;
			return true;
		}
	return false;
}

static int check_namespaces(struct jctx *c, const struct oci_linux *l)
{
	for (size_t i = 0; i < l->n_namespaces; i++) {
		const struct oci_namespace *ns = &l->namespaces[i];
		size_t old = jctx_push_index(c, i);
		int r = 0;
		if (ns->kind == OCI_NS_UNKNOWN)
			r = AT_KEY(c, "type", jctx_error(c, "unknown namespace type \"%s\"", ns->type ?: ""));
		for (size_t j = 0; j < i && r >= 0; j++)
			if (l->namespaces[j].kind == ns->kind)
				r = AT_KEY(c, "type", jctx_error(c, "duplicate namespace \"%s\"", ns->type));
		if (r >= 0 && ns->path && *ns->path)
			r = AT_KEY(c, "path", check_abs(c, ns->path));
		jctx_pop(c, old);
		if (r < 0)
			return r;
	}
	return 0;
}

static int check_devices(struct jctx *c, const struct oci_linux *l)
{
	static const char *const types[] = {"c", "b", "u", "p", NULL};

	for (size_t i = 0; i < l->n_devices; i++) {
		const struct oci_linux_device *d = &l->devices[i];
		size_t old = jctx_push_index(c, i);
		int r = AT_KEY(c, "path", check_abs(c, d->path));
		if (r >= 0 && (!d->type || !one_of(d->type, types)))
			r = AT_KEY(c, "type", jctx_error(c, "unknown device type \"%s\"", d->type ?: ""));
		jctx_pop(c, old);
		if (r < 0)
			return r;
	}
	return 0;
}

static int check_device_cgroup(struct jctx *c, const struct oci_linux_resources *res)
{
	static const char *const types[] = {"a", "c", "b", NULL};

	for (size_t i = 0; i < res->n_devices; i++) {
		const struct oci_device_cgroup *d = &res->devices[i];
		size_t old = jctx_push_index(c, i);
		int r = 0;
		if (d->type && *d->type && !one_of(d->type, types))
			r = AT_KEY(c, "type", jctx_error(c, "unknown device type \"%s\"", d->type));
		if (r >= 0 && d->access && strspn(d->access, "rwm") != strlen(d->access))
			r = AT_KEY(c, "access", jctx_error(c, "must be made of r, w and m, got \"%s\"", d->access));
		jctx_pop(c, old);
		if (r < 0)
			return r;
	}
	return 0;
}

static int check_seccomp_syscall(struct jctx *c, const struct oci_seccomp_syscall *sc)
{
	int r = 0;

	if (!sc->names || !sc->names[0])
		return AT_KEY(c, "names", jctx_error(c, "must not be empty"));
	if (!sc->action || !oci_seccomp_action_known(sc->action))
		return AT_KEY(c, "action", jctx_error(c, "unknown seccomp action \"%s\"", sc->action ?: ""));
	for (size_t j = 0; j < sc->n_args && r >= 0; j++) {
		const struct oci_seccomp_arg *a = &sc->args[j];
		size_t old = jctx_push_key(c, "args");
		jctx_push_index(c, j);
		if (a->index > 5)
			r = AT_KEY(c, "index", jctx_error(c, "must be between 0 and 5, got %" PRIu32, a->index));
		else if (!a->op || !oci_seccomp_operator_known(a->op))
			r = AT_KEY(c, "op", jctx_error(c, "unknown seccomp operator \"%s\"", a->op ?: ""));
		jctx_pop(c, old);
	}
	return r;
}

static int check_seccomp(struct jctx *c, const struct oci_seccomp *s)
{
	int r = 0;

	if (!s->default_action || !oci_seccomp_action_known(s->default_action))
		return AT_KEY(c, "defaultAction",
		              jctx_error(c, "unknown seccomp action \"%s\"", s->default_action ?: ""));
	for (size_t i = 0; s->architectures && s->architectures[i] && r >= 0; i++)
		if (!oci_seccomp_arch_known(s->architectures[i]))
			r = AT_KEY(
			    c, "architectures",
			    AT_INDEX(c, i, jctx_error(c, "unknown seccomp architecture \"%s\"", s->architectures[i])));
	for (size_t i = 0; s->flags && s->flags[i] && r >= 0; i++)
		if (!oci_seccomp_flag_known(s->flags[i]))
			r = AT_KEY(c, "flags",
			           AT_INDEX(c, i, jctx_error(c, "unknown seccomp flag \"%s\"", s->flags[i])));
	for (size_t i = 0; i < s->n_syscalls && r >= 0; i++) {
		r = AT_KEY(c, "syscalls", AT_INDEX(c, i, check_seccomp_syscall(c, &s->syscalls[i])));
		if (r >= 0 && strcmp(s->syscalls[i].action, "SCMP_ACT_NOTIFY") == 0 &&
		    (!s->listener_path || !*s->listener_path))
			r = AT_KEY(c, "listenerPath", jctx_error(c, "required by SCMP_ACT_NOTIFY"));
	}
	return r;
}

static int check_user_namespace(struct jctx *c, const struct oci_linux *l)
{
	bool new_userns = false;

	if (!has_namespace(l, OCI_NS_USER, &new_userns)) {
		if (l->n_uid_mappings)
			return AT_KEY(c, "uidMappings", jctx_error(c, "requires a user namespace"));
		if (l->n_gid_mappings)
			return AT_KEY(c, "gidMappings", jctx_error(c, "requires a user namespace"));
		return 0;
	}
	if (new_userns && (!l->n_uid_mappings || !l->n_gid_mappings))
		return AT_KEY(c, l->n_uid_mappings ? "gidMappings" : "uidMappings",
		              jctx_error(c, "a new user namespace needs uid and gid mappings"));
	return 0;
}

static int check_linux_misc(struct jctx *c, const struct oci_linux *l)
{
	static const char *const propagations[] = {"",       "private", "rprivate",   "slave",       "rslave",
	                                           "shared", "rshared", "unbindable", "runbindable", NULL};
	static const char *const clocks[] = {"monotonic", "boottime", NULL};
	int r = 0;

	if (l->rootfs_propagation && !one_of(l->rootfs_propagation, propagations))
		return AT_KEY(c, "rootfsPropagation",
		              jctx_error(c, "unknown propagation \"%s\"", l->rootfs_propagation));
	r = AT_KEY(c, "maskedPaths", check_abs_list(c, l->masked_paths));
	if (r >= 0)
		r = AT_KEY(c, "readonlyPaths", check_abs_list(c, l->readonly_paths));
	if (r >= 0 && l->personality.present && l->personality.domain && strcmp(l->personality.domain, "LINUX") != 0 &&
	    strcmp(l->personality.domain, "LINUX32") != 0)
		r = AT_KEY(c, "personality.domain", jctx_error(c, "unknown domain \"%s\"", l->personality.domain));
	for (size_t i = 0; i < l->n_time_offsets && r >= 0; i++)
		if (!one_of(l->time_offsets[i].clock, clocks))
			r = AT_KEY(c, "timeOffsets", jctx_error(c, "unknown clock \"%s\"", l->time_offsets[i].clock));
	return r;
}

static int check_linux(struct jctx *c, const struct oci_linux *l)
{
	int r;

	r = AT_KEY(c, "namespaces", check_namespaces(c, l));
	if (r >= 0)
		r = check_user_namespace(c, l);
	if (r >= 0)
		r = AT_KEY(c, "devices", check_devices(c, l));
	if (r >= 0 && l->resources)
		r = AT_KEY(c, "resources.devices", check_device_cgroup(c, l->resources));
	if (r >= 0 && l->seccomp)
		r = AT_KEY(c, "seccomp", check_seccomp(c, l->seccomp));
	if (r >= 0)
		r = check_linux_misc(c, l);
	return r;
}

int oci_spec_validate(const struct oci_spec *s)
{
	struct jctx c;
	int r;

	jctx_init(&c, s->name ?: "config.json", NULL);
	r = AT_KEY(&c, "ociVersion", check_required(&c, s->oci_version));
	if (r >= 0 && !s->root)
		r = AT_KEY(&c, "root", jctx_error(&c, "required field is missing"));
	if (r >= 0)
		r = AT_KEY(&c, "root.path", check_required(&c, s->root->path));
	if (r >= 0 && s->process)
		r = AT_KEY(&c, "process", check_process(&c, s->process));
	if (r >= 0)
		r = AT_KEY(&c, "mounts", check_mounts(&c, s));
	if (r >= 0)
		r = AT_KEY(&c, "hooks", check_hooks(&c, &s->hooks));
	if (r >= 0 && s->linux_spec)
		r = AT_KEY(&c, "linux", check_linux(&c, s->linux_spec));
	if (r >= 0 && s->hostname && *s->hostname && !has_namespace(s->linux_spec, OCI_NS_UTS, NULL))
		r = AT_KEY(&c, "hostname", jctx_error(&c, "setting the hostname needs a private uts namespace"));
	return r;
}
