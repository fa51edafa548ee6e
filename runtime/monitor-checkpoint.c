/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kvrun checkpoint` in the monitor, and the resumption of a restored
 * checkpoint. A checkpoint is a directory:
 *   vm.snap           the VM and its devices (vmm/snapshot.h)
 *   rootfs.img        the root disk as it was at the pause (a reflink where
 *                     the file system can, else a copy): `delete` removes
 *                     the container's own
 *   config.json       the bundle's configuration the container ran with
 *   kvrun-checkpoint  marks the directory as complete (written last)
 * The guest's page cache is in vm.snap and its disk in rootfs.img, taken
 * with the disk quiesced, so the two agree.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/fileio.h"
#include "common/log.h"
#include "runtime/checkpoint.h"
#include "runtime/monitor-int.h"
#include "runtime/monitor-relay.h"
#include "runtime/sandbox.h"

#define STREAM_WAIT_MS (60 * 1000)

int checkpoint_copy_file(const char *src, const char *dst)
{
	_cleanup_close_ int in = open(src, O_RDONLY | O_CLOEXEC);
	_cleanup_close_ int out = -1;
	struct stat st;
	off_t done = 0;

	if (in < 0 || fstat(in, &st) < 0)
		return err_setsys(-errno, "open %s", src);
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0)
		return err_setsys(-errno, "create %s", dst);
	if (ioctl(out, FICLONE, in) == 0)
		return 0;
	while (done < st.st_size) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, (size_t)(st.st_size - done), 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int r = n < 0 ? -errno : -EIO;

			unlink(dst);
			return err_setsys(r, "copy %s to %s", src, dst);
		}
		done += n;
	}
	return 0;
}

int checkpoint_check_image(const char *dir)
{
	_cleanup_free_ char *mark = NULL;

	if (asprintf(&mark, "%s/%s", dir, MONITOR_CHECKPOINT_MARK) < 0)
		return -ENOMEM;
	if (access(mark, F_OK) < 0)
		return err_set(-EINVAL, "%s is not a complete kvrun checkpoint", dir);
	return 0;
}

static int path_in(const char *dir, const char *name, char **ret)
{
	return asprintf(ret, "%s/%s", dir, name) < 0 ? -ENOMEM : 0;
}

/* The container's directory: where control.sock is. */
static int container_dir(const struct monitor *m, char **ret)
{
	const char *slash = strrchr(m->control_path, '/');

	*ret = strndup(m->control_path, slash ? (size_t)(slash - m->control_path) : 0);
	return *ret ? 0 : -ENOMEM;
}

static int save_files(struct monitor *m, const char *dir)
{
	_cleanup_free_ char *cdir = NULL, *src = NULL, *dst = NULL, *cfg = NULL, *cfg_dst = NULL, *snap = NULL;
	_cleanup_free_ char *mark = NULL;
	int r;

	if (container_dir(m, &cdir) < 0 || path_in(cdir, MONITOR_DISK, &src) < 0 ||
	    path_in(dir, MONITOR_CHECKPOINT_DISK, &dst) < 0 || path_in(m->a->b->path, "config.json", &cfg) < 0 ||
	    path_in(dir, MONITOR_CHECKPOINT_CONFIG, &cfg_dst) < 0 || path_in(dir, MONITOR_CHECKPOINT_VM, &snap) < 0 ||
	    path_in(dir, MONITOR_CHECKPOINT_MARK, &mark) < 0)
		return -ENOMEM;
	unlink(mark);
	r = sandbox_save(m->sb, snap);
	if (r >= 0)
		r = checkpoint_copy_file(src, dst);
	if (r >= 0)
		r = checkpoint_copy_file(cfg, cfg_dst);
	if (r >= 0) {
		r = write_file_atomic(mark, "kvrun checkpoint 1\n", 19, 0600);
		if (r < 0)
			err_setsys(r, "write %s", mark);
	}
	return r;
}

int monitor_checkpoint(struct monitor *m, bool leave_running, const char *dir)
{
	int r;

	if (m->exited)
		return err_set(-ESRCH, "container not running");
	r = mkdir_p(dir, 0700);
	if (r < 0)
		return err_setsys(r, "create %s", dir);
	r = save_files(m, dir);
	if (r < 0 || leave_running) {
		/* The VM goes on (a failed checkpoint changes nothing). */
		int q = sandbox_resume(m->sb);

		if (q >= 0 && m->paused)
			q = vm_pause(m->sb->vm);
		if (q < 0)
			log_error("resuming after the checkpoint: %s", strerror(-q));
		if (r >= 0)
			log_info("checkpoint written to %s, container left running", dir);
		return r;
	}
	log_info("checkpoint written to %s, container stopped", dir);
	/* As runc's container after a checkpoint: killed. */
	m->checkpointed = true;
	m->exited = true;
	m->exit_status = SIGKILL;
	return 0;
}

/* Whether a connection waits on listener i (guest-init opens stdin before
 * stdout, so once stdout came, a stdin stream is already queued). */
static bool pending(struct monitor *m, int i)
{
	struct pollfd p = {.fd = m->listen_fds[i], .events = POLLIN};

	return poll(&p, 1, 0) > 0;
}

int monitor_resume_restored(struct monitor *m)
{
	int r;

	if (m->a->b->spec->process->terminal)
		return monitor_setup_terminal(m);
	r = monitor_accept_stream(m, PORT_STDOUT, STREAM_WAIT_MS, "the container's stdout");
	if (r >= 0)
		r = monitor_accept_stream(m, PORT_STDERR, STREAM_WAIT_MS, "the container's stderr");
	if (r < 0)
		return r;
	if (pending(m, PORT_STDIN) && monitor_accept_stream(m, PORT_STDIN, 1000, "stdin") >= 0)
		m->relays[PORT_STDIN] = relay_start(STDIN_FILENO, m->stream_fds[PORT_STDIN], true);
	m->relays[PORT_STDOUT] = relay_start(m->stream_fds[PORT_STDOUT], STDOUT_FILENO, false);
	m->relays[PORT_STDERR] = relay_start(m->stream_fds[PORT_STDERR], STDERR_FILENO, false);
	if (!m->relays[PORT_STDOUT] || !m->relays[PORT_STDERR])
		return err_set(-ENOMEM, "cannot start the stdio relays");
	return 0;
}
