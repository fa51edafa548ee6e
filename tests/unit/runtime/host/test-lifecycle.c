/* SPDX-License-Identifier: Apache-2.0 */
/* Host pieces of the lifecycle verbs: cgroup path resolution (cgroupfs and
 * systemd forms), the console socket's SCM_RIGHTS sender, host hooks
 * (order, stdin, env, failures, timeout). No root, no guest. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "runtime/host/cgroup.h"
#include "runtime/host/console.h"
#include "runtime/store/hooks.h"
#include "tap.h"

static char tmp[] = "/tmp/kvrun-test-lifecycle-XXXXXX";

static const char *resolve(const char *p, bool systemd)
{
	static char buf[512];
	char *r = NULL;

	if (cgroup_resolve(p, systemd, &r) < 0)
		return "ERROR";
	snprintf(buf, sizeof(buf), "%s", r);
	free(r);
	return buf;
}

TEST(setup)
{
	ok(mkdtemp(tmp) != NULL, "temp dir");
}

TEST(cgroup_paths)
{
	is_str(resolve("/a/b", false), "/a/b");
	is_str(resolve("a/b", false), "/a/b");
	is_str(resolve("/a/../b", false), "ERROR");
	is_str(resolve("system.slice:docker:abc", true), "/system.slice/docker-abc.scope");
	is_str(resolve("a-b-c.slice:p:n", true), "/a.slice/a-b.slice/a-b-c.slice/p-n.scope");
	is_str(resolve(":crio:x", true), "/system.slice/crio-x.scope");
	is_str(resolve("machine.slice::x", true), "/machine.slice/x.scope");
	is_str(resolve("/a/b", true), "ERROR");
	ok(strstr(err_msg(), "slice:prefix:name") != NULL, "systemd form: the error says the format");
	is_str(resolve("a--b.slice:p:n", true), "ERROR");
	is_str(resolve("nodot:p:n", true), "ERROR");
}

TEST(console_send_fd)
{
	char path[100], name[64] = "/dev/pts/fake", buf[64] = "";
	union {
		char b[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf) - 1};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b)};
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct cmsghdr *cm;
	int srv, conn, pfd[2], got = -1, nfds = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/console.sock", tmp);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	srv = socket(AF_UNIX, SOCK_STREAM, 0);
	ok(bind(srv, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(srv, 1) == 0, "listen");
	ok(pipe(pfd) == 0, "pipe");
	is_int(console_send_fd(path, pfd[1], name), 0);
	conn = accept(srv, NULL, NULL);
	n = recvmsg(conn, &msg, 0);
	ok(n == (ssize_t)strlen(name), "payload length");
	is_str(buf, name);
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		ok(cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS, "SCM_RIGHTS");
		nfds += (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		memcpy(&got, CMSG_DATA(cm), sizeof(int));
	}
	is_int(nfds, 1);
	ok(write(got, "x", 1) == 1, "the fd received is the pipe's write end");
	ok(read(pfd[0], buf, 1) == 1 && buf[0] == 'x', "what it writes comes out of the pipe");
	is_int(console_send_fd("/nonexistent/sock", pfd[1], name) < 0, 1);
	ok(strstr(err_msg(), "/nonexistent/sock") != NULL, "a missing socket is named");
	close(got);
	close(conn);
	close(srv);
	close(pfd[0]);
	close(pfd[1]);
}

TEST(pty_pair)
{
	int master = -1, slave = -1;
	char name[128];
	unsigned rows, cols;
	struct winsize ws = {.ws_row = 33, .ws_col = 101};

	is_int(console_open_pty(&master, &slave, name, sizeof(name)), 0);
	ok(strncmp(name, "/dev/pts/", 9) == 0, "pty name");
	ok(ioctl(master, TIOCSWINSZ, &ws) == 0, "resize the master");
	is_int(console_get_size(slave, &rows, &cols), 0);
	ok(rows == 33 && cols == 101, "the slave sees the master's size");
	is_int(console_set_size(master, 30, 100), 0);
	is_int(console_get_size(slave, &rows, &cols), 0);
	ok(rows == 30 && cols == 100, "console_set_size on the master: the slave has that size");
	is_int(console_set_size(master, 0, 0), 0);
	is_int(console_set_size(master, 40, 0), 0);
	is_int(console_get_size(slave, &rows, &cols), 0);
	ok(rows == 30 && cols == 100, "no size (a 0 in it) leaves the size as it was");
	is_int(console_set_size(-1, 1, 1), -EBADF);
	ok(write(master, "a\n", 2) == 2, "write to the master");
	{
		char b[8] = "";

		ok(read(slave, b, sizeof(b)) == 2 && b[0] == 'a' && b[1] == '\n', "raw slave: bytes as written");
	}
	close(master);
	close(slave);
}

static struct oci_hook mkhook(char *script, int64_t timeout)
{
	char **args = calloc(4, sizeof(char *));

	args[0] = strdup("sh");
	args[1] = strdup("-c");
	args[2] = strdup(script);
	return (struct oci_hook){
	    .path = strdup("/bin/sh"), .args = args, .has_timeout = timeout > 0, .timeout = timeout};
}

static void free_hook(struct oci_hook *h)
{
	for (size_t k = 0; h->args && h->args[k]; k++)
		free(h->args[k]);
	for (size_t k = 0; h->env && h->env[k]; k++)
		free(h->env[k]);
	free(h->args);
	free(h->env);
	free(h->path);
}

TEST(hooks)
{
	struct oci_spec spec = {0};
	struct oci_state st = {.oci_version = (char *)"1.2.0",
	                       .id = (char *)"hk",
	                       .pid = 42,
	                       .status = OCI_STATUS_CREATING,
	                       .bundle = (char *)"/b"};
	struct oci_hook hs[3];
	char script[512], *out = NULL;

	snprintf(script, sizeof(script), "cat > %s/state; echo one >> %s/order", tmp, tmp);
	hs[0] = mkhook(script, 0);
	snprintf(script, sizeof(script), "echo two >> %s/order; echo $V > %s/env", tmp, tmp);
	hs[1] = mkhook(script, 0);
	hs[1].env = calloc(2, sizeof(char *));
	hs[1].env[0] = strdup("V=from-spec");
	spec.hooks.list[OCI_HOOK_PRESTART] = (struct oci_hook_list){hs, 2};
	is_int(hooks_run(&spec, OCI_HOOK_PRESTART, &st), 0);
	snprintf(script, sizeof(script), "%s/order", tmp);
	ok(read_file_all(script, 4096, &out, NULL) == 0 && strcmp(out, "one\ntwo\n") == 0, "in order");
	free(out);
	snprintf(script, sizeof(script), "%s/state", tmp);
	ok(read_file_all(script, 4096, &out, NULL) == 0 && strstr(out, "\"id\":\"hk\"") &&
	       strstr(out, "\"status\":\"creating\"") && strstr(out, "\"pid\":42"),
	   "the state on stdin");
	free(out);
	snprintf(script, sizeof(script), "%s/env", tmp);
	ok(read_file_all(script, 4096, &out, NULL) == 0 && strcmp(out, "from-spec\n") == 0, "env from the spec");
	free(out);

	hs[2] = mkhook((char *)"echo to-out; echo to-err >&2; exit 4", 0);
	spec.hooks.list[OCI_HOOK_POSTSTART] = (struct oci_hook_list){&hs[2], 1};
	is_int(hooks_run(&spec, OCI_HOOK_POSTSTART, &st), -EIO);
	is_str(err_msg(), "error running poststart hook #0: exit status 4, stdout: to-out, stderr: to-err");

	free(hs[2].args[2]);
	hs[2].args[2] = strdup("sleep 30");
	spec.hooks.list[OCI_HOOK_POSTSTART].hooks[0].has_timeout = true;
	spec.hooks.list[OCI_HOOK_POSTSTART].hooks[0].timeout = 1;
	is_int(hooks_run(&spec, OCI_HOOK_POSTSTART, &st), -ETIMEDOUT);
	is_str(err_msg(), "error running poststart hook #0: timeout after 1 seconds");
	is_int(hooks_run(&spec, OCI_HOOK_POSTSTOP, &st), 0);
	for (int i = 0; i < 3; i++)
		free_hook(&hs[i]);
}

/* A hook that exits without reading its stdin: with a state larger than a
 * pipe's buffer the write of it always meets a closed pipe (EPIPE), and
 * the caller goes on (SIGPIPE keeps its default action here, as in the
 * CLI, so a raised SIGPIPE would end this test). */
TEST(hook_that_ignores_stdin)
{
	struct oci_spec spec = {0};
	size_t big = 256 << 10;
	char *id = malloc(big + 1);
	struct oci_state st = {
	    .oci_version = (char *)"1.2.0", .id = id, .pid = 42, .status = OCI_STATUS_STOPPED, .bundle = (char *)"/b"};
	struct oci_hook h = mkhook((char *)"exit 0", 0);

	signal(SIGPIPE, SIG_DFL);
	memset(id, 'x', big);
	id[big] = 0;
	spec.hooks.list[OCI_HOOK_POSTSTOP] = (struct oci_hook_list){&h, 1};
	is_int(hooks_run(&spec, OCI_HOOK_POSTSTOP, &st), 0);
	ok(1, "the caller lives on after the hook closed its stdin");
	free_hook(&h);
	free(id);
}

TEST(cleanup)
{
	is_int(rm_rf(tmp), 0);
}

TAP_MAIN()
