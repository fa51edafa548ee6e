/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The container process's own setup, in runc's order, all of it before
 * the process reports "ready" (so that its failures are create's, as under
 * runc): rlimits, oom_score_adj, scheduler and I/O priority, seccomp
 * without no_new_privs, cwd (as the caller), bounding set, user and groups
 * (keeping capabilities), cwd again as the user when the first try was
 * refused, the other capability sets, umask, the executable's lookup,
 * no_new_privs and its seccomp. After "go" only the startContainer hooks
 * and execve are left.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
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
	/* cap_max_bits() is what the kernel supports (libcap probes it
	 * once): no capability up to it needs asking about (a prctl each). */
	int last = (int)cap_max_bits() - 1;

	if (!p->has_caps)
		return 0;
	for (int c = 0; c <= last && c < 64; c++)
		if (!(p->cap_bounding & (1ull << c)) && cap_drop_bound(c) < 0)
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
	/* One prctl: libcap's cap_reset_ambient() asks about each
	 * capability first. EINVAL: a kernel without ambient sets. */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
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
	return 0;
}

/* guest-init's own GLIBC_TUNABLES entry, if it was started with one. The
 * kernel hands it over from its command line, where kvrun puts it only on
 * emulating hosts (vm-config.c): there the guest kernel cannot keep the
 * AVX registers of a process across a task switch, so glibc must not use
 * them (docs/runtime.md, emulating hosts). */
static const char *own_tunables(void)
{
	extern char **environ;

	for (char **e = environ; e && *e; e++)
		if (strncmp(*e, "GLIBC_TUNABLES=", 15) == 0)
			return *e;
	return NULL;
}

/* The environment to exec with: the spec's, plus HOME when missing, plus
 * guest-init's GLIBC_TUNABLES when the spec sets none. */
static char **build_env(const struct proto_process *p, const struct gi_user *u, char **ret_home)
{
	const char *tunables = own_tunables();
	size_t n = 0;
	char **env;
	bool has_home = false;

	for (char **e = p->env; e && *e; e++, n++) {
		has_home |= strncmp(*e, "HOME=", 5) == 0;
		if (strncmp(*e, "GLIBC_TUNABLES=", 15) == 0)
			tunables = NULL;
	}
	env = calloc(n + 3, sizeof(char *));
	if (!env)
		return NULL;
	memcpy(env, p->env ? p->env : env, n * sizeof(char *));
	if (!has_home && asprintf(ret_home, "HOME=%s", u->home ? u->home : "/") >= 0)
		env[n++] = *ret_home;
	if (tunables)
		env[n] = (char *)tunables;
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

const char *gi_go_strerror(int errnum, char *buf, size_t size)
{
	const char *s = strerror(errnum);

	/* Go's syscall tables hold the C library's texts with the first
	 * letter lowered when the second is lower case ("no such file or
	 * directory"); engines match runc's messages on those. */
	snprintf(buf, size, "%s", s);
	if (buf[0] >= 'A' && buf[0] <= 'Z' && buf[1] >= 'a' && buf[1] <= 'z')
		buf[0] = (char)(buf[0] - 'A' + 'a');
	return buf;
}

/* s in double quotes as Go's %q writes a plain string: \" \\ and escapes
 * for control bytes. */
static const char *go_quote(const char *s, char *buf, size_t size)
{
	size_t n = 0;

	if (size < 3)
		return "\"\"";
	buf[n++] = '"';
	for (; *s && n + 6 < size; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			n += (size_t)snprintf(buf + n, size - n, "\\%c", c);
		else if (c == '\n')
			n += (size_t)snprintf(buf + n, size - n, "\\n");
		else if (c == '\t')
			n += (size_t)snprintf(buf + n, size - n, "\\t");
		else if (c < 0x20 || c == 0x7f)
			n += (size_t)snprintf(buf + n, size - n, "\\x%02x", c);
		else
			buf[n++] = (char)c;
	}
	buf[n++] = '"';
	buf[n] = '\0';
	return buf;
}

/* Go's exec.LookPath's test of one candidate: 0, -ENOENT and the like
 * from stat, or -EACCES for a directory or a file with no x bit. */
static int find_executable(const char *file)
{
	struct stat st;

	if (stat(file, &st) < 0)
		return -errno;
	return !S_ISDIR(st.st_mode) && (st.st_mode & 0111) ? 0 : -EACCES;
}

/* runc's lookup of args[0], as the user, in the process's cwd: Go's
 * exec.LookPath (a name with a slash is taken as it is; otherwise each
 * entry of the process's $PATH, an empty one meaning ".", none at all
 * when it has no PATH), then access(X_OK) as the process, which catches
 * a noexec mount. */
static int look_path(const char *arg0, char *const *env, char *out, size_t outlen)
{
	const char *path = env_get(env, "PATH");
	char q[PATH_MAX + 16], e[128];
	int r = -ENOENT;

	if (strchr(arg0, '/')) {
		snprintf(out, outlen, "%s", arg0);
		r = find_executable(out);
		if (r == -EACCES)
			return err_set(r, "exec: %s: permission denied", go_quote(arg0, q, sizeof(q)));
		if (r < 0)
			return err_set(r, "exec: %s: stat %s: %s", go_quote(arg0, q, sizeof(q)), arg0,
			               gi_go_strerror(-r, e, sizeof(e)));
	}
	for (const char *p = path && *path ? path : NULL; p && r < 0;) {
		const char *colon = strchr(p, ':');
		int len = colon ? (int)(colon - p) : (int)strlen(p);

		snprintf(out, outlen, "%.*s/%s", len, len ? p : ".", arg0);
		r = find_executable(out);
		p = colon ? colon + 1 : NULL;
	}
	if (r < 0)
		return err_set(-ENOENT, "exec: %s: executable file not found in $PATH", go_quote(arg0, q, sizeof(q)));
	if (faccessat(AT_FDCWD, out, X_OK, AT_EACCESS) < 0)
		return err_set(-errno, "eaccess %s: %s", out, gi_go_strerror(errno, e, sizeof(e)));
	return 0;
}

/* runc changes to the cwd before it drops privileges (a directory only
 * root may enter, such as /root without CAP_DAC_OVERRIDE in the process's
 * set) and, when that was refused, once more as the user (a directory
 * only the user may enter). *ret_again says whether the second try is due. */
static int enter_cwd(const struct proto_process *p, bool second, bool *ret_again)
{
	const char *cwd = p->cwd ? p->cwd : "/";
	char q[PATH_MAX + 16], e[128];

	if (second && !*ret_again)
		return 0;
	*ret_again = false;
	if (chdir(cwd) == 0)
		return 0;
	if (!second && (errno == EACCES || errno == EPERM)) {
		*ret_again = true;
		return 0;
	}
	return err_set(-errno, "chdir to cwd (%s) set in config.json failed: %s", go_quote(cwd, q, sizeof(q)),
	               gi_go_strerror(errno, e, sizeof(e)));
}

int gi_child_prepare(const struct proto_process *p, const struct proto_seccomp *sc, bool limits_set,
                     struct gi_exec *ret)
{
	struct gi_user u = {0};
	bool again = false;
	int r;

	memset(ret, 0, sizeof(*ret));
	ret->code = 1;
	if (!p->args || !p->args[0])
		return err_set(-EINVAL, "args must not be empty");
	if (!limits_set && ((r = apply_rlimits(p)) < 0 || (r = apply_oom_score_adj(p)) < 0))
		return r;
	if ((r = apply_sched(p)) < 0)
		return r;
	gi_mark(26);
	/* Without no_new_privs the filter needs CAP_SYS_ADMIN, so it goes in
	 * before the user switch; with it, as late as possible (runc). */
	if (!p->no_new_privileges && (r = gi_seccomp_load(sc)) < 0)
		return r;
	if ((r = enter_cwd(p, false, &again)) < 0 || (r = drop_bounding(p)) < 0)
		goto out;
	gi_mark(27);
	if ((r = switch_user(p, &u)) < 0 || (r = enter_cwd(p, true, &again)) < 0)
		goto out;
	gi_mark(28);
	if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0) {
		r = err_setsys(-errno, "PR_SET_KEEPCAPS");
		goto out;
	}
	if ((r = set_cap_sets(p)) < 0)
		goto out;
	gi_mark(29);
	if (p->has_umask)
		umask(p->umask & 0777);
	ret->env = build_env(p, &u, &ret->home);
	if (!ret->env) {
		r = -ENOMEM;
		goto out;
	}
	r = look_path(p->args[0], ret->env, ret->path, sizeof(ret->path));
	gi_mark(35);
	if (r < 0) {
		ret->code = r == -EACCES ? 126 : 127;
		goto out;
	}
	if (p->no_new_privileges && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		r = err_setsys(-errno, "PR_SET_NO_NEW_PRIVS");
		goto out;
	}
	if (p->no_new_privileges)
		r = gi_seccomp_load(sc);
out:
	gi_user_free(&u);
	if (r < 0) {
		int code = ret->code;

		gi_exec_free(ret);
		ret->code = code;
	}
	return r;
}

void gi_exec_free(struct gi_exec *e)
{
	free(e->env);
	free(e->home);
	e->env = NULL;
	e->home = NULL;
}

_Noreturn void gi_child_exec(const struct proto_process *p, struct gi_exec *e)
{
	char text[128];

	execve(e->path, p->args, e->env);
	/* As runc's init, which can only tell now (runc start has returned):
	 * the error on the process's stderr, exit status 1. */
	dprintf(STDERR_FILENO, "exec %s: %s\n", e->path, gi_go_strerror(errno, text, sizeof(text)));
	_exit(1);
}
