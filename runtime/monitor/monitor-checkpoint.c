/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kvrun checkpoint` in the monitor, and the resumption of a restored
 * checkpoint. A checkpoint is a directory:
 *   vm.snap           the VM and its devices (vmm/snapshot.h)
 *   rootfs.img        the root disk as it was at the pause (copied with
 *                     copy_file_range, so shared extents where the file
 *                     system can, and holes kept): `delete` removes the
 *                     container's own
 *   config.json       the bundle's configuration the container ran with
 *   kvrun-checkpoint  marks the directory as complete (written last)
 * The monitor is jailed (jail.h) and may create no file: `kvrun checkpoint`
 * makes the directory and two empty files and passes them with the
 * request; the monitor writes vm.snap and rootfs.img into them, and the
 * client names them, adds config.json and the mark.
 * The guest's page cache is in vm.snap and its disk in rootfs.img, taken
 * with the disk quiesced, so the two agree.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/fileio.h"
#include "common/log.h"
#include "runtime/monitor/monitor-int.h"
#include "runtime/monitor/monitor-relay.h"
#include "runtime/sandbox/sandbox.h"

#define STREAM_WAIT_MS (60 * 1000)

static int check_file(int fd, const char *what)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return err_setsys(-errno, "the file for %s", what);
	if (!S_ISREG(st.st_mode))
		return err_set(-EINVAL, "the file for %s is not a regular file", what);
	return 0;
}

/* The VM is saved first: that pauses it and quiesces its disk, which is
 * then written out as the guest reads it. */
static int save_files(struct monitor *m, int snap_fd, int disk_fd)
{
	int r = sandbox_save_fd(m->sb, snap_fd);

	return r < 0 ? r : sandbox_export_disk(m->sb, disk_fd);
}

int monitor_checkpoint(struct monitor *m, bool leave_running, const char *dir, int snap_fd, int disk_fd)
{
	int r;

	if (m->exited)
		return err_set(-ESRCH, "container not running");
	/* Refused before anything is paused or written. */
	if (m->shares.n)
		return err_set(-EOPNOTSUPP,
		               "the container's VM shares %u host director%s with virtio-fs (%s%s): a VM with shared "
		               "directories cannot be checkpointed: the guest's open files, locks and looked-up "
		               "inodes there are host descriptors of its monitor",
		               m->shares.n, m->shares.n == 1 ? "y" : "ies", m->shares.shares[0].dir,
		               m->shares.n > 1 ? ", ..." : "");
	r = check_file(snap_fd, "the VM");
	if (r >= 0)
		r = check_file(disk_fd, "the disk");
	if (r < 0)
		return r;
	r = save_files(m, snap_fd, disk_fd);
	if (r < 0 || leave_running) {
		/* The VM goes on (a failed checkpoint changes nothing). */
		int q = sandbox_resume(m->sb);

		if (q >= 0 && m->paused)
			q = vm_pause(m->sb->vm);
		if (q < 0)
			log_error("resuming after the checkpoint: %s", strerror(-q));
		if (r >= 0)
			log_info("checkpoint for %s saved, container left running", dir);
		return r;
	}
	log_info("checkpoint for %s saved, container stopped", dir);
	/* As runc's container after a checkpoint: killed. */
	m->vm_first = true;
	m->exited = true;
	m->exit_status = SIGKILL;
	return 0;
}

static int resume_stdio(struct monitor *m)
{
	int r;

	r = guest_channel_accept(&m->ch, CHAN_STDOUT, STREAM_WAIT_MS, "the container's stdout");
	if (r >= 0)
		r = guest_channel_accept(&m->ch, CHAN_STDERR, STREAM_WAIT_MS, "the container's stderr");
	if (r < 0)
		return r;
	/* guest-init opens stdin before stdout: once stdout came, a stdin
	 * stream is already queued if there is one. */
	if (guest_channel_pending(&m->ch, CHAN_STDIN) && guest_channel_accept(&m->ch, CHAN_STDIN, 1000, "stdin") >= 0)
		m->relays[CHAN_STDIN] = relay_start(STDIN_FILENO, m->ch.stream_fds[CHAN_STDIN], true);
	/* No port takes another stream (a stdin at EOF takes none). */
	guest_channel_unlisten(&m->ch);
	m->relays[CHAN_STDOUT] = relay_start(m->ch.stream_fds[CHAN_STDOUT], STDOUT_FILENO, false);
	m->relays[CHAN_STDERR] = relay_start(m->ch.stream_fds[CHAN_STDERR], STDERR_FILENO, false);
	if (!m->relays[CHAN_STDOUT] || !m->relays[CHAN_STDERR])
		return err_set(-ENOMEM, "cannot start the stdio relays");
	return 0;
}

/* The restored guest's interfaces are this namespace's, whose MACs, MTUs,
 * addresses and routes may differ from the saved one's (dev_mac, set by
 * the restore, names each link as the guest knows it): guest-init
 * configures them again. And its clock, which stood still while saved. */
static int send_network(struct monitor *m)
{
	struct proto_msg msg = {.type = PROTO_MSG_NETWORK}, ans = {0};
	const struct netns_setup *net = m->a->net;
	struct net_config *cfg = net && net->cfg.nr_ifaces ? malloc(sizeof(*cfg)) : NULL;
	unsigned int nr = net ? net->cfg.nr_ifaces : 0;
	struct timespec ts;
	int r;

	if (nr && !cfg)
		return -ENOMEM;
	if (cfg)
		*cfg = net->cfg;
	clock_gettime(CLOCK_REALTIME, &ts);
	msg.u.network = (struct proto_network){
	    .net = cfg,
	    .has_realtime = true,
	    .realtime_ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec,
	};
	r = guest_channel_request(&m->ch, &msg, GUEST_REPLY_TIMEOUT_MS, &ans);
	proto_msg_free(&msg);
	proto_msg_free(&ans);
	if (r < 0)
		return err_prefix(r, "the restored guest's network");
	log_debug("restored guest: network configured again (%u interface(s))", nr);
	return 0;
}

int monitor_resume_restored(struct monitor *m)
{
	int r = m->a->b->spec->process->terminal ? monitor_terminal_setup(m) : resume_stdio(m);

	return r < 0 ? r : send_network(m);
}
