/* SPDX-License-Identifier: Apache-2.0 */
/* Engines and their runtime entries: docker's daemon.json (JSON, through
 * oci-spec/docker-config.h), the TOML of containerd, podman and CRI-O
 * (toml-scan.h). */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/fileio.h"
#include "oci-spec/docker-config.h"
#include "runtime/host/engine-probe.h"
#include "runtime/host/toml-scan.h"

#define CONFIG_MAX (4 << 20)

struct engine_desc {
	const char *name;
	const char *binary; /* looked for in the usual bin directories */
	const char *config; /* where the entry goes (relative to the root) */
};

static const struct engine_desc engines[ENGINE_COUNT] = {
    [ENGINE_DOCKER] = {"docker", "dockerd", "/etc/docker/daemon.json"},
    [ENGINE_PODMAN] = {"podman", "podman", "/etc/containers/containers.conf.d/50-kvrun.conf"},
    [ENGINE_CONTAINERD] = {"containerd", "containerd", "/etc/containerd/config.toml"},
    [ENGINE_CRIO] = {"CRI-O", "crio", "/etc/crio/crio.conf.d/10-kvrun.conf"},
};

/* What the configuration says, gathered from its files. */
struct found {
	const char *kvrun_path; /* this binary */
	const char *root;
	char *runtime, *path; /* the best entry so far */
	int rank; /* 3: names this binary, 2: a binary called kvrun, 1: a runtime called kvrun */
	char *default_name; /* the engine's default runtime */
	int version; /* containerd's config version (1, 2, 3) */
	int error;
};

static int rank_of(const struct found *f, const char *name, const char *path)
{
	_cleanup_free_ char *at = NULL;
	struct stat a, b;
	const char *base = path ? strrchr(path, '/') : NULL;

	base = base ? base + 1 : path;
	if (path && asprintf(&at, "%s%s", f->root, path) >= 0 && stat(at, &a) == 0 && stat(f->kvrun_path, &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		return 3;
	if (base && !strcmp(base, "kvrun"))
		return 2;
	return !strcmp(name, "kvrun") ? 1 : 0;
}

static void consider(struct found *f, const char *name, const char *path)
{
	int rank = rank_of(f, name, path);

	if (rank <= f->rank)
		return;
	free(f->runtime);
	free(f->path);
	f->runtime = strdup(name);
	f->path = path ? strdup(path) : NULL;
	if (!f->runtime || (path && !f->path))
		f->error = -ENOMEM;
	f->rank = rank;
}

static void set_default(struct found *f, const char *name)
{
	free(f->default_name);
	f->default_name = strdup(name);
	if (!f->default_name)
		f->error = -ENOMEM;
}

static bool path_is(const struct toml_entry *e, size_t n, ...)
{
	va_list ap;
	bool ok = e->depth == n;

	va_start(ap, n);
	for (size_t i = 0; i < n && ok; i++) {
		const char *want = va_arg(ap, const char *);

		ok = !want || !strcmp(e->path[i], want);
	}
	va_end(ap);
	return ok;
}

static void containerd_entry(const struct toml_entry *e, void *data)
{
	struct found *f = data;
	size_t d = e->depth;

	if (!e->nvalues)
		return;
	if (d == 1 && !strcmp(e->path[0], "version"))
		f->version = atoi(e->values[0]);
	/* ...runtimes.<name>.options.BinaryName, under the CRI plugin
	 * (version 2) or its runtime part (version 3). */
	if (d >= 4 && !strcmp(e->path[d - 1], "BinaryName") && !strcmp(e->path[d - 2], "options") &&
	    !strcmp(e->path[d - 4], "runtimes"))
		consider(f, e->path[d - 3], e->values[0]);
	if (d >= 2 && !strcmp(e->path[d - 1], "default_runtime_name") && !strcmp(e->path[d - 2], "containerd"))
		set_default(f, e->values[0]);
}

static void podman_entry(const struct toml_entry *e, void *data)
{
	struct found *f = data;

	if (path_is(e, 3, "engine", "runtimes", NULL)) {
		for (size_t i = 0; i < e->nvalues; i++)
			consider(f, e->path[2], e->values[i]);
		if (!e->nvalues)
			consider(f, e->path[2], NULL);
	}
	if (path_is(e, 2, "engine", "runtime") && e->nvalues)
		set_default(f, e->values[0]);
}

static void crio_entry(const struct toml_entry *e, void *data)
{
	struct found *f = data;

	if (path_is(e, 5, "crio", "runtime", "runtimes", NULL, "runtime_path") && e->nvalues)
		consider(f, e->path[3], e->values[0]);
	if (path_is(e, 3, "crio", "runtime", "default_runtime") && e->nvalues)
		set_default(f, e->values[0]);
}

/* Scan root/rel with fn; a missing file is no error. Whether it exists. */
static bool scan_file(struct found *f, const char *rel, toml_entry_fn fn, char **err)
{
	_cleanup_free_ char *path = NULL, *text = NULL;
	size_t len;
	int r;

	if (asprintf(&path, "%s%s", f->root, rel) < 0) {
		f->error = -ENOMEM;
		return false;
	}
	r = read_file_all(path, CONFIG_MAX, &text, &len);
	if (r == -ENOENT)
		return false;
	if (r < 0) {
		if (!*err && asprintf(err, "%s: %s", rel, strerror(-r)) < 0)
			f->error = -ENOMEM;
		return true;
	}
	if (toml_scan(text, len, fn, f) < 0)
		f->error = -ENOMEM;
	return true;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every *.conf of the drop-in directory root/rel, in name order. */
static void scan_dropins(struct found *f, const char *rel, toml_entry_fn fn, char **err)
{
	_cleanup_free_ char *dir = NULL;
	_cleanup_closedir_ DIR *d = NULL;
	char *names[256];
	size_t n = 0;
	struct dirent *de;

	if (asprintf(&dir, "%s%s", f->root, rel) < 0 || !(d = opendir(dir)))
		return;
	while ((de = readdir(d)) && n < ARRAY_SIZE(names)) {
		size_t len = strlen(de->d_name);

		if (len > 5 && !strcmp(de->d_name + len - 5, ".conf") &&
		    asprintf(&names[n], "%s/%s", rel, de->d_name) >= 0)
			n++;
	}
	qsort(names, n, sizeof(*names), by_name);
	for (size_t i = 0; i < n; i++) {
		scan_file(f, names[i], fn, err);
		free(names[i]);
	}
}

static void docker_scan(struct found *f, char **err)
{
	_cleanup_free_ char *path = NULL, *text = NULL;
	struct docker_config c = {0};
	size_t len;
	int r;

	if (asprintf(&path, "%s%s", f->root, engines[ENGINE_DOCKER].config) < 0) {
		f->error = -ENOMEM;
		return;
	}
	r = read_file_all(path, CONFIG_MAX, &text, &len);
	if (r == -ENOENT)
		return;
	if (r >= 0)
		r = docker_config_parse(text, len, engines[ENGINE_DOCKER].config, &c);
	if (r < 0) {
		if (asprintf(err, "%s", *err_msg() ? err_msg() : strerror(-r)) < 0)
			f->error = -ENOMEM;
		err_clear();
		return;
	}
	for (size_t i = 0; i < c.nruntimes; i++)
		consider(f, c.runtimes[i].name, c.runtimes[i].path);
	if (c.default_runtime)
		set_default(f, c.default_runtime);
	docker_config_clear(&c);
}

static char *find_binary(const char *root, const char *name)
{
	static const char *const dirs[] = {"/usr/bin",        "/usr/sbin", "/usr/local/bin",
	                                   "/usr/local/sbin", "/bin",      "/sbin"};

	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		char *p;

		if (asprintf(&p, "%s%s/%s", root, dirs[i], name) < 0)
			return NULL;
		if (access(p, X_OK) == 0) {
			char *host = strdup(p + strlen(root));

			free(p);
			return host;
		}
		free(p);
	}
	return NULL;
}

static void scan_engine(enum engine_id id, struct found *f, char **err)
{
	switch (id) {
	case ENGINE_DOCKER:
		docker_scan(f, err);
		break;
	case ENGINE_PODMAN:
		scan_file(f, "/usr/share/containers/containers.conf", podman_entry, err);
		scan_file(f, "/etc/containers/containers.conf", podman_entry, err);
		scan_dropins(f, "/etc/containers/containers.conf.d", podman_entry, err);
		break;
	case ENGINE_CONTAINERD:
		/* A file without "version" is version 1 to containerd 1.x. */
		if (scan_file(f, engines[id].config, containerd_entry, err) && !f->version)
			f->version = 1;
		break;
	case ENGINE_CRIO:
		scan_file(f, "/etc/crio/crio.conf", crio_entry, err);
		scan_dropins(f, "/etc/crio/crio.conf.d", crio_entry, err);
		break;
	case ENGINE_COUNT:
		break;
	}
}

int engine_probe(const char *root, enum engine_id id, const char *kvrun_path, struct engine_status *ret)
{
	struct found f = {.kvrun_path = kvrun_path, .root = root ? root : ""};
	struct engine_status s = {.id = id, .name = engines[id].name};

	s.binary = find_binary(f.root, engines[id].binary);
	s.config = strdup(engines[id].config);
	if (!s.config)
		return -ENOMEM;
	scan_engine(id, &f, &s.error);
	if (f.rank > 0) {
		s.runtime = TAKE_PTR(f.runtime);
		s.runtime_path = TAKE_PTR(f.path);
		s.other_kvrun = f.rank < 3;
		s.is_default = f.default_name && !strcmp(f.default_name, s.runtime);
	}
	s.config_version = f.version;
	free(f.runtime);
	free(f.path);
	free(f.default_name);
	if (f.error < 0) {
		engine_status_done(&s);
		return f.error;
	}
	*ret = s;
	return 0;
}

void engine_status_done(struct engine_status *s)
{
	free(s->binary);
	free(s->config);
	free(s->runtime);
	free(s->runtime_path);
	free(s->error);
	*s = (struct engine_status){0};
}
