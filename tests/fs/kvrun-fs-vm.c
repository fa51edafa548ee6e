/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kvrun-fs-vm: a minimal VMM for the virtio-fs device's guest test (the
 * runtime's `kvrun boot` has no shared directories yet). It boots a kernel
 * (the freestanding test guest) with the serial console on stderr, the
 * test device, and one virtio-fs device sharing DIR under TAG, attached as
 * docs/virtio.md describes (irqfd line, ioeventfd doorbell through the
 * event loop).
 *
 *   kvrun-fs-vm --kernel FILE --share DIR --tag TAG [--initrd FILE] [--cmdline S]
 *               [--memory MIB] [--timeout SECONDS]
 *
 * It boots a Linux kernel the same way (with an initramfs whose /init
 * mounts the tag). Exit status: the code the guest wrote to the test
 * device's exit port, 0 on power-off, 120 on a guest reboot, 124 on
 * timeout, 122 when the VM crashed, 125 on a setup error.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "virtio/fs/fs.h"
#include "vmm/boot.h"
#include "vmm/debug-port.h"
#include "vmm/platform.h"
#include "vmm/serial.h"
#include "vmm/test-device.h"
#include "vmm/vm.h"

#define EXIT_REBOOT 120
#define EXIT_CRASH 122
#define EXIT_TIMEOUT 124
#define EXIT_SETUP 125

struct opts {
	const char *kernel, *initrd, *share, *tag, *cmdline;
	double timeout;
	unsigned long memory_mib;
};

struct devices {
	struct serial *serial;
	struct platform *platform;
	struct test_device *test;
	struct virtio_fs *fs;
	struct irq_line line;
	int notify_fd;
	struct acpi_virtio_mmio where;
};

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
	    {"kernel", required_argument, NULL, 'k'},  {"share", required_argument, NULL, 's'},
	    {"tag", required_argument, NULL, 't'},     {"cmdline", required_argument, NULL, 'c'},
	    {"timeout", required_argument, NULL, 'T'}, {"initrd", required_argument, NULL, 'i'},
	    {"memory", required_argument, NULL, 'm'},  {0},
	};
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'k':
			o->kernel = optarg;
			break;
		case 's':
			o->share = optarg;
			break;
		case 't':
			o->tag = optarg;
			break;
		case 'c':
			o->cmdline = optarg;
			break;
		case 'T':
			o->timeout = atof(optarg);
			break;
		case 'i':
			o->initrd = optarg;
			break;
		case 'm':
			o->memory_mib = strtoul(optarg, NULL, 10);
			if (o->memory_mib < 16 || o->memory_mib > 4096)
				return -1;
			break;
		default:
			return -1;
		}
	}
	return o->kernel && o->share && o->tag && optind == argc ? 0 : -1;
}

/* The attach sequence of docs/virtio.md, as device 0. */
static int attach_fs(struct vm *vm, const struct opts *o, struct devices *d)
{
	uint64_t addr = KVRUN_MMIO_VIRTIO_BASE;
	struct virtio_fs_opts fo;
	struct virtio_mmio *m;
	int r;

	virtio_fs_opts_default(&fo);
	fo.tag = o->tag;
	fo.server.root = o->share;
	r = virtio_fs_new(&vm->mem, &fo, &d->fs);
	if (r < 0)
		return r;
	m = virtio_fs_mmio(d->fs);
	r = vm_irq_line_new(vm, &d->line);
	if (r < 0)
		return err_setsys(r, "no interrupt line for virtio-fs");
	virtio_mmio_set_irq(m, &d->line);
	r = bus_register(&vm->mmio, addr, VIRTIO_MMIO_SIZE, &virtio_mmio_bus_ops, m);
	if (r < 0)
		return err_setsys(r, "registering virtio-fs");
	d->notify_fd = vm_ioeventfd_add(vm, addr + VIRTIO_MMIO_QUEUE_NOTIFY, 4, false, false, 0);
	if (d->notify_fd < 0)
		return err_setsys(d->notify_fd, "ioeventfd for virtio-fs");
	r = virtio_mmio_add_notify_fd(m, vm->loop, d->notify_fd, VIRTIO_MMIO_ALL_QUEUES);
	if (r < 0)
		return err_setsys(r, "watching the virtio-fs doorbell");
	d->where = (struct acpi_virtio_mmio){.base = addr, .size = VIRTIO_MMIO_SIZE, .gsi = d->line.gsi};
	return 0;
}

static int setup(struct vm *vm, const struct opts *o, struct devices *d)
{
	struct boot_config bc = {.kernel_path = o->kernel, .initrd_path = o->initrd, .cmdline = o->cmdline};
	int r;

	r = serial_create(vm, STDERR_FILENO, &d->serial);
	if (r >= 0)
		r = platform_create(vm, &d->platform);
	if (r >= 0)
		r = test_device_create(vm, &d->test);
	if (r >= 0)
		r = attach_fs(vm, o, d);
	if (r >= 0 && o->timeout > 0)
		r = vm_set_timeout(vm, (uint64_t)(o->timeout * 1000));
	if (r < 0)
		return r;
	bc.virtio = &d->where;
	bc.nr_virtio = 1;
	return boot_linux(vm, &bc);
}

static void teardown(struct vm *vm, struct devices *d)
{
	virtio_fs_free(d->fs);
	if (d->notify_fd >= 0)
		close(d->notify_fd);
	if (d->line.fd >= 0)
		vm_irq_line_free(vm, &d->line);
	test_device_free(d->test);
	serial_free(d->serial);
	platform_free(d->platform);
}

int main(int argc, char **argv)
{
	struct opts o = {.memory_mib = 128};
	struct vm_config cfg = {.ncpus = 1};
	struct devices d = {.notify_fd = -1, .line = {.fd = -1}};
	struct vm_result res = {0};
	struct vm *vm = NULL;
	int r;

	if (parse(argc, argv, &o) < 0) {
		fprintf(stderr, "Usage: kvrun-fs-vm --kernel FILE --share DIR --tag TAG [--initrd FILE] [--cmdline S]\n"
		                "                   [--memory MIB] [--timeout S]\n");
		return EXIT_SETUP;
	}
	cfg.mem_size = (uint64_t)o.memory_mib << 20;
	r = vm_create(&cfg, &vm);
	if (r >= 0)
		r = setup(vm, &o, &d);
	if (r >= 0)
		r = vm_start(vm);
	if (r < 0) {
		fprintf(stderr, "kvrun-fs-vm: %s\n", err_msg());
		if (vm)
			teardown(vm, &d);
		vm_free(vm);
		return EXIT_SETUP;
	}
	vm_wait(vm, &res);
	teardown(vm, &d);
	vm_free(vm);
	switch (res.reason) {
	case VM_EXIT_POWEROFF:
		return 0;
	case VM_EXIT_GUEST:
		return res.code & 0xff;
	case VM_EXIT_REBOOT:
		return EXIT_REBOOT;
	case VM_EXIT_TIMEOUT:
		return EXIT_TIMEOUT;
	default:
		fprintf(stderr, "kvrun-fs-vm: VM ended: %s %s\n", vm_exit_reason_name(res.reason), res.detail);
		return EXIT_CRASH;
	}
}
