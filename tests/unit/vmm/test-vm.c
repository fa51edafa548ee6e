/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whole-VM tests with tiny hand-assembled 64-bit guests (needs /dev/kvm):
 * how a VM ends, port and string I/O, MMIO exits, ioeventfd, irq lines,
 * timeouts and stops from another thread.
 */
#include <asm/bootparam.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <sys/ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tap.h"
#include "vmm/boot.h"
#include "vmm/irq.h"
#include "vmm/platform.h"
#include "vmm/test-device.h"
#include "vmm/vm.h"

#define LOAD_ADDR 0x100000

/* out dx, eax to the exit port; then hlt forever */
#define EXIT_EAX 0x66, 0xba, 0xf4, 0x06, 0xef, 0xf4, 0xeb, 0xfd

/* Write an ELF holding code at LOAD_ADDR into a memfd; returns its path. */
static const char *make_kernel(const uint8_t *code, size_t len, char *path, size_t cap)
{
	static uint8_t buf[0x2000];
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
	Elf64_Phdr *ph = (Elf64_Phdr *)(buf + sizeof(*eh));
	int fd;

	memset(buf, 0, sizeof(buf));
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_type = ET_EXEC;
	eh->e_machine = EM_X86_64;
	eh->e_entry = LOAD_ADDR;
	eh->e_phoff = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 1;
	*ph = (Elf64_Phdr){
	    .p_type = PT_LOAD, .p_offset = 0x1000, .p_paddr = LOAD_ADDR, .p_filesz = 0x1000, .p_memsz = 0x1000};
	memcpy(buf + 0x1000, code, len);
	fd = memfd_create("guest", 0);
	if (fd < 0 || write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
		return NULL;
	snprintf(path, cap, "/proc/self/fd/%d", fd);
	return path;
}

struct run {
	struct vm *vm;
	struct test_device *td;
	struct platform *plat;
	struct vm_result res;
	char path[64];
};

static int boot(struct run *r, const uint8_t *code, size_t len, unsigned int ncpus)
{
	struct vm_config cfg = {.ncpus = ncpus, .mem_size = 32 << 20};
	struct boot_config bc = {.cmdline = "test"};
	int ret;

	memset(r, 0, sizeof(*r));
	bc.kernel_path = make_kernel(code, len, r->path, sizeof(r->path));
	ret = vm_create(&cfg, &r->vm);
	if (ret >= 0)
		ret = platform_create(r->vm, &r->plat);
	if (ret >= 0)
		ret = test_device_create(r->vm, &r->td);
	if (ret >= 0)
		ret = boot_linux(r->vm, &bc);
	return ret;
}

static void finish(struct run *r)
{
	vm_start(r->vm);
	vm_wait(r->vm, &r->res);
}

static void cleanup(struct run *r)
{
	test_device_free(r->td);
	platform_free(r->plat);
	vm_free(r->vm);
	close(atoi(strrchr(r->path, '/') + 1));
}

static void check_ncpus(unsigned int n)
{
	static const uint8_t code[] = {0x66,    0xba, 0xf0, 0x06, 0xee, /* boot marker */
	                               0x66,    0xba, 0xfc, 0x06, 0xed, /* in eax, ncpus port */
	                               EXIT_EAX};
	struct boot_params *bp;
	struct run r;

	is_int(boot(&r, code, sizeof(code), n), 0);
	finish(&r);
	is_int(r.res.reason, VM_EXIT_GUEST);
	is_int(r.res.code, n);
	ok(atomic_load(&r.vm->t_boot_marker) >= r.vm->t_first_run && r.vm->t_first_run > 0, "boot marker recorded");
	bp = guest_mem_ptr(&r.vm->mem, BOOT_PARAMS_ADDR, sizeof(*bp));
	is_int(bp->hdr.cmdline_size, BOOT_ELF_CMDLINE_SIZE - 1);
	/* Booted without ACPI tables: boot_linux() adds acpi=off. */
	is_str((const char *)guest_mem_ptr(&r.vm->mem, bp->hdr.cmd_line_ptr, 14), "test acpi=off");
	cleanup(&r);
}

TEST(guest_exit_and_ncpus)
{
	check_ncpus(1);
	check_ncpus(2);
	check_ncpus(4);
}

TEST(reboot_via_i8042)
{
	static const uint8_t code[] = {0xb0, 0xfe, 0xe6, 0x64, 0xf4, 0xeb, 0xfd};
	struct run r;

	is_int(boot(&r, code, sizeof(code), 1), 0);
	finish(&r);
	is_int(r.res.reason, VM_EXIT_REBOOT);
	cleanup(&r);
}

TEST(reboot_via_cf9)
{
	static const uint8_t code[] = {0x66, 0xba, 0xf9, 0x0c, 0xb0, 0x06, 0xee, 0xf4, 0xeb, 0xfd};
	struct run r;

	is_int(boot(&r, code, sizeof(code), 1), 0);
	finish(&r);
	is_int(r.res.reason, VM_EXIT_REBOOT);
	cleanup(&r);
}

/* The ACPI sleep register (port 0x600) that platform_create() registers:
 * S3 (SLP_TYP 3 | SLP_EN) is ignored, S5 powers off. */
TEST(poweroff_via_acpi_sleep_register)
{
	static const uint8_t code[] = {0x66, 0xba, 0x00, 0x06, 0xb0, 0x2c, 0xee, 0xb0, 0x34, 0xee, 0xf4, 0xeb, 0xfd};
	struct run r;

	is_int(boot(&r, code, sizeof(code), 1), 0);
	finish(&r);
	is_int(r.res.reason, VM_EXIT_POWEROFF);
	ok(strstr(r.res.detail, "ACPI S5") != NULL, "ended by the S5 write (%s)", r.res.detail);
	cleanup(&r);
}

/* SLP_TYP 5 without SLP_EN is ignored; the reset value reboots. */
TEST(reboot_via_acpi_reset_register)
{
	static const uint8_t code[] = {0x66, 0xba, 0x00, 0x06, 0xb0, 0x14, 0xee, 0xb0, 0x01, 0xee, 0xf4, 0xeb, 0xfd};
	struct run r;

	is_int(boot(&r, code, sizeof(code), 1), 0);
	finish(&r);
	is_int(r.res.reason, VM_EXIT_REBOOT);
	ok(strstr(r.res.detail, "ACPI reset") != NULL, "ended by the reset write (%s)", r.res.detail);
	cleanup(&r);
}

TEST(triple_fault)
{
	/* ud2 with an empty IDT: #UD -> #GP -> #DF -> shutdown. */
	static const uint8_t code[] = {0x0f, 0x0b};
	struct run r;

	is_int(boot(&r, code, sizeof(code), 1), 0);
	finish(&r);
	ok(r.res.reason == VM_EXIT_TRIPLE_FAULT || r.res.reason == VM_EXIT_CRASH,
	   "ends as triple fault (or crash where the host cannot emulate it): %s %s", vm_exit_reason_name(r.res.reason),
	   r.res.detail);
	cleanup(&r);
}

TEST(mmio_window)
{
	static const uint8_t code[] = {0xbb,    0x00, 0x00, 0x00, 0xd0, /* mov ebx, 0xd0000000 */
	                               0xc7,    0x43, 0x08, 0x44, 0x33, 0x22, 0x11, /* mov dword [rbx+8], 0x11223344 */
	                               0x8b,    0x83, 0x08, 0x08, 0x00, 0x00, /* mov eax, [rbx+0x808] */
	                               0x8b,    0x4b, 0x10, /* mov ecx, [rbx+0x10] */
	                               0x81,    0xf1, 0x5a, 0x5a, 0x5a, 0x5a, /* xor ecx, 0x5a5a5a5a */
	                               0x01,    0xc8, /* add eax, ecx */
	                               EXIT_EAX};
	struct run r;

	is_int(boot(&r, code, sizeof(code), 1), 0);
	finish(&r);
	is_int(r.res.reason, VM_EXIT_GUEST);
	is_int((uint32_t)r.res.code, 0x11223344 + 0x10);
	cleanup(&r);
}

struct rec {
	char data[16];
	unsigned int n;
};

static void rec_write(void *opaque, uint64_t offset, const void *data, uint32_t len)
{
	struct rec *rc = opaque;

	if (rc->n < sizeof(rc->data))
		rc->data[rc->n++] = *(const char *)data;
}

static const struct bus_dev_ops rec_ops = {.write = rec_write};

TEST(string_io)
{
	uint8_t code[0x110] = {0xbe,    0x00, 0x01, 0x10, 0x00, /* mov esi, 0x100100 */
	                       0xb9,    0x04, 0x00, 0x00, 0x00, /* mov ecx, 4 */
	                       0x66,    0xba, 0x10, 0x07, /* mov dx, 0x710 */
	                       0xf3,    0x6e, /* rep outsb */
	                       0x31,    0xc0, /* xor eax, eax */
	                       EXIT_EAX};
	struct rec rc = {0};
	struct run r;

	memcpy(code + 0x100, "ABCD", 4);
	is_int(boot(&r, code, sizeof(code), 1), 0);
	is_int(bus_register(&r.vm->pio, 0x710, 1, &rec_ops, &rc), 0);
	finish(&r);
	is_int(r.res.reason, VM_EXIT_GUEST);
	is_int(rc.n, 4);
	ok(memcmp(rc.data, "ABCD", 4) == 0, "rep outsb delivered every byte in order");
	cleanup(&r);
}

TEST(ioeventfd_and_irq_lines)
{
	static const uint8_t code[] = {0x66, 0xba, 0x00,    0x07, 0xb0, 0x07, 0xee, /* out 0x700, 7 */
	                               0x31, 0xc0, EXIT_EAX};
	struct irq_line a, b;
	uint64_t v = 0;
	struct run r;
	int fd;

	is_int(boot(&r, code, sizeof(code), 1), 0);
	fd = vm_ioeventfd_add(r.vm, 0x700, 1, true, true, 7);
	ok(fd >= 0, "ioeventfd bound");
	is_int(r.td->irq.gsi, 5);
	is_int(vm_irq_line_new(r.vm, &a), 0);
	is_int(vm_irq_line_new(r.vm, &b), 0);
	is_int(a.gsi, 6);
	is_int(b.gsi, 7);
	is_int(irq_line_raise(&a), 0);
	vm_irq_line_free(r.vm, &a);
	is_int(vm_irq_line_new(r.vm, &a), 0);
	is_int(a.gsi, 6);
	finish(&r);
	is_int(r.res.reason, VM_EXIT_GUEST);
	is_int(read(fd, &v, sizeof(v)), 8);
	is_int(v, 1);
	is_int(vm_ioeventfd_del(r.vm, fd, 0x700, 1, true, true, 7), 0);
	close(fd);
	vm_irq_line_free(r.vm, &a);
	vm_irq_line_free(r.vm, &b);
	cleanup(&r);
}

TEST(timeout_and_stop)
{
	static const uint8_t spin[] = {0xeb, 0xfe}; /* jmp $ */
	struct run r;

	is_int(boot(&r, spin, sizeof(spin), 2), 0);
	is_int(vm_set_timeout(r.vm, 100), 0);
	finish(&r);
	is_int(r.res.reason, VM_EXIT_TIMEOUT);
	cleanup(&r);

	is_int(boot(&r, spin, sizeof(spin), 2), 0);
	vm_start(r.vm);
	usleep(50000);
	vm_stop(r.vm, VM_EXIT_SIGNAL, 15);
	vm_stop(r.vm, VM_EXIT_POWEROFF, 0); /* first reason wins */
	vm_wait(r.vm, &r.res);
	is_int(r.res.reason, VM_EXIT_SIGNAL);
	is_int(r.res.code, 15);
	cleanup(&r);
}

TEST(pause_resume)
{
	/* inc qword [0x200000]; jmp back */
	static const uint8_t code[] = {0x48, 0xff, 0x04, 0x25, 0x00, 0x00, 0x20, 0x00, 0xeb, 0xf6};
	volatile uint64_t *counter;
	uint64_t a, b;
	struct run r;

	is_int(boot(&r, code, sizeof(code), 2), 0);
	counter = guest_mem_ptr(&r.vm->mem, 0x200000, 8);
	vm_start(r.vm);
	for (int i = 0; i < 2000 && *counter == 0; i++)
		usleep(1000);
	ok(*counter > 0, "guest runs");
	is_int(vm_pause(r.vm), 0);
	is_int(r.vm->parked, 2);
	a = *counter;
	usleep(50000);
	b = *counter;
	ok(a == b, "no progress while paused (%llu, %llu)", (unsigned long long)a, (unsigned long long)b);
	is_int(vm_resume(r.vm), 0);
	for (int i = 0; i < 2000 && *counter == b; i++)
		usleep(1000);
	ok(*counter > b, "progress after resume");
	is_int(vm_pause(r.vm), 0);
	/* A stop ends a pause. */
	vm_stop(r.vm, VM_EXIT_SIGNAL, 15);
	vm_wait(r.vm, &r.res);
	is_int(r.res.reason, VM_EXIT_SIGNAL);
	cleanup(&r);
}

TEST(bad_kernel_is_an_error)
{
	static const uint8_t code[] = {0xf4};
	struct vm_config cfg = {.ncpus = 1, .mem_size = 32 << 20};
	struct boot_config bc = {.kernel_path = "/nonexistent/vmlinux"};
	struct run r;

	is_int(vm_create(&cfg, &r.vm), 0);
	is_int(boot_linux(r.vm, &bc), -ENOENT);
	bc.kernel_path = "/proc/self/status";
	ok(boot_linux(r.vm, &bc) < 0, "a non-kernel file is refused");
	vm_free(r.vm);
	is_int(boot(&r, code, sizeof(code), 1), 0);
	cleanup(&r);
}

int main(void);
static void __attribute__((constructor(200))) need_kvm(void)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		tap_skip_all("cannot open /dev/kvm: these tests boot tiny guests in KVM");
	if (ioctl(fd, KVM_GET_API_VERSION, 0) != KVM_API_VERSION)
		tap_skip_all("/dev/kvm does not answer KVM_GET_API_VERSION 12");
	close(fd);
}

TAP_MAIN()
