/* SPDX-License-Identifier: Apache-2.0 */
/* What sandbox.c (a booted VM) shares with sandbox-snapshot.c (a saved or
 * restored one). */
#ifndef KVRUN_RUNTIME_SANDBOX_INT_H
#define KVRUN_RUNTIME_SANDBOX_INT_H

#include "runtime/sandbox/sandbox.h"
#include "virtio/net/net.h"

/* A zeroed sandbox with every fd -1; NULL without memory. */
struct sandbox *sandbox_alloc(void);

/* Open the console log at path (NULL: none) into s->console_fd. */
int sandbox_open_console(struct sandbox *s, const char *path);

/* Put transport m at virtio slot n (window, interrupt line, doorbell);
 * *ret_frag is its kernel command-line fragment (malloc'd). */
int sandbox_attach(struct sandbox *s, unsigned int n, struct virtio_mmio *m, char **ret_frag);

/* The root disk (slot 0; without media when o->disk is NULL) and the vsock
 * device (slot 1), fragments into frags[0] and frags[1]. */
int sandbox_add_disk_vsock(struct sandbox *s, const struct sandbox_opts *o, char **frags);

/* The network devices (slots SANDBOX_SLOT_NET...): one per interface of
 * o->net over its TAP, or o->template_nics without a backend; fragments
 * into frags[SANDBOX_SLOT_NET + i]. */
int sandbox_add_nets(struct sandbox *s, const struct sandbox_opts *o, char **frags);

/* Network device i (slot SANDBOX_SLOT_NET + i) made by
 * virtio_net_new_detached() with no: a template's, or a checkpoint's as it
 * was saved; *ret_frag as for sandbox_attach(). */
int sandbox_add_detached_net(struct sandbox *s, unsigned int i, const struct virtio_net_opts *no, char **ret_frag);

/* Whether a checkpoint whose network devices were saved with saved[0..
 * nr_saved) can be restored with cfg's interfaces (NULL: none): as many,
 * and none with a larger MTU than its device (the guest's driver took that
 * as its maximum). 0, or -EINVAL with err_set() naming both counts or the
 * interface. */
int sandbox_check_saved_nets(const struct virtio_net_opts *saved, unsigned int nr_saved, const struct net_config *cfg);

#endif
