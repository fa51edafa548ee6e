/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "runtime/sandbox.h"
#include "virtio/blk/blk.h"
#include "virtio/mmio.h"
#include "virtio/vsock/vsock.h"
#include "vmm/boot.h"
#include "vmm/debug-port.h"
#include "vmm/platform.h"
#include "vmm/serial.h"

static uint64_t virtio_addr(unsigned int n)
{
	return KVRUN_MMIO_VIRTIO_BASE + n * KVRUN_MMIO_VIRTIO_STRIDE;
}

/* Put transport m at slot n: bus window, interrupt line, doorbell. */
static int attach(struct sandbox *s, unsigned int n, struct virtio_mmio *m, char **ret_frag)
{
	uint64_t addr = virtio_addr(n);
	char frag[64];
	int r, fd;

	r = vm_irq_line_new(s->vm, &s->lines[n]);
	if (r < 0)
		return r;
	virtio_mmio_set_irq(m, &s->lines[n]);
	r = bus_register(&s->vm->mmio, addr, VIRTIO_MMIO_SIZE, &virtio_mmio_bus_ops, m);
	if (r < 0)
		return err_setsys(r, "register virtio device at 0x%llx", (unsigned long long)addr);
	/* Kicks through an ioeventfd cost no exit to userspace. */
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

static int add_devices(struct sandbox *s, const struct sandbox_opts *o, char **frags)
{
	int r;

	r = virtio_blk_new(&s->vm->mem,
	                   &(struct virtio_blk_opts){.path = o->disk, .read_only = o->disk_read_only, .id = "rootfs"},
	                   &s->blk);
	if (r < 0)
		return err_prefix(r, "root disk");
	r = attach(s, 0, virtio_blk_mmio(s->blk), &frags[0]);
	if (r < 0)
		return r;
	r = virtio_vsock_new(&s->vm->mem, s->vm->loop, SANDBOX_GUEST_CID, o->vsock_path, &s->vsock);
	if (r < 0)
		return err_prefix(r, "vsock");
	return attach(s, 1, virtio_vsock_mmio(s->vsock), &frags[1]);
}

static int open_console(struct sandbox *s, const char *path)
{
	s->console_fd = -1;
	if (!path)
		return 0;
	s->console_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (s->console_fd < 0)
		return err_setsys(-errno, "open console log %s", path);
	return 0;
}

static int build(struct sandbox *s, const struct sandbox_opts *o)
{
	struct vm_config cfg = {.ncpus = o->plan->ncpus, .mem_size = o->plan->mem_size};
	char *frags[SANDBOX_NR_VIRTIO + 1] = {0};
	_cleanup_free_ char *cmdline = NULL;
	int r;

	r = open_console(s, o->console_path);
	if (r >= 0)
		r = vm_create(&cfg, &s->vm);
	if (r >= 0)
		r = platform_create(s->vm, &s->platform);
	if (r >= 0)
		r = serial_create(s->vm, s->console_fd, &s->serial);
	if (r >= 0)
		r = add_devices(s, o, frags);
	if (r >= 0)
		r = vm_plan_cmdline(o->plan, frags, &cmdline);
	for (size_t i = 0; i < SANDBOX_NR_VIRTIO; i++)
		free(frags[i]);
	if (r < 0)
		return r;
	log_debug("kernel %s, initrd %s, %u vCPU, %llu MiB, command line: %s", o->plan->kernel, o->plan->initrd,
	          cfg.ncpus, (unsigned long long)(cfg.mem_size >> 20), cmdline);
	r = boot_linux(s->vm, &(struct boot_config){
				  .kernel_path = o->plan->kernel, .initrd_path = o->plan->initrd, .cmdline = cmdline});
	if (r < 0)
		return r;
	return vm_start(s->vm);
}

int sandbox_start(const struct sandbox_opts *o, struct sandbox **ret)
{
	struct sandbox *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < SANDBOX_NR_VIRTIO; i++) {
		s->lines[i].fd = -1;
		s->notify_fds[i] = -1;
	}
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
	vm_free(s->vm);
	if (s->console_fd >= 0)
		close(s->console_fd);
	free(s);
	if (ret)
		*ret = res;
}
