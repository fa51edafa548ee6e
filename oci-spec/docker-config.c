/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "oci-spec/docker-config.h"

static void json_decref_p(json_t **j)
{
	if (*j)
		json_decref(*j);
}
#define _cleanup_json_ _cleanup_(json_decref_p)

/* The document, or an empty object for an empty file. */
static int load(const char *json, size_t len, const char *name, json_t **ret)
{
	json_error_t jerr;
	size_t i = 0;

	while (i < len && strchr(" \t\r\n", json[i]))
		i++;
	*ret = i == len ? json_object() : json_loadb(json, len, 0, &jerr);
	if (!*ret)
		return i == len ? -ENOMEM : err_set(-EINVAL, "%s: line %d: %s", name, jerr.line, jerr.text);
	if (!json_is_object(*ret)) {
		json_decref(*ret);
		*ret = NULL;
		return err_set(-EINVAL, "%s: not a JSON object", name);
	}
	return 0;
}

static int add_runtime(struct docker_config *c, const char *name, json_t *entry)
{
	struct docker_runtime *rt = reallocarray(c->runtimes, c->nruntimes + 1, sizeof(*rt));
	json_t *path = json_is_object(entry) ? json_object_get(entry, "path") : NULL;

	if (!rt)
		return -ENOMEM;
	c->runtimes = rt;
	rt = &c->runtimes[c->nruntimes];
	*rt = (struct docker_runtime){strdup(name), json_is_string(path) ? strdup(json_string_value(path)) : NULL};
	if (!rt->name || (json_is_string(path) && !rt->path)) {
		free(rt->name);
		free(rt->path);
		return -ENOMEM;
	}
	c->nruntimes++;
	return 0;
}

int docker_config_parse(const char *json, size_t len, const char *name, struct docker_config *ret)
{
	_cleanup_json_ json_t *root = NULL;
	struct docker_config c = {0};
	json_t *runtimes, *def, *entry;
	const char *key;
	int r;

	r = load(json, len, name, &root);
	if (r < 0)
		return r;
	runtimes = json_object_get(root, "runtimes");
	if (runtimes && !json_is_object(runtimes))
		return err_set(-EINVAL, "%s: \"runtimes\" is not an object", name);
	json_object_foreach(runtimes, key, entry)
	{
		r = add_runtime(&c, key, entry);
		if (r < 0) {
			docker_config_clear(&c);
			return r;
		}
	}
	def = json_object_get(root, "default-runtime");
	if (json_is_string(def) && !(c.default_runtime = strdup(json_string_value(def)))) {
		docker_config_clear(&c);
		return -ENOMEM;
	}
	*ret = c;
	return 0;
}

void docker_config_clear(struct docker_config *c)
{
	for (size_t i = 0; i < c->nruntimes; i++) {
		free(c->runtimes[i].name);
		free(c->runtimes[i].path);
	}
	free(c->runtimes);
	free(c->default_runtime);
	*c = (struct docker_config){0};
}

int docker_config_add_runtime(const char *json, size_t len, const char *name, const char *path, char **ret)
{
	_cleanup_json_ json_t *root = NULL;
	json_t *runtimes;
	int r;

	r = load(json, len, "daemon.json", &root);
	if (r < 0)
		return r;
	runtimes = json_object_get(root, "runtimes");
	if (!runtimes) {
		runtimes = json_object();
		if (!runtimes || json_object_set_new(root, "runtimes", runtimes) < 0)
			return -ENOMEM;
	}
	if (!json_is_object(runtimes))
		return err_set(-EINVAL, "daemon.json: \"runtimes\" is not an object");
	if (json_object_set_new(runtimes, name, json_pack("{s:s}", "path", path)) < 0)
		return -ENOMEM;
	*ret = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	return *ret ? 0 : -ENOMEM;
}
