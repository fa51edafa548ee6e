/* SPDX-License-Identifier: Apache-2.0 */
/* Manual pages (man(7) macros) from the verb and flag tables, and the
 * collection of those tables for the completion scripts. */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "runtime/cli/cli-doc.h"

const char cli_doc_tagline[] = "Open Container Initiative runtime that runs each container in a KVM virtual machine";

const char cli_doc_description[] = "kvrun is a command line client for running applications packaged according to\n"
				   "the Open Container Initiative (OCI) format. It accepts runc's commands and\n"
				   "flags; each container runs in its own lightweight virtual machine.\n"
				   "\n"
				   "Containers are configured using bundles. A bundle for a container is a directory\n"
				   "that includes a specification file named \"config.json\" and a root filesystem.\n"
				   "\n"
				   "To start a new instance of a container:\n"
				   "\n"
				   "    # kvrun run [ -b bundle ] <container-id>\n";

/* Text for roff: backslashes doubled, dashes as minus signs where they
 * start an option or follow one, and a line that would start with a
 * control character made safe. */
static void roff_text(const char *s, size_t len, FILE *f)
{
	bool line_start = true;

	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (line_start && (c == '.' || c == '\''))
			fputs("\\&", f);
		line_start = c == '\n';
		if (c == '\\')
			fputs("\\e", f);
		else if (c == '-' && (i == 0 || strchr(" \t\n[(|-\"'=,", s[i - 1])))
			fputs("\\-", f);
		else
			fputc(c, f);
	}
}

static void roff(const char *s, FILE *f)
{
	roff_text(s, strlen(s), f);
}

static void upper(const char *s, char space, FILE *f)
{
	for (; *s; s++)
		fputc(*s == ' ' ? space : toupper((unsigned char)*s), f);
}

/* "EXAMPLE:" on a line of its own is a sub-heading. */
static bool is_heading(const char *line, size_t len)
{
	if (len < 2 || line[len - 1] != ':')
		return false;
	for (size_t i = 0; i + 1 < len; i++)
		if (!isupper((unsigned char)line[i]) && line[i] != ' ')
			return false;
	return true;
}

/* A help text's lines: indented ones are kept as they are (examples,
 * command lines), blank ones separate paragraphs. */
static void man_text(const char *text, FILE *f)
{
	bool pre = false;

	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		bool indented = len > 0 && (line[0] == ' ' || line[0] == '\t');

		if (pre && !indented) {
			fputs(".fi\n.RE\n", f);
			pre = false;
		}
		if (len == 0) {
			if (!pre)
				fputs(".PP\n", f);
		} else if (is_heading(line, len)) {
			fputs(".SS ", f);
			roff_text(line, len - 1, f);
			fputc('\n', f);
		} else if (indented) {
			if (!pre)
				fputs(".RS 4\n.nf\n", f);
			pre = true;
			while (*line == ' ' || *line == '\t') {
				line++;
				len--;
			}
			roff_text(line, len, f);
			fputc('\n', f);
		} else {
			roff_text(line, len, f);
			fputc('\n', f);
		}
		line = nl ? nl + 1 : NULL;
	}
	if (pre)
		fputs(".fi\n.RE\n", f);
}

static void man_flag_name(const char *name, const struct cli_flag *fl, FILE *f)
{
	fputs("\\fB", f);
	fputs(strlen(name) == 1 ? "\\-" : "\\-\\-", f);
	roff(name, f);
	fputs("\\fR", f);
	if (fl->type == CLI_OPTSTRING)
		fputs("[=\\fIvalue\\fR]", f);
	else if (fl->type != CLI_BOOL)
		fputs(" \\fIvalue\\fR", f);
}

static void man_flags(const struct cli_flag *flags, FILE *f)
{
	for (const struct cli_flag *fl = flags; fl && fl->name; fl++) {
		fputs(".TP\n", f);
		man_flag_name(fl->name, fl, f);
		if (fl->alias) {
			fputs(", ", f);
			man_flag_name(fl->alias, fl, f);
		}
		fputc('\n', f);
		roff(fl->help ? fl->help : "", f);
		fputc('\n', f);
	}
}

static void man_synopsis(const struct cli_command *cmd, const struct cli_flag *flags, FILE *f)
{
	fputs(".B kvrun ", f);
	roff(cmd->name, f);
	fputc('\n', f);
	if (flags && flags->name)
		fputs("[\\fIcommand options\\fR]\n", f);
	if (!cmd->args || *cmd->args) {
		roff(cmd->args ? cmd->args : "[arguments...]", f);
		fputc('\n', f);
	}
}

void cli_doc_man_verb(const struct cli_command *cmd, const struct cli_flag *flags, FILE *f)
{
	bool sub = strchr(cmd->name, ' ') != NULL;

	if (sub) {
		/* A sub-command: a section of its parent's page. */
		fputs(".SH \"", f);
		upper(cmd->name, ' ', f);
		fputs("\"\n", f);
		roff(cmd->summary, f);
		fputs(".\n.PP\n", f);
	} else {
		fputs(".TH \"KVRUN-", f);
		upper(cmd->name, '-', f);
		fputs("\" \"8\" \"\" \"kvrun " KVRUN_VERSION "\" \"kvrun manual\"\n", f);
		fputs(".SH NAME\nkvrun\\-", f);
		roff(cmd->name, f);
		fputs(" \\- ", f);
		roff(cmd->summary, f);
		fputs("\n.SH SYNOPSIS\n", f);
	}
	man_synopsis(cmd, flags, f);
	if (cmd->text) {
		fputs(sub ? ".PP\n" : ".SH DESCRIPTION\n", f);
		man_text(cmd->text, f);
	}
	if (flags && flags->name) {
		fputs(sub ? ".SS OPTIONS\n" : ".SH OPTIONS\n", f);
		man_flags(flags, f);
	}
	if (!sub && cmd->alias) {
		fputs(".SH ALIAS\n.B kvrun ", f);
		roff(cmd->alias, f);
		fputc('\n', f);
	}
}

static void man_files(FILE *f)
{
	fputs(".SH FILES\n.TP\n.I " KVRUN_DATADIR "/kernel/vmlinux\n"
	      "The guest kernel when no other is named (kernel/build.sh installs it).\n"
	      ".TP\n.I " KVRUN_LIBEXECDIR "/kvrun\\-init\n"
	      "The guest's init, packed into the initramfs kvrun builds.\n"
	      ".TP\n.I /etc/kvrun/config.json\n"
	      "kvrun's configuration: kernel, initrd, memory, cpus, templates, early_create.\n"
	      ".TP\n.I /run/kvrun\n"
	      "The default state directory (\\-\\-root).\n"
	      ".TP\n.I /var/lib/kvrun/templates\n"
	      "VM templates (kvrun template).\n"
	      ".TP\n.I /var/cache/kvrun\n"
	      "Built initramfs images and root disk images.\n",
	      f);
	fputs(".SH ENVIRONMENT\n.TP\n.B KVRUN_KERNEL\nThe guest kernel, below the io.kvrun.kernel annotation "
	      "and \\-\\-kernel.\n.TP\n.B KVRUN_CONFIG\nAnother configuration file.\n.TP\n.B KVRUN_INIT\nAnother "
	      "kvrun\\-init.\n",
	      f);
}

void cli_doc_man_main(const struct cli_command *const *table, const struct cli_flag *globals, FILE *f)
{
	fputs(".TH \"KVRUN\" \"8\" \"\" \"kvrun " KVRUN_VERSION "\" \"kvrun manual\"\n.SH NAME\nkvrun \\- ", f);
	roff(cli_doc_tagline, f);
	fputs("\n.SH SYNOPSIS\n.B kvrun\n[\\fIglobal options\\fR] \\fIcommand\\fR [\\fIcommand options\\fR] "
	      "[\\fIarguments...\\fR]\n.SH DESCRIPTION\n",
	      f);
	man_text(cli_doc_description, f);
	fputs(".SH COMMANDS\n", f);
	for (size_t i = 0; table && table[i]; i++) {
		fputs(".TP\n.B ", f);
		roff(table[i]->name, f);
		if (table[i]->alias) {
			fputs(", ", f);
			roff(table[i]->alias, f);
		}
		fputc('\n', f);
		roff(table[i]->summary, f);
		fputs(": \\fBkvrun\\-", f);
		roff(table[i]->name, f);
		fputs("\\fR(8)\n", f);
	}
	fputs(".SH GLOBAL OPTIONS\n", f);
	man_flags(globals, f);
	man_files(f);
	fputs(".SH SEE ALSO\n", f);
	for (size_t i = 0; table && table[i]; i++) {
		fputs(".BR kvrun\\-", f);
		roff(table[i]->name, f);
		fputs(" (8)", f);
		fputs(table[i + 1] ? ",\n" : "\n", f);
	}
}

static int flags_copy(const struct cli_flag *flags, struct cli_flag **ret, size_t *ret_n)
{
	size_t n = 0;

	while (flags && flags[n].name)
		n++;
	*ret = calloc(n + 1, sizeof(**ret));
	if (!*ret)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		(*ret)[i] = flags[i];
		(*ret)[i].ptr = NULL;
	}
	*ret_n = n;
	return 0;
}

int cli_doc_collect(struct cli_doc *d, const struct cli_command *cmd, const struct cli_flag *flags,
                    const struct cli_command *const *table)
{
	struct cli_doc_verb *v;

	if (!cmd) {
		free(d->globals);
		d->globals = NULL;
		d->table = table;
		if (flags_copy(flags, &d->globals, &d->nglobals) < 0)
			return d->error = -ENOMEM;
		return 0;
	}
	v = reallocarray(d->verbs, d->nverbs + 1, sizeof(*v));
	if (!v)
		return d->error = -ENOMEM;
	d->verbs = v;
	v = &d->verbs[d->nverbs];
	v->cmd = cmd;
	if (flags_copy(flags, &v->flags, &v->nflags) < 0)
		return d->error = -ENOMEM;
	d->nverbs++;
	return 0;
}

void cli_doc_free(struct cli_doc *d)
{
	for (size_t i = 0; i < d->nverbs; i++)
		free(d->verbs[i].flags);
	free(d->verbs);
	free(d->globals);
	*d = (struct cli_doc){0};
}
