/* SPDX-License-Identifier: Apache-2.0 */
/* Module dependency resolution with libkmod, and host-side decompression.
 * libkmod (with the compression and crypto libraries it pulls in) is
 * loaded only when a modular kernel needs it: every other kvrun command
 * starts without it (about 1 ms less per command). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libkmod.h>
#include <limits.h>
#include <spawn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "runtime/host/kmod-resolve.h"

extern char **environ;

const char *const kmod_kvrun_modules[] = {
    "virtio_mmio", "virtio_blk", "virtio_net", "vmw_vsock_virtio_transport", "ext4", "erofs", "overlay", NULL,
};

/* modules.dep lists at most a few dozen levels; deeper is a cycle. */
#define KMOD_MAX_DEPTH 64

struct resolver {
	struct kmod_resolved *out;
	const char *visiting[KMOD_MAX_DEPTH];
	unsigned int depth;
};

/* The libkmod functions used here, resolved on first use. */
static struct {
	bool loaded;
	struct kmod_ctx *(*new_ctx)(const char *, const char *const *);
	void (*set_log_fn)(struct kmod_ctx *,
	                   void (*)(void *, int, const char *, int, const char *, const char *, va_list), const void *);
	struct kmod_ctx *(*unref)(struct kmod_ctx *);
	struct kmod_list *(*list_next)(const struct kmod_list *, const struct kmod_list *);
	int (*module_new_from_lookup)(struct kmod_ctx *, const char *, struct kmod_list **);
	struct kmod_module *(*module_get_module)(const struct kmod_list *);
	const char *(*module_get_name)(const struct kmod_module *);
	const char *(*module_get_path)(const struct kmod_module *);
	struct kmod_list *(*module_get_dependencies)(const struct kmod_module *);
	struct kmod_module *(*module_unref)(struct kmod_module *);
	int (*module_unref_list)(struct kmod_list *);
} lk;

#define KMOD_SONAME "libkmod.so.2"

static int load_libkmod(void)
{
	static const struct {
		const char *name;
		size_t off;
	} syms[] = {
#define SYM(field, name) {#name, offsetof(__typeof__(lk), field)}
	    SYM(new_ctx, kmod_new),
	    SYM(set_log_fn, kmod_set_log_fn),
	    SYM(unref, kmod_unref),
	    SYM(list_next, kmod_list_next),
	    SYM(module_new_from_lookup, kmod_module_new_from_lookup),
	    SYM(module_get_module, kmod_module_get_module),
	    SYM(module_get_name, kmod_module_get_name),
	    SYM(module_get_path, kmod_module_get_path),
	    SYM(module_get_dependencies, kmod_module_get_dependencies),
	    SYM(module_unref, kmod_module_unref),
	    SYM(module_unref_list, kmod_module_unref_list),
#undef SYM
	};
	void *h;

	if (lk.loaded)
		return 0;
	h = dlopen(KMOD_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return err_set(-ELIBACC, "cannot load %s (package libkmod2), needed for a kernel with modules: %s",
		               KMOD_SONAME, dlerror());
	for (size_t i = 0; i < ARRAY_SIZE(syms); i++) {
		void *f = dlsym(h, syms[i].name);

		if (!f) {
			dlclose(h);
			return err_set(-ELIBBAD, "%s has no %s", KMOD_SONAME, syms[i].name);
		}
		memcpy((char *)&lk + syms[i].off, &f, sizeof(f));
	}
	lk.loaded = true;
	return 0;
}

/* libkmod.h's iteration macro, over the loaded kmod_list_next. */
#define lk_list_foreach(it, head) for (it = head; it != NULL; it = lk.list_next(head, it))

static void quiet_log(void *data, int priority, const char *file, int line, const char *fn, const char *format,
                      va_list args)
{
	/* A library layer prints nothing; failures come back as errors. */
}

static bool listed(char **names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

static int push(char ***arr, size_t *n, const char *s)
{
	char **a = realloc(*arr, (*n + 2) * sizeof(char *));

	if (!a)
		return -ENOMEM;
	*arr = a;
	a[*n] = strdup(s);
	if (!a[*n])
		return -ENOMEM;
	a[++*n] = NULL;
	return 0;
}

static int visit(struct resolver *rs, struct kmod_module *mod)
{
	struct kmod_resolved *o = rs->out;
	const char *name = lk.module_get_name(mod), *path = lk.module_get_path(mod);
	struct kmod_list *deps, *l;
	int r = 0;

	if (listed(o->names, o->n, name) || listed(o->builtin, o->n_builtin, name))
		return 0;
	for (unsigned int i = 0; i < rs->depth; i++)
		if (!strcmp(rs->visiting[i], name))
			return err_set(-ELOOP, "module %s depends on itself", name);
	if (rs->depth == KMOD_MAX_DEPTH)
		return err_set(-ELOOP, "module dependencies deeper than %d at %s", KMOD_MAX_DEPTH, name);
	/* No file: found only in modules.builtin, so nothing to load. */
	if (!path)
		return push(&o->builtin, &o->n_builtin, name);
	rs->visiting[rs->depth++] = name;
	deps = lk.module_get_dependencies(mod);
	lk_list_foreach(l, deps)
	{
		struct kmod_module *d = lk.module_get_module(l);

		if (r >= 0)
			r = visit(rs, d);
		lk.module_unref(d);
	}
	lk.module_unref_list(deps);
	rs->depth--;
	if (r < 0)
		return r;
	r = push(&o->names, &o->n, name);
	if (r >= 0) {
		o->n--; /* push() counted it; paths shares the count */
		r = push(&o->paths, &o->n, path);
	}
	return r;
}

static int resolve_one(struct kmod_ctx *ctx, struct resolver *rs, const char *want)
{
	struct kmod_list *list = NULL, *l;
	int r;

	r = lk.module_new_from_lookup(ctx, want, &list);
	if (r < 0)
		return err_setsys(r, "looking up module %s", want);
	if (!list)
		return err_set(-ENOENT, "module %s is neither a module file nor built in", want);
	lk_list_foreach(l, list)
	{
		struct kmod_module *m = lk.module_get_module(l);

		if (r >= 0)
			r = visit(rs, m);
		lk.module_unref(m);
	}
	lk.module_unref_list(list);
	return r < 0 ? err_prefix(r, "resolving %s", want) : 0;
}

int kmod_resolve(const char *moddir, const char *const *wanted, struct kmod_resolved *ret)
{
	static const char *const no_config[] = {NULL}; /* the host's modprobe.d is not the guest's */
	struct kmod_resolved o = {0};
	struct resolver rs = {.out = &o};
	_cleanup_free_ char *dep = NULL;
	struct kmod_ctx *ctx;
	int r = 0;

	if (asprintf(&dep, "%s/modules.dep.bin", moddir) < 0)
		return -ENOMEM;
	if (access(dep, R_OK) < 0)
		return err_setsys(-EINVAL, "%s has no module index (modules.dep.bin): run depmod for it", moddir);
	r = load_libkmod();
	if (r < 0)
		return r;
	ctx = lk.new_ctx(moddir, no_config);
	if (!ctx)
		return err_set(-ENOMEM, "libkmod context for %s", moddir);
	lk.set_log_fn(ctx, quiet_log, NULL);
	for (const char *const *w = wanted; *w && r >= 0; w++)
		r = resolve_one(ctx, &rs, *w);
	lk.unref(ctx);
	if (r < 0) {
		kmod_resolved_free(&o);
		return r;
	}
	*ret = o;
	return 0;
}

static void free_strv(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

void kmod_resolved_free(struct kmod_resolved *r)
{
	free_strv(r->names, r->n);
	free_strv(r->paths, r->n);
	free_strv(r->builtin, r->n_builtin);
	*r = (struct kmod_resolved){0};
}

static bool ends_with(const char *s, const char *suffix, size_t *ret_stem)
{
	size_t n = strlen(s), m = strlen(suffix);

	if (n < m || strcmp(s + n - m, suffix))
		return false;
	*ret_stem = n - m;
	return true;
}

/* Run tool -dc path with stdout on fd; 0 when it exited 0. */
static int run_decompressor(const char *tool, const char *path, int fd)
{
	char *const argv[] = {(char *)tool, (char *)"-dc", (char *)"--", (char *)path, NULL};
	posix_spawn_file_actions_t fa;
	int status, r;
	pid_t pid;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fd, STDOUT_FILENO);
	r = posix_spawnp(&pid, tool, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r != 0)
		return err_setsys(-r, "cannot run %s to decompress %s", tool, path);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return err_setsys(-errno, "waiting for %s", tool);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return err_set(-EIO, "%s -dc %s failed (status 0x%x)", tool, path, status);
	return 0;
}

int kmod_module_file(const char *path, const char *out_dir, char **ret)
{
	static const struct {
		const char *suffix, *tool;
	} kinds[] = {{".ko.xz", "xz"}, {".ko.zst", "zstd"}, {".ko.gz", "gzip"}};
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	_cleanup_free_ char *dst = NULL, *tmp = NULL;
	_cleanup_close_ int fd = -1;
	size_t stem;
	int r;

	if (ends_with(base, ".ko", &stem)) {
		*ret = strdup(path);
		return *ret ? 0 : -ENOMEM;
	}
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (!ends_with(base, kinds[i].suffix, &stem))
			continue;
		if (asprintf(&dst, "%s/%.*s.ko", out_dir, (int)stem, base) < 0 ||
		    asprintf(&tmp, "%s.tmp.%d", dst, (int)getpid()) < 0)
			return -ENOMEM;
		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			return err_setsys(-errno, "cannot create %s", tmp);
		r = run_decompressor(kinds[i].tool, path, fd);
		if (r >= 0 && rename(tmp, dst) < 0)
			r = err_setsys(-errno, "cannot rename %s", tmp);
		if (r < 0) {
			unlink(tmp);
			return r;
		}
		*ret = TAKE_PTR(dst);
		return 0;
	}
	return err_set(-ENOTSUP, "module file %s: unknown compression", path);
}

void kmod_files_free(char **files)
{
	for (char **f = files; f && *f; f++)
		free(*f);
	free(files);
}

int kmod_initramfs_files(const char *moddir, const char *const *wanted, const char *out_dir, char ***ret_files)
{
	struct kmod_resolved res;
	char **files;
	int r;

	r = kmod_resolve(moddir, wanted, &res);
	if (r < 0)
		return r;
	files = calloc(res.n + 1, sizeof(char *));
	if (!files) {
		kmod_resolved_free(&res);
		return -ENOMEM;
	}
	for (size_t i = 0; i < res.n && r >= 0; i++)
		r = kmod_module_file(res.paths[i], out_dir, &files[i]);
	kmod_resolved_free(&res);
	if (r < 0) {
		kmod_files_free(files);
		return r;
	}
	*ret_files = files;
	return 0;
}
