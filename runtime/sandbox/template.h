/* SPDX-License-Identifier: Apache-2.0 */
/*
 * VM templates: a snapshot of a VM booted until guest-init said HELLO and
 * waits for START, from which `create` restores instead of booting a
 * kernel. A template is keyed by what shapes the VM: the kvrun build, the
 * kernel file (path, device, inode, size, mtime), the initramfs (size and
 * crc32 of its content, which holds any packed modules), the kernel command
 * line, whether ACPI describes the devices, vCPUs, RAM and the
 * devices (one root disk without media, the vsock device, N network
 * devices without a backend, whose queue pairs follow the vCPUs: see
 * sandbox_net_queue_pairs(), SANDBOX_TEMPLATE_SHARES virtio-fs slots
 * without a directory). A container uses the template with as many
 * network devices as its namespace has interfaces; their TAPs are attached
 * after the restore, and its shared directories to the first slots (one
 * with more shares than slots boots instead). Files in the plan's template_dir:
 *   <id>.snap   the snapshot (vmm/snapshot.h), written atomically
 *   <id>.key    the key's text, which a lookup compares in full
 * where <id> is 16 hex digits of a 64-bit FNV-1a hash of the key.
 */
#ifndef KVRUN_RUNTIME_TEMPLATE_H
#define KVRUN_RUNTIME_TEMPLATE_H

#include <stdio.h>

#include "runtime/sandbox/sandbox.h"
#include "runtime/sandbox/vm-config.h"

#define TEMPLATE_ID_LEN 16

/* The key of a VM of plan p with nics network interfaces: *ret_text
 * (malloc'd) and id (TEMPLATE_ID_LEN hex digits and a NUL). */
int template_key(const struct vm_plan *p, unsigned int nics, char **ret_text, char id[TEMPLATE_ID_LEN + 1]);

/* The template for p and nics: 1 and its snapshot path in *ret_path
 * (malloc'd), 0 when templates are off (p->use_templates) or there is
 * none. */
int template_find(const struct vm_plan *p, unsigned int nics, char **ret_path);

/* Boot a VM of plan p until guest-init waits for START, save it as the
 * template of (p, nics) and end it. console: guest console log, or NULL.
 * *ret_path (malloc'd, may be NULL) is the snapshot. Nothing is left on
 * failure. */
int template_build(const struct vm_plan *p, unsigned int nics, const char *console, char **ret_path);

/* The template for the VM of o (a container's: o->plan, with as many
 * network devices as o->net has interfaces): 1 and its snapshot in
 * *ret_path (malloc'd), or 0 (a cold boot; logged) when templates are off,
 * there is none, looking failed (a warning) or o has more shared
 * directories (o->nshares) than a template has slots. Apart from the
 * launch so that the file is known before the monitor's jail is made. */
int template_lookup(const struct sandbox_opts *o, char **ret_path);

/* The VM of o restored from the template at path, or booted
 * (sandbox_start()) when path is NULL. A damaged template file is an
 * error; one whose state KVM refuses costs a cold boot. With network
 * interfaces (o->net), the template is one with as many devices: after
 * the load each gets its link's TAP (its fds are then the device's, set to
 * -1 in o->net), and o->net->cfg.ifaces[i].dev_mac is set to the
 * template's MAC, which guest-init replaces with the interface's. A TAP
 * that cannot be attached is an error (no cold boot). o's shared
 * directories are attached to the template's first slots. */
int template_launch(const struct sandbox_opts *o, const char *path, struct sandbox **ret);

/* One line per template in dir on f: id, vCPUs, memory, network
 * devices, shared directory slots, size on disk, kernel. */
int template_list(const char *dir, FILE *f);

/* Remove the template with id from dir; -ENOENT when there is none. */
int template_remove(const char *dir, const char *id);

#endif
