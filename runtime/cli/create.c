/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "runtime/cli/create.h"
#include "runtime/store/layout.h"
#include "runtime/store/state.h"

/* runc's rules: a terminal needs somewhere to send the pty when detached,
 * and a console socket is pointless without a terminal. */
static int check_console(const struct oci_process *p, const struct create_opts *o, bool detached)
{
	bool terminal = p && p->terminal;
	bool have_socket = o->console_socket && *o->console_socket;
	struct stat st;

	if (terminal && detached && !have_socket)
		return err_set(-EINVAL, "cannot allocate tty if kvrun will detach without setting console socket");
	if (!terminal && have_socket)
		return err_set(-EINVAL, "cannot use console socket if kvrun will not detach or allocate tty");
	if (have_socket) {
		if (stat(o->console_socket, &st) < 0)
			return err_setsys(-errno, "console socket %s", o->console_socket);
		if (!S_ISSOCK(st.st_mode))
			return err_set(-EINVAL, "console socket %s is not a socket", o->console_socket);
	}
	return 0;
}

static int preserved_fd(int fd, uint32_t *ret_mode)
{
	int fl = fcntl(fd, F_GETFL), listening = 0;
	socklen_t len = sizeof(listening);
	struct stat st;

	if (fl < 0 || fstat(fd, &st) < 0)
		return err_setsys(-errno, "--preserve-fds: fd %d", fd);
	if ((fl & O_PATH) || S_ISDIR(st.st_mode))
		return err_set(-ENOTSUP, "--preserve-fds: fd %d is %s: only a stream of data can be passed into the VM",
		               fd, S_ISDIR(st.st_mode) ? "a directory" : "an O_PATH descriptor");
	if (S_ISSOCK(st.st_mode) && getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && listening)
		return err_set(-ENOTSUP,
		               "--preserve-fds: fd %d is a listening socket: only a stream of data can be "
		               "passed into the VM",
		               fd);
	switch (fl & O_ACCMODE) {
	case O_RDONLY:
		*ret_mode = PROTO_EXTRA_FD_READ;
		break;
	case O_WRONLY:
		*ret_mode = PROTO_EXTRA_FD_WRITE;
		break;
	default:
		*ret_mode = PROTO_EXTRA_FD_READ | PROTO_EXTRA_FD_WRITE;
	}
	return 0;
}

int create_preserved_fds(unsigned long long n, struct preserved_fds *ret)
{
	const char *lpid = getenv("LISTEN_PID"), *lfds = getenv("LISTEN_FDS");
	int r;

	*ret = (struct preserved_fds){0};
	/* runc passes these on too (systemd socket activation). */
	if (lfds && *lfds && lpid && strtol(lpid, NULL, 10) == (long)getpid())
		return err_set(-ENOTSUP, "socket activation ($LISTEN_FDS) is not supported: listening sockets cannot "
		                         "be passed into the VM");
	if (n > PROTO_MAX_EXTRA_FDS)
		return err_set(-E2BIG, "--preserve-fds %llu: at most %d descriptors can be passed into the VM", n,
		               PROTO_MAX_EXTRA_FDS);
	for (unsigned int i = 0; i < n; i++) {
		r = preserved_fd(3 + (int)i, &ret->mode[i]);
		if (r < 0)
			return r;
	}
	ret->n = (unsigned int)n;
	return 0;
}

int create_prepare(struct cli_context *ctx, const char *id, const struct create_opts *o, bool detached,
                   struct bundle **ret)
{
	_cleanup_bundle_ struct bundle *b = NULL;
	struct stat st;
	int r;

	r = container_check_new_id(ctx->root, id);
	if (r < 0)
		return r;
	r = bundle_load(o->bundle, &b);
	if (r < 0)
		return r;
	if (!b->spec->process)
		return err_set(-EINVAL, "%s/config.json: process: missing", b->path);
	r = check_console(b->spec->process, o, detached);
	if (r < 0)
		return r;
	if (o->pidfd_socket && *o->pidfd_socket && stat(o->pidfd_socket, &st) < 0)
		return err_setsys(-errno, "pidfd socket %s", o->pidfd_socket);
	*ret = TAKE_PTR(b);
	return 0;
}

/* Whether container id under root is a pod's sandbox (its state says so),
 * whose VM takes the pod's app containers. */
static bool is_pod_sandbox(const char *root, const char *id)
{
	_cleanup_container_ struct container *c = NULL;
	const char *role;

	if (container_load(root, id, false, &c) < 0) {
		err_clear();
		return false;
	}
	role = oci_map_get(&c->state->private_data, STATE_KEY_POD_ROLE);
	return role && strcmp(role, "sandbox") == 0;
}

/* A namespace of a container that is not a pod's sandbox, other than its
 * network (which its VM serves: netns.c refuses a second VM there), could
 * be shared only inside its VM, which takes no other container. */
static int refuse_shared(const struct bundle *b, const struct pod_ref *p)
{
	const struct oci_linux *l = b->spec->linux_spec;

	for (size_t i = 0; l && i < l->n_namespaces; i++) {
		const struct oci_namespace *ns = &l->namespaces[i];

		if (ns->kind == OCI_NS_NETWORK || !ns->path || !*ns->path)
			continue;
		return err_set(
		    -ENOTSUP,
		    "%s/config.json: linux.namespaces[%zu].path: %s joins the %s namespace of container %s (from "
		    "%s), which is not a pod's sandbox: only a pod sandbox's VM (annotation "
		    "io.kubernetes.cri.container-type=sandbox, or a podman pod's infra container running "
		    "/catatonit -P) takes other containers, the only place they could share it",
		    b->path, i, ns->path, ns->type, p->sandbox_id, p->source);
	}
	return 0;
}

int create_check_pod(struct cli_context *ctx, const struct bundle *b, struct pod_ref *ret)
{
	struct pod_ref p = {0};
	int r;

	r = pod_classify(ctx->root, b->spec, &p);
	if (r < 0)
		return err_prefix(r, "%s/config.json", b->path);
	r = pod_check_sandbox(ctx->root, &p);
	if (r > 0 && p.role == POD_ROLE_CONTAINER && is_pod_sandbox(ctx->root, p.sandbox_id))
		p.live = true; /* created in the sandbox's VM: launch_member() */
	else if (r > 0)
		r = refuse_shared(b, &p);
	else if (r == 0 && p.role == POD_ROLE_CONTAINER)
		log_debug("pod: no sandbox container %s (CRI-O's drop_infra_ctr): the container is not joined to it",
		          p.sandbox_id);
	if (r >= 0 && p.role == POD_ROLE_SANDBOX) {
		struct pod_size z;

		/* Read again by create_size_pod_vm(); refused here, before
		 * anything is made. */
		r = pod_size_from_annotations(&b->spec->annotations, &z);
		if (r < 0)
			r = err_prefix(r, "%s/config.json", b->path);
	}
	if (r < 0) {
		pod_ref_clear(&p);
		return r;
	}
	if (p.role != POD_ROLE_NONE)
		log_debug("pod: %s, sandbox %s (from %s)",
		          p.role == POD_ROLE_SANDBOX ? "its sandbox" : "an app container",
		          p.sandbox_id ? p.sandbox_id : "(unnamed)", p.source);
	*ret = p;
	return 0;
}

/* Room for the guest's kernel and init beside the pod's containers. */
#define POD_GUEST_ALLOWANCE (128ULL << 20)
#define MIB (1ULL << 20)

int create_size_pod_vm(const struct bundle *b, const struct pod_ref *pod, struct vm_plan *plan)
{
	const struct oci_linux_resources *res = b->spec->linux_spec ? b->spec->linux_spec->resources : NULL;
	bool own_limit = res && res->memory.has_limit && res->memory.limit > 0;
	struct pod_size z;
	int r;

	if (pod->role != POD_ROLE_SANDBOX)
		return 0;
	r = pod_size_from_annotations(&b->spec->annotations, &z);
	if (r < 0)
		return err_prefix(r, "%s/config.json", b->path);
	if (z.memory > UINT64_MAX / 2)
		return err_set(-EINVAL, "%s/config.json: annotation %s: %llu bytes is more than a VM can have", b->path,
		               POD_ANN_CRI_MEMORY, (unsigned long long)z.memory);
	if (z.memory && !own_limit) {
		uint64_t want = (z.memory + POD_GUEST_ALLOWANCE + MIB - 1) & ~(MIB - 1);

		if (want > plan->mem_size)
			plan->mem_size = want;
	}
	/* A host that emulates the guest's kernel code keeps one vCPU. */
	if (z.cpu_quota && !plan->emulating_host) {
		uint64_t period = z.cpu_period ? z.cpu_period : VM_CONFIG_DEFAULT_CPU_PERIOD;
		uint64_t n = z.cpu_quota / period + (z.cpu_quota % period != 0);

		if (n > VM_CONFIG_MAX_CPUS)
			n = VM_CONFIG_MAX_CPUS;
		if (n > plan->ncpus)
			plan->ncpus = (unsigned int)n;
	}
	log_debug("pod: the sandbox's VM has %llu MiB and %u vCPU for the pod (%s %llu, cpu quota %llu per %llu us)",
	          (unsigned long long)(plan->mem_size / MIB), plan->ncpus, POD_ANN_CRI_MEMORY,
	          (unsigned long long)z.memory, (unsigned long long)z.cpu_quota, (unsigned long long)z.cpu_period);
	return 0;
}

int create_record_pod(struct oci_state *s, const struct pod_ref *p)
{
	int r = 0;

	if (p->role == POD_ROLE_NONE)
		return 0;
	r = oci_map_set(&s->private_data, STATE_KEY_POD_ROLE, p->role == POD_ROLE_SANDBOX ? "sandbox" : "container");
	if (r >= 0 && p->sandbox_id)
		r = oci_map_set(&s->private_data, STATE_KEY_POD_SANDBOX, p->sandbox_id);
	return r;
}
