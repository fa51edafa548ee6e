/* SPDX-License-Identifier: Apache-2.0 */
/* Help texts laid out as runc's (urfave/cli v1) so that users and scripts
 * that read `runc <cmd> --help` find the same sections here. */
#include <string.h>

#include "config.h"

#include "runtime/cli/cli-doc.h"
#include "runtime/cli/cli-help.h"

static enum cli_help_format help_format = CLI_HELP_TEXT;
static struct cli_doc *help_doc;

void cli_help_set_format(enum cli_help_format fmt, struct cli_doc *doc)
{
	help_format = fmt;
	help_doc = doc;
}

enum cli_help_format cli_help_get_format(void)
{
	return help_format;
}

/* "--name value, -n value": one dash for one-letter names, as urfave does. */
static int flag_label(const struct cli_flag *f, char *buf, size_t size)
{
	const char *val = f->type == CLI_BOOL ? "" : f->type == CLI_OPTSTRING ? "[=value]" : " value";
	int n;

	n = snprintf(buf, size, "%s%s%s", strlen(f->name) == 1 ? "-" : "--", f->name, val);
	if (f->alias && n >= 0 && (size_t)n < size)
		n += snprintf(buf + n, size - (size_t)n, ", %s%s%s", strlen(f->alias) == 1 ? "-" : "--", f->alias, val);
	return n;
}

void cli_print_flags(const struct cli_flag *flags, FILE *f)
{
	char label[128];
	int width = 0;

	for (const struct cli_flag *fl = flags; fl && fl->name; fl++) {
		int n = flag_label(fl, label, sizeof(label));

		if (n > width)
			width = n;
	}
	for (const struct cli_flag *fl = flags; fl && fl->name; fl++) {
		flag_label(fl, label, sizeof(label));
		fprintf(f, "   %-*s  %s\n", width, label, fl->help ? fl->help : "");
	}
}

void cli_print_help(const struct cli_command *cmd, const struct cli_flag *flags, FILE *f)
{
	bool has_flags = flags && flags->name;

	if (help_format == CLI_HELP_MAN) {
		cli_doc_man_verb(cmd, flags, f);
		return;
	}
	if (help_format == CLI_HELP_COLLECT) {
		if (help_doc)
			cli_doc_collect(help_doc, cmd, flags, NULL);
		return;
	}
	fprintf(f, "NAME:\n   kvrun %s - %s\n\n", cmd->name, cmd->summary);
	fprintf(f, "USAGE:\n   kvrun %s%s%s%s\n", cmd->name, has_flags ? " [command options]" : "",
	        cmd->args && !*cmd->args ? "" : " ", cmd->args ? cmd->args : "[arguments...]");
	if (cmd->text)
		fprintf(f, "\n%s\n", cmd->text);
	if (has_flags) {
		fprintf(f, "\nOPTIONS:\n");
		cli_print_flags(flags, f);
	}
}

void cli_print_main_help(const struct cli_command *const *table, const struct cli_flag *global_flags, FILE *f)
{
	int width = 0;

	if (help_format == CLI_HELP_MAN) {
		cli_doc_man_main(table, global_flags, f);
		return;
	}
	if (help_format == CLI_HELP_COLLECT) {
		if (help_doc)
			cli_doc_collect(help_doc, NULL, global_flags, table);
		return;
	}
	fprintf(f, "NAME:\n   kvrun - %s\n\n%s\n", cli_doc_tagline, cli_doc_description);
	fprintf(f, "USAGE:\n   kvrun [global options] command [command options] [arguments...]\n\n");
	fprintf(f, "VERSION:\n   %s\ncommit: %s\nspec: %s\n\n", KVRUN_VERSION, KVRUN_COMMIT, KVRUN_OCI_VERSION);
	for (size_t i = 0; table && table[i]; i++) {
		const struct cli_command *c = table[i];
		int n = (int)strlen(c->name) + (c->alias ? (int)strlen(c->alias) + 2 : 0);

		if (n > width)
			width = n;
	}
	fprintf(f, "COMMANDS:\n");
	for (size_t i = 0; table && table[i]; i++) {
		const struct cli_command *c = table[i];
		char label[64];

		snprintf(label, sizeof(label), "%s%s%s", c->name, c->alias ? ", " : "", c->alias ? c->alias : "");
		fprintf(f, "   %-*s  %s\n", width, label, c->summary);
	}
	fprintf(f, "\nGLOBAL OPTIONS:\n");
	cli_print_flags(global_flags, f);
}
