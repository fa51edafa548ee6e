/* SPDX-License-Identifier: Apache-2.0 */
/* Help texts laid out as runc's (urfave/cli v1) so that users and scripts
 * that read `runc <cmd> --help` find the same sections here. */
#include <string.h>

#include "runtime/cli/cli-args.h"
#include "runtime/cli/commands.h"

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

	if (!cmd->name || !*cmd->name) { /* the global options */
		cli_print_main_help(flags, f);
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
