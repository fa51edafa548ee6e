/* SPDX-License-Identifier: Apache-2.0 */
#include "runtime/cli/commands.h"

const struct cli_command *const cli_commands[] = {
    &cli_cmd_checkpoint, &cli_cmd_create,
    &cli_cmd_delete,     &cli_cmd_events,
    &cli_cmd_exec,       &cli_cmd_kill,
    &cli_cmd_list,       &cli_cmd_pause,
    &cli_cmd_ps,         &cli_cmd_restore,
    &cli_cmd_resume,     &cli_cmd_run,
    &cli_cmd_spec,       &cli_cmd_start,
    &cli_cmd_state,      &cli_cmd_update,
    &cli_cmd_features,   &cli_cmd_check,
    &cli_cmd_boot,       &cli_cmd_template,
    &cli_cmd_help,       NULL,
};
