/* SPDX-License-Identifier: Apache-2.0 */
/* Creating and freeing a KVM VM: /dev/kvm checks, RAM, irqchip, vCPUs, the
 * boot-time marker port. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "common/debug-port.h"
#include "common/error.h"
#include "common/log.h"
#include "vmm/vcpu.h"
#include "vmm/vm.h"

/* Below the IOAPIC, in the 32-bit gap (never RAM): 3 pages of TSS for VMX
 * real-mode emulation and one page for the EPT identity map. */
#define KVM_TSS_ADDR 0xfffbd000ULL
#define KVM_IDENTITY_MAP_ADDR 0xfffbc000ULL

static const struct {
	int cap;
	const char *name;
} required_caps[] = {
    {KVM_CAP_IRQCHIP, "KVM_CAP_IRQCHIP"},
    {KVM_CAP_USER_MEMORY, "KVM_CAP_USER_MEMORY"},
    {KVM_CAP_SET_TSS_ADDR, "KVM_CAP_SET_TSS_ADDR"},
    {KVM_CAP_SET_IDENTITY_MAP_ADDR, "KVM_CAP_SET_IDENTITY_MAP_ADDR"},
    {KVM_CAP_EXT_CPUID, "KVM_CAP_EXT_CPUID"},
    {KVM_CAP_PIT2, "KVM_CAP_PIT2"},
    {KVM_CAP_IRQFD, "KVM_CAP_IRQFD"},
    {KVM_CAP_IOEVENTFD, "KVM_CAP_IOEVENTFD"},
    {KVM_CAP_IMMEDIATE_EXIT, "KVM_CAP_IMMEDIATE_EXIT"},
};

static int kvm_open(struct vm *vm)
{
	int v;

	vm->kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (vm->kvm_fd < 0)
		return err_setsys(-errno, "cannot open /dev/kvm");
	v = ioctl(vm->kvm_fd, KVM_GET_API_VERSION, 0);
	if (v < 0)
		return err_setsys(-errno, "/dev/kvm is not a KVM device (KVM_GET_API_VERSION)");
	if (v != KVM_API_VERSION)
		return err_set(-ENOTSUP, "/dev/kvm speaks KVM API %d, kvrun needs %d", v, KVM_API_VERSION);
	for (size_t i = 0; i < ARRAY_SIZE(required_caps); i++)
		if (ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, required_caps[i].cap) <= 0)
			return err_set(-ENOTSUP, "/dev/kvm lacks %s", required_caps[i].name);
	vm->vcpu_mmap_size = ioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (vm->vcpu_mmap_size < (int)sizeof(struct kvm_run))
		return err_setsys(-errno, "KVM_GET_VCPU_MMAP_SIZE");
	return 0;
}

static int kvm_get_supported_cpuid(struct vm *vm)
{
	for (unsigned int n = 128; n <= 1024; n *= 2) {
		struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + n * sizeof(c->entries[0]));

		if (!c)
			return -ENOMEM;
		c->nent = n;
		if (ioctl(vm->kvm_fd, KVM_GET_SUPPORTED_CPUID, c) == 0) {
			vm->supported_cpuid = c;
			return 0;
		}
		free(c);
		if (errno != E2BIG)
			return err_setsys(-errno, "KVM_GET_SUPPORTED_CPUID");
	}
	return err_set(-E2BIG, "KVM_GET_SUPPORTED_CPUID: too many entries");
}

static int vm_setup_memory(struct vm *vm, uint64_t size)
{
	int r = guest_mem_init(&vm->mem, size);

	if (r < 0)
		return err_setsys(r, "allocating %llu MiB of guest RAM", (unsigned long long)(size >> 20));
	return vm_memslots_start(vm);
}

static int vm_setup_irqchip(struct vm *vm)
{
	struct kvm_pit_config pit = {.flags = KVM_PIT_SPEAKER_DUMMY};

	if (ioctl(vm->vm_fd, KVM_SET_TSS_ADDR, (unsigned long)KVM_TSS_ADDR) < 0)
		return err_setsys(-errno, "KVM_SET_TSS_ADDR");
	uint64_t idmap = KVM_IDENTITY_MAP_ADDR;
	if (ioctl(vm->vm_fd, KVM_SET_IDENTITY_MAP_ADDR, &idmap) < 0)
		return err_setsys(-errno, "KVM_SET_IDENTITY_MAP_ADDR");
	if (ioctl(vm->vm_fd, KVM_CREATE_IRQCHIP, 0) < 0)
		return err_setsys(-errno, "KVM_CREATE_IRQCHIP");
	if (ioctl(vm->vm_fd, KVM_CREATE_PIT2, &pit) < 0)
		return err_setsys(-errno, "KVM_CREATE_PIT2");
	return 0;
}

static int vm_setup_vcpus(struct vm *vm)
{
	vm->vcpus = calloc(vm->ncpus, sizeof(*vm->vcpus));
	if (!vm->vcpus)
		return -ENOMEM;
	for (unsigned int i = 0; i < vm->ncpus; i++) {
		int r = vcpu_create(vm, i, &vm->vcpus[i]);

		if (r < 0)
			return r;
	}
	return 0;
}

/* The boot-time marker port: the first write records the time. */
static void marker_write(void *opaque, uint64_t offset, const void *data, uint32_t len)
{
	struct vm *vm = opaque;
	uint_fast64_t expected = 0;
	uint64_t now = vm_now_ns();

	atomic_compare_exchange_strong(&vm->t_boot_marker, &expected, now);
}

static void marker_read(void *opaque, uint64_t offset, void *data, uint32_t len)
{
	memset(data, 0, len);
}

static const struct bus_dev_ops marker_ops = {.read = marker_read, .write = marker_write};

int vm_boot_marker_register(struct vm *vm)
{
	return bus_register(&vm->pio, KVRUN_PORT_BOOT_MARKER, 1, &marker_ops, vm);
}

static int vm_setup(struct vm *vm, const struct vm_config *cfg)
{
	int r;

	r = kvm_open(vm);
	if (r < 0)
		return r;
	vm->vm_fd = ioctl(vm->kvm_fd, KVM_CREATE_VM, 0);
	if (vm->vm_fd < 0)
		return err_setsys(-errno, "KVM_CREATE_VM");
	log_debug("vm: created at %" PRIu64 " us", (vm_now_ns() - vm_process_start_ns()) / 1000);
	r = vm_setup_memory(vm, cfg->mem_size);
	if (r < 0)
		return r;
	r = vm_setup_irqchip(vm);
	if (r < 0)
		return r;
	log_debug("vm: irqchip at %" PRIu64 " us", (vm_now_ns() - vm_process_start_ns()) / 1000);
	r = kvm_get_supported_cpuid(vm);
	if (r < 0)
		return r;
	r = event_loop_new(&vm->loop);
	if (r < 0)
		return err_setsys(r, "creating the event loop");
	vm->done_fd = eventfd(0, EFD_CLOEXEC);
	if (vm->done_fd < 0)
		return err_setsys(-errno, "eventfd");
	r = vm_boot_marker_register(vm);
	if (r < 0)
		return err_setsys(r, "boot marker port");
	return vm_setup_vcpus(vm);
}

int vm_create(const struct vm_config *cfg, struct vm **ret)
{
	struct vm *vm;
	int r;

	if (cfg->ncpus < 1 || cfg->ncpus > VM_MAX_CPUS)
		return err_set(-EINVAL, "%u vCPUs asked for, kvrun supports 1 to %d", cfg->ncpus, VM_MAX_CPUS);
	if (cfg->mem_size < (2ULL << 20) || (cfg->mem_size & 0xfff))
		return err_set(-EINVAL, "guest memory must be at least 2 MiB and a multiple of 4 KiB");
	vm = calloc(1, sizeof(*vm));
	if (!vm)
		return -ENOMEM;
	vm->kvm_fd = vm->vm_fd = vm->done_fd = vm->timer_fd = vm->sample_fd = -1;
	vm->ncpus = cfg->ncpus;
	pthread_mutex_init(&vm->lock, NULL);
	pthread_cond_init(&vm->pause_cond, NULL);
	bus_init(&vm->pio, "pio");
	bus_init(&vm->mmio, "mmio");
	r = vm_setup(vm, cfg);
	if (r < 0) {
		vm_free(vm);
		return r;
	}
	*ret = vm;
	return 0;
}

void vm_free(struct vm *vm)
{
	if (!vm)
		return;
	if (vm->started) {
		struct vm_result res;

		vm_stop(vm, VM_EXIT_SIGNAL, 0);
		vm_wait(vm, &res);
	}
	vm_memslots_wait(vm);
	event_loop_free(vm->loop);
	for (unsigned int i = 0; vm->vcpus && i < vm->ncpus; i++)
		vcpu_free(vm->vcpus[i]);
	free(vm->vcpus);
	free(vm->supported_cpuid);
	bus_destroy(&vm->pio);
	bus_destroy(&vm->mmio);
	if (vm->timer_fd >= 0)
		close(vm->timer_fd);
	if (vm->sample_fd >= 0)
		close(vm->sample_fd);
	if (vm->done_fd >= 0)
		close(vm->done_fd);
	if (vm->vm_fd >= 0)
		close(vm->vm_fd);
	if (vm->kvm_fd >= 0)
		close(vm->kvm_fd);
	guest_mem_destroy(&vm->mem);
	pthread_mutex_destroy(&vm->lock);
	pthread_cond_destroy(&vm->pause_cond);
	free(vm);
}
