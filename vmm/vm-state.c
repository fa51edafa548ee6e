/* SPDX-License-Identifier: Apache-2.0 */
/* VM-wide KVM state for snapshots: the in-kernel irqchip (both 8259s and
 * the IOAPIC), the PIT, and the KVM clock. */
#include <errno.h>
#include <linux/kvm.h>
#include <string.h>
#include <sys/ioctl.h>

#include "common/error.h"
#include "vmm/snapshot-int.h"
#include "vmm/vm.h"

static const struct {
	uint32_t id;
	const char *name;
} irqchips[] = {
    {KVM_IRQCHIP_PIC_MASTER, "PIC master"},
    {KVM_IRQCHIP_PIC_SLAVE, "PIC slave"},
    {KVM_IRQCHIP_IOAPIC, "IOAPIC"},
};

int vm_state_save_irqchip(struct vm *vm, struct snap_buf *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(irqchips); i++) {
		struct kvm_irqchip chip;

		memset(&chip, 0, sizeof(chip));
		chip.chip_id = irqchips[i].id;
		if (ioctl(vm->vm_fd, KVM_GET_IRQCHIP, &chip) < 0)
			return err_setsys(-errno, "KVM_GET_IRQCHIP (%s)", irqchips[i].name);
		if (snap_buf_put(out, &chip, sizeof(chip)) < 0)
			return -ENOMEM;
	}
	return 0;
}

int vm_state_load_irqchip(struct vm *vm, const void *data, size_t len)
{
	struct snap_reader rd = {.p = data, .len = len};

	if (len != ARRAY_SIZE(irqchips) * sizeof(struct kvm_irqchip))
		return err_set(-EBADMSG, "irqchip section has %zu bytes", len);
	for (size_t i = 0; i < ARRAY_SIZE(irqchips); i++) {
		struct kvm_irqchip chip;

		snap_get(&rd, &chip, sizeof(chip));
		if (chip.chip_id != irqchips[i].id)
			return err_set(-EBADMSG, "irqchip section: chip %u where %s was expected", chip.chip_id,
			               irqchips[i].name);
		if (ioctl(vm->vm_fd, KVM_SET_IRQCHIP, &chip) < 0)
			return err_setsys(-errno, "KVM_SET_IRQCHIP (%s)", irqchips[i].name);
	}
	return 0;
}

int vm_state_save_pit(struct vm *vm, struct snap_buf *out)
{
	struct kvm_pit_state2 pit;

	memset(&pit, 0, sizeof(pit));
	if (ioctl(vm->vm_fd, KVM_GET_PIT2, &pit) < 0)
		return err_setsys(-errno, "KVM_GET_PIT2");
	return snap_buf_put(out, &pit, sizeof(pit));
}

int vm_state_load_pit(struct vm *vm, const void *data, size_t len)
{
	struct kvm_pit_state2 pit;

	if (len != sizeof(pit))
		return err_set(-EBADMSG, "PIT section has %zu bytes", len);
	memcpy(&pit, data, sizeof(pit));
	if (ioctl(vm->vm_fd, KVM_SET_PIT2, &pit) < 0)
		return err_setsys(-errno, "KVM_SET_PIT2");
	return 0;
}

int vm_state_save_clock(struct vm *vm, struct snap_buf *out)
{
	struct kvm_clock_data clock;

	memset(&clock, 0, sizeof(clock));
	if (ioctl(vm->vm_fd, KVM_GET_CLOCK, &clock) < 0)
		return err_setsys(-errno, "KVM_GET_CLOCK");
	return snap_buf_put(out, &clock, sizeof(clock));
}

/* The guest's kvmclock continues from the saved value: the time the VM
 * spent saved does not pass for it (as after a suspend), so its timers and
 * watchdogs see no jump. Only the clock value is set (flags 0). */
int vm_state_load_clock(struct vm *vm, const void *data, size_t len)
{
	struct kvm_clock_data saved, clock;

	if (len != sizeof(saved))
		return err_set(-EBADMSG, "clock section has %zu bytes", len);
	memcpy(&saved, data, sizeof(saved));
	memset(&clock, 0, sizeof(clock));
	clock.clock = saved.clock;
	if (ioctl(vm->vm_fd, KVM_SET_CLOCK, &clock) < 0)
		return err_setsys(-errno, "KVM_SET_CLOCK");
	return 0;
}
