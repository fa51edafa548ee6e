/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun exec <id> <command>...` or `kvrun exec -p process.json <id>`: run
 * another process in a container. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "oci-spec/spec.h"
#include "runtime/commands.h"
#include "runtime/state.h"

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

/* Everything after the flags; errors read "exec failed: ..." as runc's. */
static int exec_do(struct cli_context *ctx, const struct exec_opts *o, char *id, int nargs)
{
	_cleanup_container_ struct container *c = NULL;
	bool terminal = false, have_socket;
	int r;

	/* The process is checked before the lookup, so that a mistake in it is
	 * reported whatever the state of the container. */
	r = check_process(o, nargs, &terminal);
	if (r < 0)
		return r;
	have_socket = o->console_socket && *o->console_socket;
	if (terminal && o->detach && !have_socket)
		return err_set(-EINVAL, "cannot allocate tty if kvrun will detach without setting console socket");
	if (!terminal && have_socket)
		return err_set(-EINVAL, "cannot use console socket if kvrun will not detach or allocate tty");
	r = cli_load_container(ctx, id, o->ignore_paused ? CONTAINER_OP_EXEC_IGNORE_PAUSED : CONTAINER_OP_EXEC, &c);
	if (r < 0)
		return r;
	return cli_not_implemented("exec", "running a process in a container's VM");
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
		r = exec_do(ctx, &o, argv[i], argc - i - 1);
		if (r < 0)
			r = err_prefix(r, "exec failed");
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
