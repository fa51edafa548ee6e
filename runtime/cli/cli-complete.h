/* SPDX-License-Identifier: Apache-2.0 */
/* Completion scripts for bash and zsh, written from the verbs and flags
 * `kvrun help --completion` collected (cli-doc.h). */
#ifndef KVRUN_RUNTIME_CLI_COMPLETE_H
#define KVRUN_RUNTIME_CLI_COMPLETE_H

#include <stdio.h>

#include "runtime/cli/cli-doc.h"

/* Write the completion script for shell ("bash" or "zsh") of what d holds.
 * -EINVAL with a message for another shell. */
int cli_complete_script(const struct cli_doc *d, const char *shell, FILE *f);

#endif
