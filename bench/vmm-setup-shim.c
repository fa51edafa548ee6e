/* SPDX-License-Identifier: Apache-2.0 */
/*
 * LD_PRELOAD shim for bench/vmm-setup.sh: the first ioctl(KVM_RUN) of the
 * process writes "<ns since VMM_BENCH_T0_NS>" to VMM_BENCH_OUT, so that
 * kvrun and QEMU are timed the same way, from just before exec to the first
 * guest entry, without changing either binary. It also appends each
 * memory slot's host range to VMM_BENCH_OUT.slots.
 *
 * VMM_BENCH_OUT=- writes the first line to stderr instead, prefixed with
 * "vmm-bench-first-run-ns ", and no slots: a jailed kvrun monitor (`kvrun
 * run`) enters KVM_RUN on a vCPU thread that may not open files, in a
 * root where the harness's paths do not exist; it keeps stderr.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

static int done;

static void record(void)
{
	const char *t0s = getenv("VMM_BENCH_T0_NS"), *out = getenv("VMM_BENCH_OUT");
	struct timespec ts;
	char buf[64];
	bool to_stderr;
	int fd, n;

	if (__atomic_exchange_n(&done, 1, __ATOMIC_SEQ_CST) || !t0s || !out)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	to_stderr = !strcmp(out, "-");
	n = snprintf(buf, sizeof(buf), "%s%lld\n", to_stderr ? "vmm-bench-first-run-ns " : "",
	             (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec - strtoll(t0s, NULL, 10));
	fd = to_stderr ? STDERR_FILENO : open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write(fd, buf, (size_t)n) < 0)
			perror("vmm-setup-shim");
		if (!to_stderr)
			close(fd);
	}
}

/* Guest RAM as the VMM hands it to KVM, so the harness can tell guest
 * pages from the monitor's own in /proc/PID/smaps. */
static void record_slot(const struct kvm_userspace_memory_region *slot)
{
	const char *out = getenv("VMM_BENCH_OUT");
	char path[4096], buf[96];
	int fd, n;

	if (!out || !strcmp(out, "-") || !slot || !slot->memory_size)
		return;
	snprintf(path, sizeof(path), "%s.slots", out);
	n = snprintf(buf, sizeof(buf), "%llx %llx\n", (unsigned long long)slot->userspace_addr,
	             (unsigned long long)slot->memory_size);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write(fd, buf, (size_t)n) < 0)
			perror("vmm-setup-shim");
		close(fd);
	}
}

int ioctl(int fd, unsigned long req, ...)
{
	static int (*real)(int, unsigned long, void *);
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (!real)
		real = (int (*)(int, unsigned long, void *))dlsym(RTLD_NEXT, "ioctl");
	if (req == KVM_SET_USER_MEMORY_REGION)
		record_slot(arg);
	if (req == KVM_RUN && !done)
		record();
	return real(fd, req, arg);
}
