/* SPDX-License-Identifier: Apache-2.0 */
/* Container state JSON: runc's `state` and `list` output, the hook stdin
 * document and the on-disk state.json. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/error.h"
#include "oci-spec/gojson.h"
#include "oci-spec/jparse.h"
#include "oci-spec/state.h"

static const char *const status_names[OCI_STATUS__MAX] = {
    [OCI_STATUS_CREATING] = "creating", [OCI_STATUS_CREATED] = "created", [OCI_STATUS_RUNNING] = "running",
    [OCI_STATUS_PAUSED] = "paused",     [OCI_STATUS_STOPPED] = "stopped",
};

const char *oci_status_name(enum oci_status st)
{
	if ((int)st < 0 || st >= OCI_STATUS__MAX)
		return NULL;
	return status_names[st];
}

int oci_status_from_name(const char *name)
{
	for (int i = 0; name && i < OCI_STATUS__MAX; i++)
		if (strcmp(name, status_names[i]) == 0)
			return i;
	return -EINVAL;
}

void oci_state_clear(struct oci_state *s)
{
	free(s->oci_version);
	free(s->id);
	free(s->bundle);
	free(s->rootfs);
	free(s->created);
	free(s->owner);
	oci_map_clear(&s->annotations);
	oci_map_clear(&s->private_data);
	*s = (struct oci_state){0};
}

void oci_state_free(struct oci_state *s)
{
	if (!s)
		return;
	oci_state_clear(s);
	free(s);
}

int oci_time_now_rfc3339(char **ret)
{
	struct timespec ts;
	struct tm tm;
	char date[64], frac[16] = "";

	if (clock_gettime(CLOCK_REALTIME, &ts) < 0 || !gmtime_r(&ts.tv_sec, &tm))
		return -errno;
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
	if (ts.tv_nsec) {
		/* Go's RFC3339Nano: up to nine digits, trailing zeros dropped. */
		snprintf(frac, sizeof(frac), ".%09ld", ts.tv_nsec);
		for (size_t n = strlen(frac); frac[n - 1] == '0'; n--)
			frac[n - 1] = '\0';
	}
	if (asprintf(ret, "%s%sZ", date, frac) < 0)
		return -ENOMEM;
	return 0;
}

static json_t *str(const char *s)
{
	return json_string_nocheck(s ? s : "");
}

static int cmp_kv(const void *a, const void *b)
{
	return strcmp(((const struct oci_kv *)a)->key, ((const struct oci_kv *)b)->key);
}

/* A map as a JSON object; sorted keys when sorted (Go prints maps so). */
static json_t *map_object(const struct oci_map *m, bool sorted)
{
	_cleanup_free_ struct oci_kv *items = NULL;
	json_t *o = json_object();
	int r = 0;

	if (m->n) {
		items = malloc(m->n * sizeof(*items));
		if (!items) {
			json_decref(o);
			return NULL;
		}
		memcpy(items, m->items, m->n * sizeof(*items));
		if (sorted)
			qsort(items, m->n, sizeof(*items), cmp_kv);
	}
	for (size_t i = 0; i < m->n; i++)
		jset(o, items[i].key, str(items[i].value), &r);
	if (r < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

enum state_shape {
	SHAPE_RUNC, /* runc's containerState, for state and list */
	SHAPE_HOOK, /* runtime-spec State */
	SHAPE_FILE, /* on-disk */
};

static json_t *state_tree(const struct oci_state *s, enum state_shape shape)
{
	json_t *o = json_object();
	int r = 0;

	jset(o, "ociVersion", str(s->oci_version), &r);
	jset(o, "id", str(s->id), &r);
	if (shape == SHAPE_HOOK) {
		jset(o, "status", str(oci_status_name(s->status)), &r);
		if (s->pid)
			jset(o, "pid", json_integer(s->pid), &r);
		jset(o, "bundle", str(s->bundle), &r);
		if (s->annotations.n)
			jset(o, "annotations", map_object(&s->annotations, true), &r);
		goto out;
	}
	jset(o, "pid", json_integer(s->pid), &r);
	jset(o, "status", str(oci_status_name(s->status)), &r);
	jset(o, "bundle", str(s->bundle), &r);
	jset(o, "rootfs", str(s->rootfs), &r);
	jset(o, "created", str(s->created), &r);
	if (shape == SHAPE_RUNC) {
		if (s->annotations.n)
			jset(o, "annotations", map_object(&s->annotations, true), &r);
		jset(o, "owner", str(s->owner), &r);
	} else {
		jset(o, "owner", str(s->owner), &r);
		jset(o, "annotations", map_object(&s->annotations, false), &r);
		jset(o, "kvrun", map_object(&s->private_data, false), &r);
	}
out:
	if (r < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static int dump_state(const struct oci_state *s, enum state_shape shape, const char *indent, bool nl, char **ret)
{
	_cleanup_json_ json_t *o = state_tree(s, shape);
	_cleanup_free_ char *out = NULL;
	int r;

	if (!o)
		return -ENOMEM;
	r = gojson_dump(o, indent, &out);
	if (r < 0)
		return r;
	if (nl) {
		char *t;
		if (asprintf(&t, "%s\n", out) < 0)
			return -ENOMEM;
		free(out);
		out = t;
	}
	*ret = TAKE_PTR(out);
	return 0;
}

int oci_state_to_runc_json(const struct oci_state *s, char **ret)
{
	return dump_state(s, SHAPE_RUNC, "  ", false, ret);
}

int oci_state_to_hook_json(const struct oci_state *s, char **ret)
{
	return dump_state(s, SHAPE_HOOK, NULL, false, ret);
}

int oci_state_to_file_json(const struct oci_state *s, char **ret)
{
	return dump_state(s, SHAPE_FILE, NULL, true, ret);
}

int oci_state_list_to_json(const struct oci_state *const *states, size_t n, char **ret)
{
	_cleanup_json_ json_t *a = NULL;
	_cleanup_free_ char *out = NULL;
	char *t;
	int r = 0;

	if (n == 0) {
		/* runc encodes a nil slice. */
		*ret = strdup("null\n");
		return *ret ? 0 : -ENOMEM;
	}
	a = json_array();
	for (size_t i = 0; i < n; i++)
		jappend(a, state_tree(states[i], SHAPE_RUNC), &r);
	if (r < 0)
		return r;
	r = gojson_dump(a, NULL, &out);
	if (r < 0)
		return r;
	if (asprintf(&t, "%s\n", out) < 0)
		return -ENOMEM;
	*ret = t;
	return 0;
}

static int state_from_tree(struct jctx *c, json_t *v, struct oci_state *s)
{
	_cleanup_free_ char *status = NULL;
	int64_t pid = 0;
	int r;

	r = jget_string(c, v, "ociVersion", &s->oci_version);
	if (r >= 0)
		r = jget_string(c, v, "id", &s->id);
	if (r >= 0)
		r = jget_i64(c, v, "pid", &pid, NULL);
	if (r >= 0 && (pid < 0 || pid > INT32_MAX))
		r = jctx_error(c, "pid: %lld is out of range", (long long)pid);
	s->pid = (int)pid;
	if (r >= 0)
		r = jget_string(c, v, "status", &status);
	if (r >= 0) {
		int st = oci_status_from_name(status);
		if (st < 0)
			r = jctx_error(c, "status: unknown status \"%s\"", status ?: "");
		s->status = st < 0 ? 0 : st;
	}
	if (r >= 0)
		r = jget_string(c, v, "bundle", &s->bundle);
	if (r >= 0)
		r = jget_string(c, v, "rootfs", &s->rootfs);
	if (r >= 0)
		r = jget_string(c, v, "created", &s->created);
	if (r >= 0)
		r = jget_string(c, v, "owner", &s->owner);
	if (r >= 0)
		r = jget_map(c, v, "annotations", &s->annotations);
	if (r >= 0)
		r = jget_map(c, v, "kvrun", &s->private_data);
	if (r >= 0 && !s->id)
		r = jctx_error(c, "id: required field is missing");
	return r;
}

int oci_state_from_file_json(const char *json, size_t len, const char *name, struct oci_state **ret)
{
	_cleanup_json_ json_t *root = NULL;
	struct oci_state *s;
	struct jctx c;
	int r;

	r = jparse_document(json, len, name, &root);
	if (r < 0)
		return r;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	jctx_init(&c, name, NULL);
	r = state_from_tree(&c, root, s);
	if (r < 0) {
		oci_state_free(s);
		return r == -ENOMEM ? err_set(r, "%s: out of memory", name) : r;
	}
	*ret = s;
	return 0;
}
