/* SPDX-License-Identifier: Apache-2.0 */
/* What `kvrun check` reads, below fake roots: the kind of virtualisation
 * from /proc/cpuinfo, /dev/kvm, the cgroup layouts, the TOML reader, the
 * engines' runtime entries (docker, podman, containerd, CRI-O), their
 * snippets and what --fix writes; and the install root of a binary. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fileio.h"
#include "config.h"
#include "oci-spec/docker-config.h"
#include "runtime/host/engine-probe.h"
#include "runtime/host/host-probe.h"
#include "runtime/host/install-paths.h"
#include "runtime/host/toml-scan.h"
#include "tap.h"

static char base[] = "/tmp/kvrun-host-probe-XXXXXX";
static int nroot;

static void cleanup(void)
{
	rm_rf(base);
}

/* A new empty root under base (made on first use). */
static char *new_root(void)
{
	char *r;

	if (nroot == 0) {
		if (!mkdtemp(base))
			abort();
		atexit(cleanup);
	}
	if (asprintf(&r, "%s/root%d", base, nroot++) < 0 || mkdir_p(r, 0755) < 0)
		abort();
	return r;
}

_printf_(3, 4) static void put(const char *root, const char *rel, const char *fmt, ...)
{
	_cleanup_free_ char *path = NULL, *text = NULL, *dir = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0 || asprintf(&path, "%s%s", root, rel) < 0 || !(dir = strdup(path)))
		abort();
	*strrchr(dir, '/') = 0;
	if (mkdir_p(dir, 0755) < 0 || write_file_atomic(path, text, (size_t)n, 0755) < 0)
		abort();
}

static char *read_rel(const char *root, const char *rel)
{
	_cleanup_free_ char *path = NULL;
	char *text = NULL;

	if (asprintf(&path, "%s%s", root, rel) < 0)
		abort();
	return read_file_all(path, 1 << 20, &text, NULL) < 0 ? NULL : text;
}

TEST(virt_kinds)
{
	_cleanup_free_ char *a = new_root(), *b = new_root(), *c = new_root(), *d = new_root(), *e = new_root();

	put(a, "/proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu vme vmx sse2\n");
	put(b, "/proc/cpuinfo", "flags\t\t: fpu svm hypervisor sse2\n");
	put(c, "/proc/cpuinfo", "flags\t\t: fpu sse2 hypervisor\n");
	put(d, "/proc/cpuinfo", "flags\t\t: fpu sse2\n");
	is_int(host_virt_probe(a), HOST_VIRT_HARDWARE);
	is_int(host_virt_probe(b), HOST_VIRT_NESTED);
	is_int(host_virt_probe(c), HOST_VIRT_EMULATED);
	is_int(host_virt_probe(d), HOST_VIRT_NONE);
	is_int(host_virt_probe(e), HOST_VIRT_UNKNOWN);
	/* Words, not substrings: "vmx_foo" or "svmx" is not vmx/svm. */
	put(d, "/proc/cpuinfo", "flags\t\t: fpu vmx_ept svmx hypervisor_x hypervisor\n");
	is_int(host_virt_probe(d), HOST_VIRT_EMULATED);
	is_str(host_virt_name(HOST_VIRT_EMULATED), "emulated");
}

TEST(kvm_device)
{
	_cleanup_free_ char *a = new_root(), *b = new_root(), *dev = NULL;
	struct host_kvm k;

	put(a, "/dev/kvm", "stand-in");
	host_kvm_probe(a, &k);
	ok(k.present && k.usable && k.api_version == 0, "a stand-in /dev/kvm is present and usable, not asked");
	host_kvm_probe(b, &k);
	ok(!k.present && !k.usable && k.error == ENOENT, "no /dev/kvm: missing, ENOENT");
	ok(!host_dev_present(a, "/dev/vhost-net"), "no vhost-net");
	put(a, "/dev/vhost-net", "x");
	ok(host_dev_present(a, "/dev/vhost-net"), "vhost-net present");
	if (geteuid() != 0) {
		if (asprintf(&dev, "%s/dev/kvm", a) < 0)
			abort();
		chmod(dev, 0);
		host_kvm_probe(a, &k);
		ok(k.present && !k.usable && k.error == EACCES, "an unreadable /dev/kvm is present, not usable");
	}
}

TEST(cgroup_layouts)
{
	_cleanup_free_ char *v2 = new_root(), *hy = new_root(), *v1 = new_root(), *none = new_root();
	struct host_cgroups cg;

	put(v2, "/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n");
	put(v2, "/run/systemd/system/.keep", "\n");
	host_cgroups_probe(v2, &cg);
	ok(cg.layout == HOST_CGROUP_V2 && cg.systemd, "v2 with systemd");
	is_str(cg.controllers, "cpuset cpu io memory pids");
	put(hy, "/sys/fs/cgroup/memory/tasks", "\n");
	put(hy, "/sys/fs/cgroup/cpu/tasks", "\n");
	put(hy, "/sys/fs/cgroup/unified/cgroup.controllers", "\n");
	host_cgroups_probe(hy, &cg);
	ok(cg.layout == HOST_CGROUP_HYBRID && !cg.systemd, "hybrid without systemd");
	is_str(cg.controllers, "cpu memory");
	put(v1, "/sys/fs/cgroup/pids/tasks", "\n");
	host_cgroups_probe(v1, &cg);
	is_int(cg.layout, HOST_CGROUP_V1);
	host_cgroups_probe(none, &cg);
	is_int(cg.layout, HOST_CGROUP_NONE);
}

struct seen {
	char text[2048];
};

static void record(const struct toml_entry *e, void *data)
{
	struct seen *s = data;
	size_t n = strlen(s->text);

	for (size_t i = 0; i < e->depth; i++)
		n += (size_t)snprintf(s->text + n, sizeof(s->text) - n, "%s%s", i ? "/" : "", e->path[i]);
	n += (size_t)snprintf(s->text + n, sizeof(s->text) - n, "=");
	for (size_t i = 0; i < e->nvalues; i++)
		n += (size_t)snprintf(s->text + n, sizeof(s->text) - n, "%s%s", i ? "|" : "", e->values[i]);
	snprintf(s->text + n, sizeof(s->text) - n, ";");
}

TEST(toml)
{
	static const char doc[] = "version = 2 # the format\n"
				  "[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
				  "  default_runtime_name = 'kvrun'\n"
				  "[[a.b]]\n"
				  "x.y = \"q\\\"uote\" \n"
				  "[engine.runtimes]\n"
				  "kvrun = [\n  \"/usr/bin/kvrun\", # first\n  '/opt/kvrun',\n]\n"
				  "bad line\n"
				  "z = [\"unterminated\n"
				  "last = true\n";
	struct seen s = {""};

	is_int(toml_scan(doc, strlen(doc), record, &s), 0);
	is_str(s.text, "version=2;plugins/io.containerd.grpc.v1.cri/containerd/default_runtime_name=kvrun;"
	               "a/b/x/y=q\"uote;engine/runtimes/kvrun=/usr/bin/kvrun|/opt/kvrun;engine/runtimes/z=;"
	               "engine/runtimes/last=true;");
	s.text[0] = 0;
	is_int(toml_scan("", 0, record, &s), 0);
	is_str(s.text, "");
}

TEST(docker_json)
{
	struct docker_config c = {0};
	static const char j[] = "{\"debug\": true, \"runtimes\": {\"a\": {\"path\": \"/x/kvrun\"}, \"b\": {}},"
				" \"default-runtime\": \"a\"}";
	_cleanup_free_ char *out = NULL;

	is_int(docker_config_parse(j, strlen(j), "daemon.json", &c), 0);
	ok(c.nruntimes == 2 && !strcmp(c.runtimes[0].name, "a") && !strcmp(c.runtimes[0].path, "/x/kvrun") &&
	       !c.runtimes[1].path,
	   "two runtimes, the second without a path");
	is_str(c.default_runtime, "a");
	docker_config_clear(&c);
	is_int(docker_config_parse("  \n", 3, "daemon.json", &c), 0);
	is_int(c.nruntimes, 0);
	is_int(docker_config_parse("[1]", 3, "daemon.json", &c), -EINVAL);
	is_int(docker_config_parse("{\"runtimes\": 1}", 15, "daemon.json", &c), -EINVAL);
	is_int(docker_config_add_runtime(j, strlen(j), "kvrun", "/usr/bin/kvrun", &out), 0);
	is_int(docker_config_parse(out, strlen(out), "out", &c), 0);
	ok(c.nruntimes == 3 && !strcmp(c.runtimes[2].name, "kvrun") && !strcmp(c.runtimes[2].path, "/usr/bin/kvrun"),
	   "the runtime added, the others kept");
	ok(strstr(out, "\"debug\": true") != NULL, "other keys kept");
	docker_config_clear(&c);
}

/* A root with this test's own binary standing in for kvrun at /usr/bin/kvrun. */
static char *root_with_kvrun(char *self, size_t size)
{
	char *r = new_root(), *link;
	ssize_t n = readlink("/proc/self/exe", self, size - 1);

	if (n <= 0 || asprintf(&link, "%s/usr/bin", r) < 0 || mkdir_p(link, 0755) < 0)
		abort();
	self[n] = 0;
	free(link);
	if (asprintf(&link, "%s/usr/bin/kvrun", r) < 0 || symlink(self, link) < 0)
		abort();
	free(link);
	return r;
}

TEST(engines_configured)
{
	char self[PATH_MAX];
	_cleanup_free_ char *r = root_with_kvrun(self, sizeof(self));
	struct engine_status s;

	put(r, "/usr/sbin/dockerd", "#!/bin/sh\n");
	put(r, "/etc/docker/daemon.json",
	    "{\"runtimes\": {\"vm\": {\"path\": \"/usr/bin/kvrun\"}}, \"default-runtime\": \"vm\"}");
	is_int(engine_probe(r, ENGINE_DOCKER, self, &s), 0);
	is_str(s.binary, "/usr/sbin/dockerd");
	ok(s.runtime && !strcmp(s.runtime, "vm") && !s.other_kvrun && s.is_default, "docker: runtime vm, default");
	engine_status_done(&s);

	put(r, "/usr/bin/podman", "#!/bin/sh\n");
	put(r, "/etc/containers/containers.conf", "[engine]\nruntime = \"crun\"\n");
	put(r, "/etc/containers/containers.conf.d/9.conf", "[engine.runtimes]\nkvrun = [\"/usr/bin/kvrun\"]\n");
	is_int(engine_probe(r, ENGINE_PODMAN, self, &s), 0);
	ok(s.runtime && !strcmp(s.runtime, "kvrun") && !s.other_kvrun && !s.is_default,
	   "podman: a drop-in's runtime, not the default");
	engine_status_done(&s);

	put(r, "/usr/bin/containerd", "#!/bin/sh\n");
	put(r, "/etc/containerd/config.toml",
	    "version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd]\n default_runtime_name = \"k\"\n"
	    "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.k]\n runtime_type = "
	    "\"io.containerd.runc.v2\"\n"
	    "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.k.options]\n BinaryName = "
	    "\"/usr/bin/kvrun\"\n");
	is_int(engine_probe(r, ENGINE_CONTAINERD, self, &s), 0);
	ok(s.runtime && !strcmp(s.runtime, "k") && !s.other_kvrun && s.is_default && s.config_version == 3,
	   "containerd 2: runtime k, the default, version 3");
	engine_status_done(&s);

	put(r, "/usr/bin/crio", "#!/bin/sh\n");
	put(r, "/etc/crio/crio.conf.d/10-kvrun.conf",
	    "[crio.runtime.runtimes.kvrun]\nruntime_path = \"/usr/bin/kvrun\"\n");
	is_int(engine_probe(r, ENGINE_CRIO, self, &s), 0);
	ok(s.runtime && !strcmp(s.runtime, "kvrun") && !s.other_kvrun, "CRI-O: runtime kvrun");
	engine_status_done(&s);
}

TEST(engines_missing_and_fixed)
{
	char self[PATH_MAX];
	_cleanup_free_ char *r = root_with_kvrun(self, sizeof(self)), *text = NULL, *snip = NULL, *bak = NULL;
	struct engine_status s;

	/* Not installed. */
	is_int(engine_probe(r, ENGINE_CRIO, self, &s), 0);
	ok(!s.binary && !s.runtime, "CRI-O not installed");
	engine_status_done(&s);

	/* docker with runc only: --fix adds kvrun and keeps the rest. */
	put(r, "/usr/bin/dockerd", "#!/bin/sh\n");
	put(r, "/etc/docker/daemon.json", "{\"log-level\": \"warn\"}\n");
	is_int(engine_probe(r, ENGINE_DOCKER, self, &s), 0);
	ok(s.binary && !s.runtime, "docker without kvrun");
	is_int(engine_fix(r, &s, "/usr/bin/kvrun", &bak), 1);
	ok(bak && (text = read_rel(r, "/etc/docker/daemon.json.kvrun-backup")) &&
	       !strcmp(text, "{\"log-level\": \"warn\"}\n"),
	   "the old daemon.json is the backup");
	engine_status_done(&s);
	is_int(engine_probe(r, ENGINE_DOCKER, self, &s), 0);
	ok(s.runtime && !strcmp(s.runtime, "kvrun") && !s.other_kvrun, "after --fix docker runs kvrun");
	engine_status_done(&s);
	free(text);
	text = read_rel(r, "/etc/docker/daemon.json");
	ok(text && strstr(text, "\"log-level\": \"warn\""), "daemon.json keeps its other keys");

	/* containerd without a file: version 2 and the runtime tables. */
	put(r, "/usr/bin/containerd", "#!/bin/sh\n");
	is_int(engine_probe(r, ENGINE_CONTAINERD, self, &s), 0);
	is_int(s.config_version, 0);
	is_int(engine_snippet(&s, "/usr/bin/kvrun", &snip), 0);
	ok(!strncmp(snip, "version = 2\n", 12) && strstr(snip, "BinaryName = \"/usr/bin/kvrun\""),
	   "containerd snippet for a new file: version 2, BinaryName");
	free(bak);
	bak = NULL;
	is_int(engine_fix(r, &s, "/usr/bin/kvrun", &bak), 1);
	ok(!bak, "no backup of a file that did not exist");
	engine_status_done(&s);
	is_int(engine_probe(r, ENGINE_CONTAINERD, self, &s), 0);
	ok(s.runtime && !s.other_kvrun && s.config_version == 2, "after --fix containerd runs kvrun");
	engine_status_done(&s);

	/* containerd 1.x file without a version: tables appended in its form. */
	put(r, "/etc/containerd/config.toml", "[plugins.cri]\n  sandbox_image = \"pause\"");
	is_int(engine_probe(r, ENGINE_CONTAINERD, self, &s), 0);
	is_int(s.config_version, 1);
	is_int(engine_fix(r, &s, "/usr/bin/kvrun", &bak), 1);
	engine_status_done(&s);
	free(text);
	text = read_rel(r, "/etc/containerd/config.toml");
	ok(text &&
	       !strncmp(text, "[plugins.cri]\n  sandbox_image = \"pause\"\n\n[plugins.cri.containerd.runtimes.kvrun]",
	                77),
	   "appended after the old text, version 1 tables");
	is_int(engine_probe(r, ENGINE_CONTAINERD, self, &s), 0);
	ok(s.runtime && !s.other_kvrun, "containerd 1 file runs kvrun after --fix");
	engine_status_done(&s);

	/* podman: a drop-in of its own. */
	free(bak);
	bak = NULL;
	put(r, "/usr/bin/podman", "#!/bin/sh\n");
	is_int(engine_probe(r, ENGINE_PODMAN, self, &s), 0);
	is_int(engine_fix(r, &s, "/usr/bin/kvrun", &bak), 1);
	engine_status_done(&s);
	is_int(engine_probe(r, ENGINE_PODMAN, self, &s), 0);
	ok(s.runtime && !s.other_kvrun, "podman runs kvrun after --fix");
	is_int(engine_fix(r, &s, "/usr/bin/kvrun", &bak), 0);
	engine_status_done(&s);
	free(bak);
}

TEST(engine_other_kvrun)
{
	char self[PATH_MAX];
	_cleanup_free_ char *r = root_with_kvrun(self, sizeof(self)), *bak = NULL;
	struct engine_status s;

	put(r, "/usr/bin/dockerd", "#!/bin/sh\n");
	put(r, "/etc/docker/daemon.json", "{\"runtimes\": {\"kvrun\": {\"path\": \"/opt/old/kvrun\"}}}");
	is_int(engine_probe(r, ENGINE_DOCKER, self, &s), 0);
	ok(s.runtime && s.other_kvrun && !strcmp(s.runtime_path, "/opt/old/kvrun"), "another kvrun is seen as such");
	is_int(engine_fix(r, &s, "/usr/bin/kvrun", &bak), -EEXIST);
	ok(!bak, "nothing changed");
	engine_status_done(&s);
	put(r, "/etc/docker/daemon.json", "{\"runtimes\": ");
	is_int(engine_probe(r, ENGINE_DOCKER, self, &s), 0);
	ok(s.error && strstr(s.error, "daemon.json"), "a broken daemon.json is reported: %s", s.error ? s.error : "");
	engine_status_done(&s);
}

TEST(install_root)
{
	_cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *exe = NULL;

	is_int(install_root(KVRUN_BINDIR "/kvrun", &a), 0);
	is_str(a, "");
	if (asprintf(&exe, "/tmp/stage%s/kvrun", KVRUN_BINDIR) < 0)
		abort();
	is_int(install_root(exe, &b), 0);
	is_str(b, "/tmp/stage");
	is_int(install_root("/work/build/runtime/kvrun", &c), 0);
	is_str(c, "");
}

TAP_MAIN()
