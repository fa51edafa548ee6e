/* SPDX-License-Identifier: Apache-2.0 */
/* One malformed fixture per class of error, each with its exact message. */
#include <stdint.h>
#include <string.h>

#include "fixtures.h"
#include "oci-spec/spec.h"

/* Load then validate fixtures/bad/<name>; expect -EINVAL and message. */
static void expect_error(const char *name, const char *want)
{
	char rel[256], path[4096], expected[4600];
	struct oci_spec *s = NULL;
	int r;

	snprintf(rel, sizeof(rel), "bad/%s", name);
	snprintf(path, sizeof(path), "%s", fixture(rel));
	snprintf(expected, sizeof(expected), "%s: %s", path, want);
	err_clear();
	r = oci_spec_load(path, &s);
	if (r == 0) {
		r = oci_spec_validate(s);
		oci_spec_free(s);
	}
	is_int(r, -EINVAL);
	is_str(err_msg(), expected);
}

TEST(syntax)
{
	expect_error("syntax.json", "line 5, column 7: '}' expected near '\"cwd\"'");
}

TEST(types)
{
	expect_error("args-type.json", "process.args[2]: expected a string");
	expect_error("memory-type.json", "linux.resources.memory.limit: expected an integer");
	expect_error("negative-uid.json", "process.user.uid: -1 is out of range for uint32");
	expect_error("float-gid.json", "process.user.gid: expected an integer");
}

TEST(missing)
{
	expect_error("missing-root.json", "root: required field is missing");
	expect_error("missing-version.json", "ociVersion: required field is missing");
}

TEST(namespaces)
{
	expect_error("bad-namespace.json", "linux.namespaces[2].type: unknown namespace type \"utsns\"");
	expect_error("dup-namespace.json", "linux.namespaces[3].type: duplicate namespace \"pid\"");
}

TEST(process)
{
	expect_error("relative-cwd.json", "process.cwd: must be an absolute path, got \"work\"");
	expect_error("bad-rlimit.json", "process.rlimits[0].type: unknown rlimit \"RLIMIT_FOO\"");
	expect_error("empty-args.json", "process.args: must not be empty");
}

TEST(seccomp)
{
	expect_error("bad-seccomp-action.json",
	             "linux.seccomp.syscalls[0].action: unknown seccomp action \"SCMP_ACT_MAYBE\"");
	expect_error("bad-seccomp-operator.json",
	             "linux.seccomp.syscalls[1].args[0].op: unknown seccomp operator \"SCMP_CMP_SIMILAR\"");
	expect_error("bad-seccomp-arch.json",
	             "linux.seccomp.architectures[1]: unknown seccomp architecture \"SCMP_ARCH_Z80\"");
}

TEST(mounts_and_hooks)
{
	expect_error("relative-mount.json", "mounts[0].destination: must be an absolute path, got \"proc\"");
	expect_error("hook-timeout.json", "hooks.poststop[0].timeout: must be positive, got 0");
}

/* Errors on inline documents: names, ranges, top-level shape. */
static void expect_inline(const char *json, const char *want)
{
	struct oci_spec *s = NULL;
	int r = oci_spec_parse(json, strlen(json), "c.json", &s);

	if (r == 0) {
		r = oci_spec_validate(s);
		oci_spec_free(s);
	}
	is_int(r, -EINVAL);
	is_str(err_msg(), want);
}

TEST(inline_errors)
{
	expect_inline("[1]", "c.json: expected a JSON object");
	expect_inline("", "c.json: line 1, column 0: '[' or '{' expected near end of file");
	expect_inline("{\"process\":[]}", "c.json: process: expected an object");
	expect_inline("{\"process\":{\"terminal\":1}}", "c.json: process.terminal: expected a boolean");
	expect_inline("{\"process\":{\"user\":{\"uid\":4294967296}}}",
	              "c.json: process.user.uid: 4294967296 is out of range for uint32");
	expect_inline("{\"process\":{\"rlimits\":[{\"type\":\"RLIMIT_CPU\",\"hard\":18446744073709551616}]}}",
	              "c.json: process.rlimits[0].hard: 18446744073709551616 is out of range for uint64");
	expect_inline("{\"process\":{\"oomScoreAdj\":9223372036854775808}}",
	              "c.json: process.oomScoreAdj: 9223372036854775808 is out of range for int32");
	/* The column is the original text's, though the big integer before
	 * the error was rewritten. */
	expect_inline("{\"a\": 18446744073709551615, \"b\": 1, x}",
	              "c.json: line 1, column 37: string or '}' expected near 'x'");
	expect_inline("{\"hostname\":9223372036854775808}", "c.json: hostname: expected a string");
	expect_inline("{\"hostname\":\"a\\u0000b\"}", "c.json: hostname: string contains a NUL character");
	expect_inline("{\"linux\":{\"resources\":{\"blockIO\":{\"weight\":65536}}}}",
	              "c.json: linux.resources.blockIO.weight: 65536 is out of range for uint16");
	expect_inline("{\"linux\":{\"rdma\":{}, \"timeOffsets\":{\"x\":[]}}}",
	              "c.json: linux.timeOffsets.x: expected an object");
	expect_inline("{\"ociVersion\":\"1\",\"root\":{\"path\":\"r\"},\"hostname\":\"h\"}",
	              "c.json: hostname: setting the hostname needs a private uts namespace");
	expect_inline("{\"ociVersion\":\"1\",\"root\":{\"path\":\"r\"},\"linux\":{\"namespaces\":[{\"type\":\"user\"}],"
	              "\"uidMappings\":[{\"containerID\":0,\"hostID\":1000,\"size\":1}]}}",
	              "c.json: linux.gidMappings: a new user namespace needs uid and gid mappings");
	expect_inline("{\"ociVersion\":\"1\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"a\"],\"cwd\":\"/\","
	              "\"rlimits\":[{\"type\":\"RLIMIT_CPU\",\"hard\":1,\"soft\":2}]}}",
	              "c.json: process.rlimits[0]: soft limit 2 is above hard limit 1");
	expect_inline("{\"ociVersion\":\"1\",\"root\":{\"path\":\"r\"},\"linux\":{\"seccomp\":{\"defaultAction\":"
	              "\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_NOTIFY\"}]}}}",
	              "c.json: linux.seccomp.listenerPath: required by SCMP_ACT_NOTIFY");
}

/* Parse (and validate) one variant; false when the result breaks the
 * contract: 0 or -EINVAL, with a message on failure. */
static bool variant_ok(const char *buf, size_t len)
{
	struct oci_spec *s = NULL;
	int r;

	err_clear();
	r = oci_spec_parse(buf, len, "v.json", &s);
	if (r == 0) {
		r = oci_spec_validate(s);
		oci_spec_free(s);
		return r == 0 || (r == -EINVAL && strncmp(err_msg(), "v.json: ", 8) == 0);
	}
	return r == -EINVAL && strncmp(err_msg(), "v.json: ", 8) == 0;
}

/* Every fourth prefix and a thousand single-byte mutations of the richest
 * fixtures: no crash, no leak (under ASan), always a clean error. */
TEST(mangled_documents)
{
	static const char subst[] = "\"{}[],:0-9a \\n.e";
	const char *names[] = {"full.json", "docker.json"};
	uint32_t seed = 12345;

	for (size_t f = 0; f < ARRAY_SIZE(names); f++) {
		size_t len = 0, bad = 0, n = 0;
		_cleanup_free_ char *orig = fixture_read(names[f], &len);
		_cleanup_free_ char *buf = orig ? malloc(len + 1) : NULL;

		if (!buf)
			continue;
		for (size_t cut = 0; cut < len; cut += 4, n++)
			bad += !variant_ok(orig, cut);
		for (int i = 0; i < 1000; i++, n++) {
			memcpy(buf, orig, len + 1);
			seed ^= seed << 13, seed ^= seed >> 17, seed ^= seed << 5;
			buf[seed % len] = subst[(seed >> 16) % (sizeof(subst) - 1)];
			bad += !variant_ok(buf, len);
		}
		ok(bad == 0, "%s: %zu of %zu variants broke the contract", names[f], bad, n);
	}
}

TAP_MAIN()
