/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "runtime/sandbox/sandbox-int.h"
#include "runtime/sandbox/sandbox.h"
#include "virtio/balloon/balloon.h"
#include "virtio/blk/blk.h"
#include "virtio/fs/fs.h"
#include "virtio/mmio.h"
#include "virtio/net/net.h"
#include "virtio/net/tap.h"
#include "virtio/vsock/vsock.h"
#include "vmm/boot.h"
#include "common/debug-port.h"
#include "vmm/platform.h"
#include "vmm/serial.h"
#include "vmm/test-device.h"

static uint64_t virtio_addr(unsigned int n)
{
	return KVRUN_MMIO_VIRTIO_BASE + n * KVRUN_MMIO_VIRTIO_STRIDE;
}

/* Put transport m at the next slot: bus window, interrupt line, and
 * (unless doorbell is false: the caller binds per-queue ones) one doorbell.
 * *ret_slot (may be NULL) is the slot. */
static int attach(struct sandbox *s, struct virtio_mmio *m, bool doorbell, unsigned int *ret_slot)
{
	unsigned int n = s->nr_slots;
	uint64_t addr = virtio_addr(n);
	int r, fd = -1;

	if (n >= SANDBOX_NR_VIRTIO)
		return err_set(-ENOSPC, "more than %d virtio devices", SANDBOX_NR_VIRTIO);
	r = vm_irq_line_new(s->vm, &s->lines[n]);
	if (r < 0)
		return err_setsys(r, "no interrupt line for virtio device %u", n);
	s->nr_slots++;
	virtio_mmio_set_irq(m, &s->lines[n]);
	r = bus_register(&s->vm->mmio, addr, VIRTIO_MMIO_SIZE, &virtio_mmio_bus_ops, m);
	if (r < 0)
		return err_setsys(r, "register virtio device at 0x%llx", (unsigned long long)addr);
	/* Kicks through an ioeventfd cost no exit to userspace. */
	if (doorbell) {
		fd = vm_ioeventfd_add(s->vm, addr + VIRTIO_MMIO_QUEUE_NOTIFY, 4, false, false, 0);
		if (fd < 0)
			return err_setsys(fd, "ioeventfd for virtio device %u", n);
		s->notify_fds[n] = fd;
		r = virtio_mmio_add_notify_fd(m, s->vm->loop, fd, VIRTIO_MMIO_ALL_QUEUES);
		if (r < 0)
			return err_setsys(r, "watching the doorbell of virtio device %u", n);
	}
	if (ret_slot)
		*ret_slot = n;
	return 0;
}

/* vhost-net reads the doorbell of each data queue itself: one ioeventfd
 * per queue, told apart by the queue index the guest writes (KVM does not
 * mix a catch-all doorbell with per-queue ones on one address). */
static int net_doorbells(struct sandbox *s, unsigned int i, unsigned int slot, unsigned int nr_queues)
{
	uint64_t notify = virtio_addr(slot) + VIRTIO_MMIO_QUEUE_NOTIFY;
	int r;

	for (unsigned int q = 0; q < nr_queues; q++) {
		int fd = vm_ioeventfd_add(s->vm, notify, 4, false, true, q);

		if (fd < 0)
			return err_setsys(fd, "ioeventfd for queue %u of net device %u", q, i);
		s->net_doorbells[i][q] = fd;
		r = virtio_net_set_doorbell(s->nets[i], q, fd);
		if (r < 0)
			return err_setsys(r, "doorbell of queue %u of net device %u", q, i);
	}
	return 0;
}

/* One virtio-net per linked interface, with its MAC and MTU, over the
 * TAP fds netns_setup() opened (one per queue pair). */
static int add_net(struct sandbox *s, const struct sandbox_opts *o, unsigned int i)
{
	const struct net_config_iface *ifc = &o->net->cfg.ifaces[i];
	struct netns_link *l = &o->net->links[i];
	struct virtio_net_opts no = {
	    .mtu = (uint16_t)(ifc->mtu >= 68 && ifc->mtu <= 65535 ? ifc->mtu : 1500),
	    .queue_pairs = l->nr_fds,
	    .no_vhost = o->no_vhost,
	};
	struct net_backend *be;
	unsigned int slot;
	bool vhost;
	int r;

	memcpy(no.mac, ifc->mac, sizeof(no.mac));
	r = net_tap_backend_new(l->fds, l->nr_fds, &be);
	if (r < 0)
		return err_prefix(r, "TAP %s", l->tap);
	/* The backend owns the fds now. */
	for (unsigned int q = 0; q < l->nr_fds; q++)
		l->fds[q] = -1;
	r = virtio_net_new(&s->vm->mem, s->vm->loop, be, &no, &s->nets[i]);
	if (r < 0) {
		be->ops->free(be);
		return err_prefix(r, "virtio-net for %s", ifc->name);
	}
	s->nr_nets = i + 1;
	vhost = virtio_net_uses_vhost(s->nets[i]);
	log_debug("network interface %s (TAP %s, %u queue pair(s), MTU %u): %s data path", ifc->name, l->tap, l->nr_fds,
	          no.mtu, vhost ? "vhost-net" : "userspace");
	r = attach(s, virtio_net_mmio(s->nets[i]), !vhost, &slot);
	if (r < 0 || !vhost)
		return r;
	return net_doorbells(s, i, slot, 2 * l->nr_fds + (l->nr_fds > 1));
}

void sandbox_template_mac(unsigned int i, uint8_t mac[6])
{
	const uint8_t base[6] = {0x02, 0x6b, 0x76, 0x74, 0x00, (uint8_t)i};

	memcpy(mac, base, 6);
}

unsigned int sandbox_net_queue_pairs(const struct vm_plan *p)
{
	if (p->ncpus < 1)
		return 1;
	return p->ncpus < NET_MAX_QUEUE_PAIRS ? p->ncpus : NET_MAX_QUEUE_PAIRS;
}

/* Network device i without a backend, made as no says: a template's, or a
 * checkpoint's as it was saved; a restore attaches the container's TAPs
 * (sandbox-snapshot.c). */
static int add_detached_net(struct sandbox *s, unsigned int i, const struct virtio_net_opts *no)
{
	int r;

	r = virtio_net_new_detached(&s->vm->mem, s->vm->loop, no, &s->nets[i]);
	if (r < 0)
		return err_prefix(r, "network device %u", i);
	s->nr_nets = i + 1;
	return attach(s, virtio_net_mmio(s->nets[i]), true, NULL);
}

static int add_template_net(struct sandbox *s, const struct sandbox_opts *o, unsigned int i)
{
	struct virtio_net_opts no = {.mtu = SANDBOX_TEMPLATE_MTU, .queue_pairs = sandbox_net_queue_pairs(o->plan)};

	sandbox_template_mac(i, no.mac);
	return add_detached_net(s, i, &no);
}

static int add_nets(struct sandbox *s, const struct sandbox_opts *o, const struct virtio_net_opts *saved,
                    unsigned int nr_saved)
{
	unsigned int n = saved ? nr_saved : o->template_nics ? o->template_nics : o->net ? o->net->cfg.nr_ifaces : 0;
	int r = 0;

	if (o->template_nics && o->net)
		return err_set(-EINVAL, "a template's VM has no network of a container");
	if (o->template_nics && !o->plan)
		return err_set(-EINVAL, "a template's network devices need the VM's plan");
	if (n > NET_CONFIG_MAX_IFACES)
		return err_set(-EINVAL, "%u network devices (at most %u)", n, NET_CONFIG_MAX_IFACES);
	for (unsigned int i = 0; r >= 0 && i < n; i++)
		r = saved              ? add_detached_net(s, i, &saved[i])
		    : o->template_nics ? add_template_net(s, o, i)
		                       : add_net(s, o, i);
	return r;
}

static int add_disk(struct sandbox *s, const struct sandbox_disk *d, unsigned int i)
{
	unsigned int slot;
	char what[64];
	int r, fd;

	if (i == 0 && d->id && !strcmp(d->id, "rootfs"))
		snprintf(what, sizeof(what), "root disk");
	else
		snprintf(what, sizeof(what), "disk %s", d->path ? d->path : d->id ? d->id : "");
	if (d->path)
		r = virtio_blk_new(&s->vm->mem,
		                   &(struct virtio_blk_opts){.path = d->path,
		                                             .base = d->base,
		                                             .read_only = d->read_only,
		                                             .offer_writable = d->offer_writable,
		                                             .id = d->id},
		                   &s->disks[i]);
	else
		r = virtio_blk_new_empty(&s->vm->mem, d->id, &s->disks[i]);
	if (r < 0)
		return err_prefix(r, "%s", what);
	s->ndisks = i + 1;
	r = attach(s, virtio_blk_mmio(s->disks[i]), false, &slot);
	if (r < 0)
		return r;
	/* The disk's worker waits on its doorbell itself: a kick wakes one
	 * thread. */
	fd = vm_ioeventfd_add(s->vm, virtio_addr(slot) + VIRTIO_MMIO_QUEUE_NOTIFY, 4, false, false, 0);
	if (fd < 0)
		return err_setsys(fd, "ioeventfd for %s", what);
	s->notify_fds[slot] = fd;
	virtio_blk_set_doorbell(s->disks[i], fd);
	return 0;
}

void sandbox_share_tag(unsigned int i, char *buf, size_t size)
{
	snprintf(buf, size, "kvrun-fs%u", i);
}

int sandbox_share_attach(struct sandbox *s, unsigned int i, const struct sandbox_share *sh)
{
	struct virtio_fs_opts fo;
	int r;

	virtio_fs_opts_default(&fo);
	fo.server.root = sh->dir;
	fo.server.root_fd = sh->dir_fd > 0 ? sh->dir_fd : -1;
	fo.server.proc_fd = sh->proc_fd > 0 ? sh->proc_fd : -1;
	fo.server.root_names = sh->names;
	fo.server.read_only = sh->read_only;
	fo.server.locks = sh->locks;
	fo.server.thread_init = sh->thread_init;
	fo.server.thread_opaque = sh->thread_opaque;
	r = virtio_fs_attach(s->shares[i], &fo.server, sh->workers ? sh->workers : fo.workers);
	return r < 0 ? err_prefix(r, "shared directory %s", sh->dir) : 0;
}

/* On a worker of a slot, the guest has unmounted it: wake whoever waits
 * to free it. An eventfd counter cannot fill up in practice; a failed
 * write only leaves the slot for the next look. */
static void share_unmounted(void *opaque)
{
	struct sandbox *s = opaque;
	uint64_t one = 1;

	if (write(s->shares_event_fd, &one, sizeof(one)) < 0)
		log_debug("shared directory slots: event: %m");
}

static int share_make(struct sandbox *s, const struct sandbox_share *sh, unsigned int i)
{
	struct virtio_fs_opts fo;
	char tag[32];
	int r;

	if (s->shares_event_fd < 0) {
		s->shares_event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (s->shares_event_fd < 0)
			return err_setsys(-errno, "eventfd for the shared directory slots");
	}
	virtio_fs_opts_default(&fo);
	sandbox_share_tag(i, tag, sizeof(tag));
	fo.tag = sh ? sh->tag : tag;
	r = virtio_fs_new_detached(&s->vm->mem, &fo, &s->shares[i]);
	if (r < 0)
		return sh ? err_prefix(r, "shared directory %s", sh->dir) : r;
	s->nshares = i + 1;
	virtio_fs_set_unmount_notify(s->shares[i], share_unmounted, s);
	if (sh && (r = sandbox_share_attach(s, i, sh)) < 0)
		return r;
	return 0;
}

/* Shared directory i: a device for sh, or without a directory when sh is
 * NULL (a template's slot, tag sandbox_share_tag(i)), telling
 * shares_event_fd of the guest's unmounts. */
static int add_share(struct sandbox *s, const struct sandbox_share *sh, unsigned int i)
{
	int r = share_make(s, sh, i);

	if (r < 0)
		return r;
	return attach(s, virtio_fs_mmio(s->shares[i]), true, NULL);
}

/* Every virtio device takes an interrupt line: say so before making any
 * when there are more than the VM has. */
static int check_lines(const struct sandbox_opts *o, unsigned int nets, unsigned int shares)
{
	unsigned int have = VM_IRQ_LAST - VM_IRQ_FIRST + 1 - (o->test_device ? 1 : 0);
	bool balloon = o->plan || o->balloon;
	unsigned int need = o->ndisks + (o->vsock_path ? 1 : 0) + nets + shares + (balloon ? 1 : 0);

	if (need <= have)
		return 0;
	return err_set(-ENOSPC,
	               "the VM would need %u interrupt lines (%u disk(s), %s, %u network device(s), %u shared "
	               "director%s%s) and has %u",
	               need, o->ndisks, o->vsock_path ? "a vsock device" : "no vsock device", nets, shares,
	               shares == 1 ? "y" : "ies", balloon ? ", the balloon" : "", have);
}

static int add_virtio(struct sandbox *s, const struct sandbox_opts *o, const struct virtio_net_opts *saved,
                      unsigned int nr_saved)
{
	unsigned int nshares = o->template_shares ? o->template_shares : o->nshares + o->spare_shares;
	unsigned int nets = saved ? nr_saved : o->template_nics ? o->template_nics : o->net ? o->net->cfg.nr_ifaces : 0;
	int r = 0;

	if (o->ndisks > SANDBOX_MAX_DISKS)
		return err_set(-EINVAL, "%u disks (at most %d)", o->ndisks, SANDBOX_MAX_DISKS);
	if (nshares > SANDBOX_MAX_SHARES)
		return err_set(-EINVAL, "%u shared directories (at most %d)", nshares, SANDBOX_MAX_SHARES);
	if (o->template_shares && o->nshares)
		return err_set(-EINVAL, "a template's VM has no shared directory of a container");
	r = check_lines(o, nets, nshares);
	for (unsigned int i = 0; r >= 0 && i < o->ndisks; i++)
		r = add_disk(s, &o->disks[i], i);
	if (r >= 0 && o->vsock_path) {
		r = virtio_vsock_new(&s->vm->mem, s->vm->loop, SANDBOX_GUEST_CID, o->vsock_path, !o->vsock_guest_only,
		                     &s->vsock);
		if (r < 0)
			return err_prefix(r, "vsock %s", o->vsock_path);
		r = attach(s, virtio_vsock_mmio(s->vsock), true, NULL);
	}
	if (r >= 0)
		r = add_nets(s, o, saved, nr_saved);
	for (unsigned int i = 0; r >= 0 && i < nshares; i++)
		r = add_share(s, o->template_shares || i >= o->nshares ? NULL : &o->shares[i], i);
	/* Last, so that the other devices keep the slots they had. */
	if (r >= 0 && (o->plan || o->balloon)) {
		r = virtio_balloon_new(&s->vm->mem, s->vm->loop, NULL, &s->balloon);
		if (r < 0)
			return err_prefix(r, "virtio-balloon");
		r = attach(s, virtio_balloon_mmio(s->balloon), true, NULL);
	}
	return r;
}

static int open_console(struct sandbox *s, const struct sandbox_opts *o)
{
	if (o->console_fd > 0) {
		s->console_fd = fcntl(o->console_fd, F_DUPFD_CLOEXEC, 3);
		return s->console_fd < 0 ? err_setsys(-errno, "console") : 0;
	}
	if (!o->console_path)
		return 0;
	s->console_fd = open(o->console_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (s->console_fd < 0)
		return err_setsys(-errno, "open console log %s", o->console_path);
	return 0;
}

int sandbox_make(struct sandbox *s, const struct sandbox_opts *o, const struct vm_config *cfg,
                 const struct virtio_net_opts *saved, unsigned int nr_saved)
{
	int r;

	r = open_console(s, o);
	if (r >= 0)
		r = vm_create(cfg, &s->vm);
	if (r >= 0)
		r = platform_create(s->vm, &s->platform);
	if (r >= 0)
		r = serial_create(s->vm, s->console_fd, &s->serial);
	if (r >= 0 && o->test_device)
		r = test_device_create(s->vm, &s->test);
	if (r >= 0)
		r = add_virtio(s, o, saved, nr_saved);
	return r;
}

/* Where each virtio device is, for the ACPI tables or the command line. */
static unsigned int where(const struct sandbox *s, struct acpi_virtio_mmio *out)
{
	for (unsigned int i = 0; i < s->nr_slots; i++)
		out[i] =
		    (struct acpi_virtio_mmio){.base = virtio_addr(i), .size = VIRTIO_MMIO_SIZE, .gsi = s->lines[i].gsi};
	return s->nr_slots;
}

/* A container's command line: the plan's, with the devices named (without
 * ACPI) before the config file's extra words, so that a "--" there cannot
 * make them init's arguments. */
static int plan_cmdline(const struct sandbox *s, const struct vm_plan *p, const struct acpi_virtio_mmio *virtio,
                        char **ret)
{
	char *frags[SANDBOX_NR_VIRTIO + 1] = {0};
	int r = 0;

	for (unsigned int i = 0; !p->use_acpi && r >= 0 && i < s->nr_slots; i++) {
		char frag[64];

		virtio_mmio_cmdline(frag, sizeof(frag), virtio[i].base, virtio[i].gsi);
		frags[i] = strdup(frag);
		if (!frags[i])
			r = -ENOMEM;
	}
	if (r >= 0)
		r = vm_plan_cmdline(p, frags, ret);
	for (size_t i = 0; i < SANDBOX_NR_VIRTIO; i++)
		free(frags[i]);
	return r;
}

static int boot(struct sandbox *s, const struct sandbox_opts *o)
{
	struct acpi_virtio_mmio virtio[SANDBOX_NR_VIRTIO];
	struct boot_config bc = o->boot;
	_cleanup_free_ char *cmdline = NULL;
	int r;

	bc.virtio = virtio;
	bc.nr_virtio = where(s, virtio);
	bc.acpi_com1 = true; /* serial_create() made the 16550 at 0x3f8 */
	if (o->plan) {
		bc.kernel_path = o->plan->kernel;
		bc.initrd_path = o->plan->initrd;
		bc.use_acpi = o->plan->use_acpi;
		r = plan_cmdline(s, o->plan, virtio, &cmdline);
		if (r < 0)
			return r;
		bc.cmdline = cmdline;
		/* The plan's command line names the devices already. */
		if (!bc.use_acpi)
			bc.nr_virtio = 0;
	}
	log_debug("kernel %s, initrd %s, %u vCPU, %llu MiB, %s, command line: %s", bc.kernel_path,
	          bc.initrd_path ? bc.initrd_path : "none", s->vm->ncpus,
	          (unsigned long long)(s->vm->mem.ram_size >> 20),
	          bc.use_acpi ? "ACPI tables describe the devices" : "devices on the command line",
	          bc.cmdline ? bc.cmdline : "");
	return boot_linux(s->vm, &bc);
}

struct sandbox *sandbox_alloc(void)
{
	struct sandbox *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->console_fd = -1;
	s->shares_event_fd = -1;
	for (size_t i = 0; i < SANDBOX_NR_VIRTIO; i++) {
		s->lines[i].fd = -1;
		s->notify_fds[i] = -1;
	}
	for (size_t i = 0; i < NET_CONFIG_MAX_IFACES; i++)
		for (size_t q = 0; q < VIRTIO_MMIO_MAX_QUEUES; q++)
			s->net_doorbells[i][q] = -1;
	return s;
}

int sandbox_start(const struct sandbox_opts *o, struct sandbox **ret)
{
	struct vm_config cfg =
	    o->plan ? (struct vm_config){.ncpus = o->plan->ncpus, .mem_size = o->plan->mem_size} : o->vm;
	struct sandbox *s = sandbox_alloc();
	int r;

	if (!s)
		return -ENOMEM;
	r = sandbox_make(s, o, &cfg, NULL, 0);
	if (r >= 0)
		r = boot(s, o);
	if (r >= 0 && !o->stopped)
		r = vm_start(s->vm);
	if (r < 0) {
		sandbox_free(s, NULL);
		return r;
	}
	*ret = s;
	return 0;
}

int sandbox_done_fd(const struct sandbox *s)
{
	return s->vm->done_fd;
}

void sandbox_free(struct sandbox *s, struct vm_result *ret)
{
	struct vm_result res = {0};

	if (!s)
		return;
	if (s->vm && s->vm->started) {
		vm_stop(s->vm, VM_EXIT_SIGNAL, 0);
		vm_wait(s->vm, &res);
	}
	/* Devices go before the VM: they use its RAM and loop (now stopped). */
	for (unsigned int i = 0; i < s->nshares; i++)
		virtio_fs_free(s->shares[i]);
	if (s->shares_event_fd >= 0)
		close(s->shares_event_fd);
	if (s->balloon) {
		struct virtio_balloon_counters c;

		virtio_balloon_counters(s->balloon, &c);
		log_debug("virtio-balloon: %llu MiB of free pages given back, %llu pages inflated, %llu deflated, "
		          "%llu PFNs skipped, %llu failed",
		          (unsigned long long)(c.reported_bytes >> 20), (unsigned long long)c.inflated_pages,
		          (unsigned long long)c.deflated_pages, (unsigned long long)c.skipped_pfns,
		          (unsigned long long)c.discard_errors);
	}
	virtio_balloon_free(s->balloon);
	for (unsigned int i = 0; i < s->nr_nets; i++)
		virtio_net_free(s->nets[i]);
	virtio_vsock_free(s->vsock);
	for (unsigned int i = 0; i < s->ndisks; i++)
		virtio_blk_free(s->disks[i]);
	test_device_free(s->test);
	serial_free(s->serial);
	platform_free(s->platform);
	for (size_t i = 0; i < SANDBOX_NR_VIRTIO; i++) {
		if (s->notify_fds[i] >= 0)
			close(s->notify_fds[i]);
		if (s->vm && s->lines[i].fd >= 0)
			vm_irq_line_free(s->vm, &s->lines[i]);
	}
	for (size_t i = 0; i < NET_CONFIG_MAX_IFACES; i++)
		for (size_t q = 0; q < VIRTIO_MMIO_MAX_QUEUES; q++)
			if (s->net_doorbells[i][q] >= 0)
				close(s->net_doorbells[i][q]);
	vm_free(s->vm);
	if (s->console_fd >= 0)
		close(s->console_fd);
	free(s);
	if (ret)
		*ret = res;
}
