/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kvrun boot`: boot a kernel in a microVM with no container around it, for
 * debugging the VMM and for the test guest. The VM is made by the same
 * builder as a container's (runtime/sandbox/sandbox.h). The exit status
 * says how the VM ended (see the command's text).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/fileio.h"
#include "common/log.h"
#include "runtime/cli/cli-args.h"
#include "runtime/cli/boot-jail.h"
#include "runtime/cli/cli-help.h"
#include "runtime/cli/log-sink.h"
#include "runtime/host/jail.h"
#include "runtime/host/netns.h"
#include "runtime/sandbox/sandbox.h"
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

#define BOOT_STR(x) #x
#define BOOT_XSTR(x) BOOT_STR(x)

struct boot_opts {
	struct sandbox_opts vm; /* what the builder makes */
	char *disk_paths[SANDBOX_MAX_DISKS]; /* --disk, strdup'd */
	char disk_ids[SANDBOX_MAX_DISKS][16];
	char *share_args[SANDBOX_MAX_SHARES]; /* --share, strdup'd */
	const char *console; /* NULL: off, "" : stderr, else a file */
	int console_fd;
	bool timings;
	double timeout_s;
	const char *snapshot_path; /* --snapshot-on-port */
	bool snapshot_stop;
	const char *restore_path; /* --restore */
	bool vm_shape_given; /* --cpus or --memory */
	bool restore_trust;
	bool jail; /* --jail: the monitor's sandbox around the running VM */
	struct boot_jail jail_paths; /* the paths given, made absolute for the jail */
	const char *bench_out; /* --bench-out: the guest's benchmark marks */
	int bench_fd;
	const char *net; /* --net TAP[,mtu=N] */
	struct netns_setup net_setup;
};

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
	const struct boot_config *b = &o->vm.boot;

	if (o->restore_path && (b->kernel_path || b->initrd_path || b->cmdline || o->vm_shape_given))
		return err_set(-EINVAL, "--restore takes the kernel, command line, vCPUs and memory from the snapshot");
	if (!o->restore_path && !b->kernel_path)
		return err_set(-EINVAL, "--kernel is required");
	if (o->snapshot_path && !o->vm.test_device)
		return err_set(-EINVAL, "--snapshot-on-port needs --test-device");
	if (o->bench_out && !o->vm.test_device)
		return err_set(-EINVAL, "--bench-out needs --test-device");
	if (o->snapshot_stop && !o->snapshot_path)
		return err_set(-EINVAL, "--snapshot-stop needs --snapshot-on-port");
	if (o->restore_trust && !o->restore_path)
		return err_set(-EINVAL, "--restore-trust-memory needs --restore");
	if (o->restore_path && b->use_acpi)
		return err_set(-EINVAL, "--acpi: a restored VM keeps the firmware tables it was saved with");
	/* The snapshot of a bare VM holds no disk or vsock backend to restore. */
	if (o->vm.ndisks && (o->restore_path || o->snapshot_path))
		return err_set(-EINVAL, "--disk cannot be combined with --snapshot-on-port or --restore");
	if (o->vm.vsock_path && (o->restore_path || o->snapshot_path))
		return err_set(-EINVAL, "--vsock cannot be combined with --snapshot-on-port or --restore");
	if (o->vm.nshares && (o->restore_path || o->snapshot_path))
		return err_set(-EINVAL, "--share cannot be combined with --snapshot-on-port or --restore");
	if (o->net && (o->restore_path || o->snapshot_path))
		return err_set(-EINVAL, "--net cannot be combined with --snapshot-on-port or --restore");
	/* The sandbox lets no file be written. */
	if (o->jail && o->snapshot_path)
		return err_set(-EINVAL, "--jail cannot be combined with --snapshot-on-port");
	return 0;
}

/* "PATH[,ro][,base=BASE]" of --disk i into o: a raw image, or with base=
 * the copy-on-write disk of BASE whose written blocks go to PATH. */
static int add_disk(struct boot_opts *o, const char *arg)
{
	unsigned int i = o->vm.ndisks;
	const char *base = NULL;
	char *path, *comma;
	bool ro = false;

	if (i == SANDBOX_MAX_DISKS)
		return err_set(-EINVAL, "--disk: at most %d disks", SANDBOX_MAX_DISKS);
	path = o->disk_paths[i] = strdup(arg);
	if (!path)
		return -ENOMEM;
	while ((comma = strrchr(path, ','))) {
		if (!strcmp(comma + 1, "ro"))
			ro = true;
		else if (!strncmp(comma + 1, "base=", 5) && comma[6])
			base = comma + 6;
		else
			return err_set(-EINVAL, "--disk %s: unknown option '%s' (ro, base=FILE)", arg, comma + 1);
		*comma = '\0';
	}
	if (!*path)
		return err_set(-EINVAL, "--disk: empty path");
	snprintf(o->disk_ids[i], sizeof(o->disk_ids[i]), "kvrun-disk%u", i);
	o->vm.disks[i] = (struct sandbox_disk){.path = path, .base = base, .read_only = ro, .id = o->disk_ids[i]};
	o->vm.ndisks++;
	return 0;
}

/* "TAG=DIR[,ro]" of --share into o. */
static int add_share(struct boot_opts *o, const char *arg)
{
	unsigned int i = o->vm.nshares;
	char *tag, *dir, *comma;
	bool ro = false;

	if (i == SANDBOX_MAX_SHARES)
		return err_set(-EINVAL, "--share: at most %d shared directories", SANDBOX_MAX_SHARES);
	tag = o->share_args[i] = strdup(arg);
	if (!tag)
		return -ENOMEM;
	dir = strchr(tag, '=');
	if (!dir || dir == tag || !dir[1])
		return err_set(-EINVAL, "--share %s: expected TAG=DIR[,ro]", arg);
	*dir++ = '\0';
	comma = strrchr(dir, ',');
	if (comma && !strcmp(comma + 1, "ro")) {
		*comma = '\0';
		ro = true;
	}
	o->vm.shares[i] = (struct sandbox_share){.tag = tag, .dir = dir, .read_only = ro};
	o->vm.nshares++;
	return 0;
}

/* The flags' raw values, checked and moved into struct boot_opts. */
struct boot_flags {
	unsigned long long cpus;
	const char *memory, *timeout, *vsock;
	struct cli_strv disks, shares;
	bool debug;
};

static int apply_flags(struct boot_opts *o, struct boot_flags *f)
{
	char *end;
	int r;

	if (f->cpus) {
		if (f->cpus > VM_MAX_CPUS)
			return err_set(-EINVAL, "--cpus: expected 1 to %d, got '%llu'", VM_MAX_CPUS, f->cpus);
		o->vm.vm.ncpus = (unsigned int)f->cpus;
		o->vm_shape_given = true;
	}
	if (f->memory) {
		if (parse_size(f->memory, &o->vm.vm.mem_size) < 0 || (o->vm.vm.mem_size & 0xfff))
			return err_set(-EINVAL, "--memory: bad size '%s' (e.g. 128M, 2G)", f->memory);
		o->vm_shape_given = true;
	}
	if (f->timeout) {
		o->timeout_s = strtod(f->timeout, &end);
		if (*end || o->timeout_s <= 0 || o->timeout_s > 1e7)
			return err_set(-EINVAL, "--timeout: bad number of seconds '%s'", f->timeout);
	}
	if (f->vsock && !*f->vsock)
		return err_set(-EINVAL, "--vsock: empty path");
	o->vm.vsock_path = f->vsock;
	for (size_t i = 0; i < f->disks.n; i++) {
		r = add_disk(o, f->disks.v[i]);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < f->shares.n; i++) {
		r = add_share(o, f->shares.v[i]);
		if (r < 0)
			return r;
	}
	if (f->debug)
		log_set_max_level(LOG_LEVEL_DEBUG);
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

/* The running VM, and what --snapshot-on-port and --restore measured
 * (0: not done). */
struct boot_run {
	const struct boot_opts *o;
	struct sandbox *sb;
	int signal_fd;
	uint64_t snapshot_us, restore_load_us;
	struct snapshot_stats stats;
};

static void print_timings(const struct vm *vm, const struct vm_result *res, const struct boot_run *br)
{
	uint64_t start = vm_process_start_ns(), marker = atomic_load(&vm->t_boot_marker);
	uint64_t total, guest, first_run = vm->t_first_run ? (vm->t_first_run - start) / 1000 : 0;
	char marker_s[32] = "null", snap_s[160] = "", restore_s[96] = "";

	read_rss(vm, &total, &guest);
	if (marker)
		snprintf(marker_s, sizeof(marker_s), "%" PRIu64, (marker - start) / 1000);
	if (br->snapshot_us)
		snprintf(snap_s, sizeof(snap_s),
		         ", \"snapshot_us\": %" PRIu64 ", \"snapshot_save_us\": %" PRIu64
		         ", \"snapshot_bytes\": %" PRIu64 ", \"snapshot_mem_pages\": %" PRIu64,
		         br->snapshot_us, br->stats.save_us, br->stats.file_bytes, br->stats.mem_pages);
	/* restore_us: process start to the restored guest's first KVM_RUN;
	 * restore_load_us: opening, checking and loading the snapshot, with
	 * creating the VM and its devices. */
	if (br->o->restore_path)
		snprintf(restore_s, sizeof(restore_s), ", \"restore_us\": %" PRIu64 ", \"restore_load_us\": %" PRIu64,
		         first_run, br->restore_load_us);
	fprintf(stderr,
	        "{\"setup_us\": %" PRIu64 ", \"boot_marker_us\": %s, \"total_us\": %" PRIu64 ", \"rss_kib\": %" PRIu64
	        ", \"guest_rss_kib\": %" PRIu64 ", \"monitor_rss_kib\": %" PRIu64 "%s%s"
	        ", \"result\": \"%s\", \"code\": %d}\n",
	        first_run, marker_s, (vm_now_ns() - start) / 1000, total, guest, total - guest, snap_s, restore_s,
	        vm_exit_reason_name(res->reason), res->code);
}

static int open_bench_out(struct boot_opts *o)
{
	o->bench_fd = -1;
	if (!o->bench_out)
		return 0;
	o->bench_fd = open(o->bench_out, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
	if (o->bench_fd < 0)
		return err_setsys(-errno, "cannot open --bench-out file %s", o->bench_out);
	return 0;
}

/* --net TAP[,mtu=N]: the TAP, up, as the VM's network device. */
static int open_net(struct boot_opts *o)
{
	char tap[64];
	const char *comma;
	unsigned long mtu = 1500;
	char *end;
	size_t n;
	int r;

	if (!o->net)
		return 0;
	comma = strchr(o->net, ',');
	n = comma ? (size_t)(comma - o->net) : strlen(o->net);
	if (n >= sizeof(tap))
		return err_set(-EINVAL, "--net %s: TAP name too long", o->net);
	memcpy(tap, o->net, n);
	tap[n] = '\0';
	if (comma) {
		if (strncmp(comma + 1, "mtu=", 4) != 0)
			return err_set(-EINVAL, "--net %s: unknown option '%s' (mtu=N)", o->net, comma + 1);
		errno = 0;
		mtu = strtoul(comma + 5, &end, 10);
		if (errno || *end || end == comma + 5 || mtu > 65535)
			return err_set(-EINVAL, "--net %s: bad MTU", o->net);
	}
	r = netns_tap_link(tap, (uint32_t)mtu, &o->net_setup);
	if (r < 0)
		return err_prefix(r, "--net");
	o->vm.net = &o->net_setup;
	return 0;
}

static int open_console(struct boot_opts *o)
{
	o->console_fd = -1;
	if (!o->console)
		return 0;
	if (!*o->console) {
		o->vm.console_fd = STDERR_FILENO;
		return 0;
	}
	o->console_fd = open(o->console, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (o->console_fd < 0)
		return err_setsys(-errno, "cannot open console file %s", o->console);
	o->vm.console_fd = o->console_fd;
	return 0;
}

/* On the event loop, when the guest asked through the test device. */
static void take_snapshot(struct test_device *td, void *opaque)
{
	struct boot_run *br = opaque;
	uint64_t t0 = vm_now_ns();
	int r;

	r = sandbox_save(br->sb, br->o->snapshot_path, &br->stats);
	br->snapshot_us = (vm_now_ns() - t0) / 1000;
	if (r == -ESHUTDOWN)
		return; /* the VM is ending */
	if (r < 0) {
		fprintf(stderr, "kvrun boot: %s\n", err_msg());
		test_device_set_snapshot_status(td, KVRUN_SNAPSHOT_FAILED);
	} else {
		test_device_set_snapshot_status(td, KVRUN_SNAPSHOT_DONE);
	}
	if (r < 0 && br->o->snapshot_stop)
		vm_stopf(br->sb->vm, VM_EXIT_CRASH, r, "snapshot failed");
	else if (br->o->snapshot_stop)
		vm_stopf(br->sb->vm, VM_EXIT_POWEROFF, 0, "snapshot written");
	else
		sandbox_resume(br->sb);
}

/* Build the VM (booted, or restored) with its vCPUs stopped. */
static int build_vm(const struct boot_opts *o, struct boot_run *br)
{
	uint64_t t0 = vm_now_ns();
	struct test_device *td;
	int r;

	if (!o->restore_path)
		return sandbox_start(&o->vm, &br->sb);
	r = sandbox_restore(&o->vm, o->restore_path, o->restore_trust ? SNAPSHOT_OPEN_TRUST_MEMORY : 0, false, NULL,
	                    &br->sb);
	br->restore_load_us = (vm_now_ns() - t0) / 1000;
	if (r < 0)
		return r;
	/* The guest asked for the snapshot and waits on the port: it now
	 * learns that it runs in a restored VM. */
	td = br->sb->test;
	if (td && __atomic_load_n(&td->snap_status, __ATOMIC_ACQUIRE) == KVRUN_SNAPSHOT_PENDING)
		test_device_set_snapshot_status(td, KVRUN_SNAPSHOT_RESTORED);
	return 0;
}

/* What must be in place before the guest's first instruction. */
static int prepare_vm(const struct boot_opts *o, struct boot_run *br)
{
	struct vm *vm = br->sb->vm;
	int r;

	log_debug("boot: VM built at %" PRIu64 " us", (vm_now_ns() - vm_process_start_ns()) / 1000);
	r = watch_signals(vm, &br->signal_fd);
	/* --debug: where the guest is, every 2 s (System.map finds it). */
	if (r >= 0 && log_get_max_level() >= LOG_LEVEL_DEBUG)
		r = vm_set_rip_sampling(vm, 2000);
	if (r >= 0 && o->timeout_s > 0)
		r = vm_set_timeout(vm, (uint64_t)(o->timeout_s * 1000.0));
	if (r >= 0 && o->snapshot_path)
		test_device_on_snapshot(br->sb->test, take_snapshot, br);
	if (r >= 0 && o->bench_fd >= 0)
		test_device_set_bench_fd(br->sb->test, o->bench_fd);
	return r;
}

/* Only stdio, the console file and the log go into the jail. */
static int close_inherited(const struct boot_opts *o)
{
	int keep[6 + NET_CONFIG_MAX_IFACES * NET_MAX_QUEUE_PAIRS] = {
	    STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO, o->console_fd, log_sink_fd(), o->bench_fd,
	};
	size_t n = 6;
	int r;

	/* --net's TAP queues. */
	for (unsigned int i = 0; o->net && i < o->net_setup.cfg.nr_ifaces; i++)
		for (unsigned int q = 0; q < o->net_setup.links[i].nr_fds; q++)
			keep[n++] = o->net_setup.links[i].fds[q];
	r = fd_close_all_except(keep, n);

	return r < 0 ? err_setsys(r, "close inherited descriptors") : 0;
}

static int run_vm(struct boot_opts *o, struct vm_result *res)
{
	struct boot_run br = {.o = o, .signal_fd = -1};
	struct jail *jail = NULL;
	int r;

	r = open_console(o);
	if (r >= 0)
		r = open_bench_out(o);
	if (r >= 0)
		r = open_net(o);
	/* Before the VM's threads exist: they are made in the jail. */
	if (r >= 0 && o->jail)
		r = close_inherited(o);
	if (r >= 0 && o->jail)
		r = boot_jail_enter(&o->jail_paths, &o->vm, &o->restore_path, &jail);
	o->vm.stopped = true;
	if (r >= 0)
		r = build_vm(o, &br);
	if (r >= 0)
		r = prepare_vm(o, &br);
	/* Before the guest's first instruction: its own uid, the serving
	 * filter, and the vCPU threads' own. */
	/* The thread registering guest RAM first: the serving filter has no
	 * KVM_SET_USER_MEMORY_REGION. */
	if (r >= 0 && jail)
		r = vm_memslots_wait(br.sb->vm);
	if (r >= 0 && jail) {
		br.sb->vm->vcpu_thread_init = jail_vcpu_thread;
		br.sb->vm->vcpu_thread_opaque = jail;
		r = jail_finish(jail);
	}
	if (r >= 0)
		r = vm_start(br.sb->vm);
	if (br.sb && (r >= 0 || br.sb->vm->started)) {
		vm_wait(br.sb->vm, res);
		if (o->timings)
			print_timings(br.sb->vm, res, &br);
	}
	if (br.signal_fd >= 0) {
		event_loop_remove(br.sb->vm->loop, br.signal_fd);
		close(br.signal_fd);
	}
	sandbox_free(br.sb, NULL);
	if (o->console_fd >= 0)
		close(o->console_fd);
	jail_free(jail);
	if (o->bench_fd >= 0)
		close(o->bench_fd);
	netns_setup_close(&o->net_setup);
	return r;
}

/* Errors are this verb's own: "kvrun boot: <message>" and status 125. */
static int boot_failed(bool usage, const struct cli_flag *flags)
{
	fprintf(stderr, "kvrun boot: %s\n", err_msg());
	if (usage)
		cli_print_help(&cli_cmd_boot, flags, stderr);
	return BOOT_EXIT_ERROR;
}

static int report(const struct boot_opts *o, const struct vm_result *res)
{
	if (o->snapshot_stop && res->reason == VM_EXIT_POWEROFF)
		fprintf(stderr, "kvrun boot: snapshot written to %s, VM stopped\n", o->snapshot_path);
	if (res->reason != VM_EXIT_POWEROFF && res->reason != VM_EXIT_GUEST)
		fprintf(stderr, "kvrun boot: VM ended: %s%s%s\n", vm_exit_reason_name(res->reason),
		        res->detail[0] ? ": " : "", res->detail);
	if (o->jail) {
		/* A jailed process cannot fork a leak checker's tracer (the
		 * sanitizers' atexit work): end here, as the monitor does. */
		fflush(NULL);
		_exit(exit_status(res));
	}
	return exit_status(res);
}

static int run_boot(struct cli_context *ctx, int argc, char **argv)
{
	struct boot_opts o = {.vm = {.vm = {.ncpus = 1, .mem_size = 256ULL << 20}}, .bench_fd = -1};
	struct boot_flags f = {0};
	const struct cli_flag flags[] = {
	    {"kernel", NULL, CLI_STRING, &o.vm.boot.kernel_path, "kernel to boot (required unless --restore)"},
	    {"initrd", NULL, CLI_STRING, &o.vm.boot.initrd_path, "initial ramdisk"},
	    {"cmdline", NULL, CLI_STRING, &o.vm.boot.cmdline, "kernel command line"},
	    {"cpus", NULL, CLI_UINT, &f.cpus, "vCPUs (1-" BOOT_XSTR(VM_MAX_CPUS) ", default 1)"},
	    {"memory", NULL, CLI_STRING, &f.memory, "guest RAM, e.g. 128M, 2G (default 256M; no suffix: MiB)"},
	    {"console", NULL, CLI_OPTSTRING, &o.console, "write the serial console to FILE (--console alone: stderr)"},
	    {"acpi", NULL, CLI_BOOL, &o.vm.boot.use_acpi,
	     "give the guest ACPI tables (virtio-mmio devices and COM1 in the DSDT, power-off through the FADT); "
	     "without it: MP table, devices on the command line and acpi=off"},
	    {"disk", NULL, CLI_STRV, &f.disks,
	     "PATH[,ro][,base=BASE]: attach a raw image as a virtio-blk disk, or with base= the copy-on-write disk "
	     "of BASE whose writes go to PATH (emptied; up to " BOOT_XSTR(SANDBOX_MAX_DISKS) ")"},
	    {"vsock", NULL, CLI_STRING, &f.vsock,
	     "attach virtio-vsock (guest CID 3) with its host unix socket at PATH (a guest connect to port P "
	     "reaches PATH_P)"},
	    {"share", NULL, CLI_STRV, &f.shares,
	     "TAG=DIR[,ro]: share a host directory as a virtio-fs device the guest mounts with "
	     "`mount -t virtiofs TAG` (up to " BOOT_XSTR(SANDBOX_MAX_SHARES) ")"},
	    {"balloon", NULL, CLI_BOOL, &o.vm.balloon,
	     "attach virtio-balloon: free page reporting and inflated pages give guest memory back to the host "
	     "(with --restore: as when the snapshot was taken)"},
	    {"net", NULL, CLI_STRING, &o.net,
	     "TAP[,mtu=N]: attach virtio-net over the TAP of that name (made if missing, set up; MTU 1500 by "
	     "default); the host end is the TAP's interface"},
	    {"test-device", NULL, CLI_BOOL, &o.vm.test_device,
	     "add the test device (exit/irq/ncpus ports, MMIO window)"},
	    {"jail", NULL, CLI_BOOL, &o.jail,
	     "run the VM in the container monitor's jail (docs/security.md): a uid of its own, a mount namespace "
	     "holding only the VM's files, no capabilities, its seccomp filters"},
	    {"timeout", NULL, CLI_STRING, &f.timeout, "end the VM after this many seconds"},
	    {"bench-out", NULL, CLI_STRING, &o.bench_out,
	     "append a JSON line to FILE for each benchmark the test guest runs (its figures, the host time, and the "
	     "exits, doorbells and interrupts it cost; needs --test-device)"},
	    {"timings", NULL, CLI_BOOL, &o.timings, "print a JSON line with setup/boot times and memory on stderr"},
	    {"snapshot-on-port", NULL, CLI_STRING, &o.snapshot_path,
	     "save the VM to FILE when the guest writes the test device's snapshot port (needs --test-device); the "
	     "VM then goes on"},
	    {"snapshot-stop", NULL, CLI_BOOL, &o.snapshot_stop, "end the VM (status 0) once the snapshot is written"},
	    {"restore", NULL, CLI_STRING, &o.restore_path,
	     "run the VM saved in FILE instead of booting a kernel (no --kernel, --initrd, --cmdline, --cpus, "
	     "--memory; the same --test-device as when it was saved)"},
	    {"restore-trust-memory", NULL, CLI_BOOL, &o.restore_trust,
	     "skip the checksum of guest memory when restoring"},
	    {"debug", NULL, CLI_BOOL, &f.debug, "debug logging, and every vCPU's RIP every 2 s"},
	    CLI_FLAG_END,
	};
	struct vm_result res = {0};
	int r, i;

	ctx->fail_status = BOOT_EXIT_ERROR;
	r = cli_parse_args(&cli_cmd_boot, flags, argc, argv, CLI_ARGS_EXACT, 0, &i);
	if (r >= 0 && r != CLI_HELP_SHOWN)
		r = apply_flags(&o, &f);
	cli_strv_free(&f.disks);
	cli_strv_free(&f.shares);
	if (r == CLI_HELP_SHOWN)
		r = 0;
	else if (r < 0)
		r = boot_failed(true, flags);
	else if (run_vm(&o, &res) < 0)
		r = boot_failed(false, flags);
	else
		r = report(&o, &res);
	for (unsigned int d = 0; d < SANDBOX_MAX_DISKS; d++)
		free(o.disk_paths[d]);
	for (unsigned int d = 0; d < SANDBOX_MAX_SHARES; d++)
		free(o.share_args[d]);
	boot_jail_done(&o.jail_paths);
	return r;
}

const struct cli_command cli_cmd_boot = {
    .name = "boot",
    .summary = "boot a kernel in a bare VM (debugging the VMM, no container)",
    .args = "",
    .text = "Boot a Linux kernel (ELF vmlinux or bzImage) or a test guest in a microVM:\n"
	    "   kvrun boot --kernel FILE [options]\n"
	    "   kvrun boot --restore FILE [options]\n\n"
	    "EXIT STATUS:\n"
	    "   0 power-off; the code written to the test device's exit port;\n"
	    "   120 reboot (i8042, port 0xcf9, KVM reset); 121 triple fault; 122 crash\n"
	    "   (KVM internal error, failed entry, unknown exit); 124 timeout; 125 kvrun error\n"
	    "   (bad option, kernel, initrd, /dev/kvm); 128+N stopped by signal N (SIGINT, SIGTERM).",
    .run = run_boot,
};
