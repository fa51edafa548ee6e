/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The VM builder: every VM kvrun runs is made here, in one order, by one of
 * two entry points that share the device attachment (docs/architecture.md):
 *   sandbox_start()    build the VM and boot a kernel in it;
 *   sandbox_restore()  build the same VM and load a snapshot into it
 *                      (sandbox-snapshot.c).
 * A container's VM (create, run, restore, templates) has a plan
 * (vm-config.h): its root disk (virtio-blk, slot 0), the host-guest channel
 * (virtio-vsock with unix-socket backends, slot 1), one virtio-net per
 * interface of the container's network namespace (TAP backends, netns.h),
 * booted with kvrun-init. `kvrun boot` builds a bare VM from the same
 * pieces: its kernel and command line as given, any disks, a vsock device,
 * the test device.
 *
 * Made in this order (a restore makes them in the same one, so that they
 * get the same interrupt lines and MMIO windows): the VM, the platform
 * devices (reset, power-off, RTC), the 16550 serial port, the test device,
 * the disks, the vsock device, the network devices, the balloon. Virtio
 * devices take consecutive slots at KVRUN_MMIO_VIRTIO_BASE + n *
 * KVRUN_MMIO_VIRTIO_STRIDE.
 */
#ifndef KVRUN_RUNTIME_SANDBOX_H
#define KVRUN_RUNTIME_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/host/netns.h"
#include "runtime/sandbox/vm-config.h"
#include "virtio/mmio.h"
#include "vmm/boot.h"
#include "vmm/irq.h"
#include "vmm/vm.h"

/* The guest's vsock CID (any value >= 3: each VM has its own device). */
#define SANDBOX_GUEST_CID 3
/* Disks a VM may have. */
#define SANDBOX_MAX_DISKS 8
/* Shared directories a VM may have (interrupt lines permitting: see
 * sandbox_make()). */
#define SANDBOX_MAX_SHARES 16
/* The shared directory slots of a template (virtio-fs devices without a
 * directory, tags sandbox_share_tag()), which a container's shares get
 * after the restore. */
#define SANDBOX_TEMPLATE_SHARES 8
/* Virtio slots: the disks, the vsock device, the network devices, the
 * shared directories, the balloon. */
#define SANDBOX_NR_VIRTIO (SANDBOX_MAX_DISKS + 1 + NET_CONFIG_MAX_IFACES + SANDBOX_MAX_SHARES + 1)

struct sandbox_disk {
	const char *path; /* image; NULL: a disk without media (a template's) */
	const char *base; /* path is a copy-on-write overlay of this base, or NULL */
	bool read_only;
	/* Read-only media behind a writable offer (no VIRTIO_BLK_F_RO): a
	 * checkpoint's disk whose guest negotiated it so (virtio/blk/blk.h). */
	bool offer_writable;
	const char *id; /* what the guest reads as the disk's serial */
};

/* A host directory the guest mounts with `mount -t virtiofs TAG DIR`
 * (virtio/fs/fs.h). */
struct sandbox_share {
	const char *tag; /* 1 to 36 bytes */
	const char *dir; /* opened by path unless dir_fd is given; named in messages */
	bool read_only;
	enum fs_locks locks; /* where the guest's locks are kept (fs_server_opts) */
	int dir_fd; /* > 0: the directory, opened (O_PATH, borrowed): nothing is resolved by path */
	int proc_fd; /* > 0: /proc/self/fd, opened (borrowed) */
	char *const *names; /* NULL: the whole directory; else only these entries of it (fs_server_opts) */
	unsigned int workers; /* request threads; 0: the device's default */
	/* What each request thread runs first (fs_server_opts' thread_init:
	 * a jail's jail_fs_thread()), or NULL. */
	int (*thread_init)(void *opaque);
	void *thread_opaque;
};

struct sandbox_opts {
	/* A container's VM: vCPUs, RAM, kernel, initrd and command line
	 * (vm_plan_cmdline(), which names the devices) from its plan. */
	const struct vm_plan *plan;
	/* Without a plan (`kvrun boot`): the VM's shape, and what boots in it
	 * (boot.virtio is filled by the builder; without use_acpi
	 * boot_linux() adds the devices to boot.cmdline). */
	struct vm_config vm;
	struct boot_config boot;
	struct sandbox_disk disks[SANDBOX_MAX_DISKS];
	unsigned int ndisks;
	const char *vsock_path; /* guest port P reaches <vsock_path>_P; NULL: no vsock device */
	/* Shared directories. A template restored gets them after the load,
	 * in its slots, in this order: a template must have at least nshares
	 * slots (template_lookup() finds none otherwise: a cold boot). */
	struct sandbox_share shares[SANDBOX_MAX_SHARES];
	unsigned int nshares;
	/* No listener at vsock_path for host-initiated streams (a container's
	 * VM: nothing uses them, and its jail seals the directory). */
	bool vsock_guest_only;
	const char *console_path; /* guest console log (appended), NULL: off */
	int console_fd; /* or this fd (borrowed), when > 0 (0: unset, never stdin) */
	bool test_device; /* the freestanding test guest's device (vmm/test-device.h) */
	/* A virtio-balloon without a plan (`kvrun boot --balloon`); a
	 * container's VM (with a plan) always has one. */
	bool balloon;
	/* From netns_setup(), or NULL (loopback only). The TAP fds of each
	 * link a device took are set to -1 here (the device owns them). */
	struct netns_setup *net;
	bool no_vhost; /* userspace data path even with /dev/vhost-net */
	/* A template's VM (net must be NULL): this many network devices
	 * without a backend (link down), sandbox_template_mac(i) as MAC,
	 * SANDBOX_TEMPLATE_MTU, sandbox_net_queue_pairs() pairs. */
	unsigned int template_nics;
	/* A template's VM: this many virtio-fs devices without a directory
	 * (slots; shares must be 0), tags sandbox_share_tag(i). */
	unsigned int template_shares;
	/* A pod's VM: this many virtio-fs devices without a directory after
	 * the shares (slots, tags sandbox_share_tag(i)), which the pod's app
	 * containers' directories get while it runs (sandbox_share_add()).
	 * A restore keeps the snapshot's slots instead. */
	unsigned int spare_shares;
	/* Leave the vCPUs stopped: the caller sets up what must be in place
	 * before the guest runs, then calls vm_start(). */
	bool stopped;
	/* A restore: when looking for its snapshot began (CLOCK_MONOTONIC ns,
	 * vm_now_ns()), for the restore's log line; 0: no lookup. */
	uint64_t t_lookup_ns;
};

/* The MTU of a template's network devices: the most an interface can have,
 * so that whatever MTU a container's interface asks for, the guest's
 * driver (which took the device's MTU as its maximum at probe) allows it;
 * guest-init sets the container's. */
#define SANDBOX_TEMPLATE_MTU 65535

/* The MAC of network device i of a template (locally administered
 * 02:6b:76:74:00:<i>); guest-init changes it to the container's. */
void sandbox_template_mac(unsigned int i, uint8_t mac[6]);

/* The tag of a template's shared directory slot i ("kvrun-fs<i>"), which
 * a container's share i gets: buf of at least 16 bytes. */
void sandbox_share_tag(unsigned int i, char *buf, size_t size);

/* Queue pairs of each network device of a VM of plan p: one per vCPU (each
 * can send without contention), at most NET_MAX_QUEUE_PAIRS. */
unsigned int sandbox_net_queue_pairs(const struct vm_plan *p);

struct sandbox {
	struct vm *vm;
	struct platform *platform;
	struct serial *serial;
	struct test_device *test;
	struct virtio_blk *disks[SANDBOX_MAX_DISKS];
	unsigned int ndisks;
	struct virtio_vsock *vsock;
	struct virtio_net *nets[NET_CONFIG_MAX_IFACES];
	unsigned int nr_nets;
	struct virtio_fs *shares[SANDBOX_MAX_SHARES];
	unsigned int nshares; /* devices, attached or not */
	int shares_event_fd; /* sandbox_shares_event_fd(), -1 until a share is made */
	struct virtio_balloon *balloon;
	unsigned int nr_slots; /* virtio slots taken */
	struct irq_line lines[SANDBOX_NR_VIRTIO];
	int notify_fds[SANDBOX_NR_VIRTIO];
	/* Per-queue doorbells of the net devices that vhost-net serves. */
	int net_doorbells[NET_CONFIG_MAX_IFACES][VIRTIO_MMIO_MAX_QUEUES];
	int console_fd;
};

/* Build the VM and boot it (vCPUs running on return unless o->stopped).
 * On failure everything built is freed and err_msg() says what failed. */
int sandbox_start(const struct sandbox_opts *o, struct sandbox **ret);

/* Build the VM saved in the snapshot at path (vm_snapshot_open() flags)
 * with o's devices, load it and start the vCPUs (unless o->stopped). A template's root disk was
 * saved without media and gets o's after the load; a checkpoint's is
 * created with it. A checkpoint's network devices are made as saved (MAC,
 * MTU, queue pairs), without a backend, loaded, then given the TAPs of
 * o->net's links as a template's are: o->net must have as many interfaces
 * as the checkpoint has devices, none with a larger MTU, and
 * o->net->cfg.ifaces[i].dev_mac is set to the device's MAC. The guest sees
 * its vsock streams reset (guest-init connects again). *ret_fatal (may be
 * NULL) says, on failure, whether no cold boot would do better: the file
 * could not be opened or is damaged, or the failure is o's (its TAPs);
 * false when this host's KVM refused the saved state. On failure nothing is left and err_msg() says what
 * failed. */
int sandbox_restore(const struct sandbox_opts *o, const char *path, unsigned int flags, bool template, bool *ret_fatal,
                    struct sandbox **ret);

/* Pause the VM and its devices and save it to path (written atomically);
 * *ret_stats (may be NULL) says what it took. The VM stays paused: end it
 * with sandbox_free() (or sandbox_resume()). -ESHUTDOWN when the VM is
 * ending. */
struct snapshot_stats;
int sandbox_save(struct sandbox *s, const char *path, struct snapshot_stats *ret_stats);
/* The same into fd, an empty regular file open for writing that the
 * caller keeps (what a jailed monitor may write: vm_snapshot_save_fd). */
int sandbox_save_fd(struct sandbox *s, int fd);
int sandbox_resume(struct sandbox *s);
/* Write the root disk (disk 0) as the guest reads it into fd (an empty
 * regular file), while the VM is paused after a save: the raw image copied
 * with its holes, or a copy-on-write disk's base and overlay merged. */
int sandbox_export_disk(struct sandbox *s, int fd);

/* Give sh (dir_fd and proc_fd required) the first shared directory slot
 * without one, while the VM runs: a pod's app container's directory
 * (spare_shares, or a template's slots left after the restore, or slots
 * released since). Returns the slot's index (for sandbox_share_release()),
 * its tag in tag (at least 16 bytes). -ENOSPC when every slot serves
 * one. */
int sandbox_share_add(struct sandbox *s, const struct sandbox_share *sh, char *tag, size_t size);

/* Free slot i (sandbox_share_add()'s index) for another directory once
 * the guest has unmounted it (virtio_fs_detach(): the server and its
 * descriptors closed, the slot's workers kept): 0, also for a slot
 * without a directory; -EBUSY, with a message naming the tag and the
 * directory, while the guest has it mounted; -ENOENT for no such slot. */
int sandbox_share_release(struct sandbox *s, unsigned int i);

/* A nonblocking eventfd that becomes readable each time the guest
 * unmounts a shared directory (its DESTROY, or a reset of the device):
 * the moment to try sandbox_share_release() again. The caller reads it
 * to clear it; -1 when the VM has no shared directory slot. */
int sandbox_shares_event_fd(const struct sandbox *s);

/* Start the request threads (workers each, running thread_init first)
 * of every shared directory slot without a directory (virtio_fs_prestart()):
 * a process that cannot give later threads what a file server needs. */
int sandbox_shares_prestart(struct sandbox *s, uint32_t workers, int (*thread_init)(void *opaque), void *opaque);

/* Shared directory slots of the VM without a directory. */
unsigned int sandbox_shares_free(const struct sandbox *s);

/* The VM's done eventfd: readable once the VM ended. */
int sandbox_done_fd(const struct sandbox *s);

/* End the VM (if still running), wait for it and free everything. The
 * result, if ret is not NULL, says how it ended. Accepts NULL. */
void sandbox_free(struct sandbox *s, struct vm_result *ret);

#endif
