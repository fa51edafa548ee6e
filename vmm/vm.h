/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A KVM virtual machine: guest RAM, in-kernel irqchip and PIT, the PIO and
 * MMIO buses, the event loop, vCPU threads, and how the VM ended.
 *
 * Life cycle (what runtime code does):
 *
 *   struct vm_config cfg = { .ncpus = 1, .mem_size = 256 << 20 };
 *   vm_create(&cfg, &vm);                    KVM VM, RAM, irqchip, vCPUs
 *   bus_register(&vm->pio / &vm->mmio, ...)  devices (serial_create, ...)
 *   vm_irq_line_new(vm, &line)               interrupt lines for devices
 *   event_loop_add(vm->loop, fd, ...)        backends, ioeventfds
 *   boot_linux(vm, &boot_cfg)                load kernel, set BSP registers
 *   vm_start(vm)                             event loop + vCPU threads
 *   vm_wait(vm, &result)                     blocks until the VM ends;
 *                                            joins every thread
 *   vm_free(vm)
 *
 * Any thread may end the VM with vm_stop(); the first reason wins.
 */
#ifndef KVRUN_VMM_VM_H
#define KVRUN_VMM_VM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "vmm/bus.h"
#include "vmm/event-loop.h"
#include "vmm/mem.h"

/* Most vCPUs a VM may have (the MP table must fit below 640 KiB). */
#define VM_MAX_CPUS 32

/* IOAPIC pins handed out by vm_irq_line_new() (4 is the UART's). */
#define VM_IRQ_FIRST 5
#define VM_IRQ_LAST 23
#define VM_IRQ_SERIAL 4

/* How a VM ended. */
enum vm_exit_reason {
	VM_EXIT_NONE = 0, /* still running */
	VM_EXIT_POWEROFF, /* guest powered off (KVM_SYSTEM_EVENT_SHUTDOWN, ACPI S5) */
	VM_EXIT_REBOOT, /* guest reset (i8042 0xfe, port 0xcf9, KVM_SYSTEM_EVENT_RESET) */
	VM_EXIT_TRIPLE_FAULT, /* KVM_EXIT_SHUTDOWN */
	VM_EXIT_GUEST, /* test device exit port; code = value written */
	VM_EXIT_CRASH, /* internal error, failed entry, unknown exit, VMM error */
	VM_EXIT_TIMEOUT, /* vm_set_timeout() expired */
	VM_EXIT_SIGNAL, /* stopped on a signal; code = signal number */
};

struct vm_result {
	enum vm_exit_reason reason;
	int code;
	char detail[128]; /* what happened, for crashes; "" otherwise */
};

/* "poweroff", "reboot", "triple-fault", "guest-exit", "crash", "timeout",
 * "signal", "none". */
const char *vm_exit_reason_name(enum vm_exit_reason r);

struct vm_config {
	unsigned int ncpus; /* 1..VM_MAX_CPUS */
	uint64_t mem_size; /* bytes, multiple of 4 KiB, >= 2 MiB */
};

struct vcpu;
struct kvm_cpuid2;

struct vm {
	int kvm_fd;
	int vm_fd;
	int vcpu_mmap_size;
	struct guest_mem mem;
	struct bus pio;
	struct bus mmio;
	struct event_loop *loop;

	unsigned int ncpus;
	struct vcpu **vcpus;
	struct kvm_cpuid2 *supported_cpuid; /* from KVM_GET_SUPPORTED_CPUID */

	uint32_t irq_used; /* bitmap of allocated IOAPIC pins */
	pthread_mutex_t lock;

	/* How the VM ended; set once by vm_stop(). */
	atomic_int stopping;
	struct vm_result result;
	int done_fd; /* eventfd, readable once the VM ended */
	int timer_fd;
	int sample_fd;
	bool started;
	/* Pause: vCPU threads park on pause_cond while pause_req is set. */
	atomic_bool pause_req;
	pthread_cond_t pause_cond;
	unsigned int parked; /* vCPU threads parked (under lock) */
	unsigned int running_vcpus; /* vCPU threads started and not ended (under lock) */
	pthread_t memslot_thread; /* registers guest RAM with KVM */
	bool memslot_pending;
	int memslot_err;

	/* Run by each vCPU thread before its first KVM_RUN (the jail's vCPU
	 * filter: runtime/host/jail.h), or NULL; a failure ends the VM. */
	int (*vcpu_thread_init)(void *opaque);
	void *vcpu_thread_opaque;

	/* Timings, CLOCK_MONOTONIC ns; 0 when not reached. */
	uint64_t t_first_run;
	atomic_uint_fast64_t t_boot_marker;
};

/* Create the VM: open /dev/kvm and check the API, create the VM, RAM, the
 * irqchip and PIT, the buses, the event loop (not started), the always-on
 * boot-marker port and the vCPUs (CPUID, MSRs, LAPIC, FPU set up; the boot
 * vCPU's registers are left to the boot code). On failure err_msg() says
 * what failed. *ret is owned by the caller (vm_free). */
int vm_create(const struct vm_config *cfg, struct vm **ret);

/* Stop (if running), join every thread, close and unmap everything.
 * Accepts NULL. */
void vm_free(struct vm *vm);

/* Start the event loop thread and one thread per vCPU (after waiting for
 * guest RAM to be registered with KVM, which vm_create() leaves running in
 * the background). */
int vm_start(struct vm *vm);

/* Register guest RAM with KVM on a thread of its own (vm_create() does
 * this), and wait until it is done (vm_start() does this; only needed by
 * code that must have it earlier). */
int vm_memslots_start(struct vm *vm);
int vm_memslots_wait(struct vm *vm);

/* End the VM with this result (first caller wins; later calls are ignored).
 * Safe from any thread, including vCPU and event-loop threads; it does not
 * block. */
void vm_stop(struct vm *vm, enum vm_exit_reason reason, int code);
/* Same, with a printf-style detail kept in vm_result.detail. */
void vm_stopf(struct vm *vm, enum vm_exit_reason reason, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Stop every vCPU between two exits and return once all are parked (the
 * event loop keeps running). vm_resume() lets them go on. Safe from any
 * thread but a vCPU thread; a stop ends a pause. */
int vm_pause(struct vm *vm);
int vm_resume(struct vm *vm);

/* Arm a one-shot timer on the event loop that ends the VM with
 * VM_EXIT_TIMEOUT after ms milliseconds. Call before or after vm_start(). */
int vm_set_timeout(struct vm *vm, uint64_t ms);

/* Debugging: every ms milliseconds log each vCPU's RIP at debug level
 * (map it to a function with the kernel's System.map). */
int vm_set_rip_sampling(struct vm *vm, uint64_t ms);

/* Block until the VM ended, then stop and join every vCPU thread and the
 * event loop thread. *ret gets the result. */
int vm_wait(struct vm *vm, struct vm_result *ret);

/* CLOCK_MONOTONIC in ns, and the same at the start of this process (taken
 * by a constructor, before main()). */
uint64_t vm_now_ns(void);
uint64_t vm_process_start_ns(void);

/* Boot-marker port (common/debug-port.h): registered by vm_create(). */
int vm_boot_marker_register(struct vm *vm);

#endif
