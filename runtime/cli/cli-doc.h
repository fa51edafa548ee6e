/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Manual pages and shell completion from the tables `--help` prints: the
 * verbs (struct cli_command) and the flags each verb hands cli_parse().
 * `kvrun help --man [VERB]` and `kvrun help --completion bash|zsh` switch
 * the help printer (cli-help.h) to one of these formats and run the verbs'
 * --help, so there is one source for the help text, kvrun(8), kvrun-VERB(8)
 * and the completion scripts (docs/cli.md).
 */
#ifndef KVRUN_RUNTIME_CLI_DOC_H
#define KVRUN_RUNTIME_CLI_DOC_H

#include <stddef.h>
#include <stdio.h>

#include "runtime/cli/cli.h"

/* The paragraphs of `kvrun --help` before USAGE (text) and of kvrun(8)'s
 * DESCRIPTION. */
extern const char cli_doc_description[];
extern const char cli_doc_tagline[];

/* A verb (or a sub-command such as "template build") and its flags. */
struct cli_doc_verb {
	const struct cli_command *cmd;
	struct cli_flag *flags; /* copies; names and texts are static strings */
	size_t nflags;
};

/* What `kvrun help --completion` collects by running every verb's --help. */
struct cli_doc {
	const struct cli_command *const *table; /* every verb, from `kvrun --help` */
	struct cli_flag *globals;
	size_t nglobals;
	struct cli_doc_verb *verbs;
	size_t nverbs;
	int error; /* the first failure of cli_doc_collect(), or 0 */
};

/* Write the manual page of cmd with flags on f: a page of its own
 * (kvrun-<name>(8)), or a section of its parent's page when cmd's name has
 * a space ("template build"). */
void cli_doc_man_verb(const struct cli_command *cmd, const struct cli_flag *flags, FILE *f);

/* Write kvrun(8): the description, the verbs of table, the global flags,
 * and the files and environment an installed kvrun uses. */
void cli_doc_man_main(const struct cli_command *const *table, const struct cli_flag *globals, FILE *f);

/* Keep cmd and a copy of its flags in d (the verbs when cmd is NULL:
 * globals and the table). -ENOMEM, also kept in d->error. */
int cli_doc_collect(struct cli_doc *d, const struct cli_command *cmd, const struct cli_flag *flags,
                    const struct cli_command *const *table);

void cli_doc_free(struct cli_doc *d);

#endif
