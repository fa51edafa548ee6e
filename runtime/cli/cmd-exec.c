/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun exec <id> <command>...` or `kvrun exec -p process.json <id>`: run
 * another process in a container. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "oci-spec/spec.h"
#include "runtime/cli/cli-args.h"
#include "runtime/cli/exec-proxy.h"
#include "runtime/cli/launch-member.h"
#include "runtime/host/jail.h"
#include "runtime/monitor/guest-spec.h"
#include "runtime/monitor/spec-support.h"
#include "runtime/store/layout.h"
#include "runtime/store/state.h"

/* An absolute form of path (the proxy may chdir). */
static char *realpath_or_abs(const char *path)
{
	char cwd[4096];
	char *r = NULL;

	if (path[0] == '/')
		return strdup(path);
	if (!getcwd(cwd, sizeof(cwd)) || asprintf(&r, "%s/%s", cwd, path) < 0)
		return NULL;
	return r;
}

struct exec_opts {
	const char *console_socket, *cwd, *user, *process, *pid_file, *pidfd_socket;
	const char *process_label, *apparmor;
	struct cli_strv env, gids, caps, cgroups;
	bool tty, detach, no_new_privs, ignore_paused;
	unsigned long long preserve_fds;
};

static void exec_opts_free(struct exec_opts *o)
{
	cli_strv_free(&o->env);
	cli_strv_free(&o->gids);
	cli_strv_free(&o->caps);
	cli_strv_free(&o->cgroups);
}

/* "<uid>[:<gid>]", numbers only, as runc. */
static int check_user(const char *u)
{
	_cleanup_free_ char *copy = strdup(u);
	char *gid;
	long long v;

	if (!copy)
		return -ENOMEM;
	gid = strchr(copy, ':');
	if (gid)
		*gid++ = '\0';
	if (cli_parse_int(copy, &v) < 0 || v < 0 || v > 0xffffffffLL)
		return err_set(-EINVAL, "parsing %s as int for uid failed: invalid syntax", copy);
	if (gid && (cli_parse_int(gid, &v) < 0 || v < 0 || v > 0xffffffffLL))
		return err_set(-EINVAL, "parsing %s as int for gid failed: invalid syntax", gid);
	return 0;
}

static int check_flags(const struct exec_opts *o)
{
	long long v;
	int r;

	if (o->user && (r = check_user(o->user)) < 0)
		return r;
	for (size_t k = 0; k < o->gids.n; k++)
		if (cli_parse_int(o->gids.v[k], &v) < 0 || v < 0 || v > 0xffffffffLL)
			return err_set(-EINVAL, "invalid value \"%s\" for flag -additional-gids: parse error",
			               o->gids.v[k]);
	for (size_t k = 0; k < o->caps.n; k++)
		if (oci_capability_from_name(o->caps.v[k]) < 0)
			return err_set(-EINVAL, "unknown capability \"%s\"", o->caps.v[k]);
	for (size_t k = 0; k < o->env.n; k++)
		if (!strchr(o->env.v[k], '=') || o->env.v[k][0] == '=')
			return err_set(-EINVAL, "invalid environment variable \"%s\": want KEY=VALUE", o->env.v[k]);
	if (o->cwd && o->cwd[0] != '/')
		return err_set(-EINVAL, "cwd %s must be an absolute path", o->cwd);
	return 0;
}

/* The process comes from -p, or from the flags plus the command line. */
static int check_process(const struct exec_opts *o, int nargs, bool *ret_terminal)
{
	struct oci_process *p = NULL;
	int r;

	if (!o->process) {
		if (nargs < 1)
			return err_set(-EINVAL, "args must not be empty");
		*ret_terminal = o->tty;
		return check_flags(o);
	}
	r = oci_process_load(o->process, &p);
	if (r == -ENOENT)
		return err_setsys(r, "open %s", o->process);
	if (r >= 0)
		r = oci_process_validate(p, o->process, NULL);
	if (r >= 0 && (!p->args || !p->args[0]))
		r = err_set(-EINVAL, "%s: args: must not be empty", o->process);
	if (r >= 0)
		*ret_terminal = p->terminal;
	oci_process_free(p);
	return r;
}

static int strv_set(char ***v, size_t at, const char *s)
{
	char *d = strdup(s);

	if (!d)
		return -ENOMEM;
	free((*v)[at]);
	(*v)[at] = d;
	return 0;
}

/* Add KEY=VALUE to env, replacing an entry with the same key. */
static int env_set(char ***env, const char *kv)
{
	size_t klen = strcspn(kv, "=") + 1, n = 0;
	char **v;

	for (; *env && (*env)[n]; n++)
		if (strncmp((*env)[n], kv, klen) == 0)
			return strv_set(env, n, kv);
	v = realloc(*env, (n + 2) * sizeof(char *));
	if (!v)
		return -ENOMEM;
	v[n] = v[n + 1] = NULL;
	*env = v;
	return strv_set(env, n, kv);
}

/* runc exec without -p: the container's process with the command line's
 * args and the flags applied. */
static int apply_flags(const struct exec_opts *o, char **args, int nargs, struct proto_process *p)
{
	char **v = calloc((size_t)nargs + 1, sizeof(char *));
	unsigned long uid, gid;
	int r;

	if (!v)
		return -ENOMEM;
	for (int k = 0; k < nargs; k++)
		if (!(v[k] = strdup(args[k])))
			return -ENOMEM;
	for (size_t k = 0; p->args && p->args[k]; k++)
		free(p->args[k]);
	free(p->args);
	p->args = v;
	for (size_t k = 0; k < o->env.n; k++)
		if ((r = env_set(&p->env, o->env.v[k])) < 0)
			return r;
	if (o->cwd) {
		free(p->cwd);
		if (!(p->cwd = strdup(o->cwd)))
			return -ENOMEM;
	}
	if (o->user) {
		int n = sscanf(o->user, "%lu:%lu", &uid, &gid);

		p->uid = (uint32_t)uid;
		p->gid = n == 2 ? (uint32_t)gid : 0;
	}
	if (o->gids.n) {
		free(p->additional_gids);
		p->additional_gids = calloc(o->gids.n, sizeof(uint32_t));
		if (!p->additional_gids)
			return -ENOMEM;
		for (size_t k = 0; k < o->gids.n; k++)
			p->additional_gids[k] = (uint32_t)strtoul(o->gids.v[k], NULL, 10);
		p->n_additional_gids = o->gids.n;
	}
	for (size_t k = 0; k < o->caps.n && p->has_caps; k++) {
		int c = oci_capability_from_name(o->caps.v[k]);

		if (c >= 0 && c < 64) {
			p->cap_bounding |= 1ULL << c;
			p->cap_effective |= 1ULL << c;
			p->cap_permitted |= 1ULL << c;
		}
	}
	if (o->no_new_privs)
		p->no_new_privileges = true;
	p->terminal = o->tty;
	p->rows = p->cols = 0;
	return 0;
}

/* What kvrun cannot do for an exec'd process in a VM. */
static int check_unsupported(const struct exec_opts *o)
{
	if (o->preserve_fds)
		return err_set(-ENOTSUP, "--preserve-fds is not supported: file descriptors cannot be passed into the "
		                         "container's VM");
	if (o->pidfd_socket && *o->pidfd_socket)
		return err_set(-ENOTSUP, "--pidfd-socket is not supported: the process runs in the container's VM "
		                         "(its exec proxy's pid is in --pid-file)");
	if (o->cgroups.n)
		return err_set(-ENOTSUP, "--cgroup is not supported: sub-cgroups live inside the container's VM");
	if (o->process_label && *o->process_label)
		return err_set(-ENOTSUP, "--process-label is not supported: no SELinux in the container's VM");
	if (o->apparmor && *o->apparmor)
		return err_set(-ENOTSUP, "--apparmor is not supported: no AppArmor in the container's VM");
	return 0;
}

static int build_process(const struct exec_opts *o, const char *bundle, char **args, int nargs,
                         struct proto_process *ret)
{
	struct oci_process *op = NULL;
	struct oci_spec *spec = NULL;
	_cleanup_free_ char *config = NULL;
	int r;

	if (o->process) {
		r = oci_process_load(o->process, &op);
		if (r >= 0)
			r = spec_support_check_process(op, NULL);
		if (r >= 0)
			r = guest_process_from_oci(op, ret);
		oci_process_free(op);
		return r;
	}
	if (asprintf(&config, "%s/config.json", bundle) < 0)
		return -ENOMEM;
	r = oci_spec_load(config, &spec);
	if (r >= 0 && !spec->process)
		r = err_set(-EINVAL, "%s: process: missing", config);
	if (r >= 0)
		r = guest_process_from_oci(spec->process, ret);
	oci_spec_free(spec);
	if (r >= 0)
		r = apply_flags(o, args, nargs, ret);
	if (r == -ENOMEM)
		err_set(r, "out of memory");
	return r;
}

/* The uid of the container's jail, which its exec proxies share: the one
 * its monitor recorded; 0 (no jail) with $KVRUN_JAIL=0 here, or for a
 * container whose monitor has none ($KVRUN_JAIL=0 at its create: a jailed
 * proxy could not reach its root-owned control.sock). */
static int exec_jail_uid(const struct container *c, uid_t *ret)
{
	int r;

	*ret = 0;
	if (!jail_enabled())
		return 0;
	r = container_jail_uid(c, ret);
	if (r == 0)
		log_warn("container %s runs without a jail: so does this exec", c->state->id);
	return r < 0 ? r : 0;
}

/* Everything after the flags; errors read "exec failed: ..." as runc's. */
static int exec_do(struct cli_context *ctx, const struct exec_opts *o, char **argv, int nargs)
{
	_cleanup_container_ struct container *c = NULL, *sandbox = NULL;
	_cleanup_free_ char *dir = NULL, *bundle = NULL, *pid_file = NULL;
	struct proto_process proc = {0};
	uint32_t member_pid = 0;
	bool terminal = false, have_socket;
	uid_t jail_uid;
	int r;

	/* The process is checked before the lookup, so that a mistake in it is
	 * reported whatever the state of the container. */
	r = check_process(o, nargs, &terminal);
	if (r < 0)
		return r;
	r = check_unsupported(o);
	if (r < 0)
		return r;
	have_socket = o->console_socket && *o->console_socket;
	if (terminal && o->detach && !have_socket)
		return err_set(-EINVAL, "cannot allocate tty if kvrun will detach without setting console socket");
	if (!terminal && have_socket)
		return err_set(-EINVAL, "cannot use console socket if kvrun will not detach or allocate tty");
	r = container_load_for(ctx->root, argv[0],
	                       o->ignore_paused ? CONTAINER_OP_EXEC_IGNORE_PAUSED : CONTAINER_OP_EXEC, &c);
	if (r < 0)
		return r;
	/* An app container of a pod: the process joins it in its sandbox's
	 * VM, through the sandbox's monitor. */
	r = launch_member_of(c, ctx->root, &sandbox, &member_pid);
	if (r < 0)
		return r;
	/* runc's process would join the frozen cgroup and stop there; in the
	 * VM guest-init would wait for it. */
	if (r > 0 && c->state->status == OCI_STATUS_PAUSED)
		return err_set(-EBUSY,
		               "exec --ignore-paused: container %s is a paused app container of a pod: kvrun "
		               "does not exec into its frozen cgroup (resume it first)",
		               argv[0]);
	r = exec_jail_uid(sandbox ? sandbox : c, &jail_uid);
	if (r < 0)
		return r;
	dir = strdup(sandbox ? sandbox->dir : c->dir);
	bundle = strdup(c->state->bundle ? c->state->bundle : ".");
	if (o->pid_file && *o->pid_file)
		pid_file = realpath_or_abs(o->pid_file);
	if (!dir || !bundle || (o->pid_file && *o->pid_file && !pid_file))
		return -ENOMEM;
	/* Nobody else may wait on the lock while the process runs. */
	container_free(TAKE_PTR(c));
	container_free(TAKE_PTR(sandbox));
	r = build_process(o, bundle, argv + 1, nargs, &proc);
	proc.container = member_pid;
	if (r >= 0)
		r = exec_proxy_run(&(struct exec_proxy_opts){.dir = dir,
		                                             .proc = &proc,
		                                             .console_socket = have_socket ? o->console_socket : NULL,
		                                             .pid_file = pid_file,
		                                             .detach = o->detach,
		                                             .jail_uid = jail_uid});
	proto_process_free(&proc);
	return r;
}

static int run_exec(struct cli_context *ctx, int argc, char **argv)
{
	struct exec_opts o = {0};
	const struct cli_flag flags[] = {
	    {"console-socket", NULL, CLI_STRING, &o.console_socket,
	     "path to an AF_UNIX socket which will receive a file descriptor referencing the master end of "
	     "the console's pseudoterminal"},
	    {"pidfd-socket", NULL, CLI_STRING, &o.pidfd_socket,
	     "path to an AF_UNIX socket which will receive a file descriptor referencing the exec process"},
	    {"cwd", NULL, CLI_STRING, &o.cwd, "current working directory in the container"},
	    {"env", "e", CLI_STRV, &o.env, "set environment variables"},
	    {"tty", "t", CLI_BOOL, &o.tty, "allocate a pseudo-TTY"},
	    {"user", "u", CLI_STRING, &o.user, "UID (format: <uid>[:<gid>])"},
	    {"additional-gids", "g", CLI_STRV, &o.gids, "additional gids"},
	    {"process", "p", CLI_STRING, &o.process, "path to the process.json"},
	    {"detach", "d", CLI_BOOL, &o.detach, "detach from the container's process"},
	    {"pid-file", NULL, CLI_STRING, &o.pid_file, "specify the file to write the process id to"},
	    {"process-label", NULL, CLI_STRING, &o.process_label,
	     "set the asm process label for the process commonly used with selinux"},
	    {"apparmor", NULL, CLI_STRING, &o.apparmor, "set the apparmor profile for the process"},
	    {"no-new-privs", NULL, CLI_BOOL, &o.no_new_privs, "set the no new privileges value for the process"},
	    {"cap", "c", CLI_STRV, &o.caps, "add a capability to the bounding set for the process"},
	    {"preserve-fds", NULL, CLI_UINT, &o.preserve_fds,
	     "Pass N additional file descriptors to the container (stdio + $LISTEN_FDS + N in total) "
	     "(default: 0)"},
	    {"cgroup", NULL, CLI_STRV, &o.cgroups,
	     "run the process in an (existing) sub-cgroup(s). Format is [<controller>:]<cgroup>."},
	    {"ignore-paused", NULL, CLI_BOOL, &o.ignore_paused, "allow exec in a paused container"},
	    CLI_FLAG_END,
	};
	int r, i;

	r = cli_parse_args(&cli_cmd_exec, flags, argc, argv, CLI_ARGS_MIN, 1, &i);
	if (r == 0) {
		r = exec_do(ctx, &o, argv + i, argc - i - 1);
		/* runc: a flag error exits 1, any later failure 255. */
		if (r < 0) {
			r = err_prefix(r, "exec failed");
			ctx->fail_status = 255;
		}
	}
	exec_opts_free(&o);
	return r == CLI_HELP_SHOWN ? 0 : r;
}

const struct cli_command cli_cmd_exec = {
    .name = "exec",
    .summary = "execute new process inside the container",
    .args = "<container-id> <command> [command options]  || -p process.json <container-id>",
    .text = "Where \"<container-id>\" is the name for the instance of the container and\n"
	    "\"<command>\" is the command to be executed in the container.\n"
	    "\"<command>\" can't be empty unless a \"-p\" flag provided.\n\n"
	    "EXAMPLE:\n"
	    "For example, if the container is configured to run the linux ps command the\n"
	    "following will output a list of processes running in the container:\n\n"
	    "       # kvrun exec <container-id> ps",
    .run = run_exec,
};
