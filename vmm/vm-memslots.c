/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Registering guest RAM with KVM. A memory slot costs a host SRCU grace
 * period (several ms on a busy host) however small the slot: it runs on its
 * own thread while the rest of the VM, the devices and the kernel are set
 * up; vm_start() (or vm_free()) joins it.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/kvm.h>
#include <sys/ioctl.h>

#include "common/error.h"
#include "common/log.h"
#include "vmm/vm.h"

static void *memslot_thread(void *arg)
{
	struct vm *vm = arg;

	for (unsigned int i = 0; i < vm->mem.nr_regions; i++) {
		struct guest_mem_region *g = &vm->mem.regions[i];
		struct kvm_userspace_memory_region slot = {
		    .slot = i,
		    .guest_phys_addr = g->gpa,
		    .memory_size = g->size,
		    .userspace_addr = (uintptr_t)g->host,
		};

		if (ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &slot) < 0) {
			vm->memslot_err = -errno;
			break;
		}
	}
	log_debug("vm: memory slots at %" PRIu64 " us", (vm_now_ns() - vm_process_start_ns()) / 1000);
	return NULL;
}

int vm_memslots_start(struct vm *vm)
{
	int r = pthread_create(&vm->memslot_thread, NULL, memslot_thread, vm);

	if (r)
		return err_setsys(-r, "starting the memory slot thread");
	vm->memslot_pending = true;
	return 0;
}

int vm_memslots_wait(struct vm *vm)
{
	if (vm->memslot_pending) {
		pthread_join(vm->memslot_thread, NULL);
		vm->memslot_pending = false;
	}
	if (vm->memslot_err)
		return err_setsys(vm->memslot_err, "KVM_SET_USER_MEMORY_REGION");
	return 0;
}
