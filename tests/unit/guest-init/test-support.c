/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What `kvrun features` lists is what guest-init applies: each listed
 * mount option mounts as guest-init passes it (a flag, not filesystem
 * data), each seccomp action, operator, architecture and flag goes into a
 * filter that loads. Run on the host, in throwaway mount namespaces and
 * forked children. (Namespaces and capabilities: test-spec.c.)
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "common/spec-support.h"
#include "guest-init/guest-init.h"
#include "tap.h"

static char tmpdir[] = "/tmp/kvrun-support-XXXXXX";

/* Mount a tmpfs with option as guest-init applies it: 0, or errno. */
static int try_mount_option(const char *option)
{
	char *opts[] = {(char *)option, NULL}, a[300], b[300];
	unsigned long flags, prop;
	char *data = NULL;
	int r = 0;

	if (gi_mount_options(opts, &flags, &prop, &data) < 0)
		return EINVAL;
	if (data[0]) {
		free(data);
		return ENOTSUP; /* taken for filesystem data: not applied by kvrun */
	}
	free(data);
	snprintf(a, sizeof(a), "%s/a", tmpdir);
	snprintf(b, sizeof(b), "%s/b", tmpdir);
	if (mount("tmpfs", a, "tmpfs", 0, NULL) < 0)
		return errno;
	if (flags & MS_BIND)
		r = mount(a, b, NULL, flags, NULL);
	else if (flags & MS_REMOUNT)
		r = mount(NULL, a, NULL, flags, NULL);
	else if (prop)
		r = mount(NULL, a, NULL, prop, NULL);
	else
		r = mount("tmpfs", b, "tmpfs", flags, NULL);
	r = r < 0 ? errno : 0;
	umount2(b, MNT_DETACH);
	umount2(a, MNT_DETACH);
	return r;
}

TEST(mount_options)
{
	const char *const *names = spec_mount_option_names();
	size_t n = 0;

	for (const char *const *o = names; *o; o++, n++) {
		pid_t pid = fork();
		int st;

		if (pid == 0) {
			if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
				_exit(100);
			_exit(try_mount_option(*o));
		}
		waitpid(pid, &st, 0);
		ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "listed mount option %s is applied (status %d)", *o,
		   WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	}
	is_int(n, spec_mount_options_count);
}

/* Load a filter in a child: 0 when it loaded. */
static int try_filter(const struct proto_seccomp *sc)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		if (gi_seccomp_load(sc) < 0) {
			printf("# %s\n", err_msg());
			_exit(1);
		}
		_exit(0);
	}
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(seccomp_lists)
{
	char *names[] = {"getppid", NULL}, *native[] = {"SCMP_ARCH_X86_64", NULL}, *one[2] = {NULL, NULL};
	struct proto_seccomp_arg arg = {.index = 0, .value = 1, .value_two = 1};
	struct proto_seccomp_rule rule = {.names = names};
	struct proto_seccomp sc = {
	    .default_action = "SCMP_ACT_ALLOW", .architectures = native, .rules = &rule, .n_rules = 1};

	for (const char *const *a = spec_seccomp_actions; *a; a++) {
		rule.action = (char *)*a;
		ok(try_filter(&sc) == 0, "listed action %s loads", *a);
	}
	rule.action = "SCMP_ACT_ERRNO";
	rule.args = &arg;
	rule.n_args = 1;
	for (const char *const *op = spec_seccomp_operators; *op; op++) {
		arg.op = (char *)*op;
		ok(try_filter(&sc) == 0, "listed operator %s loads", *op);
	}
	rule.n_args = 0;
	for (const char *const *a = spec_seccomp_archs; *a; a++) {
		one[0] = (char *)*a;
		sc.architectures = one;
		ok(try_filter(&sc) == 0, "listed architecture %s loads", *a);
	}
	sc.architectures = native;
	for (const char *const *f = spec_seccomp_flags; *f; f++) {
		one[0] = (char *)*f;
		sc.flags = one;
		ok(try_filter(&sc) == 0, "listed flag %s loads", *f);
	}
	/* And what is not listed is refused, not ignored. */
	sc.flags = NULL;
	rule.action = "SCMP_ACT_NOTIFY";
	ok(try_filter(&sc) == 1, "SCMP_ACT_NOTIFY, not listed, is refused");
}

struct tap_test tap_tests[TAP_MAX_TESTS];
int tap_nr_tests, tap_count, tap_failed;
const char *tap_current = "";

int main(void)
{
	char path[300];

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0)
		tap_skip_all("needs root for mounts and seccomp filters");
	if (!mkdtemp(tmpdir))
		tap_skip_all("no temporary directory");
	snprintf(path, sizeof(path), "%s/a", tmpdir);
	mkdir_p(path, 0755);
	snprintf(path, sizeof(path), "%s/b", tmpdir);
	mkdir_p(path, 0755);
	for (int i = 0; i < tap_nr_tests; i++) {
		tap_current = tap_tests[i].name;
		tap_tests[i].fn();
	}
	rm_rf(tmpdir);
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}
