/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A VM saved to and restored from a snapshot: the builder's second entry
 * point (sandbox.h). The restoring side makes the same devices in the same
 * order as the saved VM (so they get the same interrupt lines and MMIO
 * windows), loads the state, and only then gives a template's root disk
 * its media and the network devices their TAPs.
 */
#include <errno.h>
#include <stdlib.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "runtime/sandbox/sandbox-int.h"
#include "runtime/sandbox/sandbox.h"
#include "virtio/balloon/balloon.h"
#include "virtio/blk/blk.h"
#include "virtio/fs/fs.h"
#include "virtio/net/net.h"
#include "virtio/net/tap.h"
#include "virtio/vsock/vsock.h"
#include "vmm/platform.h"
#include "vmm/serial.h"
#include "vmm/test-device.h"
#include "vmm/snapshot.h"
#include "vmm/vm.h"

#define SANDBOX_SNAPSHOT_DEVS (3 + SANDBOX_MAX_DISKS + 1 + NET_CONFIG_MAX_IFACES + SANDBOX_MAX_SHARES + 1)

/* The first disk keeps the name it had when VMs had one. */
static const char *const disk_names[] = {"virtio-blk",  "virtio-blk1", "virtio-blk2", "virtio-blk3",
                                         "virtio-blk4", "virtio-blk5", "virtio-blk6", "virtio-blk7"};
_Static_assert(SANDBOX_MAX_DISKS <= 8, "name every disk");
static const char *const net_names[] = {"virtio-net0", "virtio-net1", "virtio-net2", "virtio-net3",
                                        "virtio-net4", "virtio-net5", "virtio-net6", "virtio-net7"};
_Static_assert(NET_CONFIG_MAX_IFACES <= 8, "name every net device");
static const char *const share_names[] = {"virtio-fs0",  "virtio-fs1",  "virtio-fs2",  "virtio-fs3",
                                          "virtio-fs4",  "virtio-fs5",  "virtio-fs6",  "virtio-fs7",
                                          "virtio-fs8",  "virtio-fs9",  "virtio-fs10", "virtio-fs11",
                                          "virtio-fs12", "virtio-fs13", "virtio-fs14", "virtio-fs15"};
_Static_assert(SANDBOX_MAX_SHARES <= 16, "name every shared directory");

static unsigned int snapshot_devs(struct sandbox *s, struct snapshot_dev *out)
{
	unsigned int n = 0;

	out[n++] = (struct snapshot_dev){"serial", serial_state_save, serial_state_load, s->serial};
	out[n++] = (struct snapshot_dev){"platform", platform_state_save, platform_state_load, s->platform};
	if (s->test)
		out[n++] =
		    (struct snapshot_dev){"test-device", test_device_state_save, test_device_state_load, s->test};
	for (unsigned int i = 0; i < s->ndisks; i++)
		out[n++] =
		    (struct snapshot_dev){disk_names[i], virtio_blk_state_save, virtio_blk_state_load, s->disks[i]};
	if (s->vsock)
		out[n++] =
		    (struct snapshot_dev){"virtio-vsock", virtio_vsock_state_save, virtio_vsock_state_load, s->vsock};
	for (unsigned int i = 0; i < s->nr_nets; i++)
		out[n++] =
		    (struct snapshot_dev){net_names[i], virtio_net_state_save, virtio_net_state_load, s->nets[i]};
	/* An attached one's save fails, naming the share: see virtio/fs/fs.h. */
	for (unsigned int i = 0; i < s->nshares; i++)
		out[n++] =
		    (struct snapshot_dev){share_names[i], virtio_fs_state_save, virtio_fs_state_load, s->shares[i]};
	if (s->balloon)
		out[n++] = (struct snapshot_dev){"virtio-balloon", virtio_balloon_state_save, virtio_balloon_state_load,
		                                 s->balloon};
	return n;
}

static void pause_devices(struct sandbox *s, bool paused)
{
	for (unsigned int i = 0; i < s->ndisks; i++)
		virtio_blk_pause(s->disks[i], paused);
	if (s->vsock)
		virtio_vsock_pause(s->vsock, paused);
	for (unsigned int i = 0; i < s->nr_nets; i++)
		virtio_net_pause(s->nets[i], paused);
	for (unsigned int i = 0; i < s->nshares; i++)
		virtio_fs_pause(s->shares[i], paused);
	if (s->balloon)
		virtio_balloon_pause(s->balloon, paused);
}

/* Into path when fd < 0, else into fd (named path in messages). */
static int save(struct sandbox *s, const char *path, int fd, struct snapshot_stats *ret_stats)
{
	struct snapshot_dev devs[SANDBOX_SNAPSHOT_DEVS];
	struct snapshot_stats st;
	unsigned int n = snapshot_devs(s, devs);
	int r;

	r = vm_pause(s->vm);
	if (r < 0)
		return err_set(r, "the VM is ending");
	pause_devices(s, true);
	if (fd >= 0)
		r = vm_snapshot_save_fd(s->vm, fd, devs, n, &st);
	else
		r = vm_snapshot_save(s->vm, path, devs, n, &st);
	if (r < 0)
		return r;
	log_debug("VM saved to %s in %llu ms: %llu guest pages, %llu bytes", path,
	          (unsigned long long)(st.save_us / 1000), (unsigned long long)st.mem_pages,
	          (unsigned long long)st.file_bytes);
	if (ret_stats)
		*ret_stats = st;
	return 0;
}

int sandbox_save(struct sandbox *s, const char *path, struct snapshot_stats *ret_stats)
{
	return save(s, path, -1, ret_stats);
}

int sandbox_save_fd(struct sandbox *s, int fd)
{
	return save(s, "the given file", fd, NULL);
}

int sandbox_export_disk(struct sandbox *s, int fd)
{
	int r = s->ndisks ? virtio_blk_export(s->disks[0], fd) : -ENODEV;

	return r < 0 ? err_setsys(r, "copy the root disk") : 0;
}

int sandbox_resume(struct sandbox *s)
{
	pause_devices(s, false);
	return vm_resume(s->vm);
}

/* A template's or a checkpoint's network devices, loaded without a
 * backend, get the TAPs of o->net's links. A failure here is the
 * container's (its TAPs), not the template's: *ret_fatal says no cold
 * boot would do better. */
static int attach_taps(struct sandbox *s, struct netns_setup *net, bool template, bool *ret_fatal)
{
	for (unsigned int i = 0; i < net->cfg.nr_ifaces; i++) {
		struct netns_link *l = &net->links[i];
		struct net_backend *be;
		int r;

		*ret_fatal = true;
		r = net_tap_backend_new(l->fds, l->nr_fds, &be);
		if (r < 0)
			return err_prefix(r, "network interface %s (TAP %s)", l->iface, l->tap);
		/* The backend owns the fds now, attached or freed. */
		for (unsigned int q = 0; q < l->nr_fds; q++)
			l->fds[q] = -1;
		r = virtio_net_attach_backend(s->nets[i], be);
		if (r < 0) {
			be->ops->free(be);
			return err_prefix(r, "network interface %s (TAP %s)", l->iface, l->tap);
		}
		log_debug("network interface %s (TAP %s, %u queue pair(s)): attached to the %s's device %u", l->iface,
		          l->tap, l->nr_fds, template ? "template" : "checkpoint", i);
	}
	/* The guest's driver read the devices' MACs at probe (a template's,
	 * or those the checkpointed container had): guest-init finds the
	 * links by them and sets the interfaces' own. */
	for (unsigned int i = 0; i < net->cfg.nr_ifaces; i++)
		virtio_net_get_mac(s->nets[i], net->cfg.ifaces[i].dev_mac);
	return 0;
}

int sandbox_check_saved_nets(const struct virtio_net_opts *saved, unsigned int nr_saved, const struct net_config *cfg)
{
	unsigned int have = cfg ? cfg->nr_ifaces : 0;

	if (nr_saved != have)
		return err_set(-EINVAL,
		               "the checkpoint has %u network interface(s), the container's network namespace has %u",
		               nr_saved, have);
	for (unsigned int i = 0; i < have; i++) {
		const struct net_config_iface *ifc = &cfg->ifaces[i];
		uint32_t mtu = ifc->mtu ? ifc->mtu : 1500;

		/* The guest's driver took the device's MTU as its maximum. */
		if (mtu > saved[i].mtu)
			return err_set(-EINVAL,
			               "network interface %s: MTU %u, more than the %u of the checkpoint's device %u",
			               ifc->name, mtu, saved[i].mtu, i);
	}
	return 0;
}

/* A checkpoint's network devices as they were saved (MAC, MTU, queue
 * pairs, UFO), checked against o's interfaces before anything is made. */
static int saved_nets(struct vm_snapshot *snap, const struct sandbox_opts *o, struct virtio_net_opts *saved,
                      unsigned int *ret_n)
{
	unsigned int n;
	int r;

	for (n = 0; n < NET_CONFIG_MAX_IFACES && vm_snapshot_has_device(snap, net_names[n]); n++) {
		const void *data;
		size_t len;

		vm_snapshot_device_data(snap, net_names[n], &data, &len);
		r = virtio_net_state_opts(data, len, &saved[n]);
		if (r < 0)
			return err_prefix(r, "network device %u", n);
	}
	*ret_n = n;
	return sandbox_check_saved_nets(saved, n, o->net ? &o->net->cfg : NULL);
}

/* The saved VM's shared directory devices (slots without a directory:
 * only those can be saved), made again as such. */
static unsigned int saved_shares(struct vm_snapshot *snap)
{
	unsigned int n = 0;

	while (n < SANDBOX_MAX_SHARES && vm_snapshot_has_device(snap, share_names[n]))
		n++;
	return n;
}

/* After the load: o's shared directories into the slots, in order. */
static int attach_shares(struct sandbox *s, const struct sandbox_opts *o, bool template, bool *ret_fatal)
{
	for (unsigned int i = 0; i < o->nshares; i++) {
		int r;

		if (i >= s->nshares) {
			*ret_fatal = true;
			return err_set(-ENOSPC, "%u shared directories, the %s has %u slots for them", o->nshares,
			               template ? "template" : "checkpoint", s->nshares);
		}
		r = sandbox_share_attach(s, i, &o->shares[i]);
		if (r < 0) {
			*ret_fatal = true;
			return r;
		}
		log_debug("shared directory %s: attached to the %s's slot %s", o->shares[i].dir,
		          template ? "template" : "checkpoint", virtio_fs_tag(s->shares[i]));
	}
	return 0;
}

/* A checkpoint's disks are made offering what they offered when saved: a
 * container restored from a template had its read-only root attached to
 * the template's disk, which offered a writable disk (the guest's driver
 * negotiated that, and it cannot change). */
static int saved_disks(struct vm_snapshot *snap, struct sandbox_opts *o)
{
	for (unsigned int i = 0; i < o->ndisks; i++) {
		bool offered_ro, saved_ro;
		const void *data;
		size_t len;
		int r;

		if (!o->disks[i].path || !vm_snapshot_has_device(snap, disk_names[i]))
			continue;
		vm_snapshot_device_data(snap, disk_names[i], &data, &len);
		r = virtio_blk_state_offers_ro(data, len, &offered_ro, &saved_ro);
		if (r < 0)
			return err_prefix(r, "disk %u", i);
		o->disks[i].offer_writable = o->disks[i].read_only && !offered_ro;
		if (saved_ro != o->disks[i].read_only)
			return err_set(-EINVAL, "the checkpoint's %s was %s, the container's is %s",
			               i == 0 ? "root disk" : "disk", saved_ro ? "read-only" : "writable",
			               o->disks[i].read_only ? "read-only" : "writable");
	}
	return 0;
}

/* Where a restore's time goes, CLOCK_MONOTONIC ns at the end of each step. */
struct restore_times {
	uint64_t t0, lookup, open, create, load, start;
};

/* One machine-readable line per restore (docs/snapshot.md, bench/):
 * restore_us runs from the opening of the snapshot file to the vCPU
 * threads started, all of it host-side work. */
static void log_restore(const char *what, const struct restore_times *t, const struct vm_config *cfg)
{
	uint64_t lookup = t->lookup ? t->lookup - t->t0 : 0, from = t->lookup ? t->lookup : t->t0;

	log_info("VM: %s restored: restore_us=%llu lookup_us=%llu open_us=%llu create_us=%llu load_us=%llu "
	         "start_us=%llu mem_mib=%llu vcpus=%u",
	         what, (unsigned long long)((t->start - from) / 1000), (unsigned long long)(lookup / 1000),
	         (unsigned long long)((t->open - from) / 1000), (unsigned long long)((t->create - t->open) / 1000),
	         (unsigned long long)((t->load - t->create) / 1000), (unsigned long long)((t->start - t->load) / 1000),
	         (unsigned long long)(cfg->mem_size >> 20), cfg->ncpus);
}

/* The VM's shape is the snapshot's; a container's must be its plan's. */
static int check_shape(const struct sandbox_opts *o, const struct vm_config *cfg)
{
	if (o->plan && (cfg->ncpus != o->plan->ncpus || cfg->mem_size != o->plan->mem_size))
		return err_set(-EINVAL,
		               "the snapshot is of a VM with %u vCPUs and %llu MiB, this one needs %u and %llu",
		               cfg->ncpus, (unsigned long long)(cfg->mem_size >> 20), o->plan->ncpus,
		               (unsigned long long)(o->plan->mem_size >> 20));
	return 0;
}

static int restore(struct sandbox *s, const struct sandbox_opts *o, struct vm_snapshot *snap, bool template,
                   struct restore_times *t, bool *ret_fatal)
{
	struct snapshot_dev devs[SANDBOX_SNAPSHOT_DEVS];
	struct sandbox_opts empty = *o;
	struct virtio_net_opts saved[NET_CONFIG_MAX_IFACES];
	unsigned int nsaved = 0;
	struct vm_config cfg;
	int r;

	vm_snapshot_config(snap, &cfg);
	r = check_shape(o, &cfg);
	if (r < 0)
		return r;
	/* A template's root disk was saved without media: it gets it after
	 * the load. A checkpoint's had its media all along. */
	if (template && o->ndisks)
		empty.disks[0].path = empty.disks[0].base = NULL;
	/* Its network devices had no backend either: the same, then TAPs. A
	 * checkpoint's had their TAPs: made as saved, without, then TAPs. */
	if (template && o->net)
		empty.template_nics = o->net->cfg.nr_ifaces;
	empty.net = NULL;
	/* Shared directories: slots without a directory, as saved, then
	 * attached. */
	empty.nshares = 0;
	empty.template_shares = saved_shares(snap);
	r = template ? 0 : saved_nets(snap, o, saved, &nsaved);
	if (r >= 0 && !template)
		r = saved_disks(snap, &empty);
	if (r >= 0)
		r = sandbox_make(s, &empty, &cfg, template ? NULL : saved, nsaved);
	if (r < 0)
		return r;
	t->create = vm_now_ns();
	r = vm_snapshot_restore(snap, s->vm, devs, snapshot_devs(s, devs));
	if (r < 0)
		return r;
	if (template && o->ndisks && o->disks[0].path) {
		r = virtio_blk_attach_media(s->disks[0], o->disks[0].path, o->disks[0].base, o->disks[0].read_only);
		if (r < 0)
			return err_prefix(r, "root disk");
	}
	if (o->net) {
		r = attach_taps(s, o->net, template, ret_fatal);
		if (r < 0)
			return r;
	}
	r = attach_shares(s, o, template, ret_fatal);
	if (r < 0)
		return r;
	t->load = vm_now_ns();
	r = o->stopped ? 0 : vm_start(s->vm);
	t->start = vm_now_ns();
	if (r >= 0)
		log_restore(template ? "template" : "snapshot", t, &cfg);
	return r;
}

/* Restore an opened snapshot into a new sandbox. */
static int restore_opened(const struct sandbox_opts *o, struct vm_snapshot *snap, bool template,
                          struct restore_times *t, bool *ret_fatal, struct sandbox **ret)
{
	struct sandbox *s = sandbox_alloc();
	int r;

	if (!s)
		return -ENOMEM;
	r = restore(s, o, snap, template, t, ret_fatal);
	if (r < 0) {
		sandbox_free(s, NULL);
		return r;
	}
	*ret = s;
	return 0;
}

int sandbox_restore(const struct sandbox_opts *o, const char *path, unsigned int flags, bool template, bool *ret_fatal,
                    struct sandbox **ret)
{
	struct restore_times t = {.t0 = o->t_lookup_ns ? o->t_lookup_ns : vm_now_ns()};
	struct vm_snapshot *snap = NULL;
	bool fatal = true;
	int r;

	if (o->t_lookup_ns)
		t.lookup = vm_now_ns();
	/* A file that cannot be opened or fails its checks is no host's
	 * refusal: fatal. */
	r = vm_snapshot_open(path, flags, &snap);
	if (r < 0) {
		if (ret_fatal)
			*ret_fatal = true;
		return r;
	}
	fatal = false;
	t.open = vm_now_ns();
	r = restore_opened(o, snap, template, &t, &fatal, ret);
	vm_snapshot_close(snap);
	if (ret_fatal)
		*ret_fatal = fatal;
	return r;
}
