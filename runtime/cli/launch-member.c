/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A pod's app container: created inside its sandbox's VM (docs/runtime.md,
 * "Pods"), its host process a member proxy (exec-proxy.h) whose pid is the
 * container's for the engine. Its directories (its root, its bind mounts'
 * sources) go to the sandbox's monitor as descriptors, which serves them
 * from free shared directory slots of the VM.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/stop-point.h"
#include "runtime/cli/exec-proxy.h"
#include "runtime/cli/launch-member.h"
#include "runtime/host/cgroup.h"
#include "runtime/host/jail.h"
#include "runtime/monitor/guest-linux.h"
#include "runtime/monitor/guest-shares.h"
#include "runtime/monitor/guest-spec.h"
#include "runtime/monitor/teardown.h"
#include "runtime/store/layout.h"
#include "runtime/store/monitor-client.h"
#include "runtime/store/pod.h"
#include "runtime/store/state.h"

#define REQUEST_TIMEOUT_MS (150 * 1000)

int launch_member_of(const struct container *c, const char *root, struct container **ret_sandbox,
                     uint32_t *ret_guest_pid)
{
	const char *role = oci_map_get(&c->state->private_data, STATE_KEY_POD_ROLE);
	const char *sandbox = oci_map_get(&c->state->private_data, STATE_KEY_POD_SANDBOX);
	const char *gp = oci_map_get(&c->state->private_data, STATE_KEY_POD_MEMBER_PID);
	unsigned long v;
	char *end;
	int r;

	if (!role || strcmp(role, "container") || !sandbox || !gp)
		return 0;
	v = strtoul(gp, &end, 10);
	if (*end || v == 0 || v > 0x7fffffff)
		return err_set(-EINVAL, "state of %s: bad %s '%s'", c->state->id, STATE_KEY_POD_MEMBER_PID, gp);
	r = container_load(root, sandbox, false, ret_sandbox);
	if (r < 0)
		return err_prefix(r, "the pod sandbox %s of container %s", sandbox, c->state->id);
	*ret_guest_pid = (uint32_t)v;
	return 1;
}

/* Namespaces: the sandbox's network, IPC, UTS (and PID: shareProcessNamespace)
 * by path; the rest new. The sandbox's cgroup namespace (podman's pods join
 * the infra's where cgroup namespaces are private, cgroup v2) becomes one of
 * the container's own in the guest, rooted at its guest cgroup: the
 * sandbox's container has no cgroup the member could share there.
 * *ret_share_pid when the PID namespace is the sandbox's. */
static int check_namespaces(const char *root, const struct bundle *b, const struct pod_ref *pod, bool *ret_share_pid)
{
	const struct oci_linux *l = b->spec->linux_spec;

	*ret_share_pid = false;
	for (size_t i = 0; l && i < l->n_namespaces; i++) {
		const struct oci_namespace *ns = &l->namespaces[i];
		_cleanup_free_ char *owner = NULL;
		int r;

		if (!ns->path || !*ns->path)
			continue;
		if (ns->kind != OCI_NS_NETWORK && ns->kind != OCI_NS_IPC && ns->kind != OCI_NS_UTS &&
		    ns->kind != OCI_NS_PID && ns->kind != OCI_NS_CGROUP)
			return err_set(-ENOTSUP,
			               "linux.namespaces[%zu].path: %s: an app container of a pod joins only its "
			               "sandbox's network, IPC, UTS, PID and cgroup namespaces, not its %s namespace%s",
			               i, ns->path, ns->type,
			               ns->kind == OCI_NS_USER ? " (a pod with a user namespace: podman pod create "
			                                         "--userns, --uidmap)"
			                                       : "");
		r = pod_sandbox_from_ns(root, ns, &owner);
		if (r < 0)
			return r;
		if (r == 0 || strcmp(owner, pod->sandbox_id))
			return err_set(-EINVAL,
			               "linux.namespaces[%zu].path: %s is not a namespace of the pod sandbox %s", i,
			               ns->path, pod->sandbox_id);
		if (ns->kind == OCI_NS_PID)
			*ret_share_pid = true;
	}
	return 0;
}

/* The hostname: the UTS namespace and its name are the sandbox's, so an
 * app container may only name the sandbox's own (CRI-O gives each app
 * container the pod's hostname), read from the sandbox's config.json. */
static int check_hostname(const struct bundle *b, const struct container *sandbox)
{
	const char *want = b->spec->hostname;
	const char *dir = sandbox->state->bundle;
	_cleanup_free_ char *path = NULL;
	struct oci_spec *ss = NULL;
	bool same;
	int r;

	if (!want || !*want)
		return 0;
	if (!dir || asprintf(&path, "%s/config.json", dir) < 0)
		return err_set(dir ? -ENOMEM : -EINVAL,
		               "hostname: the pod sandbox %s has no bundle to compare \"%s\" with", sandbox->state->id,
		               want);
	r = oci_spec_load(path, &ss);
	if (r < 0)
		return err_prefix(r, "hostname \"%s\": the pod sandbox %s's", want, sandbox->state->id);
	same = ss->hostname && strcmp(ss->hostname, want) == 0;
	if (!same)
		r = err_set(-EINVAL,
		            "hostname: \"%s\" is not the pod sandbox %s's hostname (\"%s\"): an app container of a pod "
		            "has its sandbox's UTS namespace and name",
		            want, sandbox->state->id, ss->hostname ? ss->hostname : "");
	oci_spec_free(ss);
	return r < 0 ? r : 0;
}

/* The source of spec's bind at /dev/shm (its last mount there, the one
 * seen), or NULL. */
static const char *shm_source(const struct oci_spec *spec)
{
	for (size_t i = spec->n_mounts; i-- > 0;)
		if (spec->mounts[i].destination && !strcmp(spec->mounts[i].destination, "/dev/shm"))
			return guest_mount_is_bind(&spec->mounts[i]) ? spec->mounts[i].source : NULL;
	return NULL;
}

/* The pod's /dev/shm: an app container that binds the sandbox's shm
 * directory (containerd's .../sandboxes/<id>/shm, CRI-O's and podman's
 * .../userdata/shm: the same directory as the sandbox's /dev/shm) gets
 * the sandbox's /dev/shm in the VM, as under runc; another shm stays a
 * tmpfs of its own. */
static void pod_shm(const struct bundle *b, const struct container *sandbox, struct proto_start *st)
{
	const char *mine = shm_source(b->spec), *theirs, *dir = sandbox->state->bundle;
	_cleanup_free_ char *path = NULL;
	struct oci_spec *ss = NULL;
	struct stat a, c;

	if (!mine || !dir || asprintf(&path, "%s/config.json", dir) < 0 || oci_spec_load(path, &ss) < 0) {
		err_clear();
		return;
	}
	theirs = shm_source(ss);
	if (theirs && stat(mine, &a) == 0 && stat(theirs, &c) == 0 && a.st_dev == c.st_dev && a.st_ino == c.st_ino &&
	    guest_spec_pod_shm(st))
		log_debug("pod: /dev/shm is the pod's (%s, the sandbox's)", mine);
	oci_spec_free(ss);
}

/* What the sandbox's VM provides and an app container cannot change. */
static int check_spec(const struct bundle *b)
{
	const struct oci_spec *s = b->spec;

	if (!s->process)
		return err_set(-EINVAL, "process: missing");
	if (s->domainname && *s->domainname)
		return err_set(-EINVAL, "domainname: an app container of a pod has its sandbox's UTS namespace");
	if (s->linux_spec && (s->linux_spec->n_uid_mappings || s->linux_spec->n_gid_mappings))
		return err_set(-ENOTSUP, "linux.uidMappings: an app container of a pod cannot have a user namespace");
	return 0;
}

static void hex(const char *s, char *out)
{
	for (; *s; s++, out += 2)
		sprintf(out, "%02x", (unsigned char)*s);
	*out = 0;
}

/* "member <n> <share>..." (runtime/monitor/monitor-pod.c): a 'g' after
 * the kind for a share whose locks the guest keeps (none for the host's,
 * as before such shares existed). */
static int member_line(const struct guest_shares *g, char **ret)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return -ENOMEM;
	fprintf(f, "member %u", g->n);
	for (unsigned int i = 0; i < g->n; i++) {
		const struct guest_share *sh = &g->shares[i];

		fprintf(f, " %c%c%s:", sh->read_only ? 'r' : 'w', sh->files ? 'f' : 'd',
		        sh->locks == FS_LOCKS_GUEST ? "g" : "");
		if (!sh->names)
			fputc('-', f);
		for (size_t k = 0; sh->names && k < sh->n_names; k++) {
			char h[2 * 256 + 1];

			if (strlen(sh->names[k]) > 255) {
				fclose(f);
				free(buf);
				return err_set(-ENAMETOOLONG, "bind source %s/%s: name too long", sh->dir,
				               sh->names[k]);
			}
			hex(sh->names[k], h);
			fprintf(f, "%s%s", k ? "," : "", h);
		}
	}
	if (fclose(f) != 0 || !buf) {
		free(buf);
		return -ENOMEM;
	}
	if (len > 4000) {
		free(buf);
		return err_set(-E2BIG, "the app container's shared directories take too long a request");
	}
	*ret = buf;
	return 0;
}

static bool is_sandbox(const struct container *c)
{
	const char *role = oci_map_get(&c->state->private_data, STATE_KEY_POD_ROLE);

	return role && strcmp(role, "sandbox") == 0;
}

struct member {
	struct guest_shares g;
	struct proto_msg start;
	char *line;
	int fds[GUEST_SHARES_MAX];
};

static void member_done(struct member *m)
{
	guest_shares_done(&m->g);
	proto_msg_free(&m->start);
	free(m->line);
}

/* The spec as the VM sees an app container's: the sandbox's namespaces it
 * names by path (checked: check_namespaces()) are the ones guest-init
 * joins, so the paths are left out of the checks and the START, as is a
 * hostname (the sandbox's: check_hostname()), which guest-init refuses
 * for a member. */
struct member_view {
	struct oci_spec spec;
	struct oci_linux lx;
	struct oci_namespace *ns;
};

static int member_view(const struct oci_spec *spec, struct member_view *v)
{
	v->spec = *spec;
	v->spec.hostname = NULL;
	if (!spec->linux_spec)
		return 0;
	v->lx = *spec->linux_spec;
	v->spec.linux_spec = &v->lx;
	if (!v->lx.n_namespaces)
		return 0;
	v->ns = calloc(v->lx.n_namespaces, sizeof(*v->ns));
	if (!v->ns)
		return -ENOMEM;
	for (size_t i = 0; i < v->lx.n_namespaces; i++) {
		v->ns[i] = spec->linux_spec->namespaces[i];
		v->ns[i].path = NULL;
	}
	v->lx.namespaces = v->ns;
	return 0;
}

static int member_build(const struct bundle *b, const struct oci_spec *spec, const struct oci_state *s, bool share_pid,
                        struct member *m)
{
	enum fs_locks locks;
	int r = vm_plan_fs_locks(spec, &locks);

	if (r >= 0)
		r = guest_shares_plan(spec, b->rootfs, locks, &m->g);
	if (r >= 0 && m->g.root < 0)
		r = err_set(-EINVAL, "root.path: an app container of a pod needs a root directory to share");
	/* The VM serves them after the container is gone: the engine must be
	 * able to unmount its rootfs then. */
	if (r >= 0)
		r = guest_shares_clone_mounts(&m->g);
	if (r >= 0)
		r = guest_spec_from_oci(spec, s, &m->g, &m->start.u.start);
	/* Its CPU limits go to its guest cgroup: the VM's CPUs are the pod's
	 * (the monitor checks cpuset.cpus against them). */
	if (r >= 0 && spec->linux_spec && spec->linux_spec->resources)
		r = guest_linux_cpu_sets(&spec->linux_spec->resources->cpu, &m->start.u.start);
	if (r >= 0)
		r = member_line(&m->g, &m->line);
	if (r < 0)
		return r;
	m->start.type = PROTO_MSG_START;
	m->start.flags = PROTO_START_F_MEMBER | PROTO_START_F_WAIT | (share_pid ? PROTO_START_F_SHARE_PID : 0);
	for (unsigned int i = 0; i < m->g.n; i++)
		m->fds[i] = m->g.shares[i].dir_fd;
	return 0;
}

/* The member proxy in linux.cgroupsPath (or runc's place without one),
 * as a container's monitor is: the engine reads the cgroup of the pid it
 * gets (containerd's shim: statistics and its OOM watch), and the kubelet
 * expects each container's cgroup below the pod's. No host-side limits:
 * the container's processes are in the VM, whose guest cgroup has them;
 * the VM is the sandbox's, in the sandbox's cgroup. The place goes into
 * the state: delete removes it (teardown_container()). */
static int join_cgroup(struct cli_context *ctx, struct container *c, const struct bundle *b, pid_t pid)
{
	const char *cg = b->spec->linux_spec ? b->spec->linux_spec->cgroups_path : NULL;
	struct oci_map *priv = &c->state->private_data;
	struct cgroup_place pl = {0};
	int r;

	r = cgroup_join(cg, c->state->id, ctx->systemd_cgroup, NULL, pid, &pl);
	if (r < 0 && !(cg && *cg) && (r == -EACCES || r == -EPERM || r == -EROFS)) {
		log_debug("no cgroup for the app container: %s", err_msg());
		err_clear();
		return 0;
	}
	if (r < 0)
		return r;
	r = oci_map_set(priv, STATE_KEY_CGROUP, pl.path);
	if (r >= 0 && pl.base)
		r = oci_map_set(priv, STATE_KEY_CGROUP_BASE, pl.base);
	if (r >= 0 && pl.unit)
		r = oci_map_set(priv, STATE_KEY_CGROUP_UNIT, pl.unit);
	if (r < 0 && cgroup_leave(pl.path, pl.base, pl.unit) < 0)
		log_debug("leaving the app container's cgroup: %s", err_msg());
	cgroup_place_free(&pl);
	return r;
}

static int record(struct cli_context *ctx, struct container *c, const struct bundle *b, pid_t pid, uint32_t guest_pid)
{
	char buf[16];
	int r;

	snprintf(buf, sizeof(buf), "%u", guest_pid);
	r = oci_map_set(&c->state->private_data, STATE_KEY_POD_MEMBER_PID, buf);
	if (r >= 0)
		r = join_cgroup(ctx, c, b, pid);
	if (r >= 0)
		r = container_set_status(c, OCI_STATUS_CREATED, pid);
	return r;
}

int launch_member(struct cli_context *ctx, const char *id, const struct create_opts *o, const struct bundle *b,
                  const struct pod_ref *pod, struct oci_state *s, pid_t *ret_pid)
{
	_cleanup_container_ struct container *sandbox = NULL;
	struct member m = {0};
	struct member_view v = {0};
	struct container *c = NULL;
	uint32_t guest_pid = 0;
	bool share_pid = false;
	uid_t jail = 0;
	pid_t pid = 0;
	int r;

	r = container_load(ctx->root, pod->sandbox_id, false, &sandbox);
	if (r >= 0 && !is_sandbox(sandbox))
		r = err_set(
		    -EINVAL,
		    "container %s is not a pod's sandbox: its VM takes no app containers (create the pod's first "
		    "container with the annotation %s=sandbox)",
		    pod->sandbox_id, POD_ANN_CRI_TYPE);
	if (r >= 0)
		r = jail_enabled() ? container_jail_uid(sandbox, &jail) : 0;
	if (r >= 0)
		r = check_namespaces(ctx->root, b, pod, &share_pid);
	if (r >= 0)
		r = check_spec(b);
	if (r >= 0)
		r = check_hostname(b, sandbox);
	if (r >= 0)
		r = member_view(b->spec, &v);
	if (r >= 0)
		r = guest_spec_check(&v.spec, b->rootfs);
	if (r >= 0)
		r = member_build(b, &v.spec, s, share_pid, &m);
	if (r >= 0)
		pod_shm(b, sandbox, &m.start.u.start);
	free(v.ns);
	if (r < 0) {
		oci_state_free(s);
		member_done(&m);
		return err_prefix(r, "%s/config.json", b->path);
	}
	r = container_create(ctx->root, s, &c);
	if (r < 0) {
		member_done(&m);
		return r;
	}
	stop_point("create:claimed");
	r = exec_proxy_run(&(struct exec_proxy_opts){.dir = sandbox->dir,
	                                             .proc = &m.start.u.start.process,
	                                             .console_socket = o->console_socket,
	                                             .pid_file = o->pid_file,
	                                             .detach = true,
	                                             .jail_uid = jail,
	                                             .member_line = m.line,
	                                             .share_fds = m.fds,
	                                             .n_share_fds = m.g.n,
	                                             .start = &m.start,
	                                             .close_fd = c->lock_fd,
	                                             .ret_pid = &pid,
	                                             .ret_guest_pid = &guest_pid});
	member_done(&m);
	if (r >= 0)
		r = record(ctx, c, b, pid, guest_pid);
	if (r < 0) {
		_cleanup_free_ char *msg = strdup(err_msg());

		if (pid > 0)
			kill(pid, SIGKILL); /* the monitor then kills its process in the VM */
		err_clear();
		teardown_container(c, false);
		return err_set(r, "%s", msg ? msg : "create failed");
	}
	log_debug("pod: app container %s in the VM of %s: guest pid %u, host process %d", id, pod->sandbox_id,
	          guest_pid, (int)pid);
	container_free(c);
	*ret_pid = pid;
	return 0;
}

int launch_member_sandbox(const struct container *c, const char *root, char **ret_dir, uint32_t *ret_guest_pid)
{
	_cleanup_container_ struct container *sandbox = NULL;
	int r = launch_member_of(c, root, &sandbox, ret_guest_pid);

	if (r <= 0)
		return r;
	*ret_dir = strdup(sandbox->dir);
	return *ret_dir ? 1 : -ENOMEM;
}
