/* SPDX-License-Identifier: Apache-2.0 */
/* What sandbox.c (building a VM, booting it) shares with sandbox-snapshot.c
 * (a saved or restored one) and sandbox-shares.c (its shared directory
 * slots). */
#ifndef KVRUN_RUNTIME_SANDBOX_INT_H
#define KVRUN_RUNTIME_SANDBOX_INT_H

#include "runtime/sandbox/sandbox.h"
#include "virtio/net/net.h"

/* A zeroed sandbox with every fd -1; NULL without memory. */
struct sandbox *sandbox_alloc(void);

/* Make the VM of shape cfg and its devices as o says (sandbox.h has the
 * order), without booting anything. The network devices are o->net's
 * (over its TAPs), o->template_nics without a backend, or, when saved is
 * not NULL, nr_saved without a backend made as saved[] says (a
 * checkpoint's). */
int sandbox_make(struct sandbox *s, const struct sandbox_opts *o, const struct vm_config *cfg,
                 const struct virtio_net_opts *saved, unsigned int nr_saved);

/* Give slot i (a virtio-fs device without a directory) the shared
 * directory sh. */
int sandbox_share_attach(struct sandbox *s, unsigned int i, const struct sandbox_share *sh);

/* Whether a checkpoint whose network devices were saved with saved[0..
 * nr_saved) can be restored with cfg's interfaces (NULL: none): as many,
 * and none with a larger MTU than its device (the guest's driver took that
 * as its maximum). 0, or -EINVAL with err_set() naming both counts or the
 * interface. */
int sandbox_check_saved_nets(const struct virtio_net_opts *saved, unsigned int nr_saved, const struct net_config *cfg);

#endif
