/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "runtime/cli/boot-jail.h"

/* *p made absolute (the jail binds each file at its path, and its cwd is
 * its root); the string is kept in bj. */
static int absolute(struct boot_jail *bj, const char **p)
{
	char *abs;

	if (!*p)
		return 0;
	abs = realpath(*p, NULL);
	if (!abs)
		return err_setsys(-errno, "%s", *p);
	bj->paths[bj->n++] = abs;
	*p = abs;
	return 0;
}

/* The vsock device's directory becomes the jail's state directory: its
 * sockets are reached there (it must be searchable, and the sockets the
 * guest connects to writable, by the jail's uid). */
static int jail_vsock(struct boot_jail *bj, struct sandbox_opts *vm, struct jail_config *c)
{
	_cleanup_free_ char *parent = NULL;
	const char *slash;
	char *dir, *in_jail;

	if (!vm->vsock_path)
		return 0;
	slash = strrchr(vm->vsock_path, '/');
	parent = slash ? strndup(vm->vsock_path, (size_t)(slash - vm->vsock_path)) : strdup(".");
	if (!parent)
		return -ENOMEM;
	dir = realpath(*parent ? parent : "/", NULL);
	if (!dir)
		return err_setsys(-errno, "--vsock: %s", *parent ? parent : "/");
	bj->paths[bj->n++] = dir;
	c->state_dir = dir;
	c->state_dir_writable = true;
	if (asprintf(&in_jail, "%s/%s", JAIL_STATE_DIR, slash ? slash + 1 : vm->vsock_path) < 0)
		return -ENOMEM;
	bj->paths[bj->n++] = in_jail;
	vm->vsock_path = in_jail;
	return 0;
}

/* The shared directories, opened while the host is visible: their
 * servers reach nothing by path in the jail. */
static int open_shares(struct boot_jail *bj, struct sandbox_opts *vm)
{
	int proc_fd, fd;

	if (!vm->nshares)
		return 0;
	proc_fd = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (proc_fd < 0)
		return err_setsys(-errno, "open /proc/self/fd");
	bj->fds[bj->nfds++] = proc_fd;
	for (unsigned int i = 0; i < vm->nshares; i++) {
		fd = open(vm->shares[i].dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return err_setsys(-errno, "--share %s: %s", vm->shares[i].tag, vm->shares[i].dir);
		bj->fds[bj->nfds++] = fd;
		vm->shares[i].dir_fd = fd;
		vm->shares[i].proc_fd = proc_fd;
	}
	return 0;
}

/* The monitor's jail around this VM: what it reads bound at absolute
 * paths, a uid of its own, a new network namespace. */
int boot_jail_enter(struct boot_jail *bj, struct sandbox_opts *vm, const char **restore_path, struct jail **ret)
{
	struct jail_config c = {
	    .profile = JAIL_MONITOR, .devices = true, .net = JAIL_NET_NEW, .file_server = vm->nshares > 0};
	struct boot_config *b = &vm->boot;
	unsigned long base;
	int r;

	r = jail_uid_base(&base);
	if (r < 0)
		return r;
	jail_ids_for(base, getpid(), &c.uid, &c.gid);
	r = absolute(bj, &b->kernel_path);
	if (r >= 0)
		r = absolute(bj, &b->initrd_path);
	if (r >= 0)
		r = absolute(bj, restore_path);
	for (unsigned int d = 0; r >= 0 && d < vm->ndisks; d++)
		r = absolute(bj, &vm->disks[d].path);
	if (r >= 0)
		r = jail_vsock(bj, vm, &c);
	if (r >= 0)
		r = open_shares(bj, vm);
	if (r >= 0)
		r = jail_config_bind(&c, b->kernel_path, false);
	if (r >= 0)
		r = jail_config_bind(&c, b->initrd_path, false);
	if (r >= 0)
		r = jail_config_bind(&c, *restore_path, false);
	for (unsigned int d = 0; r >= 0 && d < vm->ndisks; d++)
		r = jail_config_bind(&c, vm->disks[d].path, !vm->disks[d].read_only);
	if (r >= 0)
		r = jail_mount(&c, ret);
	if (r < 0)
		return r;
	/* The file server's threads alone keep its capabilities (jail.h). */
	for (unsigned int i = 0; i < vm->nshares; i++) {
		vm->shares[i].thread_init = jail_fs_thread;
		vm->shares[i].thread_opaque = *ret;
	}
	return jail_begin(*ret);
}

void boot_jail_done(struct boot_jail *bj)
{
	for (unsigned int i = 0; i < bj->n; i++)
		free(bj->paths[i]);
	bj->n = 0;
	for (unsigned int i = 0; i < bj->nfds; i++)
		close(bj->fds[i]);
	bj->nfds = 0;
}
