/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/stop-point.h"
#include "runtime/cli/log-sink.h"
#include "runtime/host/cgroup.h"
#include "runtime/store/checkpoint.h"
#include "runtime/monitor/guest-shares.h"
#include "runtime/monitor/guest-spec.h"
#include "runtime/cli/create.h"
#include "runtime/cli/launch.h"
#include "runtime/cli/launch-ctl.h"
#include "runtime/cli/launch-member.h"
#include "runtime/store/monitor-client.h"
#include "runtime/store/proc-stat.h"
#include "runtime/monitor/monitor.h"
#include "runtime/monitor/teardown.h"
#include "runtime/sandbox/guest-channel.h"
#include "runtime/host/cgroup.h"
#include "runtime/host/console.h"
#include "runtime/host/netns.h"
#include "runtime/host/rootfs-cache.h"
#include "runtime/sandbox/sandbox.h"
#include "runtime/store/state.h"

#define READY_MAX 4096

static int absolute_path(const char *path, char **ret)
{
	char cwd[PATH_MAX];

	if (!path || !*path) {
		*ret = NULL;
		return 0;
	}
	if (path[0] == '/')
		*ret = strdup(path);
	else if (!getcwd(cwd, sizeof(cwd)))
		return err_setsys(-errno, "getcwd");
	else if (asprintf(ret, "%s/%s", cwd, path) < 0)
		*ret = NULL;
	return *ret ? 0 : -ENOMEM;
}

static int new_state(const char *id, const struct bundle *b, const char *netns, const struct pod_ref *pod,
                     struct oci_state **ret)
{
	struct oci_state *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	r = container_state_init(s, id, b->path, b->rootfs);
	/* Recorded before anything is done in it, so any delete can undo. */
	if (r >= 0 && netns)
		r = oci_map_set(&s->private_data, STATE_KEY_NETNS, netns);
	if (r >= 0)
		r = create_record_pod(s, pod);
	for (size_t i = 0; r >= 0 && i < b->spec->annotations.n; i++)
		r = oci_map_set(&s->annotations, b->spec->annotations.items[i].key,
		                b->spec->annotations.items[i].value);
	if (r < 0) {
		oci_state_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

/* Read the monitor's one line: "ok" or "error <message>"; EOF means it died. */
static int read_ready(int fd)
{
	char buf[READY_MAX];
	size_t len = 0;
	ssize_t n;

	while (len < sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return err_setsys(-errno, "read from the monitor");
		len += (size_t)n;
	}
	buf[len] = 0;
	buf[strcspn(buf, "\n")] = 0;
	if (strcmp(buf, "ok") == 0)
		return 0;
	if (strncmp(buf, "error ", 6) == 0)
		return err_set(-EIO, "%s", buf + 6);
	return -EPIPE;
}

/* The monitor closed the ready pipe without a word: it is gone (or going).
 * How it ended says what to look at; a SIGSYS is its jail's filter. Reaps
 * it (*reaped) when it ended within a second. */
static int monitor_gone(pid_t pid, bool *reaped)
{
	int status;

	for (int i = 0; i < 100; i++) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			break;
		if (w == pid) {
			*reaped = true;
			if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS)
				return err_set(-EIO,
				               "the VM monitor was killed by its jail's system call filter before the "
				               "container was created (the kernel's audit log names the call: "
				               "type=1326)");
			if (WIFSIGNALED(status))
				return err_set(-EIO,
				               "the VM monitor was killed by signal %d (%s) before the container was "
				               "created",
				               WTERMSIG(status), strsignal(WTERMSIG(status)));
			return err_set(-EIO, "the VM monitor exited with status %d before the container was created",
			               WEXITSTATUS(status));
		}
		usleep(10000);
	}
	return err_set(-EIO, "the VM monitor exited before the container was created");
}

/* What the monitor keeps of ours: the container's stdio, the preserved
 * fds (3.., relayed into the VM), its end of the ready pipe, the state's
 * lock, the base image's lock, the TAPs and the log. Every other
 * descriptor the engine or this process had goes. */
static int close_inherited(const struct monitor_args *a, int ready_fd, int base_lock)
{
	int keep[7 + PROTO_MAX_EXTRA_FDS + NET_CONFIG_MAX_IFACES * NET_MAX_QUEUE_PAIRS] = {
	    STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO, ready_fd, a->c->lock_fd, base_lock,
	};
	size_t n = 6;

	for (unsigned int i = 0; a->preserved && i < a->preserved->n; i++)
		keep[n++] = 3 + (int)i;

	for (unsigned int i = 0; a->net && i < a->net->cfg.nr_ifaces; i++)
		for (unsigned int q = 0; q < a->net->links[i].nr_fds; q++)
			keep[n++] = a->net->links[i].fds[q];
	keep[n++] = log_sink_fd();
	return fd_close_all_except(keep, n);
}

static pid_t fork_monitor(struct monitor_args *a, int base_lock, int *ret_fd)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return err_setsys(-errno, "pipe");
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return err_setsys(-errno, "fork");
	}
	if (pid == 0) {
		close(p[0]);
		/* Its own session: a terminal's ^C or the caller's process group
		 * must not reach the VM; signals are forwarded deliberately. */
		setsid();
		if (a->c->dir[0] == '/' && chdir("/") < 0)
			_exit(255);
		/* Its pid is the container's for the caller: of the caller's
		 * descriptors it keeps stdio (and --preserve-fds) only, as runc's
		 * init does. */
		if (close_inherited(a, p[1], base_lock) < 0)
			_exit(255);
		a->ready_fd = p[1];
		monitor_main(a);
	}
	close(p[1]);
	*ret_fd = p[0];
	return pid;
}

/* A checkpoint's root disk becomes the container's; *ret_dir is the
 * checkpoint's absolute path (malloc'd). */
static int restore_disk(const char *image, const char *disk, const char **ret_dir)
{
	_cleanup_free_ char *dir = realpath(image, NULL), *src = NULL;
	int r;

	if (!dir)
		return err_setsys(-errno, "checkpoint %s", image);
	r = checkpoint_check_image(dir);
	if (r < 0)
		return r;
	if (asprintf(&src, "%s/%s", dir, MONITOR_CHECKPOINT_DISK) < 0)
		return -ENOMEM;
	r = checkpoint_copy_file(src, disk);
	if (r < 0)
		return r;
	*ret_dir = TAKE_PTR(dir);
	return 0;
}

static int write_pid_file(const char *path, pid_t pid)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%d", (int)pid);
	int r = write_file_atomic(path, buf, (size_t)n, 0644);

	return r < 0 ? err_setsys(r, "write pid file %s", path) : 0;
}

/* The monitor said "ok": what it recorded in the state (its pid, cgroup
 * and jail), then created (a restored container's process is already
 * running: created, then running, as the state machine has it), and the
 * pid file. The jailed monitor can write none of it. */
static int record_created(struct container *c, pid_t pid, const char *pid_file, bool restored)
{
	int r = container_reload(c);

	if (r >= 0)
		r = container_set_status(c, OCI_STATUS_CREATED, pid);
	if (r >= 0 && restored)
		r = container_set_status(c, OCI_STATUS_RUNNING, pid);
	if (r >= 0 && pid_file)
		r = write_pid_file(pid_file, pid);
	return r;
}

static int console_path(struct cli_context *ctx, const struct container *c, char **ret)
{
	const char *env = getenv("KVRUN_CONSOLE");

	*ret = NULL;
	if (env && *env)
		return absolute_path(env, ret);
	if (ctx->debug && asprintf(ret, "%s/%s", c->dir, MONITOR_CONSOLE) < 0)
		return -ENOMEM;
	return 0;
}

static unsigned int queue_pairs(const struct vm_plan *plan)
{
	/* As a template's devices have them. */
	return sandbox_net_queue_pairs(plan);
}

static int build_and_fork(struct cli_context *ctx, struct container *c, const struct create_opts *o,
                          const struct bundle *b, const struct vm_plan *plan, struct netns_setup *net,
                          const char *netns, const struct preserved_fds *pf, pid_t *ret_pid)
{
	_cleanup_free_ char *disk = NULL, *base = NULL, *pid_file = NULL, *console = NULL, *console_socket = NULL;
	_cleanup_close_ int base_lock = -1;
	_cleanup_free_ char *restore_dir_owned = NULL;
	_cleanup_free_ struct rootfs_mount_point *points = NULL;
	size_t npoints;
	struct monitor_args a = {
	    .c = c,
	    .b = b,
	    .plan = plan,
	    .ready_fd = -1,
	    .systemd_cgroup = ctx->systemd_cgroup,
	    .net = net,
	    .netns_path = netns,
	    .new_netns = !net,
	    .queue_pairs = queue_pairs(plan),
	    .t_start_ns = ctx->t_start_ns,
	    .preserved = pf,
	};
	struct timespec t0, t1;
	int r, fd = -1;
	bool reaped = false;
	pid_t pid;

	if (asprintf(&disk, "%s/%s", c->dir, MONITOR_DISK) < 0 ||
	    asprintf(&base, "%s/%s", c->dir, MONITOR_DISK_BASE) < 0)
		return -ENOMEM;
	r = guest_spec_mount_points(b->spec, &points, &npoints);
	if (r < 0)
		return r;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* A shared root needs no disk: the guest mounts the directory. */
	r = o->image_path ? restore_disk(o->image_path, disk, &a.restore_dir)
	    : plan->rootfs_virtiofs
	        ? 0
	        : rootfs_disk_prepare(&(struct rootfs_disk_req){.rootfs = b->rootfs,
	                                                        .cache_dir = plan->rootfs_cache_dir,
	                                                        .cache_max = plan->rootfs_cache_size,
	                                                        .disk = disk,
	                                                        .base_link = base,
	                                                        .points = points,
	                                                        .npoints = npoints},
	                              &base_lock);
	restore_dir_owned = (char *)a.restore_dir;
	if (r < 0)
		return r;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	a.disk_us = (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000);
	log_debug("root disk %s in %llu us",
	          o->image_path           ? "copied"
	          : plan->rootfs_virtiofs ? "not needed (the root filesystem is shared)"
	          : r > 0                 ? "from the cache"
	                                  : "built",
	          (unsigned long long)a.disk_us);
	r = absolute_path(o->pid_file, &pid_file);
	if (r >= 0)
		r = absolute_path(o->console_socket, &console_socket);
	if (r >= 0)
		r = console_path(ctx, c, &console);
	if (r < 0)
		return r;
	a.pid_file = pid_file;
	a.console_path = console;
	a.console_socket = console_socket;
	/* The monitor inherits base_lock (a cached base image, share-locked)
	 * and keeps it for its life: the cache never prunes a base in use. */
	pid = fork_monitor(&a, base_lock, &fd);
	if (pid < 0)
		return pid;
	stop_point("create:forked");
	r = read_ready(fd);
	close(fd);
	if (r == -EPIPE)
		r = monitor_gone(pid, &reaped);
	if (r >= 0)
		r = record_created(c, pid, pid_file, a.restore_dir != NULL);
	if (r < 0) {
		if (!reaped) {
			kill(pid, SIGKILL);
			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
				;
		}
		return r; /* launch_destroy() removes the rest */
	}
	stop_point("create:ready");
	*ret_pid = pid;
	return 0;
}

/* With the plan: a shared root can be served too. A checkpoint's VM had
 * no shared directory (its save would have been refused): a restore
 * cannot give it one. */
static int check_mounts(const struct bundle *b, const struct create_opts *o, const struct vm_plan *plan)
{
	struct guest_shares g;
	int r;

	r = guest_shares_plan(b->spec, plan->rootfs_virtiofs ? b->rootfs : NULL, plan->fs_locks, &g);
	if (r >= 0 && o->image_path && g.n)
		r = err_set(-EINVAL,
		            "%s shares a host directory with the VM (%s): a checkpoint is of a VM without shared "
		            "directories, so it cannot be restored with one",
		            g.root >= 0 ? "the root filesystem" : "a bind mount", g.shares[0].dir);
	guest_shares_done(&g);
	return r;
}

/* Which network namespace the VM serves (NULL: a new one, loopback only). */
static int check_netns(const struct bundle *b, const char **ret)
{
	struct stat st;
	int r;

	r = netns_path_from_spec(b->spec, ret);
	if (r < 0)
		return r;
	if (*ret && stat(*ret, &st) < 0)
		return err_setsys(-errno, "network namespace %s", *ret);
	return 0;
}

static void log_net(const struct netns_setup *ns, const char *netns)
{
	for (unsigned int i = 0; i < ns->cfg.nr_ifaces; i++)
		log_debug("network: %s in %s -> TAP %s, %u address(es), %u route(s)", ns->links[i].iface, netns,
		          ns->links[i].tap, ns->cfg.ifaces[i].nr_addrs, ns->cfg.ifaces[i].nr_routes);
	if (!ns->cfg.nr_ifaces)
		log_debug("network: loopback only");
}

/* A namespace another container serves: for an app container of a pod
 * that did not join its sandbox's VM (no such sandbox runs here, e.g.
 * CRI-O without an infra container), the VM of another of its containers. */
static int pod_refusal(const struct container *c, int r)
{
	const char *sandbox = oci_map_get(&c->state->private_data, STATE_KEY_POD_SANDBOX);
	const char *role = oci_map_get(&c->state->private_data, STATE_KEY_POD_ROLE);

	if (r != -EBUSY || !sandbox || !role || strcmp(role, "container"))
		return err_prefix(r, "network");
	return err_prefix(r,
	                  "network: container %s is of the pod whose sandbox is %s, which runs no pod VM here for it "
	                  "to join, and a second VM cannot share the pod's interfaces",
	                  c->state->id, sandbox);
}

/* The container's network and VM, in its claimed state directory. */
static int bring_up(struct cli_context *ctx, struct container *c, const struct create_opts *o, const struct bundle *b,
                    const struct vm_plan *plan, const char *netns, const struct preserved_fds *pf, pid_t *ret_pid)
{
	struct netns_setup ns;
	int r;

	/* A new namespace is the monitor's own: made and served there. */
	if (!netns)
		return build_and_fork(ctx, c, o, b, plan, NULL, NULL, pf, ret_pid);
	r = netns_setup(netns, c->state->id, queue_pairs(plan), &ns);
	if (r < 0) {
		/* It undid what it did, and must not undo what it did not
		 * (another container's, when it refused): nothing for a
		 * teardown to do in the namespace. */
		if (oci_map_set(&c->state->private_data, STATE_KEY_NETNS, "") >= 0 && container_save(c) < 0)
			log_debug("%s", err_msg());
		return pod_refusal(c, r);
	}
	stop_point("create:net");
	log_net(&ns, netns);
	r = build_and_fork(ctx, c, o, b, plan, &ns, netns, pf, ret_pid);
	/* The monitor has its own copies of the TAP fds. */
	netns_setup_close(&ns);
	return r;
}

/* After a failed create, the container's cgroup, which the monitor may
 * have had no right left to remove (runtime/host/cgroup.h); the monitor is
 * gone by then. */
static void remove_cgroup(struct cli_context *ctx, const struct bundle *b, const char *id)
{
	const struct oci_linux *lx = b->spec->linux_spec;
	struct cgroup_place pl = {0};

	if (cgroup_place_of(lx ? lx->cgroups_path : NULL, id, ctx->systemd_cgroup, &pl) < 0 ||
	    cgroup_leave(pl.path, pl.base, pl.unit) < 0)
		log_debug("removing the container's cgroup: %s", err_msg());
	cgroup_place_free(&pl);
}

/* create --pidfd-socket: runc sends a pidfd of the container's init; the
 * host process that stands for the container is its monitor (a signal
 * to it reaches the container, its end is the container's). */
static int send_pidfd(const char *path, pid_t pid)
{
	_cleanup_close_ int fd = (int)syscall(SYS_pidfd_open, pid, 0);

	if (fd < 0)
		return err_setsys(-errno, "pidfd_open of the monitor (pid %d)", (int)pid);
	return console_send_fd_as(path, fd, "standard", "pidfd socket", "the container's pidfd");
}

/* An app container of a running pod sandbox: inside the sandbox's VM. */
static int launch_app_container(struct cli_context *ctx, const char *id, const struct create_opts *o,
                                const struct bundle *b, const struct pod_ref *pod, pid_t *ret_pid)
{
	struct oci_state *s = NULL;
	int r;

	if (o->preserve_fds)
		return err_set(-ENOTSUP,
		               "--preserve-fds: not for an app container of a pod (its sandbox's VM runs it)");
	r = new_state(id, b, NULL, pod, &s);
	if (r >= 0)
		r = launch_member(ctx, id, o, b, pod, s, ret_pid);
	if (r >= 0 && o->pidfd_socket && *o->pidfd_socket && (r = send_pidfd(o->pidfd_socket, *ret_pid)) < 0) {
		_cleanup_container_ struct container *c = NULL;

		kill(*ret_pid, SIGKILL);
		if (container_load(ctx->root, id, true, &c) >= 0)
			teardown_container(TAKE_PTR(c), false);
	}
	return r;
}

int launch_container(struct cli_context *ctx, const char *id, const struct create_opts *o, const struct bundle *b,
                     pid_t *ret_pid)
{
	struct preserved_fds pf;
	struct vm_plan plan = {0};
	struct container *c = NULL;
	struct oci_state *s = NULL;
	const char *netns = NULL;
	_cleanup_(pod_ref_clear) struct pod_ref pod = {0};
	int r;

	/* Everything that can fail without side effects comes first. */
	r = create_check_pod(ctx, b, &pod);
	if (r < 0)
		return r;
	if (pod.live)
		return launch_app_container(ctx, id, o, b, &pod, ret_pid);
	r = guest_spec_check(b->spec, NULL);
	if (r >= 0)
		r = check_netns(b, &netns);
	if (r < 0)
		return err_prefix(r, "%s/config.json", b->path);
	r = create_preserved_fds(o->preserve_fds, &pf);
	if (r < 0)
		return r;
	r = vm_plan_make(b->spec, ctx->kernel, &plan);
	if (r < 0)
		return r;
	r = check_mounts(b, o, &plan);
	if (r < 0)
		r = err_prefix(r, "%s/config.json", b->path);
	if (r >= 0)
		r = create_size_pod_vm(b, &pod, &plan);
	if (r >= 0)
		r = new_state(id, b, netns, &pod, &s);
	if (r >= 0)
		r = container_create(ctx->root, s, &c);
	if (r >= 0) {
		stop_point("create:claimed");
		r = bring_up(ctx, c, o, b, &plan, netns, &pf, ret_pid);
		if (r >= 0 && o->pidfd_socket && *o->pidfd_socket && (r = send_pidfd(o->pidfd_socket, *ret_pid)) < 0)
			launch_kill_monitor(*ret_pid, 10000);
		if (r < 0) {
			/* Keep the message: destroying may record its own. */
			_cleanup_free_ char *msg = strdup(err_msg());

			remove_cgroup(ctx, b, id);
			launch_destroy(c);
			err_set(r, "%s", msg ? msg : "create failed");
		} else {
			container_free(c);
		}
	}
	vm_plan_done(&plan);
	return r;
}

int launch_destroy(struct container *c)
{
	/* The monitor recorded its cgroup in the state as it joined it. */
	if (container_reload(c) < 0)
		log_debug("state of %s: %s", c->state->id, err_msg());
	err_clear();
	return teardown_container(c, false);
}
