/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun boot --jail`: the monitor's jail (runtime/host/jail.h) around a
 * bare VM. */
#ifndef KVRUN_RUNTIME_CLI_BOOT_JAIL_H
#define KVRUN_RUNTIME_CLI_BOOT_JAIL_H

#include "runtime/host/jail.h"
#include "runtime/sandbox/sandbox.h"

/* The paths of the VM, made absolute (owned), and the descriptors opened
 * before the jail: the shared directories and /proc/self/fd (owned). */
struct boot_jail {
	char *paths[SANDBOX_MAX_DISKS + 5];
	unsigned int n;
	int fds[SANDBOX_MAX_SHARES + 1];
	unsigned int nfds;
};

/* Make the jail of the VM of vm (and *restore_path, or NULL) and take its
 * build filter: its files bound at their absolute paths (vm's paths are
 * changed to them), the vsock device's directory as the state directory,
 * a uid of its own, a new network namespace. vm's shared directories are
 * opened first (vm->shares[i].dir_fd and proc_fd are set) and the jail
 * keeps a file server's capabilities and calls. Call before the VM's
 * threads exist; jail_finish() after the build. */
int boot_jail_enter(struct boot_jail *bj, struct sandbox_opts *vm, const char **restore_path, struct jail **ret);

void boot_jail_done(struct boot_jail *bj);

#endif
