/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A VM's shared directory slots (virtio-fs devices, virtio/fs/fs.h) while
 * it runs: made with the VM (sandbox.c), each with a directory or without
 * one (a template's, a pod's spare slots), given one (a pod's app
 * container's) and freed again once the guest has unmounted it, for the
 * next.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include "common/error.h"
#include "runtime/sandbox/sandbox-int.h"
#include "runtime/sandbox/sandbox.h"
#include "virtio/fs/fs.h"

int sandbox_share_add(struct sandbox *s, const struct sandbox_share *sh, char *tag, size_t size)
{
	for (unsigned int i = 0; i < s->nshares; i++) {
		int r;

		if (virtio_fs_attached(s->shares[i]))
			continue;
		r = sandbox_share_attach(s, i, sh);
		if (r < 0)
			return r;
		snprintf(tag, size, "%s", virtio_fs_tag(s->shares[i]));
		return (int)i;
	}
	return err_set(-ENOSPC, "shared directory %s: the VM's %u shared directory slots are all taken", sh->dir,
	               s->nshares);
}

int sandbox_share_release(struct sandbox *s, unsigned int i)
{
	if (i >= s->nshares)
		return err_set(-ENOENT, "shared directory slot %u: the VM has %u", i, s->nshares);
	return virtio_fs_detach(s->shares[i]);
}

int sandbox_shares_prestart(struct sandbox *s, uint32_t workers, int (*thread_init)(void *opaque), void *opaque)
{
	for (unsigned int i = 0; i < s->nshares; i++) {
		int r;

		if (virtio_fs_attached(s->shares[i]))
			continue;
		r = virtio_fs_prestart(s->shares[i], workers, thread_init, opaque);
		if (r < 0)
			return err_prefix(r, "shared directory slot %s", virtio_fs_tag(s->shares[i]));
	}
	return 0;
}

unsigned int sandbox_shares_free(const struct sandbox *s)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < s->nshares; i++)
		n += !virtio_fs_attached(s->shares[i]);
	return n;
}

int sandbox_shares_event_fd(const struct sandbox *s)
{
	return s->shares_event_fd;
}
