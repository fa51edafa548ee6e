/* SPDX-License-Identifier: Apache-2.0 */
/* config.json and process.json: top level, process, root, mounts, hooks. */
#include <errno.h>
#include <string.h>

#include "common/error.h"
#include "common/fileio.h"
#include "oci-spec/parse.h"

static int parse_console_size(struct jctx *c, json_t *v, struct oci_console_size *cs)
{
	int r;

	cs->present = true;
	r = jget_u32(c, v, "height", &cs->height, NULL);
	if (r >= 0)
		r = jget_u32(c, v, "width", &cs->width, NULL);
	return r;
}

static int parse_user(struct jctx *c, json_t *v, struct oci_user *u)
{
	int r;

	r = jget_u32(c, v, "uid", &u->uid, NULL);
	if (r >= 0)
		r = jget_u32(c, v, "gid", &u->gid, NULL);
	if (r >= 0)
		r = jget_u32(c, v, "umask", &u->umask, &u->has_umask);
	if (r >= 0)
		r = jget_u32v(c, v, "additionalGids", &u->additional_gids, &u->n_additional_gids);
	return r;
}

static int parse_capabilities(struct jctx *c, json_t *v, struct oci_capabilities *caps)
{
	int r;

	r = jget_strv(c, v, "bounding", &caps->bounding);
	if (r >= 0)
		r = jget_strv(c, v, "effective", &caps->effective);
	if (r >= 0)
		r = jget_strv(c, v, "inheritable", &caps->inheritable);
	if (r >= 0)
		r = jget_strv(c, v, "permitted", &caps->permitted);
	if (r >= 0)
		r = jget_strv(c, v, "ambient", &caps->ambient);
	return r;
}

static int parse_rlimit(struct jctx *c, json_t *v, void *elem)
{
	struct oci_rlimit *rl = elem;
	int r;

	r = jget_string(c, v, "type", &rl->type);
	if (r >= 0)
		r = jget_u64(c, v, "hard", &rl->hard, NULL);
	if (r >= 0)
		r = jget_u64(c, v, "soft", &rl->soft, NULL);
	return r;
}

static int parse_io_priority(struct jctx *c, json_t *v, struct oci_io_priority *io)
{
	int r;

	io->present = true;
	r = jget_string(c, v, "class", &io->class);
	if (r >= 0)
		r = jget_i32(c, v, "priority", &io->priority, NULL);
	return r;
}

static int parse_scheduler(struct jctx *c, json_t *v, struct oci_scheduler *s)
{
	int r;

	s->present = true;
	r = jget_string(c, v, "policy", &s->policy);
	if (r >= 0)
		r = jget_i32(c, v, "nice", &s->nice, NULL);
	if (r >= 0)
		r = jget_i32(c, v, "priority", &s->priority, NULL);
	if (r >= 0)
		r = jget_strv(c, v, "flags", &s->flags);
	if (r >= 0)
		r = jget_u64(c, v, "runtime", &s->runtime, NULL);
	if (r >= 0)
		r = jget_u64(c, v, "deadline", &s->deadline, NULL);
	if (r >= 0)
		r = jget_u64(c, v, "period", &s->period, NULL);
	return r;
}

int parse_process(struct jctx *c, json_t *v, struct oci_process *p)
{
	int r;

	r = jget_bool(c, v, "terminal", &p->terminal, NULL);
	if (r >= 0)
		r = WITH_OBJECT(c, v, "consoleSize", parse_console_size, &p->console_size);
	if (r >= 0)
		r = WITH_OBJECT(c, v, "user", parse_user, &p->user);
	if (r >= 0)
		r = jget_strv(c, v, "args", &p->args);
	if (r >= 0)
		r = jget_strv(c, v, "env", &p->env);
	if (r >= 0)
		r = jget_string(c, v, "cwd", &p->cwd);
	if (r >= 0 && jfield(v, "capabilities") && !json_is_null(jfield(v, "capabilities"))) {
		p->capabilities = calloc(1, sizeof(*p->capabilities));
		if (!p->capabilities)
			return -ENOMEM;
		r = WITH_OBJECT(c, v, "capabilities", parse_capabilities, p->capabilities);
	}
	if (r >= 0)
		r = jget_struct_array(c, v, "rlimits", sizeof(struct oci_rlimit), parse_rlimit, (void **)&p->rlimits,
		                      &p->n_rlimits);
	if (r >= 0)
		r = jget_bool(c, v, "noNewPrivileges", &p->no_new_privileges, NULL);
	if (r >= 0)
		r = jget_string(c, v, "apparmorProfile", &p->apparmor_profile);
	if (r >= 0)
		r = jget_i32(c, v, "oomScoreAdj", &p->oom_score_adj, &p->has_oom_score_adj);
	if (r >= 0)
		r = jget_string(c, v, "selinuxLabel", &p->selinux_label);
	if (r >= 0)
		r = WITH_OBJECT(c, v, "ioPriority", parse_io_priority, &p->io_priority);
	if (r >= 0)
		r = WITH_OBJECT(c, v, "scheduler", parse_scheduler, &p->scheduler);
	if (r >= 0) {
		json_t *a;
		r = jget_object(c, v, "execCPUAffinity", &a);
		if (r >= 0 && a) {
			size_t old = jctx_push_key(c, "execCPUAffinity");
			r = jget_string(c, a, "initial", &p->exec_cpu_affinity.initial);
			if (r >= 0)
				r = jget_string(c, a, "final", &p->exec_cpu_affinity.final);
			jctx_pop(c, old);
		}
	}
	return r;
}

static int parse_root(struct jctx *c, json_t *v, struct oci_root *root)
{
	int r = jget_string(c, v, "path", &root->path);

	if (r >= 0)
		r = jget_bool(c, v, "readonly", &root->readonly, NULL);
	return r;
}

static int parse_mount(struct jctx *c, json_t *v, void *elem)
{
	struct oci_mount *m = elem;
	int r;

	r = jget_string(c, v, "destination", &m->destination);
	if (r >= 0)
		r = jget_string(c, v, "type", &m->type);
	if (r >= 0)
		r = jget_string(c, v, "source", &m->source);
	if (r >= 0)
		r = jget_strv(c, v, "options", &m->options);
	if (r >= 0)
		r = jget_struct_array(c, v, "uidMappings", sizeof(struct oci_id_mapping), parse_id_mapping,
		                      (void **)&m->uid_mappings, &m->n_uid_mappings);
	if (r >= 0)
		r = jget_struct_array(c, v, "gidMappings", sizeof(struct oci_id_mapping), parse_id_mapping,
		                      (void **)&m->gid_mappings, &m->n_gid_mappings);
	return r;
}

static int parse_hook(struct jctx *c, json_t *v, void *elem)
{
	struct oci_hook *h = elem;
	int r;

	r = jget_string(c, v, "path", &h->path);
	if (r >= 0)
		r = jget_strv(c, v, "args", &h->args);
	if (r >= 0)
		r = jget_strv(c, v, "env", &h->env);
	if (r >= 0) /* Go's *int: 64 bits on the platforms kvrun runs on. */
		r = jget_i64(c, v, "timeout", &h->timeout, &h->has_timeout);
	return r;
}

static int parse_hooks(struct jctx *c, json_t *v, struct oci_hooks *hooks)
{
	int r = 0;

	for (int k = 0; k < OCI_HOOK__MAX && r >= 0; k++)
		r = jget_struct_array(c, v, oci_hook_kind_name(k), sizeof(struct oci_hook), parse_hook,
		                      (void **)&hooks->list[k].hooks, &hooks->list[k].n);
	return r;
}

static int alloc_and_parse_linux(struct jctx *c, json_t *v, struct oci_spec *s)
{
	s->linux_spec = calloc(1, sizeof(*s->linux_spec));
	if (!s->linux_spec)
		return -ENOMEM;
	return parse_linux(c, v, s->linux_spec);
}

static int alloc_and_parse_process(struct jctx *c, json_t *v, struct oci_spec *s)
{
	s->process = calloc(1, sizeof(*s->process));
	if (!s->process)
		return -ENOMEM;
	return parse_process(c, v, s->process);
}

static int alloc_and_parse_root(struct jctx *c, json_t *v, struct oci_spec *s)
{
	s->root = calloc(1, sizeof(*s->root));
	if (!s->root)
		return -ENOMEM;
	return parse_root(c, v, s->root);
}

static int parse_spec(struct jctx *c, json_t *v, struct oci_spec *s)
{
	int r;

	r = jget_string(c, v, "ociVersion", &s->oci_version);
	if (r >= 0)
		r = WITH_OBJECT(c, v, "process", alloc_and_parse_process, s);
	if (r >= 0)
		r = WITH_OBJECT(c, v, "root", alloc_and_parse_root, s);
	if (r >= 0)
		r = jget_string(c, v, "hostname", &s->hostname);
	if (r >= 0)
		r = jget_string(c, v, "domainname", &s->domainname);
	if (r >= 0)
		r = jget_struct_array(c, v, "mounts", sizeof(struct oci_mount), parse_mount, (void **)&s->mounts,
		                      &s->n_mounts);
	if (r >= 0)
		r = WITH_OBJECT(c, v, "hooks", parse_hooks, &s->hooks);
	if (r >= 0)
		r = jget_map(c, v, "annotations", &s->annotations);
	if (r >= 0)
		r = WITH_OBJECT(c, v, "linux", alloc_and_parse_linux, s);
	return r;
}

int oci_spec_parse(const char *json, size_t len, const char *name, struct oci_spec **ret)
{
	_cleanup_json_ json_t *root = NULL;
	struct oci_spec *s;
	struct jctx c;
	int r;

	r = jparse_document(json, len, name, &root);
	if (r < 0)
		return r;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->name = strdup(name);
	jctx_init(&c, name, NULL);
	r = s->name ? parse_spec(&c, root, s) : -ENOMEM;
	if (r < 0) {
		oci_spec_free(s);
		return r == -ENOMEM ? err_set(r, "%s: out of memory", name) : r;
	}
	*ret = s;
	return 0;
}

int load_file(const char *path, char **ret, size_t *ret_len)
{
	int r = read_file_all(path, OCI_SPEC_MAX_SIZE, ret, ret_len);

	if (r < 0)
		return err_setsys(r, "%s", path);
	return 0;
}

int oci_spec_load(const char *path, struct oci_spec **ret)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	r = load_file(path, &buf, &len);
	if (r < 0)
		return r;
	return oci_spec_parse(buf, len, path, ret);
}

int oci_process_parse(const char *json, size_t len, const char *name, struct oci_process **ret)
{
	_cleanup_json_ json_t *root = NULL;
	struct oci_process *p;
	struct jctx c;
	int r;

	r = jparse_document(json, len, name, &root);
	if (r < 0)
		return r;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	jctx_init(&c, name, NULL);
	r = parse_process(&c, root, p);
	if (r < 0) {
		oci_process_free(p);
		return r == -ENOMEM ? err_set(r, "%s: out of memory", name) : r;
	}
	*ret = p;
	return 0;
}

int oci_process_load(const char *path, struct oci_process **ret)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	r = load_file(path, &buf, &len);
	if (r < 0)
		return r;
	return oci_process_parse(buf, len, path, ret);
}

int oci_resources_parse(const char *json, size_t len, const char *name, struct oci_linux_resources **ret)
{
	_cleanup_json_ json_t *root = NULL;
	struct oci_linux_resources *res;
	struct jctx c;
	int r;

	r = jparse_document(json, len, name, &root);
	if (r < 0)
		return r;
	res = calloc(1, sizeof(*res));
	if (!res)
		return -ENOMEM;
	jctx_init(&c, name, NULL);
	r = parse_resources(&c, root, res);
	if (r < 0) {
		oci_resources_free(res);
		return r == -ENOMEM ? err_set(r, "%s: out of memory", name) : r;
	}
	*ret = res;
	return 0;
}
