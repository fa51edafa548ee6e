/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <string.h>

#include "common/error.h"
#include "config.h"
#include "runtime/cli/commands.h"
#include "runtime/store/state.h"

const struct cli_command *const cli_commands[] = {
    &cli_cmd_checkpoint, &cli_cmd_create,   &cli_cmd_delete,
    &cli_cmd_events,     &cli_cmd_exec,     &cli_cmd_kill,
    &cli_cmd_list,       &cli_cmd_pause,    &cli_cmd_ps,
    &cli_cmd_restore,    &cli_cmd_resume,   &cli_cmd_run,
    &cli_cmd_spec,       &cli_cmd_start,    &cli_cmd_state,
    &cli_cmd_update,     &cli_cmd_features, &cli_cmd_boot,
    &cli_cmd_template,   &cli_cmd_help,     NULL,
};

const struct cli_command *cli_command_find(const char *name)
{
	for (size_t i = 0; cli_commands[i]; i++) {
		const struct cli_command *c = cli_commands[i];

		if (!strcmp(c->name, name) || (c->alias && !strcmp(c->alias, name)))
			return c;
	}
	return NULL;
}

void cli_print_main_help(const struct cli_flag *global_flags, FILE *f)
{
	int width = 0;

	fprintf(f, "NAME:\n   kvrun - Open Container Initiative runtime that runs each container in a KVM virtual "
	           "machine\n\n");
	fprintf(f, "kvrun is a command line client for running applications packaged according to\n"
	           "the Open Container Initiative (OCI) format. It accepts runc's commands and\n"
	           "flags; each container runs in its own lightweight virtual machine.\n\n"
	           "Containers are configured using bundles. A bundle for a container is a directory\n"
	           "that includes a specification file named \"config.json\" and a root filesystem.\n\n"
	           "To start a new instance of a container:\n\n"
	           "    # kvrun run [ -b bundle ] <container-id>\n\n");
	fprintf(f, "USAGE:\n   kvrun [global options] command [command options] [arguments...]\n\n");
	fprintf(f, "VERSION:\n   %s\ncommit: %s\nspec: %s\n\n", KVRUN_VERSION, KVRUN_COMMIT, KVRUN_OCI_VERSION);
	for (size_t i = 0; cli_commands[i]; i++) {
		const struct cli_command *c = cli_commands[i];
		int n = (int)strlen(c->name) + (c->alias ? (int)strlen(c->alias) + 2 : 0);

		if (n > width)
			width = n;
	}
	fprintf(f, "COMMANDS:\n");
	for (size_t i = 0; cli_commands[i]; i++) {
		const struct cli_command *c = cli_commands[i];
		char label[64];

		snprintf(label, sizeof(label), "%s%s%s", c->name, c->alias ? ", " : "", c->alias ? c->alias : "");
		fprintf(f, "   %-*s  %s\n", width, label, c->summary);
	}
	fprintf(f, "\nGLOBAL OPTIONS:\n");
	cli_print_flags(global_flags, f);
}

int cli_not_implemented(const char *verb, const char *what)
{
	return err_set(-ENOTSUP, "%s: %s is not implemented yet", verb, what);
}

int cli_load_container(struct cli_context *ctx, const char *id, int op, struct container **ret)
{
	_cleanup_container_ struct container *c = NULL;
	int r;

	r = container_load(ctx->root, id, true, &c);
	if (r < 0)
		return r;
	r = container_check((enum container_op)op, c->state->status, id);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(c);
	return 0;
}

int cli_check_new_id(struct cli_context *ctx, const char *id)
{
	struct container *c;
	int r;

	r = container_id_validate(id);
	if (r < 0)
		return r;
	r = container_load(ctx->root, id, false, &c);
	if (r == -ENOENT) {
		err_clear();
		return 0;
	}
	if (r < 0)
		return r;
	container_free(c);
	return err_set(-EEXIST, "container with id exists: %s", id);
}
