/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The last steps before execve, in runc's order: rlimits, oom_score_adj,
 * scheduler and I/O priority, bounding set, user and groups (keeping capabilities), the other
 * capability sets, umask, cwd, no_new_privs, seccomp, exec.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "common/rlimit.h"
#include "guest-init/guest-init.h"

int gi_rlimit_from_name(const char *name)
{
	return rlimit_from_name(name);
}

static int apply_rlimits(const struct proto_process *p)
{
	for (size_t i = 0; i < p->n_rlimits; i++) {
		struct rlimit rl = {p->rlimits[i].soft, p->rlimits[i].hard};
		int res = gi_rlimit_from_name(p->rlimits[i].type);

		if (res < 0)
			return err_set(res, "unknown rlimit type %s", p->rlimits[i].type ? p->rlimits[i].type : "");
		if (setrlimit(res, &rl) < 0)
			return err_setsys(-errno, "setrlimit %s", p->rlimits[i].type);
	}
	return 0;
}

static int apply_oom_score_adj(const struct proto_process *p)
{
	_cleanup_close_ int fd = -1;
	char buf[16];

	if (!p->has_oom_score_adj)
		return 0;
	fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return err_setsys(-errno, "open oom_score_adj");
	snprintf(buf, sizeof(buf), "%d", p->oom_score_adj);
	if (write_all(fd, buf, strlen(buf)) < 0)
		return err_setsys(-errno, "write oom_score_adj %s", buf);
	return 0;
}

/* process.scheduler (sched_setattr) and ioPriority (ioprio_set on the
 * process group), as runc sets them: before the capabilities drop. */
static int apply_sched(const struct proto_process *p)
{
	struct {
		uint32_t size, policy;
		uint64_t flags;
		int32_t nice;
		uint32_t priority;
		uint64_t runtime, deadline, period;
	} attr = {0};

	if (p->has_ioprio && syscall(SYS_ioprio_set, 2 /* IOPRIO_WHO_PGRP */, 0, (int)p->ioprio) < 0)
		return err_setsys(-errno, "failed to set io priority");
	if (!p->sched)
		return 0;
	attr.size = sizeof(attr);
	attr.policy = p->sched->policy;
	attr.flags = p->sched->flags;
	attr.nice = p->sched->nice;
	attr.priority = p->sched->priority;
	attr.runtime = p->sched->runtime;
	attr.deadline = p->sched->deadline;
	attr.period = p->sched->period;
	if (syscall(SYS_sched_setattr, 0, &attr, 0) < 0)
		return err_setsys(-errno, "error setting scheduler");
	return 0;
}

static int drop_bounding(const struct proto_process *p)
{
	int last = (int)cap_max_bits() - 1;

	if (!p->has_caps)
		return 0;
	for (int c = 0; c <= last && c < 64; c++)
		if (!(p->cap_bounding & (1ull << c)) && CAP_IS_SUPPORTED(c) && cap_drop_bound(c) < 0)
			return err_setsys(-errno, "drop capability %d from the bounding set", c);
	return 0;
}

static int set_cap_sets(const struct proto_process *p)
{
	const struct {
		cap_flag_t flag;
		uint64_t mask;
	} sets[] = {
	    {CAP_EFFECTIVE, p->cap_effective},
	    {CAP_PERMITTED, p->cap_permitted},
	    {CAP_INHERITABLE, p->cap_inheritable},
	};
	int last = (int)cap_max_bits() - 1;
	cap_t caps;
	int r = 0;

	if (!p->has_caps)
		return 0;
	caps = cap_init();
	if (!caps)
		return -ENOMEM;
	for (size_t s = 0; s < ARRAY_SIZE(sets); s++)
		for (cap_value_t c = 0; c <= last && c < 64; c++) {
			if (!(sets[s].mask & (1ull << c)))
				continue;
			if (cap_set_flag(caps, sets[s].flag, 1, &c, CAP_SET) < 0)
				r = -errno;
		}
	if (r == 0 && cap_set_proc(caps) < 0)
		r = err_setsys(-errno, "set capabilities");
	cap_free(caps);
	if (r < 0)
		return r;
	if (CAP_AMBIENT_SUPPORTED() && cap_reset_ambient() < 0)
		return err_setsys(-errno, "reset ambient capabilities");
	/* runc only warns (in its own log) when an ambient capability cannot
	 * be raised because it is not inheritable, as with `runc spec`'s
	 * defaults; here stderr is already the container's, so skip quietly. */
	for (int c = 0; c <= last && c < 64; c++)
		if ((p->cap_ambient & (1ull << c)) && cap_set_ambient(c, CAP_SET) < 0 && errno != EPERM)
			return err_setsys(-errno, "raise ambient capability %d", c);
	return 0;
}

static int switch_user(const struct proto_process *p, struct gi_user *u)
{
	gid_t groups[NGROUPS_MAX];
	size_t n = 0;
	int r;

	r = gi_user_resolve(p, "/etc/passwd", "/etc/group", u);
	if (r < 0)
		return r;
	for (size_t i = 0; i < u->n_sgids && n < NGROUPS_MAX; i++)
		groups[n++] = u->sgids[i];
	for (size_t i = 0; i < p->n_additional_gids && n < NGROUPS_MAX; i++)
		groups[n++] = p->additional_gids[i];
	if (setgroups(n, groups) < 0)
		return err_setsys(-errno, "setgroups");
	/* Keep the permitted set across setuid; set_cap_sets trims it. */
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
		return err_setsys(-errno, "PR_SET_KEEPCAPS");
	if (setresgid(u->gid, u->gid, u->gid) < 0)
		return err_setsys(-errno, "setresgid %u", (unsigned int)u->gid);
	if (setresuid(u->uid, u->uid, u->uid) < 0)
		return err_setsys(-errno, "setresuid %u", (unsigned int)u->uid);
	if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
		return err_setsys(-errno, "PR_SET_KEEPCAPS");
	return 0;
}

/* The environment to exec with: the spec's, plus HOME when missing. */
static char **build_env(const struct proto_process *p, const struct gi_user *u, char **ret_home)
{
	size_t n = 0;
	char **env;
	bool has_home = false;

	for (char **e = p->env; e && *e; e++, n++)
		has_home |= strncmp(*e, "HOME=", 5) == 0;
	env = calloc(n + 2, sizeof(char *));
	if (!env)
		return NULL;
	memcpy(env, p->env ? p->env : env, n * sizeof(char *));
	if (!has_home && asprintf(ret_home, "HOME=%s", u->home ? u->home : "/") >= 0)
		env[n] = *ret_home;
	return env;
}

static const char *env_get(char *const *env, const char *name)
{
	size_t len = strlen(name);

	for (char *const *e = env; e && *e; e++)
		if (strncmp(*e, name, len) == 0 && (*e)[len] == '=')
			return *e + len + 1;
	return NULL;
}

/* runc's LookPath: a name with a slash is used as it is; otherwise PATH
 * is searched for a regular, executable file. */
static int find_exec(const char *arg0, char *const *env, char *out, size_t outlen, int *ret_code)
{
	const char *path = env_get(env, "PATH");
	struct stat st;

	*ret_code = 127;
	if (strchr(arg0, '/')) {
		if (stat(arg0, &st) < 0)
			return err_set(-errno, "exec: \"%s\": stat %s: %s", arg0, arg0,
			               errno == ENOENT ? "no such file or directory" : strerror(errno));
		snprintf(out, outlen, "%s", arg0);
		return 0;
	}
	if (!path)
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	for (const char *p = path; p;) {
		const char *colon = strchr(p, ':');
		int len = colon ? (int)(colon - p) : (int)strlen(p);

		snprintf(out, outlen, "%.*s/%s", len, len ? p : ".", arg0);
		if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111))
			return 0;
		p = colon ? colon + 1 : NULL;
	}
	return err_set(-ENOENT, "exec: \"%s\": executable file not found in $PATH", arg0);
}

int gi_check_exec(const struct proto_process *p, int *ret_code)
{
	char exe[PATH_MAX];

	*ret_code = 1;
	if (!p->args || !p->args[0])
		return err_set(-EINVAL, "args must not be empty");
	if (chdir(p->cwd ? p->cwd : "/") < 0)
		return err_setsys(-errno, "chdir to cwd (\"%s\") set in config.json failed", p->cwd ? p->cwd : "/");
	return find_exec(p->args[0], p->env, exe, sizeof(exe), ret_code);
}

int gi_child_exec(const struct proto_process *p, const struct proto_seccomp *sc, bool limits_set, int *ret_code)
{
	_cleanup_free_ char *home = NULL;
	_cleanup_free_ char **env = NULL;
	struct gi_user u = {0};
	char exe[PATH_MAX];
	int r;

	*ret_code = 1;
	if (!p->args || !p->args[0])
		return err_set(-EINVAL, "args must not be empty");
	if (!limits_set && ((r = apply_rlimits(p)) < 0 || (r = apply_oom_score_adj(p)) < 0))
		return r;
	if ((r = apply_sched(p)) < 0)
		return r;
	/* Without no_new_privs the filter needs CAP_SYS_ADMIN, so it goes in
	 * before the user switch; with it, as late as possible (runc). */
	if (!p->no_new_privileges && (r = gi_seccomp_load(sc)) < 0)
		return r;
	if ((r = drop_bounding(p)) < 0 || (r = switch_user(p, &u)) < 0)
		goto out;
	if ((r = set_cap_sets(p)) < 0)
		goto out;
	if (p->has_umask)
		umask(p->umask & 0777);
	env = build_env(p, &u, &home);
	if (!env) {
		r = -ENOMEM;
		goto out;
	}
	if (chdir(p->cwd ? p->cwd : "/") < 0) {
		r = err_setsys(-errno, "chdir to cwd (\"%s\") set in config.json failed", p->cwd ? p->cwd : "/");
		goto out;
	}
	r = find_exec(p->args[0], env, exe, sizeof(exe), ret_code);
	if (r < 0)
		goto out;
	if (p->no_new_privileges && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		r = err_setsys(-errno, "PR_SET_NO_NEW_PRIVS");
		goto out;
	}
	if (p->no_new_privileges && (r = gi_seccomp_load(sc)) < 0)
		goto out;
	execve(exe, p->args, env);
	r = -errno;
	*ret_code = (r == -ENOENT) ? 127 : 126;
	if (r == -EACCES)
		err_set(r, "exec: \"%s\": permission denied", p->args[0]);
	else
		err_set(r, "exec: \"%s\": %s", p->args[0], strerror(-r));
out:
	gi_user_free(&u);
	return r;
}
