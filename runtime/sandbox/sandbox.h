/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A container's VM as the monitor builds it: guest RAM and vCPUs, the
 * platform devices, the root disk (virtio-blk) and the host-guest channel
 * (virtio-vsock with unix-socket backends), one virtio-net per interface
 * of the container's network namespace (TAP backends, runtime/host/netns.h),
 * booted with kvrun-init.
 */
#ifndef KVRUN_RUNTIME_SANDBOX_H
#define KVRUN_RUNTIME_SANDBOX_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/host/netns.h"
#include "runtime/sandbox/vm-config.h"
#include "virtio/mmio.h"
#include "vmm/irq.h"
#include "vmm/vm.h"

/* The guest's vsock CID (any value >= 3: each VM has its own device). */
#define SANDBOX_GUEST_CID 3
/* Slots: 0 root disk, 1 vsock, then one per network interface. */
#define SANDBOX_SLOT_NET 2
#define SANDBOX_NR_VIRTIO (SANDBOX_SLOT_NET + NET_CONFIG_MAX_IFACES)

struct sandbox_opts {
	const struct vm_plan *plan;
	const char *disk; /* root disk image; NULL: a disk without media (templates) */
	const char *disk_base; /* disk is a copy-on-write overlay of this base, or NULL */
	bool disk_read_only;
	const char *vsock_path; /* host side: guest port P reaches <vsock_path>_P */
	const char *console_path; /* guest console log, NULL: off */
	/* From netns_setup(), or NULL (loopback only). The TAP fds of each
	 * link a device took are set to -1 here (the device owns them). */
	struct netns_setup *net;
	bool no_vhost; /* userspace data path even with /dev/vhost-net */
	/* A template's VM (net must be NULL): this many network devices
	 * without a backend (link down), sandbox_template_mac(i) as MAC,
	 * SANDBOX_TEMPLATE_MTU, sandbox_net_queue_pairs() pairs. */
	unsigned int template_nics;
};

/* The MTU of a template's network devices: the most an interface can have,
 * so that whatever MTU a container's interface asks for, the guest's
 * driver (which took the device's MTU as its maximum at probe) allows it;
 * guest-init sets the container's. */
#define SANDBOX_TEMPLATE_MTU 65535

/* The MAC of network device i of a template (locally administered
 * 02:6b:76:74:00:<i>); guest-init changes it to the container's. */
void sandbox_template_mac(unsigned int i, uint8_t mac[6]);

/* Queue pairs of each network device of a VM of plan p: one per vCPU (each
 * can send without contention), at most NET_MAX_QUEUE_PAIRS. */
unsigned int sandbox_net_queue_pairs(const struct vm_plan *p);

struct sandbox {
	struct vm *vm;
	struct platform *platform;
	struct serial *serial;
	struct virtio_blk *blk;
	struct virtio_vsock *vsock;
	struct virtio_net *nets[NET_CONFIG_MAX_IFACES];
	unsigned int nr_nets;
	struct irq_line lines[SANDBOX_NR_VIRTIO];
	int notify_fds[SANDBOX_NR_VIRTIO];
	/* Per-queue doorbells of the net devices that vhost-net serves. */
	int net_doorbells[NET_CONFIG_MAX_IFACES][VIRTIO_MMIO_MAX_QUEUES];
	int console_fd;
};

/* Build the VM and boot it (vCPUs running on return). On failure
 * everything built is freed and err_msg() says what failed. */
int sandbox_start(const struct sandbox_opts *o, struct sandbox **ret);

/* Restore the VM saved in the snapshot at path (vm_snapshot_open()
 * flags), with o's devices, and start the vCPUs. A template's root disk was
 * saved without media and gets o->disk after the load; a checkpoint's is
 * created with it. A checkpoint's network devices are made as saved (MAC,
 * MTU, queue pairs), without a backend, loaded, then given the TAPs of
 * o->net's links as a template's are (sandbox_launch()): o->net must have
 * as many interfaces as the checkpoint has devices, none with a larger MTU,
 * and o->net->cfg.ifaces[i].dev_mac is set to the device's MAC. The guest
 * sees its vsock streams reset (guest-init connects again). On failure
 * nothing is left and err_msg() says what failed. */
int sandbox_restore(const struct sandbox_opts *o, const char *path, unsigned int flags, bool template,
                    struct sandbox **ret);

/* sandbox_restore() from the template for o's VM (runtime/sandbox/template.h)
 * when there is one and templates are on, else sandbox_start(); logs which.
 * A damaged template file is an error; one whose state KVM refuses costs a
 * cold boot. With network interfaces (o->net), the template is one with as
 * many devices: after the load each gets its link's TAP (its fds are then
 * the device's, set to -1 in o->net), and o->net->cfg.ifaces[i].dev_mac is
 * set to the template's MAC, which guest-init replaces with the
 * interface's. A TAP that cannot be attached is an error (no cold boot). */
int sandbox_launch(const struct sandbox_opts *o, struct sandbox **ret);

/* Pause the VM and its devices and save it to path (written atomically).
 * The VM stays paused: end it with sandbox_free() (or sandbox_resume()). */
int sandbox_save(struct sandbox *s, const char *path);
/* The same into fd, an empty regular file open for writing that the
 * caller keeps (what a jailed monitor may write: vm_snapshot_save_fd). */
int sandbox_save_fd(struct sandbox *s, int fd);
int sandbox_resume(struct sandbox *s);
/* Write the root disk as the guest reads it into fd (an empty regular
 * file), while the VM is paused after a save: the raw image copied with
 * its holes, or a copy-on-write disk's base and overlay merged. */
int sandbox_export_disk(struct sandbox *s, int fd);

/* The VM's done eventfd: readable once the VM ended. */
int sandbox_done_fd(const struct sandbox *s);

/* End the VM (if still running), wait for it and free everything. The
 * result, if ret is not NULL, says how it ended. Accepts NULL. */
void sandbox_free(struct sandbox *s, struct vm_result *ret);

#endif
