/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "runtime/sandbox-int.h"
#include "runtime/sandbox.h"
#include "virtio/blk/blk.h"
#include "virtio/mmio.h"
#include "virtio/net/net.h"
#include "virtio/net/tap.h"
#include "virtio/vsock/vsock.h"
#include "vmm/boot.h"
#include "common/debug-port.h"
#include "vmm/platform.h"
#include "vmm/serial.h"

static uint64_t virtio_addr(unsigned int n)
{
	return KVRUN_MMIO_VIRTIO_BASE + n * KVRUN_MMIO_VIRTIO_STRIDE;
}

/* Put transport m at slot n: bus window, interrupt line, and (unless
 * doorbell is false: the caller binds per-queue ones) one doorbell. */
static int attach_slot(struct sandbox *s, unsigned int n, struct virtio_mmio *m, bool doorbell, char **ret_frag)
{
	uint64_t addr = virtio_addr(n);
	char frag[64];
	int r, fd = -1;

	r = vm_irq_line_new(s->vm, &s->lines[n]);
	if (r < 0)
		return r;
	virtio_mmio_set_irq(m, &s->lines[n]);
	r = bus_register(&s->vm->mmio, addr, VIRTIO_MMIO_SIZE, &virtio_mmio_bus_ops, m);
	if (r < 0)
		return err_setsys(r, "register virtio device at 0x%llx", (unsigned long long)addr);
	/* Kicks through an ioeventfd cost no exit to userspace. */
	if (doorbell)
		fd = vm_ioeventfd_add(s->vm, addr + VIRTIO_MMIO_QUEUE_NOTIFY, 4, false, false, 0);
	if (fd >= 0) {
		s->notify_fds[n] = fd;
		r = virtio_mmio_add_notify_fd(m, s->vm->loop, fd, VIRTIO_MMIO_ALL_QUEUES);
		if (r < 0)
			return r;
	}
	virtio_mmio_cmdline(frag, sizeof(frag), addr, s->lines[n].gsi);
	*ret_frag = strdup(frag);
	return *ret_frag ? 0 : -ENOMEM;
}

int sandbox_attach(struct sandbox *s, unsigned int n, struct virtio_mmio *m, char **ret_frag)
{
	return attach_slot(s, n, m, true, ret_frag);
}

/* vhost-net reads the doorbell of each data queue itself: one ioeventfd
 * per queue, told apart by the queue index the guest writes (KVM does not
 * mix a catch-all doorbell with per-queue ones on one address). */
static int net_doorbells(struct sandbox *s, unsigned int i, unsigned int nr_queues)
{
	uint64_t notify = virtio_addr(SANDBOX_SLOT_NET + i) + VIRTIO_MMIO_QUEUE_NOTIFY;
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
static int add_net(struct sandbox *s, const struct sandbox_opts *o, unsigned int i, char **ret_frag)
{
	const struct net_config_iface *ifc = &o->net->cfg.ifaces[i];
	struct netns_link *l = &o->net->links[i];
	struct virtio_net_opts no = {
	    .mtu = (uint16_t)(ifc->mtu >= 68 && ifc->mtu <= 65535 ? ifc->mtu : 1500),
	    .queue_pairs = l->nr_fds,
	    .no_vhost = o->no_vhost,
	};
	struct net_backend *be;
	unsigned int nr_queues;
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
	r = attach_slot(s, SANDBOX_SLOT_NET + i, virtio_net_mmio(s->nets[i]), !vhost, ret_frag);
	if (r < 0 || !vhost)
		return r;
	nr_queues = 2 * l->nr_fds + (l->nr_fds > 1);
	return net_doorbells(s, i, nr_queues);
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

int sandbox_add_detached_net(struct sandbox *s, unsigned int i, const struct virtio_net_opts *no, char **ret_frag)
{
	int r;

	r = virtio_net_new_detached(&s->vm->mem, s->vm->loop, no, &s->nets[i]);
	if (r < 0)
		return err_prefix(r, "network device %u", i);
	s->nr_nets = i + 1;
	return attach_slot(s, SANDBOX_SLOT_NET + i, virtio_net_mmio(s->nets[i]), true, ret_frag);
}

/* Network device i of a template: no backend, link down; a restore makes
 * the same one and attaches the container's TAP (sandbox-snapshot.c). */
static int add_template_net(struct sandbox *s, const struct sandbox_opts *o, unsigned int i, char **ret_frag)
{
	struct virtio_net_opts no = {.mtu = SANDBOX_TEMPLATE_MTU, .queue_pairs = sandbox_net_queue_pairs(o->plan)};

	sandbox_template_mac(i, no.mac);
	return sandbox_add_detached_net(s, i, &no, ret_frag);
}

int sandbox_add_nets(struct sandbox *s, const struct sandbox_opts *o, char **frags)
{
	unsigned int n = o->template_nics ? o->template_nics : o->net ? o->net->cfg.nr_ifaces : 0;
	int r = 0;

	if (o->template_nics && o->net)
		return err_set(-EINVAL, "a template's VM has no network of a container");
	if (n > NET_CONFIG_MAX_IFACES)
		return err_set(-EINVAL, "%u network devices (at most %u)", n, NET_CONFIG_MAX_IFACES);
	for (unsigned int i = 0; r >= 0 && i < n; i++)
		r = o->template_nics ? add_template_net(s, o, i, &frags[SANDBOX_SLOT_NET + i])
		                     : add_net(s, o, i, &frags[SANDBOX_SLOT_NET + i]);
	return r;
}

int sandbox_add_disk_vsock(struct sandbox *s, const struct sandbox_opts *o, char **frags)
{
	int r;

	if (o->disk)
		r = virtio_blk_new(
		    &s->vm->mem,
		    &(struct virtio_blk_opts){
			.path = o->disk, .base = o->disk_base, .read_only = o->disk_read_only, .id = "rootfs"},
		    &s->blk);
	else
		r = virtio_blk_new_empty(&s->vm->mem, "rootfs", &s->blk);
	if (r < 0)
		return err_prefix(r, "root disk");
	r = sandbox_attach(s, 0, virtio_blk_mmio(s->blk), &frags[0]);
	if (r < 0)
		return r;
	r = virtio_vsock_new(&s->vm->mem, s->vm->loop, SANDBOX_GUEST_CID, o->vsock_path, &s->vsock);
	if (r < 0)
		return err_prefix(r, "vsock");
	return sandbox_attach(s, 1, virtio_vsock_mmio(s->vsock), &frags[1]);
}

static int add_devices(struct sandbox *s, const struct sandbox_opts *o, char **frags)
{
	int r;

	r = sandbox_add_disk_vsock(s, o, frags);
	if (r >= 0)
		r = sandbox_add_nets(s, o, frags);
	return r;
}

int sandbox_open_console(struct sandbox *s, const char *path)
{
	s->console_fd = -1;
	if (!path)
		return 0;
	s->console_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (s->console_fd < 0)
		return err_setsys(-errno, "open console log %s", path);
	return 0;
}

/* With ACPI the DSDT describes the virtio-mmio devices (a stock kernel's
 * virtio_mmio binds only that way), so none go on the command line. */
static unsigned int acpi_devices(const struct sandbox *s, struct acpi_virtio_mmio *out)
{
	unsigned int n = SANDBOX_SLOT_NET + s->nr_nets;

	for (unsigned int i = 0; i < n; i++)
		out[i] =
		    (struct acpi_virtio_mmio){.base = virtio_addr(i), .size = VIRTIO_MMIO_SIZE, .gsi = s->lines[i].gsi};
	return n;
}

static int build(struct sandbox *s, const struct sandbox_opts *o)
{
	struct vm_config cfg = {.ncpus = o->plan->ncpus, .mem_size = o->plan->mem_size};
	char *frags[SANDBOX_NR_VIRTIO + 1] = {0};
	struct acpi_virtio_mmio virtio[SANDBOX_NR_VIRTIO];
	struct boot_config bc = {.kernel_path = o->plan->kernel, .initrd_path = o->plan->initrd};
	_cleanup_free_ char *cmdline = NULL;
	int r;

	r = sandbox_open_console(s, o->console_path);
	if (r >= 0)
		r = vm_create(&cfg, &s->vm);
	if (r >= 0)
		r = platform_create(s->vm, &s->platform);
	if (r >= 0)
		r = serial_create(s->vm, s->console_fd, &s->serial);
	if (r >= 0)
		r = add_devices(s, o, frags);
	if (r >= 0 && o->plan->use_acpi) {
		bc.use_acpi = true;
		bc.acpi_com1 = true; /* serial_create() made the 16550 at 0x3f8 */
		bc.virtio = virtio;
		bc.nr_virtio = acpi_devices(s, virtio);
	}
	if (r >= 0)
		r = vm_plan_cmdline(o->plan, bc.use_acpi ? NULL : frags, &cmdline);
	for (size_t i = 0; i < SANDBOX_NR_VIRTIO; i++)
		free(frags[i]);
	if (r < 0)
		return r;
	log_debug("kernel %s, initrd %s, %u vCPU, %llu MiB, %s, command line: %s", o->plan->kernel, o->plan->initrd,
	          cfg.ncpus, (unsigned long long)(cfg.mem_size >> 20),
	          bc.use_acpi ? "ACPI tables describe the devices" : "devices on the command line", cmdline);
	bc.cmdline = cmdline;
	r = boot_linux(s->vm, &bc);
	if (r < 0)
		return r;
	return vm_start(s->vm);
}

struct sandbox *sandbox_alloc(void)
{
	struct sandbox *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->console_fd = -1;
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
	struct sandbox *s = sandbox_alloc();
	int r;

	if (!s)
		return -ENOMEM;
	r = build(s, o);
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
	for (unsigned int i = 0; i < s->nr_nets; i++)
		virtio_net_free(s->nets[i]);
	virtio_vsock_free(s->vsock);
	virtio_blk_free(s->blk);
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
