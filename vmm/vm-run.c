/* SPDX-License-Identifier: Apache-2.0 */
/* Running a VM: threads, how it ends, pause, timeouts. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "vmm/vcpu.h"
#include "vmm/vm.h"

const char *vm_exit_reason_name(enum vm_exit_reason r)
{
	switch (r) {
	case VM_EXIT_NONE:
		return "none";
	case VM_EXIT_POWEROFF:
		return "poweroff";
	case VM_EXIT_REBOOT:
		return "reboot";
	case VM_EXIT_TRIPLE_FAULT:
		return "triple-fault";
	case VM_EXIT_GUEST:
		return "guest-exit";
	case VM_EXIT_CRASH:
		return "crash";
	case VM_EXIT_TIMEOUT:
		return "timeout";
	case VM_EXIT_SIGNAL:
		return "signal";
	}
	return "unknown";
}

static void vm_stop_detail(struct vm *vm, enum vm_exit_reason reason, int code, const char *detail)
{
	int expected = 0;
	uint64_t one = 1;

	if (!atomic_compare_exchange_strong(&vm->stopping, &expected, 1))
		return;
	vm->result.reason = reason;
	vm->result.code = code;
	snprintf(vm->result.detail, sizeof(vm->result.detail), "%s", detail ? detail : "");
	/* The lock orders this against vm_start() creating threads. */
	pthread_mutex_lock(&vm->lock);
	for (unsigned int i = 0; vm->vcpus && i < vm->ncpus; i++)
		if (vm->vcpus[i])
			vcpu_kick(vm->vcpus[i]);
	/* Parked vCPUs (vm_pause) wake up to see the stop. */
	pthread_cond_broadcast(&vm->pause_cond);
	pthread_mutex_unlock(&vm->lock);
	if (write(vm->done_fd, &one, sizeof(one)) < 0)
		log_debug("vm: done eventfd: %s", strerror(errno));
}

void vm_stop(struct vm *vm, enum vm_exit_reason reason, int code)
{
	vm_stop_detail(vm, reason, code, NULL);
}

void vm_stopf(struct vm *vm, enum vm_exit_reason reason, int code, const char *fmt, ...)
{
	char buf[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	vm_stop_detail(vm, reason, code, buf);
}

int vm_start(struct vm *vm)
{
	sigset_t set, old;
	int r;

	if (vm->started)
		return -EBUSY;
	r = vm_memslots_wait(vm);
	if (r < 0)
		return r;
	vm->started = true;
	/* The boot vCPU first: its first KVM_RUN ends setup. vCPU threads inherit this mask: process signals (SIGINT, SIGTERM,
	 * SIGCHLD...) are left to the thread that owns them. */
	sigfillset(&set);
	sigdelset(&set, SIGSEGV);
	sigdelset(&set, SIGBUS);
	sigdelset(&set, SIGFPE);
	sigdelset(&set, SIGILL);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	pthread_mutex_lock(&vm->lock);
	for (unsigned int i = 0; i < vm->ncpus && !atomic_load(&vm->stopping); i++) {
		r = vcpu_start(vm->vcpus[i], vm_stop_detail);
		if (r < 0)
			break;
		/* Counted here, not by the thread: a vm_pause() right after
		 * vm_start() must wait for threads that have not run yet. */
		vm->running_vcpus++;
	}
	pthread_mutex_unlock(&vm->lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r >= 0) {
		r = event_loop_start(vm->loop);
		if (r < 0)
			r = err_setsys(r, "starting the event loop");
	}
	if (r < 0)
		vm_stopf(vm, VM_EXIT_CRASH, r, "%s", err_msg());
	return r;
}

int vm_pause(struct vm *vm)
{
	pthread_mutex_lock(&vm->lock);
	atomic_store(&vm->pause_req, true);
	for (unsigned int i = 0; i < vm->ncpus; i++)
		vcpu_kick(vm->vcpus[i]);
	while (vm->parked < vm->running_vcpus && !atomic_load(&vm->stopping))
		pthread_cond_wait(&vm->pause_cond, &vm->lock);
	pthread_mutex_unlock(&vm->lock);
	return atomic_load(&vm->stopping) ? -ESHUTDOWN : 0;
}

int vm_resume(struct vm *vm)
{
	pthread_mutex_lock(&vm->lock);
	atomic_store(&vm->pause_req, false);
	pthread_cond_broadcast(&vm->pause_cond);
	pthread_mutex_unlock(&vm->lock);
	return 0;
}

static void timeout_handler(int fd, uint32_t revents, void *opaque)
{
	struct vm *vm = opaque;
	uint64_t n;

	if (read(fd, &n, sizeof(n)) == sizeof(n))
		vm_stop(vm, VM_EXIT_TIMEOUT, 0);
}

int vm_set_timeout(struct vm *vm, uint64_t ms)
{
	struct itimerspec its = {
	    .it_value = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000},
	};
	int r;

	if (ms == 0)
		its.it_value.tv_nsec = 1;
	if (vm->timer_fd < 0) {
		vm->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (vm->timer_fd < 0)
			return err_setsys(-errno, "timerfd_create");
		r = event_loop_add(vm->loop, vm->timer_fd, EPOLLIN, timeout_handler, vm);
		if (r < 0)
			return err_setsys(r, "watching the timeout");
	}
	if (timerfd_settime(vm->timer_fd, 0, &its, NULL) < 0)
		return err_setsys(-errno, "timerfd_settime");
	return 0;
}

static void sample_handler(int fd, uint32_t revents, void *opaque)
{
	struct vm *vm = opaque;
	uint64_t n;

	if (read(fd, &n, sizeof(n)) != sizeof(n))
		return;
	pthread_mutex_lock(&vm->lock);
	for (unsigned int i = 0; i < vm->ncpus; i++)
		vcpu_request_sample(vm->vcpus[i]);
	pthread_mutex_unlock(&vm->lock);
}

int vm_set_rip_sampling(struct vm *vm, uint64_t ms)
{
	struct itimerspec its = {
	    .it_value = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000},
	    .it_interval = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000},
	};
	int r;

	if (ms == 0 || vm->sample_fd >= 0)
		return -EINVAL;
	vm->sample_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (vm->sample_fd < 0)
		return err_setsys(-errno, "timerfd_create");
	r = event_loop_add(vm->loop, vm->sample_fd, EPOLLIN, sample_handler, vm);
	if (r < 0)
		return err_setsys(r, "watching the sampling timer");
	if (timerfd_settime(vm->sample_fd, 0, &its, NULL) < 0)
		return err_setsys(-errno, "timerfd_settime");
	return 0;
}

int vm_wait(struct vm *vm, struct vm_result *ret)
{
	uint64_t v;

	while (read(vm->done_fd, &v, sizeof(v)) < 0 && errno == EINTR)
		;
	for (unsigned int i = 0; i < vm->ncpus; i++)
		vcpu_join(vm->vcpus[i]);
	event_loop_stop(vm->loop);
	vm->started = false;
	/* Leave done_fd readable for any later waiter. */
	v = 1;
	if (write(vm->done_fd, &v, sizeof(v)) < 0)
		log_debug("vm: done eventfd: %s", strerror(errno));
	*ret = vm->result;
	return 0;
}
