/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <sys/random.h>
#include <time.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "runtime/monitor/guest-linux.h"
#include "runtime/monitor/guest-shares.h"
#include "runtime/monitor/guest-spec.h"
#include "runtime/monitor/spec-support.h"

static char **strv_dup(char *const *v)
{
	size_t n = oci_strv_length(v);
	char **r = calloc(n + 1, sizeof(*r));

	if (!r)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!(r[i] = strdup(v[i]))) {
			oci_strv_free(r);
			return NULL;
		}
	return r;
}

static char *str_dup(const char *s)
{
	return s ? strdup(s) : NULL;
}

static uint64_t cap_mask(char *const *names)
{
	uint64_t m = 0;

	for (size_t i = 0; names && names[i]; i++) {
		int c = oci_capability_from_name(names[i]);

		/* runc ignores capabilities it does not know. */
		if (c >= 0 && c < 64)
			m |= 1ULL << c;
	}
	return m;
}

static int name_index(const char *name, const char *const *names, size_t n)
{
	for (size_t i = 0; name && i < n; i++)
		if (names[i] && strcmp(name, names[i]) == 0)
			return (int)i;
	return -1;
}

/* ioPriority and scheduler in the numbers the kernel takes, as runc
 * converts them (the names were validated with the spec). */
static int conv_sched(const struct oci_process *op, struct proto_process *p)
{
	static const char *const classes[] = {NULL, "IOPRIO_CLASS_RT", "IOPRIO_CLASS_BE", "IOPRIO_CLASS_IDLE"};
	static const char *const policies[] = {"SCHED_OTHER", "SCHED_FIFO", "SCHED_RR",      "SCHED_BATCH",
	                                       "SCHED_ISO",   "SCHED_IDLE", "SCHED_DEADLINE"};
	static const char *const flags[] = {"SCHED_FLAG_RESET_ON_FORK", "SCHED_FLAG_RECLAIM",
	                                    "SCHED_FLAG_DL_OVERRUN",    "SCHED_FLAG_KEEP_POLICY",
	                                    "SCHED_FLAG_KEEP_PARAMS",   "SCHED_FLAG_UTIL_CLAMP_MIN",
	                                    "SCHED_FLAG_UTIL_CLAMP_MAX"};
	const struct oci_scheduler *os = &op->scheduler;

	if (op->io_priority.present) {
		int c = name_index(op->io_priority.class, classes, ARRAY_SIZE(classes));

		if (c < 0)
			return err_set(-EINVAL, "process.ioPriority.class: invalid io priority class: %s",
			               op->io_priority.class ? op->io_priority.class : "");
		p->has_ioprio = true;
		p->ioprio = (uint32_t)c << 13 | (uint32_t)op->io_priority.priority;
	}
	if (!os->present)
		return 0;
	p->sched = calloc(1, sizeof(*p->sched));
	if (!p->sched)
		return -ENOMEM;
	p->sched->policy = (uint32_t)name_index(os->policy, policies, ARRAY_SIZE(policies));
	if (p->sched->policy == (uint32_t)-1)
		return err_set(-EINVAL, "process.scheduler.policy: invalid scheduler policy: %s", os->policy);
	for (size_t i = 0; os->flags && os->flags[i]; i++) {
		int f = name_index(os->flags[i], flags, ARRAY_SIZE(flags));

		if (f < 0)
			return err_set(-EINVAL, "process.scheduler.flags[%zu]: invalid scheduler flag: %s", i,
			               os->flags[i]);
		p->sched->flags |= 1ULL << f;
	}
	p->sched->nice = os->nice;
	p->sched->priority = (uint32_t)os->priority;
	p->sched->runtime = os->runtime;
	p->sched->deadline = os->deadline;
	p->sched->period = os->period;
	return 0;
}

static int conv_process(const struct oci_process *op, struct proto_process *p)
{
	p->args = strv_dup(op->args);
	p->env = strv_dup(op->env);
	p->cwd = str_dup(op->cwd ? op->cwd : "/");
	if (!p->args || !p->env || !p->cwd)
		return -ENOMEM;
	p->uid = op->user.uid;
	p->gid = op->user.gid;
	if (op->user.n_additional_gids) {
		p->additional_gids = calloc(op->user.n_additional_gids, sizeof(uint32_t));
		if (!p->additional_gids)
			return -ENOMEM;
		memcpy(p->additional_gids, op->user.additional_gids, op->user.n_additional_gids * sizeof(uint32_t));
		p->n_additional_gids = op->user.n_additional_gids;
	}
	p->has_umask = op->user.has_umask;
	p->umask = op->user.umask;
	if (op->capabilities) {
		p->has_caps = true;
		p->cap_bounding = cap_mask(op->capabilities->bounding);
		p->cap_effective = cap_mask(op->capabilities->effective);
		p->cap_inheritable = cap_mask(op->capabilities->inheritable);
		p->cap_permitted = cap_mask(op->capabilities->permitted);
		p->cap_ambient = cap_mask(op->capabilities->ambient);
	}
	if (op->n_rlimits) {
		p->rlimits = calloc(op->n_rlimits, sizeof(*p->rlimits));
		if (!p->rlimits)
			return -ENOMEM;
		p->n_rlimits = op->n_rlimits;
		for (size_t i = 0; i < op->n_rlimits; i++) {
			p->rlimits[i].type = strdup(op->rlimits[i].type);
			p->rlimits[i].soft = op->rlimits[i].soft;
			p->rlimits[i].hard = op->rlimits[i].hard;
			if (!p->rlimits[i].type)
				return -ENOMEM;
		}
	}
	p->no_new_privileges = op->no_new_privileges;
	p->has_oom_score_adj = op->has_oom_score_adj;
	p->oom_score_adj = op->oom_score_adj;
	p->stdin_port = GUEST_PORT_STDIN;
	p->stdout_port = GUEST_PORT_STDOUT;
	p->stderr_port = GUEST_PORT_STDERR;
	return conv_sched(op, p);
}

/* Whether the annotation allows vsock sockets; -EINVAL for a value that
 * is neither "allow" nor "deny". */
static int vsock_allowed(const struct oci_spec *spec, bool *ret)
{
	const char *v = oci_map_get(&spec->annotations, GUEST_SPEC_ANNOTATION_VSOCK);

	*ret = v && !strcmp(v, "allow");
	if (v && !*ret && strcmp(v, "deny"))
		return err_set(-EINVAL, "annotation %s: \"%s\": expected \"allow\" or \"deny\"",
		               GUEST_SPEC_ANNOTATION_VSOCK, v);
	return 0;
}

int guest_spec_check(const struct oci_spec *spec, const char *rootfs)
{
	struct proto_start scratch = {0};
	struct guest_shares g;
	bool vsock;
	int r;

	r = vsock_allowed(spec, &vsock);
	if (r < 0)
		return r;
	r = spec_support_check(spec);
	if (r < 0)
		return r;
	/* What the conversion refuses (device rules, cgroup values), before
	 * anything is built. */
	r = guest_linux_from_oci(spec->linux_spec, &scratch);
	if (r >= 0 && spec->process)
		r = conv_sched(spec->process, &scratch.process);
	proto_start_free(&scratch);
	if (r < 0)
		return r == -ENOMEM ? err_set(r, "out of memory") : r;
	/* The bind mounts (and a shared root) as shares (where their locks
	 * go changes nothing of that). */
	r = guest_shares_plan(spec, rootfs, FS_LOCKS_HOST, &g);
	guest_shares_done(&g);
	return r;
}

int guest_spec_mount_points(const struct oci_spec *spec, struct rootfs_mount_point **ret, size_t *ret_n)
{
	/* Each mount, /dev (a tmpfs goes there when no mount does) and the
	 * cwd, which runc creates too. */
	struct rootfs_mount_point *pts = calloc(spec->n_mounts + 2, sizeof(*pts));
	size_t n = 0;

	if (!pts)
		return -ENOMEM;
	for (size_t i = 0; i < spec->n_mounts; i++) {
		const struct oci_mount *m = &spec->mounts[i];
		struct stat st;

		/* A bind of a host file is a file; anything else a directory. */
		if (m->destination)
			pts[n++] = (struct rootfs_mount_point){m->destination, guest_mount_is_bind(m) && m->source &&
			                                                           stat(m->source, &st) == 0 &&
			                                                           !S_ISDIR(st.st_mode)};
	}
	pts[n++] = (struct rootfs_mount_point){"/dev", false};
	if (spec->process && spec->process->cwd)
		pts[n++] = (struct rootfs_mount_point){spec->process->cwd, false};
	*ret = pts;
	*ret_n = n;
	return 0;
}

/* The guest's own tmpfs for a bind of the host's shm (guest_mount_is_shm()),
 * with the bind's nosuid/nodev/noexec. */
static int conv_shm(const struct oci_mount *om, unsigned long long size, struct proto_mount *m)
{
	char *opts[6] = {0}, sz[48];
	size_t n = 0;

	for (size_t i = 0; om->options && om->options[i] && n < 3; i++)
		if (!strcmp(om->options[i], "nosuid") || !strcmp(om->options[i], "nodev") ||
		    !strcmp(om->options[i], "noexec"))
			opts[n++] = om->options[i];
	snprintf(sz, sizeof(sz), "size=%llu", size);
	opts[n++] = (char *)"mode=1777";
	opts[n++] = sz;
	m->destination = str_dup(om->destination);
	m->type = str_dup("tmpfs");
	m->source = str_dup("shm");
	m->options = strv_dup(opts);
	return m->destination && m->type && m->source && m->options ? 0 : -ENOMEM;
}

bool guest_spec_pod_shm(struct proto_start *s)
{
	/* The last mount at /dev/shm is what the container sees (a default
	 * spec's tmpfs may come before the engine's bind). */
	for (size_t i = s->n_mounts; i-- > 0;) {
		struct proto_mount *m = &s->mounts[i];
		char *src;

		if (!m->destination || strcmp(m->destination, "/dev/shm"))
			continue;
		if (!m->type || strcmp(m->type, "tmpfs") || !m->source || strcmp(m->source, "shm") ||
		    !(src = strdup(PROTO_POD_SHM_SOURCE)))
			return false;
		free(m->source);
		m->source = src;
		return true;
	}
	return false;
}

/* A mount as given, and for a shared bind the share's tag and the entry
 * of its root that is bound. */
static int conv_mount(const struct oci_mount *om, const struct guest_share_mount *sm, struct proto_mount *m)
{
	unsigned long long shm;
	char tag[GUEST_SHARE_TAG_SIZE];

	if (guest_mount_is_shm(om, &shm))
		return conv_shm(om, shm, m);
	m->destination = str_dup(om->destination);
	m->type = str_dup(om->type);
	m->source = str_dup(om->source);
	m->options = strv_dup(om->options);
	if (!m->destination || !m->options)
		return -ENOMEM;
	if (sm && sm->share >= 0) {
		guest_share_tag((unsigned int)sm->share, tag);
		m->share = strdup(tag);
		if (!m->share || (sm->name && !(m->share_path = strdup(sm->name))))
			return -ENOMEM;
	}
	return 0;
}

static int conv_hooks(const struct oci_hook_list *l, struct proto_hook **ret, size_t *ret_n)
{
	if (!l->n)
		return 0;
	*ret = calloc(l->n, sizeof(**ret));
	if (!*ret)
		return -ENOMEM;
	*ret_n = l->n;
	for (size_t i = 0; i < l->n; i++) {
		(*ret)[i].path = str_dup(l->hooks[i].path);
		(*ret)[i].args = strv_dup(l->hooks[i].args);
		(*ret)[i].env = strv_dup(l->hooks[i].env);
		(*ret)[i].has_timeout = l->hooks[i].has_timeout;
		(*ret)[i].timeout = (uint32_t)l->hooks[i].timeout;
		if (!(*ret)[i].path || !(*ret)[i].args || !(*ret)[i].env)
			return -ENOMEM;
	}
	return 0;
}

static int conv_seccomp(const struct oci_seccomp *os, struct proto_seccomp **ret)
{
	struct proto_seccomp *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	*ret = s;
	s->default_action = str_dup(os->default_action);
	s->has_default_errno_ret = os->has_default_errno_ret;
	s->default_errno_ret = os->default_errno_ret;
	s->architectures = strv_dup(os->architectures);
	s->flags = strv_dup(os->flags);
	if (!s->default_action || !s->architectures || !s->flags)
		return -ENOMEM;
	if (os->n_syscalls && !(s->rules = calloc(os->n_syscalls, sizeof(*s->rules))))
		return -ENOMEM;
	s->n_rules = os->n_syscalls;
	for (size_t i = 0; i < os->n_syscalls; i++) {
		const struct oci_seccomp_syscall *o = &os->syscalls[i];
		struct proto_seccomp_rule *r = &s->rules[i];

		r->names = strv_dup(o->names);
		r->action = str_dup(o->action);
		r->has_errno_ret = o->has_errno_ret;
		r->errno_ret = o->errno_ret;
		if (!r->names || !r->action || (o->n_args && !(r->args = calloc(o->n_args, sizeof(*r->args)))))
			return -ENOMEM;
		r->n_args = o->n_args;
		for (size_t j = 0; j < o->n_args; j++) {
			r->args[j].index = o->args[j].index;
			r->args[j].value = o->args[j].value;
			r->args[j].value_two = o->args[j].value_two;
			if (!(r->args[j].op = str_dup(o->args[j].op)))
				return -ENOMEM;
		}
	}
	return 0;
}

static int conv_linux(const struct oci_linux *l, struct proto_start *s)
{
	s->masked_paths = strv_dup(l->masked_paths);
	s->readonly_paths = strv_dup(l->readonly_paths);
	if (!s->masked_paths || !s->readonly_paths)
		return -ENOMEM;
	if (l->rootfs_propagation && !(s->rootfs_propagation = strdup(l->rootfs_propagation)))
		return -ENOMEM;
	if (l->sysctl.n) {
		s->sysctl = calloc(l->sysctl.n, sizeof(*s->sysctl));
		if (!s->sysctl)
			return -ENOMEM;
		s->n_sysctl = l->sysctl.n;
		for (size_t i = 0; i < l->sysctl.n; i++) {
			s->sysctl[i].key = strdup(l->sysctl.items[i].key);
			s->sysctl[i].value = strdup(l->sysctl.items[i].value);
			if (!s->sysctl[i].key || !s->sysctl[i].value)
				return -ENOMEM;
		}
	}
	return l->seccomp ? conv_seccomp(l->seccomp, &s->seccomp) : 0;
}

static int conv_root(const struct oci_spec *spec, const struct guest_shares *g, struct proto_start *s)
{
	char tag[GUEST_SHARE_TAG_SIZE];

	if (g && g->root >= 0) {
		guest_share_tag((unsigned int)g->root, tag);
		s->root_device = strdup(tag);
		s->root_fstype = strdup("virtiofs");
	} else {
		s->root_device = strdup("/dev/vda");
		s->root_fstype = strdup("ext4");
	}
	s->root_readonly = spec->root && spec->root->readonly;
	return s->root_device && s->root_fstype ? 0 : -ENOMEM;
}

static int conv_all(const struct oci_spec *spec, const struct oci_state *state, const struct guest_shares *g,
                    struct proto_start *s)
{
	int r;

	r = conv_process(spec->process, &s->process);
	if (r < 0)
		return r;
	/* A terminal is one pty stream on the stdin port (the monitor's). */
	s->process.terminal = spec->process->terminal;
	s->process.rows = (uint16_t)spec->process->console_size.height;
	s->process.cols = (uint16_t)spec->process->console_size.width;
	s->hostname = str_dup(spec->hostname);
	s->domainname = str_dup(spec->domainname);
	r = conv_root(spec, g, s);
	if (r >= 0)
		r = vsock_allowed(spec, &s->allow_vsock);
	if (r < 0)
		return r;
	if (spec->n_mounts && !(s->mounts = calloc(spec->n_mounts, sizeof(*s->mounts))))
		return -ENOMEM;
	s->n_mounts = spec->n_mounts;
	for (size_t i = 0; i < spec->n_mounts; i++) {
		r = conv_mount(&spec->mounts[i], g && i < g->n_mounts ? &g->mounts[i] : NULL, &s->mounts[i]);
		if (r < 0)
			return r;
	}
	if (spec->linux_spec && (r = conv_linux(spec->linux_spec, s)) < 0)
		return r;
	if ((r = guest_linux_from_oci(spec->linux_spec, s)) < 0)
		return r;
	r = conv_hooks(&spec->hooks.list[OCI_HOOK_CREATE_CONTAINER], &s->create_container_hooks,
	               &s->n_create_container_hooks);
	if (r >= 0)
		r = conv_hooks(&spec->hooks.list[OCI_HOOK_START_CONTAINER], &s->start_container_hooks,
		               &s->n_start_container_hooks);
	if (r >= 0 && state && (s->n_create_container_hooks || s->n_start_container_hooks))
		r = oci_state_to_hook_json(state, &s->state_json);
	return r;
}

int guest_spec_from_oci(const struct oci_spec *spec, const struct oci_state *state, const struct guest_shares *g,
                        struct proto_start *ret)
{
	int r = 0;

	*ret = (struct proto_start){0};
	if (!spec->process)
		return err_set(-EINVAL, "config.json: process: missing");
	/* Every bind mount must have its share. */
	for (size_t i = 0; i < spec->n_mounts; i++)
		if (guest_mount_is_bind(&spec->mounts[i]) && !(g && i < g->n_mounts && g->mounts[i].share >= 0) &&
		    !guest_mount_is_shm(&spec->mounts[i], &(unsigned long long){0}))
			return err_set(-EINVAL, "mounts[%zu] (%s): a bind mount without a shared directory", i,
			               spec->mounts[i].destination);
	if (r >= 0)
		r = conv_all(spec, state, g, ret);
	if (r < 0) {
		proto_start_free(ret);
		if (r == -ENOMEM)
			err_set(r, "out of memory");
	}
	return r;
}

int guest_process_from_oci(const struct oci_process *op, struct proto_process *ret)
{
	int r;

	*ret = (struct proto_process){0};
	r = conv_process(op, ret);
	if (r < 0) {
		proto_process_free(ret);
		return r == -ENOMEM ? err_set(r, "out of memory") : r;
	}
	ret->terminal = op->terminal;
	ret->rows = (uint16_t)op->console_size.height;
	ret->cols = (uint16_t)op->console_size.width;
	return 0;
}

int guest_spec_set_net(struct proto_start *s, const struct net_config *cfg)
{
	free(s->net);
	s->net = NULL;
	if (!cfg || !cfg->nr_ifaces)
		return 0;
	s->net = malloc(sizeof(*s->net));
	if (!s->net)
		return -ENOMEM;
	*s->net = *cfg;
	return 0;
}

int guest_spec_set_identity(struct proto_start *s)
{
	struct timespec ts;

	if (getrandom(s->seed, sizeof(s->seed), 0) != (ssize_t)sizeof(s->seed))
		return err_setsys(-errno, "getrandom");
	s->has_seed = true;
	clock_gettime(CLOCK_REALTIME, &ts);
	s->realtime_ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	s->has_realtime = true;
	return 0;
}
