/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <linux/kvm.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "vmm/counters.h"
#include "vmm/cpuid.h"
#include "vmm/vcpu.h"
#include "vmm/vm.h"

#define MSR_IA32_TSC 0x10
#define MSR_IA32_SYSENTER_CS 0x174
#define MSR_IA32_SYSENTER_ESP 0x175
#define MSR_IA32_SYSENTER_EIP 0x176
#define MSR_IA32_MISC_ENABLE 0x1a0
#define MSR_MTRR_DEF_TYPE 0x2ff
#define MSR_STAR 0xc0000081
#define MSR_LSTAR 0xc0000082
#define MSR_CSTAR 0xc0000083
#define MSR_SYSCALL_MASK 0xc0000084
#define MSR_KERNEL_GS_BASE 0xc0000102

#define MISC_ENABLE_FAST_STRING 1ULL
#define MTRR_ENABLE (1ULL << 11)
#define MTRR_TYPE_WB 6ULL

#define APIC_LVT0 0x350
#define APIC_LVT1 0x360
#define APIC_MODE_NMI 0x4
#define APIC_MODE_EXTINT 0x7
#define APIC_LVT_MASKED 0x10000u

static void kick_handler(int sig)
{
	/* Only interrupts KVM_RUN; immediate_exit does the rest. */
}

static int install_kick_handler(void)
{
	struct sigaction sa = {.sa_handler = kick_handler};

	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: KVM_RUN must return EINTR. */
	if (sigaction(VCPU_KICK_SIGNAL, &sa, NULL) < 0)
		return -errno;
	return 0;
}

/* End the VM with a detail made from fmt. */
__attribute__((format(printf, 4, 5))) static void vcpu_exitf(struct vcpu *v, enum vm_exit_reason reason, int code,
                                                             const char *fmt, ...)
{
	char detail[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	v->exit(v->vm, reason, code, detail);
}

static int vcpu_set_cpuid(struct vcpu *v)
{
	struct kvm_cpuid2 *c = NULL;
	int r;

	r = cpuid_build(v->vm->supported_cpuid, v->vm->ncpus, v->id, &c);
	if (r < 0)
		return err_set(r, "building CPUID");
	if (ioctl(v->fd, KVM_SET_CPUID2, c) < 0)
		r = err_setsys(-errno, "KVM_SET_CPUID2");
	free(c);
	return r;
}

static int vcpu_set_msrs(struct vcpu *v)
{
	static const struct {
		uint32_t index;
		uint64_t data;
	} init[] = {
	    {MSR_IA32_SYSENTER_CS, 0},
	    {MSR_IA32_SYSENTER_ESP, 0},
	    {MSR_IA32_SYSENTER_EIP, 0},
	    {MSR_STAR, 0},
	    {MSR_LSTAR, 0},
	    {MSR_CSTAR, 0},
	    {MSR_SYSCALL_MASK, 0},
	    {MSR_KERNEL_GS_BASE, 0},
	    {MSR_IA32_TSC, 0},
	    {MSR_IA32_MISC_ENABLE, MISC_ENABLE_FAST_STRING},
	    {MSR_MTRR_DEF_TYPE, MTRR_ENABLE | MTRR_TYPE_WB},
	};
	struct {
		struct kvm_msrs hdr;
		struct kvm_msr_entry e[ARRAY_SIZE(init)];
	} msrs = {.hdr.nmsrs = ARRAY_SIZE(init)};
	int n;

	for (size_t i = 0; i < ARRAY_SIZE(init); i++) {
		msrs.e[i].index = init[i].index;
		msrs.e[i].data = init[i].data;
	}
	n = ioctl(v->fd, KVM_SET_MSRS, &msrs);
	if (n < 0)
		return err_setsys(-errno, "KVM_SET_MSRS");
	/* KVM stops at the first MSR it refuses; the rest are optional for
	 * Linux, so say which one and carry on. */
	if (n < (int)ARRAY_SIZE(init))
		log_debug("vcpu%u: KVM refused MSR 0x%x", v->id, msrs.e[n].index);
	return 0;
}

static int vcpu_set_lapic(struct vcpu *v)
{
	struct kvm_lapic_state lapic;
	uint32_t *lvt0 = (uint32_t *)&lapic.regs[APIC_LVT0];
	uint32_t *lvt1 = (uint32_t *)&lapic.regs[APIC_LVT1];

	if (ioctl(v->fd, KVM_GET_LAPIC, &lapic) < 0)
		return err_setsys(-errno, "KVM_GET_LAPIC");
	*lvt0 = (*lvt0 & ~0x700u) | (APIC_MODE_EXTINT << 8);
	*lvt1 = (*lvt1 & ~0x700u) | (APIC_MODE_NMI << 8);
	if (ioctl(v->fd, KVM_SET_LAPIC, &lapic) < 0)
		return err_setsys(-errno, "KVM_SET_LAPIC");
	return 0;
}

int vcpu_mask_lint0(struct vcpu *v)
{
	struct kvm_lapic_state lapic;
	uint32_t *lvt0 = (uint32_t *)&lapic.regs[APIC_LVT0];

	if (ioctl(v->fd, KVM_GET_LAPIC, &lapic) < 0)
		return err_setsys(-errno, "KVM_GET_LAPIC");
	*lvt0 |= APIC_LVT_MASKED;
	if (ioctl(v->fd, KVM_SET_LAPIC, &lapic) < 0)
		return err_setsys(-errno, "KVM_SET_LAPIC");
	return 0;
}

static int vcpu_set_fpu(struct vcpu *v)
{
	struct kvm_fpu fpu = {.fcw = 0x37f, .mxcsr = 0x1f80};

	if (ioctl(v->fd, KVM_SET_FPU, &fpu) < 0)
		return err_setsys(-errno, "KVM_SET_FPU");
	return 0;
}

int vcpu_create(struct vm *vm, unsigned int id, struct vcpu **ret)
{
	struct vcpu *v;
	void *run;
	int r;

	r = install_kick_handler();
	if (r < 0)
		return err_setsys(r, "installing the vCPU kick signal handler");
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->vm = vm;
	v->id = id;
	v->fd = ioctl(vm->vm_fd, KVM_CREATE_VCPU, (unsigned long)id);
	if (v->fd < 0) {
		r = err_setsys(-errno, "KVM_CREATE_VCPU %u", id);
		free(v);
		return r;
	}
	/* SAFETY: the kernel's kvm_run area of this vCPU, vcpu_mmap_size bytes,
	 * unmapped in vcpu_free(). */
	run = mmap(NULL, vm->vcpu_mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd, 0);
	if (run == MAP_FAILED) {
		r = err_setsys(-errno, "mapping kvm_run of vCPU %u", id);
		close(v->fd);
		free(v);
		return r;
	}
	v->run = run;
	r = vcpu_set_cpuid(v);
	if (r >= 0)
		r = vcpu_set_msrs(v);
	if (r >= 0)
		r = vcpu_set_lapic(v);
	if (r >= 0)
		r = vcpu_set_fpu(v);
	if (r < 0) {
		vcpu_free(v);
		return err_prefix(r, "vCPU %u", id);
	}
	*ret = v;
	return 0;
}

void vcpu_free(struct vcpu *v)
{
	if (!v)
		return;
	if (v->run)
		munmap(v->run, v->vm->vcpu_mmap_size);
	if (v->fd >= 0)
		close(v->fd);
	free(v);
}

void vcpu_dump_regs(struct vcpu *v)
{
	struct kvm_regs r;
	struct kvm_sregs s;

	if (log_get_max_level() < LOG_LEVEL_DEBUG)
		return;
	if (ioctl(v->fd, KVM_GET_REGS, &r) < 0 || ioctl(v->fd, KVM_GET_SREGS, &s) < 0) {
		log_debug("vcpu%u: cannot read registers: %s", v->id, strerror(errno));
		return;
	}
	log_debug("vcpu%u: rip=%016llx rsp=%016llx rflags=%016llx", v->id, r.rip, r.rsp, r.rflags);
	log_debug("vcpu%u: rax=%016llx rbx=%016llx rcx=%016llx rdx=%016llx", v->id, r.rax, r.rbx, r.rcx, r.rdx);
	log_debug("vcpu%u: rsi=%016llx rdi=%016llx rbp=%016llx r8=%016llx", v->id, r.rsi, r.rdi, r.rbp, r.r8);
	log_debug("vcpu%u: cr0=%llx cr2=%llx cr3=%llx cr4=%llx efer=%llx", v->id, s.cr0, s.cr2, s.cr3, s.cr4, s.efer);
	log_debug("vcpu%u: cs=%04x base=%llx l=%u db=%u ss=%04x", v->id, s.cs.selector, s.cs.base, s.cs.l, s.cs.db,
	          s.ss.selector);
}

static void handle_io(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	uint8_t *p = (uint8_t *)run + run->io.data_offset;
	uint64_t total = (uint64_t)run->io.count * run->io.size;

	if (run->io.data_offset + total > (uint64_t)v->vm->vcpu_mmap_size)
		return;
	for (uint32_t i = 0; i < run->io.count; i++, p += run->io.size) {
		if (run->io.direction == KVM_EXIT_IO_OUT)
			bus_write(&v->vm->pio, run->io.port, p, run->io.size);
		else
			bus_read(&v->vm->pio, run->io.port, p, run->io.size);
	}
}

static void handle_mmio(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	uint32_t len = run->mmio.len;

	if (len > sizeof(run->mmio.data))
		return;
	if (run->mmio.is_write)
		bus_write(&v->vm->mmio, run->mmio.phys_addr, run->mmio.data, len);
	else
		bus_read(&v->vm->mmio, run->mmio.phys_addr, run->mmio.data, len);
}

static void crash(struct vcpu *v, const char *what, unsigned long long detail)
{
	struct kvm_regs regs;
	unsigned long long rip = 0;

	if (ioctl(v->fd, KVM_GET_REGS, &regs) == 0)
		rip = regs.rip;
	log_debug("vcpu%u: %s 0x%llx", v->id, what, detail);
	vcpu_dump_regs(v);
	vcpu_exitf(v, VM_EXIT_CRASH, (int)v->run->exit_reason, "vcpu%u: %s 0x%llx at rip 0x%llx", v->id, what, detail,
	           rip);
}

static void handle_system_event(struct vcpu *v)
{
	switch (v->run->system_event.type) {
	case KVM_SYSTEM_EVENT_SHUTDOWN:
		v->exit(v->vm, VM_EXIT_POWEROFF, 0, NULL);
		break;
	case KVM_SYSTEM_EVENT_RESET:
		v->exit(v->vm, VM_EXIT_REBOOT, 0, NULL);
		break;
	default:
		crash(v, "system event", v->run->system_event.type);
		break;
	}
}

static bool run_exit_is_io(const struct kvm_run *run)
{
	return run->exit_reason == KVM_EXIT_IO || run->exit_reason == KVM_EXIT_MMIO;
}

/* One exit; returns false when the thread must leave its loop. */
static bool handle_exit(struct vcpu *v)
{
	struct kvm_run *run = v->run;

	switch (run->exit_reason) {
	case KVM_EXIT_IO:
		vmm_count(VMM_EXIT_IO, 1);
		handle_io(v);
		return true;
	case KVM_EXIT_MMIO:
		vmm_count(VMM_EXIT_MMIO, 1);
		handle_mmio(v);
		return true;
	case KVM_EXIT_HLT:
		/* The in-kernel LAPIC handles HLT; a stray one is harmless. */
		vmm_count(VMM_EXIT_HLT, 1);
		return true;
	case KVM_EXIT_INTR:
		vmm_count(VMM_EXIT_INTR, 1);
		return true;
	case KVM_EXIT_SHUTDOWN:
		vmm_count(VMM_EXIT_OTHER, 1);
		log_debug("vcpu%u: triple fault", v->id);
		vcpu_dump_regs(v);
		vcpu_exitf(v, VM_EXIT_TRIPLE_FAULT, 0, "vcpu%u: triple fault", v->id);
		return false;
	case KVM_EXIT_SYSTEM_EVENT:
		vmm_count(VMM_EXIT_OTHER, 1);
		handle_system_event(v);
		return false;
	case KVM_EXIT_INTERNAL_ERROR:
		crash(v, "KVM internal error, suberror", run->internal.suberror);
		return false;
	case KVM_EXIT_FAIL_ENTRY:
		crash(v, "entry failed, reason", run->fail_entry.hardware_entry_failure_reason);
		return false;
	default:
		crash(v, "unexpected exit", run->exit_reason);
		return false;
	}
}

/* Wait here while the VM is paused. A stop sets immediate_exit under the
 * lock after setting stopping, so clearing it here cannot lose a stop. */
static void vcpu_park(struct vcpu *v)
{
	struct vm *vm = v->vm;

	/* KVM_RUN with immediate_exit set finishes the pending I/O, then
	 * returns EINTR without running the guest. */
	if (v->io_pending) {
		__atomic_store_n(&v->run->immediate_exit, 1, __ATOMIC_SEQ_CST);
		v->io_pending = false;
		if (ioctl(v->fd, KVM_RUN, 0) == 0)
			handle_exit(v); /* a KVM that ran the guest anyway */
	}

	pthread_mutex_lock(&vm->lock);
	vm->parked++;
	pthread_cond_broadcast(&vm->pause_cond);
	while (atomic_load(&vm->pause_req) && !atomic_load(&vm->stopping))
		pthread_cond_wait(&vm->pause_cond, &vm->lock);
	vm->parked--;
	if (!atomic_load(&vm->stopping))
		__atomic_store_n(&v->run->immediate_exit, 0, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&vm->lock);
}

static void log_sample(struct vcpu *v)
{
	struct kvm_regs r;

	atomic_store(&v->sample_req, false);
	if (ioctl(v->fd, KVM_GET_REGS, &r) == 0)
		log_debug("vcpu%u: %.1f s rip=%016llx", v->id, (double)(vm_now_ns() - vm_process_start_ns()) / 1e9,
		          r.rip);
}

void vcpu_request_sample(struct vcpu *v)
{
	atomic_store(&v->sample_req, true);
	if (v->thread_started)
		pthread_kill(v->thread, VCPU_KICK_SIGNAL);
}

static void *vcpu_thread(void *arg)
{
	struct vcpu *v = arg;
	struct vm *vm = v->vm;
	sigset_t set;
	char name[16];

	snprintf(name, sizeof(name), "vcpu%u", v->id);
	pthread_setname_np(pthread_self(), name);
	sigemptyset(&set);
	sigaddset(&set, VCPU_KICK_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	if (vm->vcpu_thread_init) {
		int r = vm->vcpu_thread_init(vm->vcpu_thread_opaque);

		if (r < 0) {
			vcpu_exitf(v, VM_EXIT_CRASH, r, "vcpu%u: thread setup: %s", v->id, strerror(-r));
			goto out;
		}
	}
	if (v->id == 0)
		vm->t_first_run = vm_now_ns();
	while (!atomic_load(&vm->stopping)) {
		if (unlikely(atomic_load_explicit(&vm->pause_req, memory_order_relaxed)))
			vcpu_park(v);
		if (unlikely(atomic_load_explicit(&v->sample_req, memory_order_relaxed)))
			log_sample(v);
		v->io_pending = false;
		if (ioctl(v->fd, KVM_RUN, 0) < 0) {
			/* A kick. A stop or a pause is seen at the top of the
			 * loop; otherwise (a pause already over) immediate_exit
			 * must not stay set. A racing stop sets it again after
			 * setting stopping, which the loop then sees. */
			if (errno == EINTR || errno == EAGAIN) {
				vmm_count(VMM_EXIT_INTR, 1);
				if (!atomic_load(&vm->pause_req))
					__atomic_store_n(&v->run->immediate_exit, 0, __ATOMIC_SEQ_CST);
				continue;
			}
			log_debug("vcpu%u: KVM_RUN: %s", v->id, strerror(errno));
			vcpu_exitf(v, VM_EXIT_CRASH, -errno, "vcpu%u: KVM_RUN: %s", v->id, strerror(errno));
			break;
		}
		v->io_pending = run_exit_is_io(v->run);
		if (!handle_exit(v))
			break;
	}
out:
	pthread_mutex_lock(&vm->lock);
	vm->running_vcpus--;
	pthread_cond_broadcast(&vm->pause_cond);
	pthread_mutex_unlock(&vm->lock);
	return NULL;
}

int vcpu_start(struct vcpu *v, vcpu_exit_fn exit)
{
	int r;

	v->exit = exit;
	r = pthread_create(&v->thread, NULL, vcpu_thread, v);
	if (r)
		return err_setsys(-r, "starting vCPU %u", v->id);
	v->thread_started = true;
	return 0;
}

void vcpu_kick(struct vcpu *v)
{
	/* immediate_exit covers a kick that lands before KVM_RUN is entered. */
	__atomic_store_n(&v->run->immediate_exit, 1, __ATOMIC_SEQ_CST);
	if (v->thread_started)
		pthread_kill(v->thread, VCPU_KICK_SIGNAL);
}

void vcpu_join(struct vcpu *v)
{
	if (!v->thread_started)
		return;
	pthread_join(v->thread, NULL);
	v->thread_started = false;
}
