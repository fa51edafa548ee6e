/* SPDX-License-Identifier: Apache-2.0 */
/* guest-init helpers that need no privileges: mount options, passwd/group
 * parsing, rlimit names, the filter that denies vsock sockets. */
#include <errno.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fileio.h"
#include "guest-init/guest-init.h"
#include "tap.h"

static char dir[] = "/tmp/kvrun-gihelp-XXXXXX";

TEST(mount_options)
{
	char *const opts[] = {"nosuid", "noexec", "ro", "rw", "ro", "mode=755", "size=64k", "rbind", "rslave", NULL};
	unsigned long flags, prop;
	char *data = NULL;

	is_int(gi_mount_options(opts, &flags, &prop, &data), 0);
	is_int(flags, MS_NOSUID | MS_NOEXEC | MS_RDONLY | MS_BIND | MS_REC);
	is_int(prop, MS_SLAVE | MS_REC);
	is_str(data, "mode=755,size=64k");
	free(data);
	is_int(gi_mount_options(NULL, &flags, &prop, &data), 0);
	ok(flags == 0 && prop == 0 && data[0] == '\0', "no options");
	free(data);
}

TEST(passwd_group)
{
	char pw[512], gr[512];
	struct proto_process p = {.uid = 1000, .gid = 1000};
	struct gi_user u;

	ok(mkdtemp(dir) != NULL, "mkdtemp");
	snprintf(pw, sizeof(pw), "%s/passwd", dir);
	snprintf(gr, sizeof(gr), "%s/group", dir);
	const char *passwd = "root:x:0:0:root:/root:/bin/sh\n"
			     "broken line\n"
			     "alice:x:1000:1001:Alice:/home/alice:/bin/sh\n"
			     "bob:x:1002:1002::/home/bob:/bin/sh";
	const char *group = "alice:x:1001:\nwheel:x:10:bob,alice\nstaff:x:50:carol\nadm:x:4:alice\n";
	write_file_atomic(pw, passwd, strlen(passwd), 0644);
	write_file_atomic(gr, group, strlen(group), 0644);

	is_int(gi_user_resolve(&p, pw, gr, &u), 0);
	ok(u.uid == 1000 && u.gid == 1000, "spec numbers win");
	is_str(u.name, "alice");
	is_str(u.home, "/home/alice");
	ok(u.n_sgids == 2 && u.sgids[0] == 10 && u.sgids[1] == 4, "member of wheel and adm");
	gi_user_free(&u);

	p.user = "bob:staff";
	is_int(gi_user_resolve(&p, pw, gr, &u), 0);
	ok(u.uid == 1002 && u.gid == 50, "bob:staff -> 1002:50");
	ok(u.n_sgids == 1 && u.sgids[0] == 10, "bob in wheel");
	gi_user_free(&u);

	p.user = "1002:7";
	is_int(gi_user_resolve(&p, pw, gr, &u), 0);
	ok(u.uid == 1002 && u.gid == 7, "numeric user and group");
	is_str(u.home, "/home/bob");
	gi_user_free(&u);

	p.user = "nobody";
	is_int(gi_user_resolve(&p, pw, gr, &u), -ENOENT);
	p.user = "bob:nogroup";
	is_int(gi_user_resolve(&p, pw, gr, &u), -ENOENT);

	/* No files at all, as in a scratch image: the numbers are used. */
	p.user = NULL;
	p.uid = 5;
	p.gid = 6;
	is_int(gi_user_resolve(&p, "/nonexistent/passwd", "/nonexistent/group", &u), 0);
	ok(u.uid == 5 && u.gid == 6 && !u.name, "unknown uid keeps its numbers");
	is_str(u.home, "/");
	gi_user_free(&u);
	rm_rf(dir);
}

TEST(rlimit_names)
{
	is_int(gi_rlimit_from_name("RLIMIT_NOFILE"), RLIMIT_NOFILE);
	is_int(gi_rlimit_from_name("RLIMIT_RTTIME"), RLIMIT_RTTIME);
	is_int(gi_rlimit_from_name("RLIMIT_BOGUS"), -EINVAL);
	is_int(gi_rlimit_from_name(NULL), -EINVAL);
}

/* The child reports, as its exit code, what socket(family) did: 0 for a
 * socket, else the errno (at most 125). */
static int socket_in_child(int family, bool filtered)
{
	int status = -1;
	pid_t pid = fork();

	if (pid == 0) {
		int fd;

		/* Unprivileged processes may load a filter under no_new_privs. */
		if (filtered && (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || gi_deny_vsock() < 0))
			_exit(126);
		fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		_exit(fd >= 0 ? 0 : errno < 126 ? errno : 125);
	}
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The container's processes get EPERM for AF_VSOCK sockets, whatever the
 * host kernel says of vsock otherwise; other families are untouched. */
TEST(vsock_filter)
{
	int unfiltered = socket_in_child(AF_VSOCK, false);

	ok(unfiltered != EPERM, "without the filter, AF_VSOCK is not refused with EPERM (%d)", unfiltered);
	is_int(socket_in_child(AF_VSOCK, true), EPERM);
	is_int(socket_in_child(AF_UNIX, true), 0);
	is_int(socket_in_child(AF_INET, true), 0);
	is_int(socket_in_child(AF_INET6, true) == EAFNOSUPPORT ? 0 : socket_in_child(AF_INET6, true), 0);
}

TAP_MAIN()
