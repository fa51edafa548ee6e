/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The test device's bench register (common/test-bench.h): the guest's BEGIN
 * and END marks around a timed loop. At each the VM's statistics are
 * sampled (vm-stats.h); on END one JSON line goes to the bench fd with
 * the guest's figures, the host time between the marks, the guest's TSC
 * rate, what the loop cost in exits, doorbells and interrupts, and the
 * host CPU time it took: the whole process's and the marking vCPU
 * thread's (a polling guest's vCPU runs all the time; the rest is the
 * device threads' and the event loop's work).
 */
#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/test-bench.h"
#include "vmm/test-bench.h"
#include "vmm/vcpu.h"
#include "vmm/vm-stats.h"
#include "vmm/vm.h"

struct test_bench {
	pthread_mutex_t lock;
	struct vm_stats *stats;
	struct vm_stats_sample begin;
	uint64_t begin_cpu_ns, begin_vcpu_ns; /* the process's, the marking thread's */
	bool begun;
	long tsc_khz;
};

static struct test_bench *bench_get(struct test_bench **bench, struct vm *vm)
{
	struct test_bench *b = *bench;
	int r;

	if (b)
		return b;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	pthread_mutex_init(&b->lock, NULL);
	r = vm_stats_open(vm, &b->stats);
	if (r < 0) {
		log_debug("test device: VM statistics: %s", strerror(-r));
		free(b);
		return NULL;
	}
	b->tsc_khz = ioctl(vm->vcpus[0]->fd, KVM_GET_TSC_KHZ, 0);
	*bench = b;
	return b;
}

/* Names go into JSON as they are: anything but [A-Za-z0-9._-] becomes _. */
static void clean_name(char *name)
{
	name[KVRUN_BENCH_NAME - 1] = '\0';
	for (char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' ||
		      *p == '_' || *p == '-'))
			*p = '_';
}

static uint64_t cpu_clock_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void bench_write(int fd, struct test_bench *b, const struct kvrun_bench_mark *m,
                        const struct vm_stats_sample *end, uint64_t cpu_ns, uint64_t vcpu_ns)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return;
	fprintf(f,
	        "{\"name\": \"%s\", \"ops\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"cycles\": %" PRIu64
	        ", \"kicks\": %" PRIu64 ", \"errors\": %" PRIu64 ", \"queue_depth\": %" PRIu64
	        ", \"block_size\": %" PRIu64 ", \"host_ns\": %" PRIu64 ", \"cpu_ns\": %" PRIu64
	        ", \"vcpu_cpu_ns\": %" PRIu64 ", \"tsc_khz\": %ld, \"stats\": ",
	        m->name, m->ops, m->bytes, m->cycles, m->kicks, m->errors, m->queue_depth, m->block_size,
	        end->t_ns - b->begin.t_ns, cpu_ns - b->begin_cpu_ns, vcpu_ns - b->begin_vcpu_ns, b->tsc_khz);
	vm_stats_write_delta(b->stats, &b->begin, end, false, f);
	fputs("}\n", f);
	if (fclose(f) == 0 && write(fd, buf, len) != (ssize_t)len)
		log_debug("test device: bench line: %s", strerror(errno));
	free(buf);
}

void test_bench_mark(struct test_bench **bench, struct vm *vm, int fd, uint64_t gpa)
{
	const void *p = guest_mem_ptr(&vm->mem, gpa, sizeof(struct kvrun_bench_mark));
	struct vm_stats_sample now;
	struct kvrun_bench_mark m;
	struct test_bench *b;
	uint64_t cpu_ns, vcpu_ns;

	if (!p || fd < 0)
		return;
	memcpy(&m, p, sizeof(m));
	if (m.magic != KVRUN_BENCH_MAGIC || (m.phase != KVRUN_BENCH_BEGIN && m.phase != KVRUN_BENCH_END))
		return;
	clean_name(m.name);
	b = bench_get(bench, vm);
	if (!b)
		return;
	pthread_mutex_lock(&b->lock);
	cpu_ns = cpu_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	vcpu_ns = cpu_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	if (vm_stats_sample(b->stats, &now) < 0) {
		pthread_mutex_unlock(&b->lock);
		return;
	}
	if (m.phase == KVRUN_BENCH_BEGIN) {
		vm_stats_sample_free(&b->begin);
		b->begin = now;
		b->begin_cpu_ns = cpu_ns;
		b->begin_vcpu_ns = vcpu_ns;
		b->begun = true;
	} else {
		if (b->begun)
			bench_write(fd, b, &m, &now, cpu_ns, vcpu_ns);
		b->begun = false;
		vm_stats_sample_free(&now);
	}
	pthread_mutex_unlock(&b->lock);
}

void test_bench_free(struct test_bench *b)
{
	if (!b)
		return;
	vm_stats_sample_free(&b->begin);
	vm_stats_free(b->stats);
	pthread_mutex_destroy(&b->lock);
	free(b);
}
