/* SPDX-License-Identifier: Apache-2.0 */
/* Where the AP start code is copied: a low page of RAM that the VMM does not
 * use (boot_params is at 0x7000, the MP table at 0x9fc00). The SIPI vector
 * is TRAMP_BASE >> 12. */
#ifndef KVRUN_TEST_GUEST_TRAMPOLINE_H
#define KVRUN_TEST_GUEST_TRAMPOLINE_H

#define TRAMP_BASE 0x8000

#ifndef __ASSEMBLER__
extern char tramp_start[], tramp_end[], tramp_cr3[], tramp_stack[], tramp_entry[];
#endif

#endif
