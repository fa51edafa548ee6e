/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/fileio.h"
#include "oci-spec/kvrun-config.h"

#define CONFIG_MAX_SIZE (1 << 20)

static int size_from_string(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	if (*end == 'k' || *end == 'K')
		mul = 1ULL << 10;
	else if (*end == 'm' || *end == 'M')
		mul = 1ULL << 20;
	else if (*end == 'g' || *end == 'G')
		mul = 1ULL << 30;
	if (mul != 1)
		end++;
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	else if (*end == 'B')
		end++;
	if (*end || v > UINT64_MAX / mul)
		return -EINVAL;
	*ret = v * mul;
	return 0;
}

static int get_string(json_t *v, const char *name, const char *key, char **ret)
{
	if (!json_is_string(v))
		return err_set(-EINVAL, "%s: %s: expected a string", name, key);
	*ret = strdup(json_string_value(v));
	return *ret ? 0 : -ENOMEM;
}

/* A size in bytes: a number, or a string with a K/M/G suffix; zero only
 * where zero_ok. */
static int get_size(json_t *v, const char *name, const char *key, bool zero_ok, uint64_t *ret)
{
	if (json_is_integer(v) && json_integer_value(v) >= (zero_ok ? 0 : 1)) {
		*ret = (uint64_t)json_integer_value(v);
		return 0;
	}
	if (json_is_string(v) && size_from_string(json_string_value(v), ret) == 0 && (zero_ok || *ret > 0))
		return 0;
	return err_set(-EINVAL, "%s: %s: expected a %s number of bytes or a size such as \"512M\"", name, key,
	               zero_ok ? "non-negative" : "positive");
}

static int get_bool(json_t *v, const char *name, const char *key, bool *ret)
{
	if (!json_is_boolean(v))
		return err_set(-EINVAL, "%s: %s: expected true or false", name, key);
	*ret = json_is_true(v);
	return 0;
}

int kvrun_acpi_mode_parse(const char *s, const char *name, enum kvrun_acpi_mode *ret)
{
	if (!strcmp(s, "auto"))
		*ret = KVRUN_ACPI_AUTO;
	else if (!strcmp(s, "true") || !strcmp(s, "1") || !strcmp(s, "on"))
		*ret = KVRUN_ACPI_ON;
	else if (!strcmp(s, "false") || !strcmp(s, "0") || !strcmp(s, "off"))
		*ret = KVRUN_ACPI_OFF;
	else
		return err_set(-EINVAL, "%s: expected true, false or \"auto\", not \"%s\"", name, s);
	return 0;
}

static int get_acpi(json_t *v, const char *name, enum kvrun_acpi_mode *ret)
{
	_cleanup_free_ char *what = NULL;

	if (json_is_boolean(v)) {
		*ret = json_is_true(v) ? KVRUN_ACPI_ON : KVRUN_ACPI_OFF;
		return 0;
	}
	if (asprintf(&what, "%s: acpi", name) < 0)
		return -ENOMEM;
	if (!json_is_string(v))
		return err_set(-EINVAL, "%s: expected true, false or \"auto\"", what);
	return kvrun_acpi_mode_parse(json_string_value(v), what, ret);
}

int kvrun_rootfs_mode_parse(const char *s, const char *name, enum kvrun_rootfs_mode *ret)
{
	if (!strcmp(s, "block"))
		*ret = KVRUN_ROOTFS_BLOCK;
	else if (!strcmp(s, "virtiofs"))
		*ret = KVRUN_ROOTFS_VIRTIOFS;
	else
		return err_set(-EINVAL, "%s: expected \"block\" or \"virtiofs\", not \"%s\"", name, s);
	return 0;
}

static int get_rootfs(json_t *v, const char *name, enum kvrun_rootfs_mode *ret)
{
	_cleanup_free_ char *what = NULL;

	if (asprintf(&what, "%s: rootfs", name) < 0)
		return -ENOMEM;
	if (!json_is_string(v))
		return err_set(-EINVAL, "%s: expected \"block\" or \"virtiofs\"", what);
	return kvrun_rootfs_mode_parse(json_string_value(v), what, ret);
}

int kvrun_fs_locks_parse(const char *s, const char *name, enum kvrun_fs_locks *ret)
{
	if (!strcmp(s, "host"))
		*ret = KVRUN_FS_LOCKS_HOST;
	else if (!strcmp(s, "guest"))
		*ret = KVRUN_FS_LOCKS_GUEST;
	else
		return err_set(-EINVAL, "%s: expected \"host\" or \"guest\", not \"%s\"", name, s);
	return 0;
}

static int get_fs_locks(json_t *v, const char *name, enum kvrun_fs_locks *ret)
{
	_cleanup_free_ char *what = NULL;

	if (asprintf(&what, "%s: fs_locks", name) < 0)
		return -ENOMEM;
	if (!json_is_string(v))
		return err_set(-EINVAL, "%s: expected \"host\" or \"guest\"", what);
	return kvrun_fs_locks_parse(json_string_value(v), what, ret);
}

static int get_modules(json_t *v, const char *name, char **ret)
{
	int r = get_string(v, name, "modules", ret);

	if (r < 0)
		return r;
	if (strcmp(*ret, "auto") && strcmp(*ret, "none") && (*ret)[0] != '/')
		return err_set(-EINVAL, "%s: modules: expected an absolute directory, \"auto\" or \"none\"", name);
	return 0;
}

static int parse_member(const char *key, json_t *v, const char *name, struct kvrun_config *c)
{
	if (strcmp(key, "kernel") == 0)
		return get_string(v, name, key, &c->kernel);
	if (strcmp(key, "initrd") == 0)
		return get_string(v, name, key, &c->initrd);
	if (strcmp(key, "modules") == 0)
		return get_modules(v, name, &c->modules);
	if (strcmp(key, "acpi") == 0)
		return get_acpi(v, name, &c->acpi);
	if (strcmp(key, "cmdline_extra") == 0)
		return get_string(v, name, key, &c->cmdline_extra);
	if (strcmp(key, "template_dir") == 0)
		return get_string(v, name, key, &c->template_dir);
	if (strcmp(key, "templates") == 0) {
		if (!json_is_boolean(v))
			return err_set(-EINVAL, "%s: templates: expected true or false", name);
		c->templates = json_is_true(v);
		return 0;
	}
	if (strcmp(key, "memory") == 0)
		return get_size(v, name, key, false, &c->memory);
	if (strcmp(key, "rootfs_cache") == 0) {
		bool on = true;
		int r = get_bool(v, name, key, &on);

		c->rootfs_cache_off = !on;
		return r;
	}
	if (strcmp(key, "rootfs_cache_size") == 0) {
		c->has_rootfs_cache_size = true;
		return get_size(v, name, key, true, &c->rootfs_cache_size);
	}
	if (strcmp(key, "cpus") == 0) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 1024)
			return err_set(-EINVAL, "%s: cpus: expected an integer from 1 to 1024", name);
		c->cpus = (unsigned int)json_integer_value(v);
		return 0;
	}
	if (strcmp(key, "early_create") == 0)
		return get_bool(v, name, key, &c->early_create);
	if (strcmp(key, "rootfs") == 0)
		return get_rootfs(v, name, &c->rootfs);
	if (strcmp(key, "fs_locks") == 0)
		return get_fs_locks(v, name, &c->fs_locks);
	if (strcmp(key, "jail_uid_base") == 0) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 0x7fffffff)
			return err_set(-EINVAL, "%s: jail_uid_base: expected a uid from 1 to 2147483647", name);
		c->jail_uid_base = (unsigned long)json_integer_value(v);
		return 0;
	}
	return err_set(-EINVAL, "%s: unknown key \"%s\"", name, key);
}

int kvrun_config_parse(const char *json, size_t len, const char *name, struct kvrun_config *ret)
{
	struct kvrun_config c = {.templates = -1};
	json_error_t jerr;
	json_t *root, *v;
	const char *key;
	int r = 0;

	root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return err_set(-EINVAL, "%s: line %d column %d: %s", name, jerr.line, jerr.column, jerr.text);
	if (!json_is_object(root))
		r = err_set(-EINVAL, "%s: expected a JSON object", name);
	json_object_foreach(root, key, v)
	{
		if (r < 0)
			break;
		r = parse_member(key, v, name, &c);
	}
	json_decref(root);
	if (r < 0) {
		kvrun_config_clear(&c);
		return r;
	}
	*ret = c;
	return 0;
}

int kvrun_config_load(const char *path, struct kvrun_config *ret)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	r = read_file_all(path, CONFIG_MAX_SIZE, &buf, &len);
	if (r == -ENOENT)
		return r;
	if (r < 0)
		return err_setsys(r, "read %s", path);
	return kvrun_config_parse(buf, len, path, ret);
}

void kvrun_config_clear(struct kvrun_config *c)
{
	free(c->kernel);
	free(c->initrd);
	free(c->modules);
	free(c->cmdline_extra);
	free(c->template_dir);
	*c = (struct kvrun_config){.templates = -1};
}
