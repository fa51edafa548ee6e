/* SPDX-License-Identifier: Apache-2.0 */
/* `spec` output and features.json against runc: the fixtures captured from
 * runc on the build machine, and the installed runc itself when present. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixtures.h"
#include "oci-spec/defaults.h"
#include "oci-spec/features.h"
#include "oci-spec/spec.h"

static bool have_runc(void)
{
	return system("command -v runc >/dev/null 2>&1") == 0;
}

/* Run `runc <args>` in a fresh temporary directory and return the bytes
 * of file (relative to it), or of its stdout when file is NULL. */
static char *run_runc(const char *args, const char *file)
{
	char dir[] = "/tmp/kvrun-oci-test.XXXXXX", cmd[512], path[512];
	char *buf = NULL;

	if (!mkdtemp(dir))
		return NULL;
	snprintf(path, sizeof(path), "%s/%s", dir, file ? file : "stdout");
	snprintf(cmd, sizeof(cmd), "cd %s && runc %s > stdout", dir, args);
	if (system(cmd) == 0)
		read_file_all(path, 1 << 20, &buf, NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
	return buf;
}

static void check_parses(const char *json)
{
	struct oci_spec *s = NULL;

	is_int(oci_spec_parse(json, strlen(json), "config.json", &s), 0);
	if (s) {
		is_int(oci_spec_validate(s), 0);
		oci_spec_free(s);
	}
}

TEST(spec_matches_fixture)
{
	_cleanup_free_ char *want = fixture_read("runc-spec.json", NULL), *got = NULL;

	is_int(oci_spec_default_json(false, &got), 0);
	is_str(got, want);
	check_parses(got);
}

TEST(rootless_spec_matches_fixture)
{
	_cleanup_free_ char *want = fixture_read("runc-spec-rootless.json", NULL), *got = NULL;
	char host[64];

	is_int(oci_spec_default_json(true, &got), 0);
	if (geteuid() == 0 && getegid() == 0) {
		/* The fixture was captured as root: hostID 0. */
		is_str(got, want);
	} else {
		snprintf(host, sizeof(host), "\"hostID\": %u,", (unsigned)geteuid());
		ok(strstr(got, host) != NULL, "maps root to uid %u", (unsigned)geteuid());
	}
	ok(!strstr(got, "\"network\""), "no network namespace");
	ok(!strstr(got, "gid=5"), "no gid= option");
	ok(!strstr(got, "\"resources\""), "no resources");
	check_parses(got);
}

TEST(spec_matches_installed_runc)
{
	_cleanup_free_ char *runc = NULL, *runc_rl = NULL, *got = NULL, *got_rl = NULL;

	if (!have_runc()) {
		ok(1, "# SKIP runc is not installed");
		return;
	}
	runc = run_runc("spec", "config.json");
	runc_rl = run_runc("spec --rootless", "config.json");
	is_int(oci_spec_default_json(false, &got), 0);
	is_int(oci_spec_default_json(true, &got_rl), 0);
	ok(runc != NULL, "runc spec ran");
	is_str(got, runc);
	is_str(got_rl, runc_rl);
}

static const char *const runc_namespaces[] = {"cgroup", "ipc", "mount", "network", "pid", "user", "uts", NULL};
static const char *const runc_archs[] = {
    "SCMP_ARCH_AARCH64",
    "SCMP_ARCH_ARM",
    "SCMP_ARCH_MIPS",
    "SCMP_ARCH_MIPS64",
    "SCMP_ARCH_MIPS64N32",
    "SCMP_ARCH_MIPSEL",
    "SCMP_ARCH_MIPSEL64",
    "SCMP_ARCH_MIPSEL64N32",
    "SCMP_ARCH_PPC",
    "SCMP_ARCH_PPC64",
    "SCMP_ARCH_PPC64LE",
    "SCMP_ARCH_S390",
    "SCMP_ARCH_S390X",
    "SCMP_ARCH_X32",
    "SCMP_ARCH_X86",
    "SCMP_ARCH_X86_64",
    NULL,
};

static const char *const runc_mount_options[] = {
    "acl",
    "async",
    "atime",
    "bind",
    "defaults",
    "dev",
    "diratime",
    "dirsync",
    "exec",
    "iversion",
    "lazytime",
    "loud",
    "mand",
    "noacl",
    "noatime",
    "nodev",
    "nodiratime",
    "noexec",
    "noiversion",
    "nolazytime",
    "nomand",
    "norelatime",
    "nostrictatime",
    "nosuid",
    "nosymfollow",
    "private",
    "ratime",
    "rbind",
    "rdev",
    "rdiratime",
    "relatime",
    "remount",
    "rexec",
    "rnoatime",
    "rnodev",
    "rnodiratime",
    "rnoexec",
    "rnorelatime",
    "rnostrictatime",
    "rnosuid",
    "rnosymfollow",
    "ro",
    "rprivate",
    "rrelatime",
    "rro",
    "rrw",
    "rshared",
    "rslave",
    "rstrictatime",
    "rsuid",
    "rsymfollow",
    "runbindable",
    "rw",
    "shared",
    "silent",
    "slave",
    "strictatime",
    "suid",
    "symfollow",
    "sync",
    "tmpcopyup",
    "unbindable",
    NULL,
};
static const char *const runc_actions[] = {
    "SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO",  "SCMP_ACT_KILL",  "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD",
    "SCMP_ACT_LOG",   "SCMP_ACT_NOTIFY", "SCMP_ACT_TRACE", "SCMP_ACT_TRAP",         NULL,
};

/* runc 1.1.5's features as a struct, to check the encoder's shape. The
 * lists kvrun shares with runc (hooks, capabilities, seccomp operators)
 * come from kvrun's own tables, so this also checks that they match
 * runc's; mount options, seccomp actions and architectures are runc's
 * (kvrun lists those it applies: kvrun_features below). */
static char *runc_like_features(void)
{
	const struct oci_features *k = oci_features_kvrun();
	struct oci_map ann = {0};
	struct oci_features f = *k;
	char *out = NULL;

	f.oci_version_max = "1.0.2-dev";
	f.unsafe_annotations = NULL; /* runc 1.1 predates the field */
	f.linux_features.namespaces = runc_namespaces;
	f.linux_features.cgroup.v1 = f.linux_features.cgroup.v2 = OCI_TRUE;
	f.linux_features.cgroup.systemd = f.linux_features.cgroup.systemd_user = OCI_TRUE;
	f.linux_features.seccomp.archs = runc_archs;
	f.linux_features.seccomp.actions = runc_actions;
	f.mount_options = runc_mount_options;
	f.linux_features.cgroup.rdma = OCI_UNSET;
	f.linux_features.apparmor_enabled = f.linux_features.selinux_enabled = OCI_TRUE;
	/* runc 1.1 says nothing of these. */
	f.linux_features.cgroup.rdma = f.linux_features.intel_rdt_enabled = f.linux_features.idmap_mounts = OCI_UNSET;
	oci_map_set(&ann, "org.opencontainers.runc.version", "1.1.5+ds1");
	oci_map_set(&ann, "org.opencontainers.runc.commit", "1.1.5+ds1-1+deb12u1");
	oci_map_set(&ann, "org.opencontainers.runc.checkpoint.enabled", "true");
	oci_map_set(&ann, "io.github.seccomp.libseccomp.version", "2.5.4");
	f.annotations = &ann;
	if (oci_features_to_json(&f, &out) < 0)
		out = NULL;
	oci_map_clear(&ann);
	return out;
}

TEST(features_shape)
{
	_cleanup_free_ char *want = fixture_read("runc-features.json", NULL), *got = runc_like_features();
	_cleanup_free_ char *live = NULL;

	is_str(got, want);
	if (!have_runc()) {
		ok(1, "# SKIP runc is not installed");
		return;
	}
	live = run_runc("features", NULL);
	if (live && !strstr(live, "\"org.opencontainers.runc.version\": \"1.1.5+ds1\"")) {
		ok(1, "# SKIP installed runc is not the one the fixture was taken from");
		return;
	}
	is_str(got, live);
}

TEST(kvrun_features)
{
	_cleanup_free_ char *got = NULL;

	is_int(oci_features_to_json(oci_features_kvrun(), &got), 0);
	ok(strncmp(got, "{\n    \"ociVersionMin\": \"1.0.0\",\n    \"ociVersionMax\": \"1.2.0\",\n", 60) == 0,
	   "versions first");
	ok(strstr(got, "\"CAP_CHECKPOINT_RESTORE\"") != NULL, "capabilities");
	/* What guest-init applies (test-gi-support checks each one). */
	ok(strstr(got, "\"SCMP_ACT_ERRNO\"") && !strstr(got, "\"SCMP_ACT_NOTIFY\""), "seccomp actions: no NOTIFY");
	ok(strstr(got, "\"SCMP_ARCH_X86_64\"") && !strstr(got, "\"SCMP_ARCH_S390X\""),
	   "seccomp architectures: of the guest's byte order");
	ok(strstr(got, "\"nosymfollow\"") && !strstr(got, "\"rro\"") && !strstr(got, "\"tmpcopyup\""),
	   "mount options: flags guest-init sets, no recursive ones");
	ok(strstr(got, "\"uts\"") && strstr(got, "\"cgroup\",\n") && strstr(got, "\"user\""),
	   "namespaces: the ones guest-init creates");
	ok(strstr(got, "\"v1\": true") && strstr(got, "\"v2\": true") && strstr(got, "\"systemd\": true"),
	   "cgroup v1, v2, systemd");
	ok(strstr(got, "\"intelRdt\": {\n            \"enabled\": false") != NULL, "no Intel RDT");
	ok(strstr(got, "\"annotations\"") == NULL, "no annotations");
	ok(got[strlen(got) - 1] == '\n', "trailing newline");
}

TAP_MAIN()
