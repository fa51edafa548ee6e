/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A container's VM saved to and restored from a snapshot (templates and
 * checkpoints). The restoring side creates the same devices in the same
 * order as the saved VM (so they get the same interrupt lines and MMIO
 * windows), loads the state, and only then gives the root disk its media
 * (a template's) and the network devices their TAPs.
 */
#include <errno.h>
#include <stdlib.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "runtime/sandbox/sandbox-int.h"
#include "runtime/sandbox/sandbox.h"
#include "runtime/sandbox/template.h"
#include "virtio/blk/blk.h"
#include "virtio/net/net.h"
#include "virtio/net/tap.h"
#include "virtio/vsock/vsock.h"
#include "vmm/platform.h"
#include "vmm/serial.h"
#include "vmm/snapshot.h"
#include "vmm/vm.h"

#define SANDBOX_SNAPSHOT_DEVS (4 + NET_CONFIG_MAX_IFACES)

static const char *const net_names[] = {"virtio-net0", "virtio-net1", "virtio-net2", "virtio-net3",
                                        "virtio-net4", "virtio-net5", "virtio-net6", "virtio-net7"};
_Static_assert(NET_CONFIG_MAX_IFACES <= 8, "name every net device");

static unsigned int snapshot_devs(struct sandbox *s, struct snapshot_dev *out)
{
	unsigned int n = 0;

	out[n++] = (struct snapshot_dev){"serial", serial_state_save, serial_state_load, s->serial};
	out[n++] = (struct snapshot_dev){"platform", platform_state_save, platform_state_load, s->platform};
	out[n++] = (struct snapshot_dev){"virtio-blk", virtio_blk_state_save, virtio_blk_state_load, s->blk};
	out[n++] = (struct snapshot_dev){"virtio-vsock", virtio_vsock_state_save, virtio_vsock_state_load, s->vsock};
	for (unsigned int i = 0; i < s->nr_nets; i++)
		out[n++] =
		    (struct snapshot_dev){net_names[i], virtio_net_state_save, virtio_net_state_load, s->nets[i]};
	return n;
}

static void pause_devices(struct sandbox *s, bool paused)
{
	virtio_blk_pause(s->blk, paused);
	virtio_vsock_pause(s->vsock, paused);
	for (unsigned int i = 0; i < s->nr_nets; i++)
		virtio_net_pause(s->nets[i], paused);
}

/* Into path when fd < 0, else into fd (named path in messages). */
static int save(struct sandbox *s, const char *path, int fd)
{
	struct snapshot_dev devs[SANDBOX_SNAPSHOT_DEVS];
	struct snapshot_stats st;
	unsigned int n = snapshot_devs(s, devs);
	int r;

	r = vm_pause(s->vm);
	if (r < 0)
		return err_prefix(r, "pause the VM");
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
	return 0;
}

int sandbox_save(struct sandbox *s, const char *path)
{
	return save(s, path, -1);
}

int sandbox_save_fd(struct sandbox *s, int fd)
{
	return save(s, "the given file", fd);
}

int sandbox_export_disk(struct sandbox *s, int fd)
{
	int r = virtio_blk_export(s->blk, fd);

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

/* Those devices, without a backend: their TAPs were the saving process's. */
static int add_saved_nets(struct sandbox *s, const struct virtio_net_opts *saved, unsigned int n, char **frags)
{
	int r = 0;

	for (unsigned int i = 0; r >= 0 && i < n; i++)
		r = sandbox_add_detached_net(s, i, &saved[i], &frags[SANDBOX_SLOT_NET + i]);
	return r;
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

static int restore(struct sandbox *s, const struct sandbox_opts *o, struct vm_snapshot *snap, bool template,
                   struct restore_times *t, bool *ret_fatal)
{
	struct snapshot_dev devs[SANDBOX_SNAPSHOT_DEVS];
	struct sandbox_opts empty = *o;
	char *frags[SANDBOX_NR_VIRTIO] = {0};
	struct virtio_net_opts saved[NET_CONFIG_MAX_IFACES];
	unsigned int nsaved = 0;
	struct vm_config cfg;
	int r;

	vm_snapshot_config(snap, &cfg);
	if (cfg.ncpus != o->plan->ncpus || cfg.mem_size != o->plan->mem_size)
		return err_set(-EINVAL,
		               "the snapshot is of a VM with %u vCPUs and %llu MiB, this one needs %u and %llu",
		               cfg.ncpus, (unsigned long long)(cfg.mem_size >> 20), o->plan->ncpus,
		               (unsigned long long)(o->plan->mem_size >> 20));
	/* A template's disk was saved without media: it gets it after the
	 * load. A checkpoint's had its media all along. */
	if (template)
		empty.disk = NULL;
	/* Its network devices had no backend either: the same, then TAPs. A
	 * checkpoint's had their TAPs: made as saved, without, then TAPs. */
	if (template && o->net)
		empty.template_nics = o->net->cfg.nr_ifaces;
	empty.net = NULL;
	r = template ? 0 : saved_nets(snap, o, saved, &nsaved);
	if (r >= 0)
		r = sandbox_open_console(s, o->console_path);
	if (r >= 0)
		r = vm_create(&cfg, &s->vm);
	if (r >= 0)
		r = platform_create(s->vm, &s->platform);
	if (r >= 0)
		r = serial_create(s->vm, s->console_fd, &s->serial);
	if (r >= 0)
		r = sandbox_add_disk_vsock(s, &empty, frags);
	if (r >= 0)
		r = template ? sandbox_add_nets(s, &empty, frags) : add_saved_nets(s, saved, nsaved, frags);
	for (size_t i = 0; i < SANDBOX_NR_VIRTIO; i++)
		free(frags[i]);
	if (r < 0)
		return r;
	t->create = vm_now_ns();
	r = vm_snapshot_restore(snap, s->vm, devs, snapshot_devs(s, devs));
	if (r < 0)
		return r;
	if (template && o->disk) {
		r = virtio_blk_attach_media(s->blk, o->disk, o->disk_base, o->disk_read_only);
		if (r < 0)
			return err_prefix(r, "root disk");
	}
	if (o->net) {
		r = attach_taps(s, o->net, template, ret_fatal);
		if (r < 0)
			return r;
	}
	t->load = vm_now_ns();
	r = vm_start(s->vm);
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

int sandbox_restore(const struct sandbox_opts *o, const char *path, unsigned int flags, bool template,
                    struct sandbox **ret)
{
	struct restore_times t = {.t0 = vm_now_ns()};
	struct vm_snapshot *snap = NULL;
	bool fatal = false;
	int r;

	r = vm_snapshot_open(path, flags, &snap);
	if (r < 0)
		return r;
	t.open = vm_now_ns();
	r = restore_opened(o, snap, template, &t, &fatal, ret);
	vm_snapshot_close(snap);
	return r;
}

int sandbox_launch(const struct sandbox_opts *o, struct sandbox **ret)
{
	_cleanup_free_ char *path = NULL;
	unsigned int nics = o->net ? o->net->cfg.nr_ifaces : 0;
	struct restore_times t = {.t0 = vm_now_ns()};
	struct vm_snapshot *snap = NULL;
	bool fatal = false;
	int r;

	r = template_find(o->plan, nics, &path);
	t.lookup = vm_now_ns();
	if (r < 0) {
		log_warn("looking for a template: %s", err_msg());
		err_clear();
		r = 0;
	}
	if (r == 0) {
		log_info("VM: cold boot (%s)", o->plan->use_templates ? "no template" : "templates off");
		return sandbox_start(o, ret);
	}
	log_info("VM: restoring template %s", path);
	/* A damaged template file is an error the user must see. */
	r = vm_snapshot_open(path, SNAPSHOT_OPEN_TRUST_MEMORY, &snap);
	if (r < 0)
		return err_prefix(r, "template %s", path);
	t.open = vm_now_ns();
	r = restore_opened(o, snap, true, &t, &fatal, ret);
	vm_snapshot_close(snap);
	if (r >= 0)
		return r;
	if (fatal)
		return err_prefix(r, "template %s", path);
	/* A sound file whose state this host's KVM refused (seen: now and
	 * then an MSR value on nested hosts) costs a boot, not the container. */
	log_warn("template %s could not be restored (%s): cold boot instead", path, err_msg());
	err_clear();
	log_info("VM: cold boot (template refused)");
	return sandbox_start(o, ret);
}
