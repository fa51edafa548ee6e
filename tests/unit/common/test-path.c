/* SPDX-License-Identifier: Apache-2.0 */
/* Paths resolved inside a root (common/path.h). */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/path.h"
#include "tap.h"

static char dir[] = "/tmp/kvrun-path-XXXXXX";

static void join_is(const char *unsafe, const char *want_rel)
{
	char *got = NULL, want[512];

	snprintf(want, sizeof(want), "%s%s", dir, want_rel);
	is_int(path_join_in(dir, unsafe, &got), 0);
	if (!ok(got && strcmp(got, want) == 0, "join %s -> %s", unsafe, want_rel))
		printf("#   got %s\n", got ? got : "(null)");
	free(got);
}

static void resolve_is(const char *unsafe, const char *want)
{
	char got[PATH_MAX];

	is_int(path_resolve_in(dir, unsafe, got, sizeof(got)), 0);
	if (!ok(strcmp(got, want) == 0, "resolve %s -> \"%s\"", unsafe, want))
		printf("#   got \"%s\"\n", got);
}

TEST(join_in)
{
	char path[512];

	ok(mkdtemp(dir) != NULL, "mkdtemp");
	snprintf(path, sizeof(path), "%s/etc", dir);
	mkdir_p(path, 0755);
	snprintf(path, sizeof(path), "%s/etc/escape", dir);
	symlink("../../../../../../tmp", path);
	snprintf(path, sizeof(path), "%s/etc/abs", dir);
	symlink("/etc", path);
	snprintf(path, sizeof(path), "%s/etc/rel", dir);
	symlink("abs/x", path);
	join_is("/proc", "/proc");
	join_is("/a/../../../b", "/b");
	join_is("/etc/escape/x", "/tmp/x");
	join_is("/etc/abs/resolv.conf", "/etc/resolv.conf");
	join_is("/etc/rel", "/etc/x");
	join_is("//etc/./", "/etc");
	join_is("/", "/");
	snprintf(path, sizeof(path), "%s/loop", dir);
	symlink("loop", path);
	char *got = NULL;
	is_int(path_join_in(dir, "/loop/x", &got), -ELOOP);
}

/* The same walk, relative to the root (the host's root disk planning). */
TEST(resolve_in)
{
	char small[8], name[NAME_MAX + 2];

	resolve_is("/", "");
	resolve_is("..", "");
	resolve_is("etc/escape/../y", "/y");
	resolve_is("/etc/rel/z", "/etc/x/z");
	is_int(path_resolve_in(dir, "/loop", small, sizeof(small)), -ELOOP);
	is_int(path_resolve_in(dir, "/abcdefgh", small, sizeof(small)), -ENAMETOOLONG);
	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	char *got = NULL;
	is_int(path_join_in(dir, name, &got), -ENAMETOOLONG);
	is_int(path_resolve_in(dir, "/a", small, 0), -ENAMETOOLONG);
	rm_rf(dir);
}

TAP_MAIN()
