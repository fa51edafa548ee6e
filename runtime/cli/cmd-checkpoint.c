/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun checkpoint <id>`: save a running container to disk. */
#include <errno.h>
#include <fcntl.h>
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
#include "runtime/monitor/monitor.h"
#include "runtime/store/monitor-client.h"
#include "runtime/store/checkpoint.h"
#include "runtime/cli/cli-args.h"
#include "runtime/store/state.h"

#define CHECKPOINT_TIMEOUT_MS (300 * 1000)

/* What `checkpoint` creates in the image directory, so that a failure
 * removes exactly that. The jailed monitor creates no file: it writes the
 * VM and the disk into the first two, which it gets with the request. */
enum { IMG_VM, IMG_DISK, IMG_CONFIG, NR_IMG };

static const char *const img_names[NR_IMG] = {MONITOR_CHECKPOINT_VM, MONITOR_CHECKPOINT_DISK,
                                              MONITOR_CHECKPOINT_CONFIG};

struct image {
	char *path; /* as given, trailing slashes dropped */
	char *made; /* its first component that did not exist, or NULL */
	char *dir; /* realpath of path */
	char *tmp[NR_IMG]; /* temporary files still to be renamed */
	int fd[NR_IMG];
	bool placed[NR_IMG]; /* renamed to img_names[i] */
};

/* Find (and keep in img->made) the first missing component of img->path,
 * then mkdir -p it. */
static int image_mkdir(struct image *img)
{
	_cleanup_free_ char *p = strdup(img->path);
	int r;

	if (!p)
		return -ENOMEM;
	if (access(p, F_OK) < 0) {
		for (;;) {
			char *slash = strrchr(p, '/');

			if (!slash || slash == p)
				break;
			*slash = 0;
			if (access(p, F_OK) == 0) {
				*slash = '/';
				break;
			}
		}
		img->made = TAKE_PTR(p);
	}
	r = mkdir_p(img->path, 0700);
	if (r < 0)
		return err_setsys(r, "create %s", img->path);
	img->dir = realpath(img->path, NULL);
	if (!img->dir)
		return err_setsys(-errno, "%s", img->path);
	return 0;
}

static int image_tmp(struct image *img, int i)
{
	if (asprintf(&img->tmp[i], "%s/.%s.XXXXXX", img->dir, img_names[i]) < 0) {
		img->tmp[i] = NULL;
		return -ENOMEM;
	}
	/* O_RDWR | O_CREAT | O_EXCL, 0600. */
	img->fd[i] = mkostemp(img->tmp[i], O_CLOEXEC);
	if (img->fd[i] < 0) {
		int r = err_setsys(-errno, "create a file in %s", img->dir);

		free(img->tmp[i]);
		img->tmp[i] = NULL;
		return r;
	}
	return 0;
}

static int copy_config(struct image *img, const char *bundle)
{
	_cleanup_free_ char *src = NULL;
	_cleanup_close_ int in = -1;
	int r;

	if (asprintf(&src, "%s/config.json", bundle) < 0)
		return -ENOMEM;
	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return err_setsys(-errno, "open %s", src);
	r = image_tmp(img, IMG_CONFIG);
	if (r < 0)
		return r;
	r = fd_copy_sparse(in, img->fd[IMG_CONFIG]);
	return r < 0 ? err_setsys(r, "copy %s", src) : 0;
}

/* The monitor has written the VM and the disk: add the configuration,
 * name everything and mark the image complete, last. */
static int image_finish(struct image *img, const char *bundle)
{
	_cleanup_free_ char *mark = NULL;
	_cleanup_close_ int dfd = -1;
	int r;

	r = copy_config(img, bundle);
	if (r < 0)
		return r;
	for (int i = 0; i < NR_IMG; i++)
		if (fsync(img->fd[i]) < 0)
			return err_setsys(-errno, "sync %s", img->tmp[i]);
	if (asprintf(&mark, "%s/%s", img->dir, MONITOR_CHECKPOINT_MARK) < 0)
		return -ENOMEM;
	/* An older checkpoint here stops being one before its files go. */
	if (unlink(mark) < 0 && errno != ENOENT)
		return err_setsys(-errno, "remove %s", mark);
	for (int i = 0; i < NR_IMG; i++) {
		_cleanup_free_ char *dst = NULL;

		if (asprintf(&dst, "%s/%s", img->dir, img_names[i]) < 0)
			return -ENOMEM;
		if (rename(img->tmp[i], dst) < 0)
			return err_setsys(-errno, "rename %s to %s", img->tmp[i], dst);
		img->placed[i] = true;
		free(img->tmp[i]);
		img->tmp[i] = NULL;
	}
	dfd = open(img->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd) < 0)
		return err_setsys(-errno, "sync %s", img->dir);
	r = write_file_atomic(mark, "kvrun checkpoint 1\n", 19, 0600);
	if (r < 0)
		return err_setsys(r, "write %s", mark);
	return 0;
}

/* After a failure: remove every file and directory this command made. */
static void image_remove(struct image *img)
{
	for (int i = 0; i < NR_IMG; i++) {
		_cleanup_free_ char *dst = NULL;

		if (img->tmp[i])
			unlink(img->tmp[i]);
		if (img->placed[i] && asprintf(&dst, "%s/%s", img->dir, img_names[i]) >= 0)
			unlink(dst);
	}
	if (!img->made)
		return;
	/* From the image directory up to the first one we created. */
	for (size_t len = strlen(img->path); len >= strlen(img->made);) {
		char *slash;

		if (rmdir(img->path) < 0)
			break;
		slash = strrchr(img->path, '/');
		if (!slash)
			break;
		*slash = 0;
		len = strlen(img->path);
	}
}

static void image_free(struct image *img)
{
	for (int i = 0; i < NR_IMG; i++) {
		if (img->fd[i] >= 0)
			close(img->fd[i]);
		free(img->tmp[i]);
	}
	free(img->path);
	free(img->made);
	free(img->dir);
}

static int image_save(struct container *c, struct image *img, bool leave_running)
{
	_cleanup_free_ char *req = NULL;
	int r;

	r = image_mkdir(img);
	if (r >= 0)
		r = image_tmp(img, IMG_VM);
	if (r >= 0)
		r = image_tmp(img, IMG_DISK);
	if (r < 0)
		return r;
	if (asprintf(&req, "checkpoint %d %s", leave_running ? 1 : 0, img->dir) < 0)
		return -ENOMEM;
	r = monitor_call_fds(c->dir, req, img->fd, 2, CHECKPOINT_TIMEOUT_MS, NULL);
	if (r < 0)
		return r;
	return image_finish(img, c->state->bundle);
}

/* Have the monitor save the VM into image_path; unless leave_running,
 * wait until it is gone (the container then reads as stopped). */
static int checkpoint_container(struct container *c, const char *image_path, bool leave_running)
{
	struct image img = {.fd = {-1, -1, -1}};
	pid_t pid = c->state->pid;
	size_t len;
	int r, fd;

	img.path = strdup(image_path);
	if (!img.path)
		return -ENOMEM;
	for (len = strlen(img.path); len > 1 && img.path[len - 1] == '/'; len--)
		img.path[len - 1] = 0;
	r = image_save(c, &img, leave_running);
	if (r < 0)
		image_remove(&img);
	image_free(&img);
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
	r = container_load_for(ctx->root, argv[i], CONTAINER_OP_CHECKPOINT, &c);
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
