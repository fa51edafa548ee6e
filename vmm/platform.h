/* SPDX-License-Identifier: Apache-2.0 */
/* Fixed x86 platform ports: i8042 (0x60, 0x64) and the reset control
 * register 0xcf9, both ending the VM as a reboot; the CMOS clock; the ACPI
 * sleep control register (ACPI_SLEEP_PORT): S5 ends the VM as a power-off,
 * ACPI_RESET_VALUE as a reboot. */
#ifndef KVRUN_VMM_PLATFORM_H
#define KVRUN_VMM_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

#include "vmm/acpi.h"
#include "vmm/rtc.h"

struct vm;

struct platform {
	struct rtc *rtc;
	struct acpi_sleep_dev sleep;
};

/* Register the i8042 (ports 0x60, 0x64; 0x61 stays with KVM's PIT speaker
 * emulation), the reset port 0xcf9, the CMOS clock (0x70/0x71, time of
 * day from the host, BCD, 24 h) and the ACPI sleep register on vm->pio.
 * The sleep register is always there (also for restored VMs); only a
 * guest given ACPI tables (boot_config.use_acpi) knows of it. *ret is owned by the caller:
 * platform_free() after the VM stopped. */
int platform_create(struct vm *vm, struct platform **ret);
void platform_free(struct platform *p);

struct snap_buf;
/* Snapshot state of the platform (the CMOS index and NVRAM; the clock is
 * the host's). opaque is the struct platform. */
int platform_state_save(void *opaque, struct snap_buf *out);
int platform_state_load(void *opaque, const void *data, size_t len);

#endif
