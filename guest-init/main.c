/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kvrun-init: PID 1 of a kvrun VM. Mounts the guest's pseudo filesystems,
 * loads modules, connects to the monitor over vsock, then serves the
 * container until its init exits, and powers the VM off.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/vm_sockets.h>
#include <sys/io.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "common/log.h"
#include "guest-init/guest-init.h"
#include "guest-init/netcfg.h"
#include "guest-init/server.h"
#include "common/debug-port.h"

static void boot_marker(void)
{
	/* Lets the VMM time the boot up to here; harmless where it fails.
	 * Only as the VM's PID 1: nowhere else is the port ours. */
	if (getpid() == 1 && ioperm(KVRUN_PORT_BOOT_MARKER, 1, 1) == 0)
		outb(1, KVRUN_PORT_BOOT_MARKER);
}

static void mount_basics(void)
{
	static const struct {
		const char *src, *dst, *type;
		unsigned long flags;
		const char *data;
	} m[] = {
	    {"proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL},
	    {"sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL},
	    {"devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755"},
	    {"tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755"},
	    {"cgroup2", "/sys/fs/cgroup", "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL},
	};

	for (size_t i = 0; i < ARRAY_SIZE(m); i++) {
		mkdir_p(m[i].dst, 0755);
		if (mount(m[i].src, m[i].dst, m[i].type, m[i].flags, m[i].data) < 0 && errno != EBUSY)
			log_warn("mount %s: %m", m[i].dst);
	}
}

/* How long a connect() waits for the host's answer. Linux gives up after
 * 2 s by default, and resets the stream the host's answer then opens: the
 * host answers at once, but a guest restored on a loaded host (its memory
 * faulted in page by page, its kernel emulated) can take longer than that
 * to see the answer, and the host had taken the stream by then. */
#define VSOCK_CONNECT_TIMEOUT_S 120

static int vsock_connect(uint32_t port, void *opaque)
{
	struct sockaddr_vm sa = {.svm_family = AF_VSOCK, .svm_cid = KVRUN_VSOCK_HOST_CID, .svm_port = port};
	struct timeval tv = {.tv_sec = VSOCK_CONNECT_TIMEOUT_S};
	int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (setsockopt(fd, AF_VSOCK, SO_VM_SOCKETS_CONNECT_TIMEOUT, &tv, sizeof(tv)) < 0)
		log_warn("vsock connect timeout: %m"); /* Linux's 2 s then */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

/* The transport may come up after we get here: retry for a while. */
static int connect_control(void)
{
	struct timespec ts = {0, 100 * 1000 * 1000};
	int fd = -ENODEV;

	for (int i = 0; i < 300; i++) {
		fd = vsock_connect(KVRUN_PROTO_CONTROL_PORT, NULL);
		if (fd >= 0)
			return fd;
		nanosleep(&ts, NULL);
	}
	return err_setsys(fd, "connect to the host on vsock port %d", KVRUN_PROTO_CONTROL_PORT);
}

/* The first stream, or one after a restore (see struct gi_server):
 * opaque is the server, which gets the host's token. */
static int reconnect(void *opaque)
{
	int fd, r;

	gi_mark(2);
	fd = connect_control();
	gi_mark(3);
	if (fd < 0)
		return fd;
	r = gi_hello(fd, opaque);
	gi_mark(4);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

static _Noreturn void power_off(void)
{
	sync();
	reboot(RB_POWER_OFF);
	reboot(RB_AUTOBOOT);
	for (;;)
		pause();
}

int main(void)
{
	struct gi_server srv = {
	    .connect_port = vsock_connect,
	    .rootfs_dir = GI_ROOTFS_DIR,
	    .files_dir = GI_FILES_DIR,
	    .cgroup_dir = GI_CGROUP_DIR,
	    .members_dir = GI_MEMBERS_DIR,
	    .pod_shm_dir = GI_POD_SHM_DIR,
	    .linger_s = 10,
	    .net_apply = netcfg_apply,
	    .net_reapply = netcfg_reapply,
	    .reconnect = reconnect,
	    .apply_identity = gi_apply_identity,
	};
	int r;

	boot_marker();
	mount_basics();
	gi_marks_open();
	r = gi_load_modules(GI_MODULES_DIR, GI_MODULES_LIST);
	if (r < 0)
		log_error("%s", err_msg());
	gi_cgroup_init("/sys/fs/cgroup", GI_CGROUP_DIR);
	gi_devfilter_preload();
	/* Loopback works even when START brings no network (or never comes). */
	if (netcfg_apply(NULL) < 0)
		log_error("%s", err_msg());
	srv.opaque = &srv;
	srv.ctl = reconnect(&srv);
	if (srv.ctl < 0) {
		log_error("%s", err_msg());
		power_off();
	}
	r = gi_serve(&srv);
	if (r < 0)
		log_error("%s", err_msg());
	power_off();
}
