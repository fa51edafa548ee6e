/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun boot`: the VMM's debug entry point (boot a kernel, no container). */
#ifndef KVRUN_RUNTIME_CMD_BOOT_H
#define KVRUN_RUNTIME_CMD_BOOT_H

/* argv[0] is "boot"; parses its own flags (--kernel, --initrd, --cmdline,
 * --cpus, --memory, --console, ...). Returns the process exit status. Global
 * flags (--debug, --log, --log-format) were applied by the caller. */
int cmd_boot(int argc, char **argv);

#endif
