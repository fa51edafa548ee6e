/* SPDX-License-Identifier: Apache-2.0 */
/* The state-reading verbs (state, list, delete) on containers put in the
 * store directly, since nothing can create a running one yet. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "runtime/cli/cli-args.h"
#include "runtime/cli/commands.h"
#include "runtime/store/state.h"
#include "tap.h"

static char root[64];
static char out[8192];

/* Run a verb with its stdout captured in out[]. */
static int verb(int argc, ...)
{
	struct cli_context ctx = {.root = root, .commands = cli_commands};
	char *argv[8], path[] = "/tmp/kvrun-verb-XXXXXX";
	int fd = mkstemp(path), saved, r;
	va_list ap;
	ssize_t n;

	va_start(ap, argc);
	for (int i = 0; i < argc; i++)
		argv[i] = va_arg(ap, char *);
	va_end(ap);
	argv[argc] = NULL;
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	dup2(fd, STDOUT_FILENO);
	err_clear();
	r = cli_command_find(cli_commands, argv[0])->run(&ctx, argc, argv);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	n = pread(fd, out, sizeof(out) - 1, 0);
	out[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(path);
	return r;
}

static void add(const char *id, const char *bundle, pid_t pid, enum oci_status status)
{
	struct oci_state *s = calloc(1, sizeof(*s));
	struct container *c;

	if (container_state_init(s, id, bundle, "/rootfs") < 0 || container_create(root, s, &c) < 0)
		tap_skip_all("cannot create a container in the store");
	if (container_set_status(c, OCI_STATUS_CREATED, pid) < 0 ||
	    (status != OCI_STATUS_CREATED && container_set_status(c, status, 0) < 0))
		tap_skip_all("cannot set a container's status");
	container_free(c);
}

/* Column start offsets of a tab-aligned line (runs of 2+ spaces end a cell). */
static int columns(const char *line, int *cols, int max)
{
	int n = 0;

	cols[n++] = 0;
	for (int i = 1; line[i] && line[i] != '\n' && n < max; i++)
		if (line[i] != ' ' && line[i - 1] == ' ' && i >= 2 && line[i - 2] == ' ')
			cols[n++] = i;
	return n;
}

TEST(setup)
{
	pid_t child;

	strcpy(root, "/tmp/kvrun-verbs-XXXXXX");
	ok(mkdtemp(root) != NULL, "temporary root");
	child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	add("alive", "/a/very/long/bundle/path/for/alignment", getpid(), OCI_STATUS_RUNNING);
	add("gone", "/b", child, OCI_STATUS_RUNNING);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

TEST(list_table)
{
	int hdr[8], row1[8], row2[8];
	char *l1, *l2;

	is_int(verb(1, "list"), 0);
	l1 = strchr(out, '\n');
	l2 = l1 ? strchr(l1 + 1, '\n') : NULL;
	ok(l1 && l2, "header and two rows");
	if (!l1 || !l2)
		return;
	ok(!strncmp(out, "ID ", 3) && strstr(out, "PID") && strstr(out, "OWNER"), "runc's header");
	ok(!strncmp(l1 + 1, "alive ", 6), "rows sorted by id");
	ok(!strncmp(l2 + 1, "gone ", 5), "second row");
	is_int(columns(out, hdr, 8), 6);
	is_int(columns(l1 + 1, row1, 8), 5); /* owner "" for root: no sixth cell */
	is_int(columns(l2 + 1, row2, 8), 5);
	for (int i = 1; i < 5; i++) {
		is_int(row1[i], hdr[i]);
		is_int(row2[i], hdr[i]);
	}
	is_int(hdr[1], 12);
	/* The bundle column is as wide as the longest bundle plus 3. */
	is_int(hdr[4] - hdr[3], (int)strlen("/a/very/long/bundle/path/for/alignment") + 3);
	ok(strstr(l1 + 1, " running ") != NULL, "live container is running");
	ok(strstr(l2 + 1, "gone        0           stopped ") != NULL, "dead one is stopped with pid 0");
}

TEST(list_quiet_and_json)
{
	is_int(verb(2, "list", "-q"), 0);
	ok(!strcmp(out, "alive\ngone\n"), "list -q prints the ids");
	is_int(verb(3, "list", "--format", "json"), 0);
	ok(out[0] == '[' && strstr(out, "\"id\":\"alive\"") && strstr(out, "\"status\":\"stopped\""),
	   "JSON array with live statuses");
}

TEST(state_verb)
{
	char pid[32];

	snprintf(pid, sizeof(pid), "\"pid\": %d,", (int)getpid());
	is_int(verb(2, "state", "alive"), 0);
	ok(strstr(out, "\"status\": \"running\"") && strstr(out, pid), "state of a running container");
	is_int(verb(2, "state", "gone"), 0);
	ok(strstr(out, "\"status\": \"stopped\"") && strstr(out, "\"pid\": 0,"), "stopped: pid 0");
	ok(!strstr(out, "kvrun"), "private data is not printed");
}

TEST(transitions_through_verbs)
{
	is_int(verb(2, "start", "gone"), -EINVAL);
	is_str(err_msg(), "cannot start a container that has stopped");
	is_int(verb(2, "start", "alive"), -EINVAL);
	is_str(err_msg(), "cannot start an already running container");
	is_int(verb(2, "resume", "alive"), -EINVAL);
	is_str(err_msg(), "container not paused");
	is_int(verb(2, "kill", "gone"), -ESRCH);
	is_str(err_msg(), "container not running");
	is_int(verb(3, "exec", "gone", "ls"), -ESRCH);
	is_str(err_msg(), "exec failed: cannot exec in a stopped container");
	is_int(verb(2, "delete", "alive"), -EBUSY);
	is_str(err_msg(), "cannot delete container alive that is not stopped: running");
	/* No monitor listens for this fake container: pause says so. */
	ok(verb(2, "pause", "alive") < 0, "pause without a monitor fails");
	ok(strstr(err_msg(), "monitor") != NULL, "pause without a monitor: the error names it");
}

TEST(delete_stopped)
{
	is_int(verb(2, "delete", "gone"), 0);
	is_int(verb(2, "state", "gone"), -ENOENT);
	is_str(err_msg(), "container does not exist");
	is_int(verb(2, "list", "-q"), 0);
	ok(!strcmp(out, "alive\n"), "only the remaining id");
}

TEST(cleanup)
{
	is_int(rm_rf(root), 0);
}

TAP_MAIN()
