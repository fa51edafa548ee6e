/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kvrun boot`: boot a kernel in a microVM with no container around it, for
 * debugging the VMM and for the test guest. The exit status says how the VM
 * ended (see usage()).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "runtime/sandbox/boot-disk.h"
#include "runtime/sandbox/boot-vsock.h"
#include "runtime/cli/cmd-boot.h"
#include "runtime/host/jail.h"
#include "vmm/boot.h"
#include "vmm/platform.h"
#include "vmm/serial.h"
#include "vmm/snapshot.h"
#include "vmm/test-device.h"
#include "vmm/vm.h"

/* Exit statuses besides 0 (power-off) and the test device's code. */
#define BOOT_EXIT_REBOOT 120
#define BOOT_EXIT_TRIPLE_FAULT 121
#define BOOT_EXIT_CRASH 122
#define BOOT_EXIT_TIMEOUT 124
#define BOOT_EXIT_ERROR 125
#define BOOT_EXIT_SIGNAL_BASE 128

struct boot_opts {
	struct boot_config boot;
	struct vm_config vm;
	const char *console; /* NULL: off, "" : stderr, else a file */
	bool test_device;
	bool timings;
	double timeout_s;
	const char *snapshot_path; /* --snapshot-on-port */
	bool snapshot_stop;
	const char *restore_path; /* --restore */
	bool vm_shape_given; /* --cpus or --memory */
	bool restore_trust;
	char *disk_paths[BOOT_DISK_MAX]; /* --disk, strdup'd */
	bool disk_ro[BOOT_DISK_MAX];
	unsigned int ndisks;
	const char *vsock_path; /* --vsock */
	bool jail; /* --jail: the monitor's sandbox around the running VM */
};

static void usage(FILE *f)
{
	fprintf(f,
	        "Usage: kvrun boot --kernel FILE [options]\n"
	        "       kvrun boot --restore FILE [options]\n"
	        "Boot a Linux kernel (ELF vmlinux or bzImage) or a test guest in a microVM.\n\n"
	        "  --kernel FILE        kernel to boot (required unless --restore)\n"
	        "  --initrd FILE        initial ramdisk\n"
	        "  --cmdline STRING     kernel command line\n"
	        "  --cpus N             vCPUs (1-%d, default 1)\n"
	        "  --memory SIZE        guest RAM, e.g. 128M, 2G (default 256M; no suffix: MiB)\n"
	        "  --console[=FILE]     write the serial console to FILE (default stderr)\n"
	        "  --acpi               give the guest ACPI tables (RSDP, XSDT, FADT, MADT, DSDT):\n"
	        "                       virtio-mmio devices and COM1 in the DSDT, power-off through\n"
	        "                       the FADT sleep register; without it: MP table, devices on the\n"
	        "                       command line (virtio_mmio.device=) and acpi=off\n"
	        "  --disk PATH[,ro]     attach a raw image as a virtio-blk disk (up to %d)\n"
	        "  --vsock PATH         attach virtio-vsock (guest CID 3) with its host unix socket\n"
	        "                       at PATH (a guest connect to port P reaches PATH_P)\n"
	        "  --test-device        add the test device (exit/irq/ncpus ports, MMIO window)\n"
	        "  --jail               run the VM in the container monitor's sandbox: no\n"
	        "                       capabilities, no_new_privs, its seccomp allowlist\n"
	        "  --timeout SECONDS    end the VM after this long\n"
	        "  --timings            print a JSON line with setup/boot times and memory on stderr\n"
	        "  --snapshot-on-port FILE  save the VM to FILE when the guest writes the test device's\n"
	        "                       snapshot port (needs --test-device); the VM then goes on\n"
	        "  --snapshot-stop      end the VM (status 0) once the snapshot is written\n"
	        "  --restore FILE       run the VM saved in FILE instead of booting a kernel (no\n"
	        "                       --kernel, --initrd, --cmdline, --cpus, --memory; the same\n"
	        "                       --test-device as when it was saved)\n"
	        "  --restore-trust-memory  skip the checksum of guest memory when restoring\n"
	        "  --debug              debug logging, and every vCPU's RIP every 2 s\n\n"
	        "Exit status: 0 power-off; the code written to the test device's exit port;\n"
	        "  %d reboot (i8042, port 0xcf9, KVM reset); %d triple fault; %d crash\n"
	        "  (KVM internal error, failed entry, unknown exit); %d timeout; %d kvrun error\n"
	        "  (bad option, kernel, initrd, /dev/kvm); 128+N stopped by signal N (SIGINT, SIGTERM).\n",
	        VM_MAX_CPUS, BOOT_DISK_MAX, BOOT_EXIT_REBOOT, BOOT_EXIT_TRIPLE_FAULT, BOOT_EXIT_CRASH,
	        BOOT_EXIT_TIMEOUT, BOOT_EXIT_ERROR);
}

static int parse_size(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1ULL << 20;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k':
	case 'K':
		mul = 1ULL << 10;
		end++;
		break;
	case 'm':
	case 'M':
		mul = 1ULL << 20;
		end++;
		break;
	case 'g':
	case 'G':
		mul = 1ULL << 30;
		end++;
		break;
	case '\0':
		break;
	default:
		return -EINVAL;
	}
	if (*end == 'i' || *end == 'B')
		end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
	if (*end || v == 0 || v > (UINT64_MAX / mul))
		return -EINVAL;
	*ret = v * mul;
	return 0;
}

static int check_args(const struct boot_opts *o)
{
	if (o->restore_path && (o->boot.kernel_path || o->boot.initrd_path || o->boot.cmdline || o->vm_shape_given))
		return err_set(-EINVAL, "--restore takes the kernel, command line, vCPUs and memory from the snapshot");
	if (!o->restore_path && !o->boot.kernel_path)
		return err_set(-EINVAL, "--kernel is required");
	if (o->snapshot_path && !o->test_device)
		return err_set(-EINVAL, "--snapshot-on-port needs --test-device");
	if (o->snapshot_stop && !o->snapshot_path)
		return err_set(-EINVAL, "--snapshot-stop needs --snapshot-on-port");
	if (o->restore_trust && !o->restore_path)
		return err_set(-EINVAL, "--restore-trust-memory needs --restore");
	if (o->restore_path && o->boot.use_acpi)
		return err_set(-EINVAL, "--acpi: a restored VM keeps the firmware tables it was saved with");
	/* Snapshots hold no virtio device state. */
	if (o->ndisks && (o->restore_path || o->snapshot_path))
		return err_set(-EINVAL, "--disk cannot be combined with --snapshot-on-port or --restore");
	if (o->vsock_path && (o->restore_path || o->snapshot_path))
		return err_set(-EINVAL, "--vsock cannot be combined with --snapshot-on-port or --restore");
	/* The sandbox lets no file be written. */
	if (o->jail && o->snapshot_path)
		return err_set(-EINVAL, "--jail cannot be combined with --snapshot-on-port");
	return 0;
}

static int parse_args(int argc, char **argv, struct boot_opts *o)
{
	enum {
		OPT_KERNEL = 256,
		OPT_INITRD,
		OPT_CMDLINE,
		OPT_CPUS,
		OPT_MEMORY,
		OPT_CONSOLE,
		OPT_TEST,
		OPT_TIMEOUT,
		OPT_TIMINGS,
		OPT_DEBUG,
		OPT_SNAPSHOT,
		OPT_SNAPSHOT_STOP,
		OPT_RESTORE,
		OPT_RESTORE_TRUST,
		OPT_ACPI,
		OPT_DISK,
		OPT_VSOCK,
		OPT_JAIL,
		OPT_HELP
	};
	static const struct option longopts[] = {
	    {"kernel", required_argument, NULL, OPT_KERNEL},
	    {"initrd", required_argument, NULL, OPT_INITRD},
	    {"cmdline", required_argument, NULL, OPT_CMDLINE},
	    {"cpus", required_argument, NULL, OPT_CPUS},
	    {"memory", required_argument, NULL, OPT_MEMORY},
	    {"console", optional_argument, NULL, OPT_CONSOLE},
	    {"test-device", no_argument, NULL, OPT_TEST},
	    {"timeout", required_argument, NULL, OPT_TIMEOUT},
	    {"timings", no_argument, NULL, OPT_TIMINGS},
	    {"debug", no_argument, NULL, OPT_DEBUG},
	    {"snapshot-on-port", required_argument, NULL, OPT_SNAPSHOT},
	    {"snapshot-stop", no_argument, NULL, OPT_SNAPSHOT_STOP},
	    {"restore", required_argument, NULL, OPT_RESTORE},
	    {"restore-trust-memory", no_argument, NULL, OPT_RESTORE_TRUST},
	    {"acpi", no_argument, NULL, OPT_ACPI},
	    {"disk", required_argument, NULL, OPT_DISK},
	    {"vsock", required_argument, NULL, OPT_VSOCK},
	    {"jail", no_argument, NULL, OPT_JAIL},
	    {"help", no_argument, NULL, OPT_HELP},
	    {0},
	};
	char *end;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_KERNEL:
			o->boot.kernel_path = optarg;
			break;
		case OPT_INITRD:
			o->boot.initrd_path = optarg;
			break;
		case OPT_CMDLINE:
			o->boot.cmdline = optarg;
			break;
		case OPT_CPUS:
			o->vm.ncpus = (unsigned int)strtoul(optarg, &end, 10);
			if (*end || o->vm.ncpus < 1 || o->vm.ncpus > VM_MAX_CPUS)
				return err_set(-EINVAL, "--cpus: expected 1 to %d, got '%s'", VM_MAX_CPUS, optarg);
			o->vm_shape_given = true;
			break;
		case OPT_MEMORY:
			if (parse_size(optarg, &o->vm.mem_size) < 0 || (o->vm.mem_size & 0xfff))
				return err_set(-EINVAL, "--memory: bad size '%s' (e.g. 128M, 2G)", optarg);
			o->vm_shape_given = true;
			break;
		case OPT_CONSOLE:
			o->console = optarg ? optarg : "";
			break;
		case OPT_TEST:
			o->test_device = true;
			break;
		case OPT_TIMEOUT:
			o->timeout_s = strtod(optarg, &end);
			if (*end || o->timeout_s <= 0 || o->timeout_s > 1e7)
				return err_set(-EINVAL, "--timeout: bad number of seconds '%s'", optarg);
			break;
		case OPT_TIMINGS:
			o->timings = true;
			break;
		case OPT_DEBUG:
			log_set_max_level(LOG_LEVEL_DEBUG);
			break;
		case OPT_SNAPSHOT:
			o->snapshot_path = optarg;
			break;
		case OPT_SNAPSHOT_STOP:
			o->snapshot_stop = true;
			break;
		case OPT_RESTORE:
			o->restore_path = optarg;
			break;
		case OPT_RESTORE_TRUST:
			o->restore_trust = true;
			break;
		case OPT_ACPI:
			o->boot.use_acpi = true;
			break;
		case OPT_DISK:
			if (o->ndisks == BOOT_DISK_MAX)
				return err_set(-EINVAL, "--disk: at most %d disks", BOOT_DISK_MAX);
			if (boot_disk_parse(optarg, &o->disk_paths[o->ndisks], &o->disk_ro[o->ndisks]) < 0)
				return -EINVAL;
			o->ndisks++;
			break;
		case OPT_VSOCK:
			if (!*optarg)
				return err_set(-EINVAL, "--vsock: empty path");
			o->vsock_path = optarg;
			break;
		case OPT_JAIL:
			o->jail = true;
			break;
		case OPT_HELP:
		case 'h':
			usage(stdout);
			return 1;
		default:
			return err_set(-EINVAL, "unknown or incomplete option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return err_set(-EINVAL, "unexpected argument '%s'", argv[optind]);
	return check_args(o);
}

static int exit_status(const struct vm_result *res)
{
	switch (res->reason) {
	case VM_EXIT_POWEROFF:
		return 0;
	case VM_EXIT_GUEST:
		return res->code & 0xff;
	case VM_EXIT_REBOOT:
		return BOOT_EXIT_REBOOT;
	case VM_EXIT_TRIPLE_FAULT:
		return BOOT_EXIT_TRIPLE_FAULT;
	case VM_EXIT_TIMEOUT:
		return BOOT_EXIT_TIMEOUT;
	case VM_EXIT_SIGNAL:
		return BOOT_EXIT_SIGNAL_BASE + res->code;
	case VM_EXIT_CRASH:
	case VM_EXIT_NONE:
		break;
	}
	return BOOT_EXIT_CRASH;
}

static void signal_handler(int fd, uint32_t revents, void *opaque)
{
	struct signalfd_siginfo si;

	if (read(fd, &si, sizeof(si)) == sizeof(si))
		vm_stop(opaque, VM_EXIT_SIGNAL, (int)si.ssi_signo);
}

/* SIGINT and SIGTERM end the VM cleanly through the event loop. */
static int watch_signals(struct vm *vm, int *ret_fd)
{
	sigset_t set;
	int fd, r;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0)
		return -EINVAL;
	fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (fd < 0)
		return err_setsys(-errno, "signalfd");
	r = event_loop_add(vm->loop, fd, EPOLLIN, signal_handler, vm);
	if (r < 0) {
		close(fd);
		return err_setsys(r, "watching signals");
	}
	*ret_fd = fd;
	return 0;
}

/* Resident KiB of the whole process and of the guest RAM mapping. */
static void read_rss(const struct vm *vm, uint64_t *ret_total, uint64_t *ret_guest)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/smaps", "re");
	uintptr_t guest = (uintptr_t)vm->mem.mapping;
	bool in_guest = false;
	char line[512];

	*ret_total = *ret_guest = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, b, kb;

		if (sscanf(line, "%llx-%llx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' ')) {
			in_guest = a >= guest && a < guest + vm->mem.mapping_size;
		} else if (sscanf(line, "Rss: %llu kB", &kb) == 1) {
			*ret_total += kb;
			if (in_guest)
				*ret_guest += kb;
		}
	}
}

struct boot_devices {
	struct serial *serial;
	struct test_device *test;
	struct platform *platform;
	int console_fd, signal_fd;
	struct boot_disk disks[BOOT_DISK_MAX];
	struct acpi_virtio_mmio virtio[BOOT_DISK_MAX + 1];
	unsigned int ndisks;
	struct boot_vsock vsock;
	bool has_vsock;
};

/* What --snapshot-on-port and --restore measured (0: not done). */
struct boot_snap {
	const struct boot_opts *o;
	struct vm *vm;
	struct boot_devices *devs;
	uint64_t snapshot_us, restore_load_us;
	struct snapshot_stats stats;
	int err;
	char msg[256];
};

static void print_timings(const struct vm *vm, const struct vm_result *res, const struct boot_snap *sn)
{
	uint64_t start = vm_process_start_ns(), marker = atomic_load(&vm->t_boot_marker);
	uint64_t total, guest, first_run = vm->t_first_run ? (vm->t_first_run - start) / 1000 : 0;
	char marker_s[32] = "null", snap_s[160] = "", restore_s[96] = "";

	read_rss(vm, &total, &guest);
	if (marker)
		snprintf(marker_s, sizeof(marker_s), "%" PRIu64, (marker - start) / 1000);
	if (sn->snapshot_us)
		snprintf(snap_s, sizeof(snap_s),
		         ", \"snapshot_us\": %" PRIu64 ", \"snapshot_save_us\": %" PRIu64
		         ", \"snapshot_bytes\": %" PRIu64 ", \"snapshot_mem_pages\": %" PRIu64,
		         sn->snapshot_us, sn->stats.save_us, sn->stats.file_bytes, sn->stats.mem_pages);
	/* restore_us: process start to the restored guest's first KVM_RUN;
	 * restore_load_us: opening, checking and loading the snapshot, with
	 * creating the VM and its devices. */
	if (sn->o->restore_path)
		snprintf(restore_s, sizeof(restore_s), ", \"restore_us\": %" PRIu64 ", \"restore_load_us\": %" PRIu64,
		         first_run, sn->restore_load_us);
	fprintf(stderr,
	        "{\"setup_us\": %" PRIu64 ", \"boot_marker_us\": %s, \"total_us\": %" PRIu64 ", \"rss_kib\": %" PRIu64
	        ", \"guest_rss_kib\": %" PRIu64 ", \"monitor_rss_kib\": %" PRIu64 "%s%s"
	        ", \"result\": \"%s\", \"code\": %d}\n",
	        first_run, marker_s, (vm_now_ns() - start) / 1000, total, guest, total - guest, snap_s, restore_s,
	        vm_exit_reason_name(res->reason), res->code);
}

static int open_console(const char *console)
{
	int fd;

	if (!console)
		return -1;
	if (!*console)
		return STDERR_FILENO;
	fd = open(console, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_setsys(-errno, "cannot open console file %s", console);
	return fd;
}

static int setup_devices(struct vm *vm, const struct boot_opts *o, struct boot_devices *d)
{
	int r;

	r = open_console(o->console);
	if (r < 0 && o->console)
		return r;
	d->console_fd = r;
	r = serial_create(vm, d->console_fd, &d->serial);
	if (r >= 0)
		r = platform_create(vm, &d->platform);
	if (r >= 0 && o->test_device)
		r = test_device_create(vm, &d->test);
	for (unsigned int i = 0; r >= 0 && i < o->ndisks; i++) {
		d->ndisks++;
		r = boot_disk_attach(vm, i, o->disk_paths[i], o->disk_ro[i], &d->disks[i]);
		d->virtio[i] = d->disks[i].where;
	}
	if (r >= 0 && o->vsock_path) {
		d->has_vsock = true;
		r = boot_vsock_attach(vm, o->ndisks, o->vsock_path, &d->vsock);
		d->virtio[o->ndisks] = d->vsock.where;
	}
	if (r >= 0)
		r = watch_signals(vm, &d->signal_fd);
	/* --debug: where the guest is, every 2 s (System.map finds it). */
	if (r >= 0 && log_get_max_level() >= LOG_LEVEL_DEBUG)
		r = vm_set_rip_sampling(vm, 2000);
	if (r >= 0 && o->timeout_s > 0)
		r = vm_set_timeout(vm, (uint64_t)(o->timeout_s * 1000.0));
	return r;
}

static void free_devices(struct vm *vm, struct boot_devices *d)
{
	for (unsigned int i = 0; i < d->ndisks; i++)
		boot_disk_free(vm, &d->disks[i]);
	if (d->has_vsock)
		boot_vsock_free(vm, &d->vsock);
	test_device_free(d->test);
	if (d->signal_fd >= 0) {
		event_loop_remove(vm->loop, d->signal_fd);
		close(d->signal_fd);
	}
	serial_free(d->serial);
	platform_free(d->platform);
	if (d->console_fd > STDERR_FILENO)
		close(d->console_fd);
}

/* The devices that take part in snapshots, in creation order. */
static unsigned int snapshot_devs(const struct boot_devices *d, struct snapshot_dev out[3])
{
	unsigned int n = 0;

	out[n++] = (struct snapshot_dev){"serial", serial_state_save, serial_state_load, d->serial};
	out[n++] = (struct snapshot_dev){"platform", platform_state_save, platform_state_load, d->platform};
	if (d->test)
		out[n++] =
		    (struct snapshot_dev){"test-device", test_device_state_save, test_device_state_load, d->test};
	return n;
}

/* On the event loop, when the guest asked through the test device. */
static void take_snapshot(struct test_device *td, void *opaque)
{
	struct boot_snap *sn = opaque;
	struct snapshot_dev devs[3];
	unsigned int n = snapshot_devs(sn->devs, devs);
	uint64_t t0 = vm_now_ns();
	int r;

	r = vm_pause(sn->vm);
	if (r < 0)
		return; /* the VM is ending */
	r = vm_snapshot_save(sn->vm, sn->o->snapshot_path, devs, n, &sn->stats);
	sn->snapshot_us = (vm_now_ns() - t0) / 1000;
	if (r < 0) {
		sn->err = r;
		snprintf(sn->msg, sizeof(sn->msg), "%s", err_msg());
		fprintf(stderr, "kvrun boot: %s\n", sn->msg);
		test_device_set_snapshot_status(td, KVRUN_SNAPSHOT_FAILED);
	} else {
		test_device_set_snapshot_status(td, KVRUN_SNAPSHOT_DONE);
	}
	if (r < 0 && sn->o->snapshot_stop)
		vm_stopf(sn->vm, VM_EXIT_CRASH, r, "snapshot failed");
	else if (sn->o->snapshot_stop)
		vm_stopf(sn->vm, VM_EXIT_POWEROFF, 0, "snapshot written");
	else
		vm_resume(sn->vm);
}

static int restore_vm(struct vm_snapshot *snap, struct boot_snap *sn)
{
	struct snapshot_dev devs[3];
	unsigned int n = snapshot_devs(sn->devs, devs);
	int r;

	r = vm_snapshot_restore(snap, sn->vm, devs, n);
	if (r < 0)
		return r;
	/* The guest asked for the snapshot and waits on the port: it now
	 * learns that it runs in a restored VM. */
	if (sn->devs->test && __atomic_load_n(&sn->devs->test->snap_status, __ATOMIC_ACQUIRE) == KVRUN_SNAPSHOT_PENDING)
		test_device_set_snapshot_status(sn->devs->test, KVRUN_SNAPSHOT_RESTORED);
	return 0;
}

static int boot_vm(struct vm *vm, const struct boot_opts *o, const struct boot_devices *d)
{
	struct boot_config bc = o->boot;

	bc.acpi_com1 = d->serial != NULL; /* the 16550 at 0x3f8 always exists here */
	bc.virtio = d->virtio;
	bc.nr_virtio = d->ndisks + (d->has_vsock ? 1 : 0);
	return boot_linux(vm, &bc);
}

/* Boot the kernel, or restore the snapshot (snap non-NULL). */
static int prepare_vm(const struct boot_opts *o, struct vm_snapshot *snap, struct boot_snap *sn)
{
	struct vm_config cfg = o->vm;
	int r;

	if (snap)
		vm_snapshot_config(snap, &cfg);
	r = vm_create(&cfg, &sn->vm);
	log_debug("boot: VM created at %" PRIu64 " us", (vm_now_ns() - vm_process_start_ns()) / 1000);
	if (r >= 0)
		r = setup_devices(sn->vm, o, sn->devs);
	if (r >= 0 && o->snapshot_path)
		test_device_on_snapshot(sn->devs->test, take_snapshot, sn);
	if (r >= 0 && snap)
		r = restore_vm(snap, sn);
	else if (r >= 0)
		r = boot_vm(sn->vm, o, sn->devs);
	log_debug("boot: kernel loaded at %" PRIu64 " us", (vm_now_ns() - vm_process_start_ns()) / 1000);
	return r;
}

static int run_vm(const struct boot_opts *o, struct vm_result *res)
{
	struct boot_devices d = {.console_fd = -1, .signal_fd = -1};
	struct boot_snap sn = {.o = o, .devs = &d};
	struct vm_snapshot *snap = NULL;
	uint64_t t0 = vm_now_ns();
	int r = 0;

	/* Before the VM's threads exist, so that they inherit no capability. */
	if (o->jail)
		r = jail_drop_caps();
	if (r >= 0 && o->restore_path)
		r = vm_snapshot_open(o->restore_path, o->restore_trust ? SNAPSHOT_OPEN_TRUST_MEMORY : 0, &snap);
	if (r >= 0)
		r = prepare_vm(o, snap, &sn);
	vm_snapshot_close(snap);
	if (o->restore_path)
		sn.restore_load_us = (vm_now_ns() - t0) / 1000;
	if (r >= 0)
		r = vm_start(sn.vm);
	if (r >= 0 && o->jail)
		r = jail_seccomp(JAIL_MONITOR);
	if (r >= 0 || (sn.vm && sn.vm->started)) {
		vm_wait(sn.vm, res);
		if (o->timings)
			print_timings(sn.vm, res, &sn);
	}
	if (sn.vm)
		free_devices(sn.vm, &d);
	vm_free(sn.vm);
	return r;
}

int cmd_boot(int argc, char **argv)
{
	struct boot_opts o = {.vm = {.ncpus = 1, .mem_size = 256ULL << 20}};
	struct vm_result res = {0};
	bool usage_error = false;
	int r;

	r = parse_args(argc, argv, &o);
	if (r == 0)
		r = run_vm(&o, &res);
	else if (r < 0)
		usage_error = true;
	for (unsigned int i = 0; i < o.ndisks; i++)
		free(o.disk_paths[i]);
	if (r > 0)
		return 0;
	if (usage_error) {
		fprintf(stderr, "kvrun boot: %s\n", err_msg());
		usage(stderr);
		return BOOT_EXIT_ERROR;
	}
	if (r < 0) {
		fprintf(stderr, "kvrun boot: %s\n", err_msg());
		return BOOT_EXIT_ERROR;
	}
	if (o.snapshot_stop && res.reason == VM_EXIT_POWEROFF)
		fprintf(stderr, "kvrun boot: snapshot written to %s, VM stopped\n", o.snapshot_path);
	if (res.reason != VM_EXIT_POWEROFF && res.reason != VM_EXIT_GUEST)
		fprintf(stderr, "kvrun boot: VM ended: %s%s%s\n", vm_exit_reason_name(res.reason),
		        res.detail[0] ? ": " : "", res.detail);
	if (o.jail) {
		/* A jailed process cannot fork a leak checker's tracer (the
		 * sanitizers' atexit work): end here, as the monitor does. */
		fflush(NULL);
		_exit(exit_status(&res));
	}
	return exit_status(&res);
}
