/* SPDX-License-Identifier: Apache-2.0 */
/* Interrupt lines (irqfd) and doorbells (ioeventfd) on a KVM VM. */
#include <errno.h>
#include <linux/kvm.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "common/error.h"
#include "vmm/irq.h"
#include "vmm/vm.h"

static int irq_alloc(struct vm *vm, uint32_t *ret)
{
	int r = -ENOSPC;

	pthread_mutex_lock(&vm->lock);
	for (uint32_t pin = VM_IRQ_FIRST; pin <= VM_IRQ_LAST; pin++) {
		if (pin == VM_IRQ_SERIAL || (vm->irq_used & (1u << pin)))
			continue;
		vm->irq_used |= 1u << pin;
		*ret = pin;
		r = 0;
		break;
	}
	pthread_mutex_unlock(&vm->lock);
	return r;
}

static void irq_release(struct vm *vm, uint32_t pin)
{
	pthread_mutex_lock(&vm->lock);
	vm->irq_used &= ~(1u << pin);
	pthread_mutex_unlock(&vm->lock);
}

int vm_irq_line_new(struct vm *vm, struct irq_line *ret)
{
	struct kvm_irqfd irqfd = {0};
	uint32_t gsi;
	int fd, r;

	r = irq_alloc(vm, &gsi);
	if (r < 0)
		return err_set(r, "no free interrupt line (IOAPIC pins %d-%d in use)", VM_IRQ_FIRST, VM_IRQ_LAST);
	fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fd < 0) {
		r = err_setsys(-errno, "eventfd");
		irq_release(vm, gsi);
		return r;
	}
	irqfd.fd = fd;
	irqfd.gsi = gsi;
	if (ioctl(vm->vm_fd, KVM_IRQFD, &irqfd) < 0) {
		r = err_setsys(-errno, "KVM_IRQFD gsi %u", gsi);
		close(fd);
		irq_release(vm, gsi);
		return r;
	}
	*ret = (struct irq_line){.fd = fd, .gsi = gsi};
	return 0;
}

void vm_irq_line_free(struct vm *vm, struct irq_line *line)
{
	struct kvm_irqfd irqfd = {.fd = line->fd, .gsi = line->gsi, .flags = KVM_IRQFD_FLAG_DEASSIGN};

	if (line->fd < 0)
		return;
	ioctl(vm->vm_fd, KVM_IRQFD, &irqfd);
	close(line->fd);
	irq_release(vm, line->gsi);
	line->fd = -1;
}

int vm_irq_set_level(struct vm *vm, uint32_t gsi, bool level)
{
	struct kvm_irq_level irq = {.irq = gsi, .level = level};

	if (ioctl(vm->vm_fd, KVM_IRQ_LINE, &irq) < 0)
		return -errno;
	return 0;
}

static void ioeventfd_fill(struct kvm_ioeventfd *io, int fd, uint64_t addr, uint32_t len, bool pio, bool use_datamatch,
                           uint64_t datamatch)
{
	memset(io, 0, sizeof(*io));
	io->addr = addr;
	io->len = len;
	io->fd = fd;
	io->datamatch = use_datamatch ? datamatch : 0;
	if (pio)
		io->flags |= KVM_IOEVENTFD_FLAG_PIO;
	if (use_datamatch)
		io->flags |= KVM_IOEVENTFD_FLAG_DATAMATCH;
}

int vm_ioeventfd_add(struct vm *vm, uint64_t addr, uint32_t len, bool pio, bool use_datamatch, uint64_t datamatch)
{
	struct kvm_ioeventfd io;
	int fd, r;

	fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fd < 0)
		return err_setsys(-errno, "eventfd");
	ioeventfd_fill(&io, fd, addr, len, pio, use_datamatch, datamatch);
	if (ioctl(vm->vm_fd, KVM_IOEVENTFD, &io) < 0) {
		r = err_setsys(-errno, "KVM_IOEVENTFD at 0x%llx", (unsigned long long)addr);
		close(fd);
		return r;
	}
	return fd;
}

int vm_ioeventfd_del(struct vm *vm, int fd, uint64_t addr, uint32_t len, bool pio, bool use_datamatch,
                     uint64_t datamatch)
{
	struct kvm_ioeventfd io;

	ioeventfd_fill(&io, fd, addr, len, pio, use_datamatch, datamatch);
	io.flags |= KVM_IOEVENTFD_FLAG_DEASSIGN;
	if (ioctl(vm->vm_fd, KVM_IOEVENTFD, &io) < 0)
		return err_setsys(-errno, "KVM_IOEVENTFD deassign at 0x%llx", (unsigned long long)addr);
	return 0;
}
