/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The dispatch table of the kvrun command line: every verb (cli.h) in
 * `kvrun --help` order. Nothing in the library refers to it: main() hands
 * it to the verbs in struct cli_context (help needs it), so the verbs do
 * not depend on each other.
 */
#ifndef KVRUN_RUNTIME_COMMANDS_H
#define KVRUN_RUNTIME_COMMANDS_H

#include "runtime/cli/cli.h"

/* NULL-terminated, in help order. */
extern const struct cli_command *const cli_commands[];

#endif
