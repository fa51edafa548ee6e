/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun checkpoint <id>`: save a running container to disk. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "common/log.h"
#include "runtime/monitor-client.h"
#include "runtime/checkpoint.h"
#include "runtime/commands.h"
#include "runtime/state.h"

#define CHECKPOINT_TIMEOUT_MS (300 * 1000)

int checkpoint_check_cgroups_mode(const char *mode)
{
	static const char *const modes[] = {"soft", "full", "strict", "ignore"};

	if (!mode)
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(modes); i++)
		if (!strcmp(mode, modes[i]))
			return 0;
	return err_set(-EINVAL, "Invalid manage cgroups mode");
}

/* Have the monitor save the VM into image_path; unless leave_running,
 * wait until it is gone (the container then reads as stopped). */
static int checkpoint_container(struct container *c, const char *image_path, bool leave_running)
{
	_cleanup_free_ char *dir = NULL, *req = NULL;
	pid_t pid = c->state->pid;
	int r, fd;

	r = mkdir_p(image_path, 0700);
	if (r < 0)
		return err_setsys(r, "create %s", image_path);
	dir = realpath(image_path, NULL);
	if (!dir)
		return err_setsys(-errno, "%s", image_path);
	if (asprintf(&req, "checkpoint %d %s", leave_running ? 1 : 0, dir) < 0)
		return -ENOMEM;
	r = monitor_call(c->dir, req, CHECKPOINT_TIMEOUT_MS, NULL);
	if (r < 0 || leave_running)
		return r;
	/* A pidfd turns readable when the process exits (even unreaped). */
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd >= 0) {
		struct pollfd p = {.fd = fd, .events = POLLIN};

		if (poll(&p, 1, CHECKPOINT_TIMEOUT_MS) <= 0)
			log_warn("the monitor of %s did not exit after the checkpoint", c->state->id);
		close(fd);
	}
	return 0;
}

static int run_checkpoint(struct cli_context *ctx, int argc, char **argv)
{
	const char *image_path = NULL, *work_path = NULL, *parent_path = NULL, *page_server = NULL;
	const char *cgroups_mode = NULL;
	bool leave_running = false, tcp = false, ext_unix = false, shell_job = false, lazy = false;
	bool file_locks = false, pre_dump = false, auto_dedup = false;
	long long status_fd = -1;
	_cleanup_strv_ struct cli_strv empty_ns = {0};
	const struct cli_flag flags[] = {
	    {"image-path", NULL, CLI_STRING, &image_path, "path for saving criu image files"},
	    {"work-path", NULL, CLI_STRING, &work_path, "path for saving work files and logs"},
	    {"parent-path", NULL, CLI_STRING, &parent_path, "path for previous criu image files in pre-dump"},
	    {"leave-running", NULL, CLI_BOOL, &leave_running, "leave the process running after checkpointing"},
	    {"tcp-established", NULL, CLI_BOOL, &tcp, "allow open tcp connections"},
	    {"ext-unix-sk", NULL, CLI_BOOL, &ext_unix, "allow external unix sockets"},
	    {"shell-job", NULL, CLI_BOOL, &shell_job, "allow shell jobs"},
	    {"lazy-pages", NULL, CLI_BOOL, &lazy, "use userfaultfd to lazily restore memory pages"},
	    {"status-fd", NULL, CLI_INT, &status_fd,
	     "criu writes \\0 to this FD once lazy-pages is ready (default: -1)"},
	    {"page-server", NULL, CLI_STRING, &page_server, "ADDRESS:PORT of the page server"},
	    {"file-locks", NULL, CLI_BOOL, &file_locks, "handle file locks, for safety"},
	    {"pre-dump", NULL, CLI_BOOL, &pre_dump,
	     "dump container's memory information only, leave the container running after this"},
	    {"manage-cgroups-mode", NULL, CLI_STRING, &cgroups_mode,
	     "cgroups mode: 'soft' (default), 'full' and 'strict'"},
	    {"empty-ns", NULL, CLI_STRV, &empty_ns, "create a namespace, but don't restore its properties"},
	    {"auto-dedup", NULL, CLI_BOOL, &auto_dedup, "enable auto deduplication of memory images"},
	    CLI_FLAG_END,
	};
	_cleanup_container_ struct container *c = NULL;
	int r, i;

	r = cli_parse_args(&cli_cmd_checkpoint, flags, argc, argv, CLI_ARGS_EXACT, 1, &i);
	if (r != 0)
		return r < 0 ? r : 0;
	r = checkpoint_check_cgroups_mode(cgroups_mode);
	if (r < 0)
		return r;
	r = cli_load_container(ctx, argv[i], CONTAINER_OP_CHECKPOINT, &c);
	if (r < 0)
		return r;
	if (pre_dump || parent_path || page_server || lazy)
		return err_set(-EOPNOTSUPP, "pre-dumps, parent images, page servers and lazy pages are not supported");
	/* runc's default: ./checkpoint */
	return checkpoint_container(c, image_path && *image_path ? image_path : "checkpoint", leave_running);
}

const struct cli_command cli_cmd_checkpoint = {
    .name = "checkpoint",
    .summary = "checkpoint a running container",
    .args = "<container-id>",
    .text = "Where \"<container-id>\" is the name for the instance of the container to be\n"
	    "checkpointed.\n\n"
	    "DESCRIPTION:\n"
	    "   The checkpoint command saves the state of the container instance.",
    .run = run_checkpoint,
};
