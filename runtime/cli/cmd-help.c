/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun help [command]`, and the manual pages and completion scripts
 * written from the same tables (`--man`, `--completion`, cli-doc.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "runtime/cli/cli-args.h"
#include "runtime/cli/cli-complete.h"
#include "runtime/cli/cli-doc.h"
#include "runtime/cli/cli-global.h"
#include "runtime/cli/cli-help.h"

/* Run cmd's --help (which prints through cli-help.c's current format). */
static int verb_help(struct cli_context *ctx, const struct cli_command *cmd)
{
	char help_flag[] = "--help";
	char *sub_argv[3] = {(char *)cmd->name, help_flag, NULL};

	return cmd->run(ctx, 2, sub_argv);
}

/* Every verb's --help collected, then the script for shell. */
static int completion(struct cli_context *ctx, const char *shell)
{
	struct cli_doc doc = {0};
	int r = 0;

	if (strcmp(shell, "bash") && strcmp(shell, "zsh"))
		return cli_complete_script(&doc, shell, stdout);
	cli_help_set_format(CLI_HELP_COLLECT, &doc);
	cli_global_print_help(ctx->commands, stdout);
	for (size_t i = 0; ctx->commands[i] && r >= 0; i++)
		r = verb_help(ctx, ctx->commands[i]);
	cli_help_set_format(CLI_HELP_TEXT, NULL);
	if (r >= 0 && doc.error < 0)
		r = doc.error;
	if (r >= 0)
		r = cli_complete_script(&doc, shell, stdout);
	cli_doc_free(&doc);
	return r < 0 ? r : 0;
}

static int run_help(struct cli_context *ctx, int argc, char **argv)
{
	const char *shell = NULL;
	bool man = false;
	const struct cli_flag flags[] = {
	    {"man", NULL, CLI_BOOL, &man, "print the manual page of the command (kvrun(8) without one), as troff"},
	    {"completion", NULL, CLI_STRING, &shell, "print the completion script for this shell (bash or zsh)"},
	    CLI_FLAG_END,
	};
	const struct cli_command *cmd;
	int r, i;

	r = cli_parse_args(&cli_cmd_help, flags, argc, argv, CLI_ARGS_MAX, 1, &i);
	if (r != 0)
		return r < 0 ? r : 0;
	if (shell)
		return i < argc ? err_set(-EINVAL, "--completion takes no command") : completion(ctx, shell);
	cmd = i < argc ? cli_command_find(ctx->commands, argv[i]) : NULL;
	if (i < argc && !cmd)
		return err_set(-EINVAL, "No help topic for '%s'", argv[i]);
	if (man)
		cli_help_set_format(CLI_HELP_MAN, NULL);
	/* Each verb prints its own help, flags included. */
	if (cmd)
		r = verb_help(ctx, cmd);
	else
		cli_global_print_help(ctx->commands, stdout);
	cli_help_set_format(CLI_HELP_TEXT, NULL);
	return r;
}

const struct cli_command cli_cmd_help = {
    .name = "help",
    .alias = "h",
    .summary = "Shows a list of commands or help for one command",
    .args = "[command]",
    .run = run_help,
};
