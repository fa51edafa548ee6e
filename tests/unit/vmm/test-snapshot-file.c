/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vm_snapshot_save/open/restore on VMs that are created but never started
 * (needs /dev/kvm): guest RAM, vCPU registers and a device's state survive
 * the round trip; the restored RAM is a private copy of the file; device and
 * VM-shape mismatches are refused; a failing save leaves no file behind.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "tap.h"
#include "vmm/snapshot.h"
#include "vmm/vcpu.h"
#include "vmm/vm.h"

#define MEM (4ULL << 20)

struct dummy {
	char state[32];
	int fail_save;
};

static int dummy_save(void *opaque, struct snap_buf *out)
{
	struct dummy *d = opaque;

	if (d->fail_save)
		return err_set(-EIO, "dummy refuses");
	return snap_buf_put(out, d->state, sizeof(d->state));
}

static int dummy_load(void *opaque, const void *data, size_t len)
{
	struct dummy *d = opaque;

	if (len != sizeof(d->state))
		return -EBADMSG;
	memcpy(d->state, data, len);
	return 0;
}

static char dir[] = "/tmp/kvrun-snap-unit-XXXXXX";

static int count_files(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

static struct vm *new_vm(unsigned int ncpus)
{
	struct vm_config cfg = {.ncpus = ncpus, .mem_size = MEM};
	struct vm *vm = NULL;

	if (vm_create(&cfg, &vm) < 0 || vm_memslots_wait(vm) < 0) {
		printf("# vm_create: %s\n", err_msg());
		abort();
	}
	return vm;
}

static const uint64_t pages[] = {0x1000, 0x2000, 0x10000, 0x3ff000};

TEST(round_trip)
{
	struct vm *vm = new_vm(1), *vm2;
	struct dummy dev = {.state = "device state"}, dev2 = {{0}};
	struct snapshot_dev sd = {"dummy", dummy_save, dummy_load, &dev};
	struct snapshot_stats st;
	struct vm_snapshot *s = NULL;
	struct kvm_regs regs = {.rip = 0x123456, .rbx = 0xfeedface, .r15 = 0x0123456789abcdef, .rflags = 2};
	char path[128];

	snprintf(path, sizeof(path), "%s/a.snap", dir);
	for (size_t i = 0; i < ARRAY_SIZE(pages); i++)
		memset(guest_mem_ptr(&vm->mem, pages[i], 4096), (int)(0x11 * (i + 1)), 4096);
	is_int(ioctl(vm->vcpus[0]->fd, KVM_SET_REGS, &regs), 0);
	is_int(vm_snapshot_save(vm, path, &sd, 1, &st), 0);
	is_int(st.mem_pages, ARRAY_SIZE(pages));
	ok(st.file_bytes >= ARRAY_SIZE(pages) * 4096 && st.file_bytes < 64 * 1024, "%llu bytes written",
	   (unsigned long long)st.file_bytes);
	is_int(count_files(), 1);
	vm_free(vm);

	is_int(vm_snapshot_open(path, 0, &s), 0);
	struct vm_config cfg;
	vm_snapshot_config(s, &cfg);
	is_int(cfg.ncpus, 1);
	ok(cfg.mem_size == MEM, "RAM size from the snapshot");
	ok(vm_snapshot_has_device(s, "dummy") && !vm_snapshot_has_device(s, "serial"), "device sections listed");
	vm2 = new_vm(1);
	sd.opaque = &dev2;
	is_int(vm_snapshot_restore(s, vm2, &sd, 1), 0);
	vm_snapshot_close(s);
	is_str(dev2.state, "device state");
	bool same = true;
	for (size_t i = 0; i < ARRAY_SIZE(pages); i++) {
		const uint8_t *p = guest_mem_ptr(&vm2->mem, pages[i], 4096);
		for (int b = 0; b < 4096; b++)
			same &= p[b] == (uint8_t)(0x11 * (i + 1));
	}
	ok(same, "stored pages restored");
	const uint8_t *z = guest_mem_ptr(&vm2->mem, 0x20000, 4096);
	ok(z[0] == 0 && z[4095] == 0, "zero pages read as zero");
	struct kvm_regs r2;
	is_int(ioctl(vm2->vcpus[0]->fd, KVM_GET_REGS, &r2), 0);
	ok(r2.rip == regs.rip && r2.rbx == regs.rbx && r2.r15 == regs.r15, "registers restored (rip 0x%llx)",
	   (unsigned long long)r2.rip);

	/* The restored RAM is private: writes do not reach the file, which
	 * still opens with a good memory checksum. */
	memset(guest_mem_ptr(&vm2->mem, 0x1000, 4096), 0x77, 4096);
	vm_free(vm2);
	s = NULL;
	is_int(vm_snapshot_open(path, 0, &s), 0);
	vm_snapshot_close(s);
	unlink(path);
}

/* Pages of [p, p + npages * 4096) in memory (mincore: for a file mapping,
 * in the page cache), or SIZE_MAX. */
static size_t resident(const void *p, size_t npages)
{
	unsigned char *vec = calloc(npages, 1);
	size_t n = 0;

	if (!vec || mincore((void *)p, npages * 4096, vec) < 0) {
		free(vec);
		return SIZE_MAX;
	}
	for (size_t i = 0; i < npages; i++)
		n += vec[i] & 1;
	free(vec);
	return n;
}

/* A restored VM's RAM is mapped from its snapshot: saving it again stores
 * the file's data pages and the pages the VM wrote, and reads no hole of
 * the file (each would cost a zero page of page cache, mapped). */
TEST(resave_of_restored_ram)
{
	struct vm_config cfg = {.ncpus = 1, .mem_size = 64ULL << 20};
	const size_t npages = (64ULL << 20) / 4096;
	struct vm *vm = NULL, *vm2 = NULL;
	struct snapshot_stats st;
	struct vm_snapshot *s = NULL;
	size_t before, after;
	char a[128], b[128];
	bool good = true;

	snprintf(a, sizeof(a), "%s/r1.snap", dir);
	snprintf(b, sizeof(b), "%s/r2.snap", dir);
	if (vm_create(&cfg, &vm) < 0 || vm_memslots_wait(vm) < 0)
		abort();
	memset(guest_mem_ptr(&vm->mem, 0x1000000, 4096), 0x21, 4096);
	memset(guest_mem_ptr(&vm->mem, 0x2000000, 4096), 0x22, 4096);
	is_int(vm_snapshot_save(vm, a, NULL, 0, &st), 0);
	is_int(st.mem_pages, 2);
	vm_free(vm);

	is_int(vm_snapshot_open(a, 0, &s), 0);
	if (vm_create(&cfg, &vm2) < 0)
		abort();
	is_int(vm_snapshot_restore(s, vm2, NULL, 0), 0);
	vm_snapshot_close(s);
	ok(vm2->mem.file_backed, "the restored RAM knows its file");
	memset(guest_mem_ptr(&vm2->mem, 0x1000000, 4096), 0, 4096);
	memset(guest_mem_ptr(&vm2->mem, 0x2000000, 4096), 0x33, 4096);
	memset(guest_mem_ptr(&vm2->mem, 0x3000000, 4096), 0x44, 4096);
	/* Resident here: the VM's copies and the page cache the kernel read
	 * around their faults. */
	before = resident(vm2->mem.mapping, npages);
	is_int(vm_snapshot_save(vm2, b, NULL, 0, &st), 0);
	is_int(st.mem_pages, 2); /* the page rewritten and the new one; the zeroed one is a hole */
	after = resident(vm2->mem.mapping, npages);
	ok(after < before + 64, "the save read no hole of the file: %zu pages resident before, %zu after (of %zu)",
	   before, after, npages);
	vm_free(vm2);

	is_int(vm_snapshot_open(b, 0, &s), 0);
	if (vm_create(&cfg, &vm2) < 0)
		abort();
	is_int(vm_snapshot_restore(s, vm2, NULL, 0), 0);
	vm_snapshot_close(s);
	for (uint64_t gpa = 0; gpa < cfg.mem_size; gpa += 0x100000) {
		const uint8_t *p = guest_mem_ptr(&vm2->mem, gpa, 4096);
		uint8_t want = gpa == 0x2000000 ? 0x33 : gpa == 0x3000000 ? 0x44 : 0;

		good &= p[0] == want && p[4095] == want;
	}
	ok(good, "the second snapshot restores what the VM held");
	vm_free(vm2);
	unlink(a);
	unlink(b);
}

TEST(mismatches)
{
	struct vm *vm = new_vm(1), *vm2;
	struct dummy dev = {.state = "x"};
	struct snapshot_dev sd[2] = {{"dummy", dummy_save, dummy_load, &dev}, {"other", dummy_save, dummy_load, &dev}};
	struct vm_snapshot *s = NULL;
	char path[128];

	snprintf(path, sizeof(path), "%s/b.snap", dir);
	is_int(vm_snapshot_save(vm, path, sd, 1, NULL), 0);
	vm_free(vm);
	is_int(vm_snapshot_open(path, SNAPSHOT_OPEN_TRUST_MEMORY, &s), 0);
	vm2 = new_vm(1);
	is_int(vm_snapshot_restore(s, vm2, sd, 0), -EINVAL);
	ok(strstr(err_msg(), "device 'dummy'") != NULL, "names the device: %s", err_msg());
	vm_free(vm2);
	vm2 = new_vm(1);
	is_int(vm_snapshot_restore(s, vm2, sd, 2), -EINVAL);
	ok(strstr(err_msg(), "'other'") != NULL, "names the missing section: %s", err_msg());
	vm_free(vm2);
	vm2 = new_vm(2);
	is_int(vm_snapshot_restore(s, vm2, sd, 1), -EINVAL);
	ok(strstr(err_msg(), "vCPUs") != NULL, "VM shape: %s", err_msg());
	vm_free(vm2);
	vm_snapshot_close(s);
	unlink(path);
}

TEST(failed_save_leaves_nothing)
{
	struct vm *vm = new_vm(1);
	struct dummy dev = {.fail_save = 1};
	struct snapshot_dev sd = {"dummy", dummy_save, dummy_load, &dev};
	char path[128];

	snprintf(path, sizeof(path), "%s/c.snap", dir);
	ok(vm_snapshot_save(vm, path, &sd, 1, NULL) < 0, "save with a failing device fails");
	ok(strstr(err_msg(), "dummy refuses") != NULL, "with the device's message: %s", err_msg());
	is_int(count_files(), 0);
	snprintf(path, sizeof(path), "%s/no/such/dir.snap", dir);
	ok(vm_snapshot_save(vm, path, NULL, 0, NULL) < 0, "save into a missing directory fails");
	is_int(count_files(), 0);
	vm_free(vm);
}

/* Into a file the caller holds (a jailed monitor's way): stale bytes in it
 * do not show through the holes, no other file appears, and a descriptor
 * that cannot be written is refused. */
TEST(save_into_fd)
{
	struct vm *vm = new_vm(1), *vm2;
	struct dummy dev = {.state = "by fd"}, dev2 = {{0}};
	struct snapshot_dev sd = {"dummy", dummy_save, dummy_load, &dev};
	struct snapshot_stats st;
	struct vm_snapshot *s = NULL;
	static char junk[64 * 1024];
	char path[128];
	bool same = true;
	int fd, ro;

	snprintf(path, sizeof(path), "%s/fd.snap", dir);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ok(fd >= 0, "file created");
	memset(junk, 0xab, sizeof(junk));
	for (int i = 0; i < 64; i++)
		is_int(write(fd, junk, sizeof(junk)), (int)sizeof(junk));
	memset(guest_mem_ptr(&vm->mem, 0x2000, 4096), 0x5a, 4096);
	is_int(vm_snapshot_save_fd(vm, fd, &sd, 1, &st), 0);
	is_int(st.mem_pages, 1);
	is_int(count_files(), 1);
	ok(fcntl(fd, F_GETFD) >= 0, "the descriptor stays the caller's");
	close(fd);
	vm_free(vm);

	is_int(vm_snapshot_open(path, 0, &s), 0);
	vm2 = new_vm(1);
	sd.opaque = &dev2;
	is_int(vm_snapshot_restore(s, vm2, &sd, 1), 0);
	vm_snapshot_close(s);
	is_str(dev2.state, "by fd");
	const uint8_t *p = guest_mem_ptr(&vm2->mem, 0x2000, 4096);
	for (int b = 0; b < 4096; b++)
		same &= p[b] == 0x5a;
	ok(same, "stored page restored");
	const uint8_t *z = guest_mem_ptr(&vm2->mem, 0x3000, 4096);
	ok(z[0] == 0 && z[4095] == 0, "the old bytes under a zero page are gone");
	vm_free(vm2);

	vm = new_vm(1);
	ro = open(path, O_RDONLY | O_CLOEXEC);
	ok(vm_snapshot_save_fd(vm, ro, &sd, 1, NULL) < 0, "a read-only descriptor is refused: %s", err_msg());
	close(ro);
	vm_free(vm);
	unlink(path);
}

TEST(open_errors)
{
	struct vm_snapshot *s = NULL;
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/missing.snap", dir);
	is_int(vm_snapshot_open(path, 0, &s), -ENOENT);
	snprintf(path, sizeof(path), "%s/empty.snap", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	close(fd);
	is_int(vm_snapshot_open(path, 0, &s), -EINVAL);
	ok(strstr(err_msg(), "bad magic") != NULL, "empty file: %s", err_msg());
	unlink(path);
	is_int(vm_snapshot_open(dir, 0, &s), -EINVAL);
	ok(s == NULL, "nothing returned on failure");
}

TEST(snap_buf_and_reader)
{
	struct snap_buf b = {0};
	uint8_t big[10000];
	uint32_t v = 0;

	memset(big, 0xab, sizeof(big));
	is_int(snap_buf_put(&b, "abcd", 4), 0);
	is_int(snap_buf_put(&b, big, sizeof(big)), 0);
	is_int(b.len, 10004);
	struct snap_reader r = {b.data, b.len, 0};
	is_int(snap_get(&r, &v, 4), 0);
	ok(!memcmp(&v, "abcd", 4), "first bytes read back");
	is_int(snap_get(&r, big, sizeof(big)), 0);
	is_int(snap_get(&r, &v, 1), -EBADMSG);
	snap_buf_free(&b);
	ok(b.data == NULL && b.len == 0, "freed");
}

int main(void);
static void __attribute__((constructor(200))) setup(void)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		tap_skip_all("cannot open /dev/kvm: these tests create KVM VMs");
	if (ioctl(fd, KVM_GET_API_VERSION, 0) != KVM_API_VERSION)
		tap_skip_all("/dev/kvm does not answer KVM_GET_API_VERSION 12");
	close(fd);
	if (!mkdtemp(dir))
		tap_skip_all("cannot create a temporary directory");
}

static void __attribute__((destructor)) teardown(void)
{
	rmdir(dir);
}

TAP_MAIN()
