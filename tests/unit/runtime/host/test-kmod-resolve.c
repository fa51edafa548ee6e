/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kmod_resolve() on a fake module tree the test builds (small ELF modules
 * with exports and imports, modules.builtin, an alias) and indexes with the
 * host's depmod; the load order is checked against depmod's own text
 * modules.dep. With $KVRUN_TEST_DISTRO_MODULES (a /lib/modules/<version>
 * directory of a distro kernel, e.g. from `apt-get download
 * linux-image-cloud-amd64` and `dpkg -x`), the real tree is resolved too.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake-ko.h"
#include "runtime/host/initramfs.h"
#include "runtime/host/kmod-resolve.h"
#include "tap.h"

#define FAKE_VERSION "9.9.9-kvrun"
#define diag(...) (printf("# "), printf(__VA_ARGS__), printf("\n"))

struct tap_test tap_tests[TAP_MAX_TESTS];
int tap_nr_tests, tap_count, tap_failed;
const char *tap_current = "";

static char root[256], moddir[512];
static bool have_xz, have_zstd, tree_ok;

static bool tool_exists(const char *tool)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", tool);
	return system(cmd) == 0;
}

__attribute__((format(printf, 1, 2))) static int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

struct fake {
	const char *dir, *name, *exports, *imports, *modinfo, *compress;
};

/* virtio_blk and vmw_vsock_virtio_transport are compressed when the tools
 * exist, to exercise decompression. */
static const struct fake fakes[] = {
    {"drivers/virtio", "virtio", "register_virtio_driver", "", "", NULL},
    {"drivers/virtio", "virtio_ring", "vring_new_virtqueue", "register_virtio_driver", "", NULL},
    {"drivers/virtio", "virtio_mmio", "", "register_virtio_driver vring_new_virtqueue", "alias=of:N*T*Cvirtio,mmio",
     NULL},
    {"drivers/block", "virtio_blk", "", "register_virtio_driver vring_new_virtqueue", "", "xz"},
    {"net/vmw_vsock", "vsock", "vsock_core_register", "", "alias=net-pf-40", NULL},
    {"net/vmw_vsock", "vmw_vsock_virtio_transport_common", "virtio_transport_recv_pkt",
     "vsock_core_register register_virtio_driver", "", NULL},
    {"net/vmw_vsock", "vmw_vsock_virtio_transport", "",
     "virtio_transport_recv_pkt vsock_core_register vring_new_virtqueue", "", "zstd"},
    {"fs/erofs", "erofs", "", "", "alias=fs-erofs", NULL},
    {"fs/overlayfs", "overlay", "", "", "alias=fs-overlay", NULL},
    {"lib", "unused_mod", "unused_sym", "", "", NULL},
};

static int build_tree(void)
{
	char path[1024], *tmp = getenv("TMPDIR");
	FILE *f;

	snprintf(root, sizeof(root), "%s/kvrun-kmod-XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(root))
		return -1;
	snprintf(moddir, sizeof(moddir), "%s/lib/modules/%s", root, FAKE_VERSION);
	for (size_t i = 0; i < sizeof(fakes) / sizeof(fakes[0]); i++) {
		const struct fake *k = &fakes[i];
		bool z = (k->compress && !strcmp(k->compress, "xz") && have_xz) ||
		         (k->compress && !strcmp(k->compress, "zstd") && have_zstd);

		snprintf(path, sizeof(path), "%s/kernel/%s", moddir, k->dir);
		if (sh("mkdir -p '%s'", path) != 0)
			return -1;
		snprintf(path, sizeof(path), "%s/kernel/%s/%s.ko", moddir, k->dir, k->name);
		if (fake_ko_write(path, k->name, k->exports, k->imports, k->modinfo) < 0)
			return -1;
		/* Keep a plain copy to compare the decompressed file with. */
		if (z && sh("cp '%s' '%s.orig'", path, path) != 0)
			return -1;
		if (z && sh("%s '%s'", !strcmp(k->compress, "xz") ? "xz -q" : "zstd -q --rm", path) != 0)
			return -1;
	}
	snprintf(path, sizeof(path), "%s/modules.builtin", moddir);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs("kernel/fs/ext4/ext4.ko\nkernel/drivers/net/virtio_net.ko\nkernel/fs/mbcache.ko\n", f);
	fclose(f);
	return sh("depmod -b '%s' " FAKE_VERSION " 2>/dev/null", root) == 0 ? 0 : -1;
}

static int index_of(const struct kmod_resolved *r, const char *name)
{
	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->names[i], name))
			return (int)i;
	return -1;
}

/* Module name of a modules.dep path ("kernel/a/b-c.ko.xz" -> "b_c"). */
static void dep_name(const char *path, char *out, size_t len)
{
	const char *b = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t i;

	for (i = 0; b[i] && b[i] != '.' && i + 1 < len; i++)
		out[i] = b[i] == '-' ? '_' : b[i];
	out[i] = '\0';
}

/* Every module's dependencies (depmod's text modules.dep, read here
 * independently of libkmod) come before it. Returns the violations. */
static int order_violations(const char *dir, const struct kmod_resolved *r)
{
	char path[1024], line[8192], name[128];
	int bad = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/modules.dep", dir);
	f = fopen(path, "r");
	if (!f)
		return 1000;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':'), *save, *tok;
		int me;

		if (!colon)
			continue;
		*colon = '\0';
		dep_name(line, name, sizeof(name));
		me = index_of(r, name);
		if (me < 0)
			continue;
		for (tok = strtok_r(colon + 1, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
			dep_name(tok, name, sizeof(name));
			if (index_of(r, name) < 0 || index_of(r, name) > me) {
				diag("%s needs %s, which is %s", r->names[me], name,
				     index_of(r, name) < 0 ? "missing" : "later");
				bad++;
			}
		}
	}
	fclose(f);
	return bad;
}

static bool builtin_has(const struct kmod_resolved *r, const char *name)
{
	for (size_t i = 0; i < r->n_builtin; i++)
		if (!strcmp(r->builtin[i], name))
			return true;
	return false;
}

static int duplicates(const struct kmod_resolved *r)
{
	int d = 0;

	for (size_t i = 0; i < r->n; i++)
		for (size_t j = i + 1; j < r->n; j++)
			d += !strcmp(r->names[i], r->names[j]);
	return d;
}

TEST(fake_tree_order)
{
	struct kmod_resolved r;

	if (!tree_ok) {
		ok(false, "fake module tree built and indexed by depmod");
		return;
	}
	is_int(kmod_resolve(moddir, kmod_kvrun_modules, &r), 0);
	/* 8 files: virtio, virtio_ring, virtio_mmio, virtio_blk, vsock, the two
	 * transport modules, erofs, overlay = 9; ext4 and virtio_net built in. */
	is_int((int)r.n, 9);
	is_int(order_violations(moddir, &r), 0);
	is_int(duplicates(&r), 0);
	ok(index_of(&r, "virtio") == 0, "virtio (needed by all the others) loads first");
	ok(index_of(&r, "virtio_ring") < index_of(&r, "virtio_mmio"), "virtio_ring before virtio_mmio");
	ok(index_of(&r, "vsock") < index_of(&r, "vmw_vsock_virtio_transport_common") &&
	       index_of(&r, "vmw_vsock_virtio_transport_common") < index_of(&r, "vmw_vsock_virtio_transport"),
	   "vsock, then the common transport, then the virtio transport");
	ok(index_of(&r, "unused_mod") < 0, "a module nobody needs is left out");
	ok(builtin_has(&r, "ext4") && builtin_has(&r, "virtio_net"), "ext4 and virtio_net reported as built in");
	is_int((int)r.n_builtin, 2);
	for (size_t i = 0; i < r.n; i++)
		ok(r.paths[i][0] == '/' && access(r.paths[i], R_OK) == 0, "%s: file %s", r.names[i], r.paths[i]);
	kmod_resolved_free(&r);
}

TEST(fake_tree_aliases_and_errors)
{
	const char *by_alias[] = {"fs-erofs", "net-pf-40", NULL};
	const char *missing[] = {"overlay", "no_such_module", NULL};
	const char *again[] = {"overlay", "overlay", "virtio_blk", "virtio_mmio", NULL};
	struct kmod_resolved r;

	if (!tree_ok) {
		ok(false, "fake module tree built and indexed by depmod");
		return;
	}
	is_int(kmod_resolve(moddir, by_alias, &r), 0);
	ok(r.n == 2 && !strcmp(r.names[0], "erofs") && !strcmp(r.names[1], "vsock"), "aliases resolve to modules");
	kmod_resolved_free(&r);
	is_int(kmod_resolve(moddir, missing, &r), -ENOENT);
	is_int(kmod_resolve(moddir, again, &r), 0);
	ok(r.n == 5 && duplicates(&r) == 0, "asked twice and shared dependencies: each module once (%zu)", r.n);
	kmod_resolved_free(&r);
	is_int(kmod_resolve(root, kmod_kvrun_modules, &r), -EINVAL);
}

static bool same_file(const char *a, const char *b)
{
	return sh("cmp -s '%s' '%s'", a, b) == 0;
}

TEST(initramfs_with_modules)
{
	char out[600], orig[1024], init[1024];
	static const char order[] = "virtio.ko\nvirtio_ring.ko\nvirtio_mmio.ko\nvirtio_blk.ko\nvsock.ko\n"
				    "vmw_vsock_virtio_transport_common.ko\nvmw_vsock_virtio_transport.ko\n"
				    "erofs.ko\noverlay.ko\n";
	char **files = NULL, *bad = NULL;
	struct initramfs_spec spec = {0};
	uint8_t *buf = NULL;
	size_t len = 0;
	uint32_t key;
	size_t n = 0;

	if (!tree_ok) {
		ok(false, "fake module tree built and indexed by depmod");
		return;
	}
	snprintf(out, sizeof(out), "%s/out", root);
	mkdir(out, 0755);
	is_int(kmod_initramfs_files(moddir, kmod_kvrun_modules, out, &files), 0);
	for (char **f = files; f && *f; f++, n++) {
		size_t l = strlen(*f);

		ok(l > 3 && !strcmp(*f + l - 3, ".ko") && access(*f, R_OK) == 0, "uncompressed module file %s", *f);
	}
	is_int((int)n, 9);
	if (have_xz) {
		snprintf(orig, sizeof(orig), "%s/kernel/drivers/block/virtio_blk.ko.orig", moddir);
		snprintf(init, sizeof(init), "%s/virtio_blk.ko", out);
		ok(same_file(orig, init), "virtio_blk.ko.xz decompressed to the original bytes");
	}
	if (have_zstd) {
		snprintf(orig, sizeof(orig), "%s/kernel/net/vmw_vsock/vmw_vsock_virtio_transport.ko.orig", moddir);
		snprintf(init, sizeof(init), "%s/vmw_vsock_virtio_transport.ko", out);
		ok(same_file(orig, init), "vmw_vsock_virtio_transport.ko.zst decompressed to the original bytes");
	}
	/* The initramfs records the same order for guest-init. */
	snprintf(init, sizeof(init), "%s/init", root);
	fclose(fopen(init, "w"));
	spec.init_path = init;
	spec.modules = (const char *const *)files;
	is_int(initramfs_build(&spec, &buf, &len, &key), 0);
	ok(buf && memmem(buf, len, order, strlen(order)) != NULL,
	   "load-order in the initramfs lists the modules dependencies first");
	free(buf);
	kmod_files_free(files);
	is_int(kmod_module_file("/x/mod.ko.bz2", out, &bad), -ENOTSUP);
}

TEST(distro_tree)
{
	const char *dir = getenv("KVRUN_TEST_DISTRO_MODULES");
	struct kmod_resolved r;

	if (!dir) {
		diag("SKIP distro tree: set KVRUN_TEST_DISTRO_MODULES to a /lib/modules/<version> directory with "
		     "modules.dep.bin (e.g. apt-get download linux-image-cloud-amd64; dpkg -x; depmod -b)");
		ok(1, "distro tree # SKIP KVRUN_TEST_DISTRO_MODULES not set");
		return;
	}
	is_int(kmod_resolve(dir, kmod_kvrun_modules, &r), 0);
	for (size_t i = 0; i < r.n; i++)
		diag("load %zu: %s", i, r.names[i]);
	for (size_t i = 0; i < r.n_builtin; i++)
		diag("built in: %s", r.builtin[i]);
	is_int(order_violations(dir, &r), 0);
	is_int(duplicates(&r), 0);
	for (const char *const *w = kmod_kvrun_modules; *w; w++)
		ok(index_of(&r, *w) >= 0 || builtin_has(&r, *w), "%s resolved (loaded or built in)", *w);
	kmod_resolved_free(&r);
}

int main(void)
{
	int rc;

	const char *path = getenv("PATH");
	char *full = NULL;

	/* depmod lives in sbin, which a user's PATH may lack. */
	if (asprintf(&full, "/usr/sbin:/sbin:%s", path ? path : "/usr/bin:/bin") < 0)
		return 1;
	setenv("PATH", full, 1);
	free(full);
	have_xz = tool_exists("xz");
	have_zstd = tool_exists("zstd");
	if (!tool_exists("depmod")) {
		tap_skip_all("depmod (kmod) is needed to index the fake module tree");
		return 0;
	}
	tree_ok = build_tree() == 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; i < tap_nr_tests; i++) {
		tap_current = tap_tests[i].name;
		tap_tests[i].fn();
	}
	printf("1..%d\n", tap_count);
	rc = tap_failed ? 1 : 0;
	sh("rm -rf '%s'", root);
	return rc;
}
