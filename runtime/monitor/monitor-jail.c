/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The monitor's jail (runtime/host/jail.h, docs/security.md): what its VM
 * needs, found while the host is visible; the jail made around it; the
 * sockets it serves, reachable from inside. The VM is built between
 * monitor_jail_begin() and monitor_jail_finish(), so that the guest's first
 * instruction runs with the jail complete (monitor-int.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/unix-socket.h"
#include "runtime/host/jail.h"
#include "runtime/monitor/monitor-int.h"
#include "runtime/sandbox/template.h"

/* The root disk's base (a symlink into the root disk cache), resolved:
 * the jail binds the file itself. */
static int find_base(struct monitor *m)
{
	_cleanup_free_ char *link = NULL;

	if (asprintf(&link, "%s/%s", m->a->c->dir, MONITOR_DISK_BASE) < 0)
		return -ENOMEM;
	if (access(link, F_OK) < 0)
		return 0;
	m->disk_base = realpath(link, NULL);
	return m->disk_base ? 0 : err_setsys(-errno, "root disk base %s", link);
}

static int open_console(struct monitor *m)
{
	const char *path = m->a->console_path;

	if (!path)
		return 0;
	m->console_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	return m->console_fd < 0 ? err_setsys(-errno, "open console log %s", path) : 0;
}

/* The host directories the VM shares, after the hooks (which may make a
 * bind's source, as they may under runc) and before the jail: each one
 * opened here, served relative to that descriptor only. A server keeps
 * descriptors for what the guest looks up and opens (fs_server_opts), so
 * the soft descriptor limit goes up to the hard one. */
static int open_shares(struct monitor *m)
{
	const char *rootfs = m->a->plan->rootfs_virtiofs ? m->a->b->rootfs : NULL;
	const char *role = oci_map_get(&m->a->c->state->private_data, STATE_KEY_POD_ROLE);
	struct rlimit rl;
	int r;

	/* Read while the state is ours (the container is freed once created). */
	m->pod_sandbox = role && strcmp(role, "sandbox") == 0;
	r = guest_shares_plan(m->a->b->spec, rootfs, m->a->plan->fs_locks, &m->shares);
	if (r < 0 || (!m->shares.n && !monitor_is_pod_sandbox(m)))
		return r;
	m->proc_fd = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (m->proc_fd < 0)
		return err_setsys(-errno, "open /proc/self/fd");
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			log_debug("raising RLIMIT_NOFILE: %s", strerror(errno));
	}
	for (unsigned int i = 0; i < m->shares.n; i++)
		log_debug("shared directory %u: %s%s%s, locks on the %s", i, m->shares.shares[i].dir,
		          m->shares.shares[i].read_only ? " (read-only)" : "",
		          (int)i == m->shares.root ? " (the root filesystem)" : "",
		          fs_locks_name(m->shares.shares[i].locks));
	return 0;
}

bool monitor_is_pod_sandbox(const struct monitor *m)
{
	return m->pod_sandbox;
}

int monitor_vm_files(struct monitor *m)
{
	struct monitor_args *a = m->a;
	int r;

	r = open_shares(m);
	if (r >= 0)
		r = find_base(m);
	if (r >= 0)
		r = open_console(m);
	if (r < 0)
		return r;
	if (a->restore_dir) {
		if (asprintf(&m->snapshot, "%s/%s", a->restore_dir, MONITOR_CHECKPOINT_VM) < 0)
			return -ENOMEM;
		log_info("VM: restoring checkpoint %s", a->restore_dir);
		return 0;
	}
	/* As many network devices as the namespace has interfaces: for
	 * new_netns they are known now, the hooks having run. */
	r = template_lookup(&(struct sandbox_opts){.plan = a->plan, .net = a->net, .nshares = m->shares.n},
	                    &m->snapshot);
	return r < 0 ? r : 0;
}

static int jail_config(struct monitor *m, struct jail_config *c)
{
	const struct vm_plan *p = m->a->plan;
	int r;

	/* --root may be relative: the jail binds absolute paths. */
	m->state_dir = realpath(m->a->c->dir, NULL);
	if (!m->state_dir)
		return err_setsys(-errno, "%s", m->a->c->dir);
	*c = (struct jail_config){
	    .profile = JAIL_MONITOR,
	    .state_dir = m->state_dir,
	    /* The rest of it sealed from the build on: state.json, the lock.
	     * A shared root has no disk. */
	    .state_files = {p->rootfs_virtiofs ? NULL : MONITOR_DISK},
	    .devices = true,
	    /* The container's network namespace (its TAPs are open already),
	     * its own one (new_netns), or one with nothing in it: never the
	     * host's, whose abstract sockets a path-less connect would reach. */
	    .net = m->a->netns_path  ? JAIL_NET_JOIN
	           : m->a->new_netns ? JAIL_NET_KEEP
	                             : JAIL_NET_NEW,
	    .netns_path = m->a->netns_path,
	    /* Shared directories: their servers' capabilities and calls. */
	    .file_server = m->shares.n > 0 || monitor_is_pod_sandbox(m),
	};
	jail_ids_for(p->jail_uid_base, getpid(), &c->uid, &c->gid);
	/* A cold boot's files too: a template KVM refuses falls back to one. */
	r = jail_config_bind(c, p->kernel, false);
	if (r >= 0)
		r = jail_config_bind(c, p->initrd, false);
	if (r >= 0)
		r = jail_config_bind(c, m->snapshot, false);
	if (r >= 0)
		r = jail_config_bind(c, m->disk_base, false);
	return r;
}

int monitor_jail_mount(struct monitor *m)
{
	struct jail_config c;
	int r;

	m->dir = m->a->c->dir;
	if (!jail_enabled()) {
		log_warn("monitor jail off ($KVRUN_JAIL=%s)", getenv("KVRUN_JAIL"));
		return 0;
	}
	if (geteuid() != 0)
		return err_set(-EPERM, "the monitor's jail needs root ($KVRUN_JAIL=0 runs without it)");
	r = jail_config(m, &c);
	if (r >= 0)
		r = jail_mount(&c, &m->jail);
	if (r < 0)
		return err_prefix(r, "monitor jail");
	m->dir = JAIL_STATE_DIR;
	log_debug("monitor jail: uid %u, root with %s at %s", (unsigned)c.uid, m->a->c->dir, JAIL_STATE_DIR);
	return 0;
}

int monitor_open_sockets(struct monitor *m)
{
	struct guest_channel before = m->ch;
	int r;

	r = guest_channel_init(&m->ch, m->dir, MONITOR_VSOCK_SOCK);
	m->ch.stop_fd = before.stop_fd;
	m->ch.abandon_fd = before.abandon_fd;
	m->ch.on_note = before.on_note;
	m->ch.opaque = before.opaque;
	if (r >= 0)
		r = guest_channel_listen(&m->ch, CHAN_NR);
	if (r >= 0 && m->a->preserved)
		r = guest_channel_listen_extra(&m->ch, m->a->preserved->n);
	if (r >= 0 && asprintf(&m->control_path, "%s/%s", m->dir, MONITOR_CONTROL_SOCK) < 0)
		r = -ENOMEM;
	if (r >= 0)
		m->control_fd = r = unix_listen(m->control_path, 16);
	if (r < 0 || !m->jail)
		return r;
	/* Exec proxies run as the jail's uid too, and connect to control.sock. */
	r = guest_channel_own(&m->ch, jail_uid(m->jail), jail_uid(m->jail));
	if (r >= 0)
		r = jail_own_path(m->control_path, jail_uid(m->jail), jail_uid(m->jail));
	return r;
}

int monitor_jail_begin(struct monitor *m)
{
	int r = m->jail ? jail_begin(m->jail) : 0;

	return r < 0 ? err_prefix(r, "monitor jail") : 0;
}

int monitor_jail_finish(struct monitor *m)
{
	int r;

	if (!m->jail)
		return 0;
	/* The thread registering guest RAM must be done: the serving filter
	 * has no KVM_SET_USER_MEMORY_REGION. */
	r = vm_memslots_wait(m->sb->vm);
	if (r < 0)
		return r;
	m->sb->vm->vcpu_thread_init = jail_vcpu_thread;
	m->sb->vm->vcpu_thread_opaque = m->jail;
	r = jail_finish(m->jail);
	if (r < 0)
		return err_prefix(r, "monitor jail");
	log_debug("monitor jail: on (uid %u, seccomp filters per thread)", (unsigned)jail_uid(m->jail));
	return 0;
}
