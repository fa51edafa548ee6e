/* SPDX-License-Identifier: Apache-2.0 */
/* Fixed x86 platform ports: i8042 (0x60-0x64) and the reset control
 * register 0xcf9, both ending the VM as a reboot. */
#ifndef KVRUN_VMM_PLATFORM_H
#define KVRUN_VMM_PLATFORM_H

struct vm;

/* Register ports 0x60, 0x64 and 0xcf9 on vm->pio (0x61 stays with KVM's
 * PIT speaker emulation). */
int platform_devices_register(struct vm *vm);

#endif
