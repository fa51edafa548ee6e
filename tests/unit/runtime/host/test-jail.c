/* SPDX-License-Identifier: Apache-2.0 */
/* The monitor's sandbox (runtime/host/jail.c), applied in a forked child: what
 * /proc says of it, what it still allows, and that what it refuses fails
 * with EPERM instead of killing. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/xattr.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "runtime/store/checkpoint.h"
#include "runtime/host/jail.h"
#include "vmm/snapshot.h"
#include "vmm/vm.h"
#include "tap.h"

/* A /proc/self/status field, as text ("" when missing). */
static void status_field(const char *key, char *buf, size_t size)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	size_t n = strlen(key);

	buf[0] = 0;
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, key, n) == 0 && line[n] == ':') {
			snprintf(buf, size, "%s", line + n + 1 + strspn(line + n + 1, " \t"));
			buf[strcspn(buf, "\n")] = 0;
		}
	if (f)
		fclose(f);
}

static void *thread_fn(void *arg)
{
	return arg;
}

/* Runs in the jailed child: one "name=value" line per check. */
static void report(FILE *out, enum jail_profile p)
{
	char v[128];
	int fd, r;
	pthread_t t;
	void *res = NULL;

	r = jail_enter(p);
	fprintf(out, "enter=%d\n", r);
	status_field("Seccomp", v, sizeof(v));
	fprintf(out, "seccomp=%s\n", v);
	status_field("NoNewPrivs", v, sizeof(v));
	fprintf(out, "nnp=%s\n", v);
	status_field("CapEff", v, sizeof(v));
	fprintf(out, "capeff=%s\n", v);
	status_field("CapBnd", v, sizeof(v));
	fprintf(out, "capbnd=%s\n", v);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	fprintf(out, "unix=%d\n", fd >= 0 ? 0 : -errno);
	if (fd >= 0)
		close(fd);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	fprintf(out, "inet=%d\n", fd >= 0 ? 0 : -errno);
	fd = open("/tmp/kvrun-jail-test-write", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	fprintf(out, "create=%d\n", fd >= 0 ? 0 : -errno);
	r = pthread_create(&t, NULL, thread_fn, (void *)1);
	if (r == 0)
		pthread_join(t, &res);
	fprintf(out, "thread=%d\n", r == 0 && res == (void *)1 ? 0 : -r);
	r = (int)fork();
	if (r == 0)
		_exit(0);
	fprintf(out, "fork=%d\n", r > 0 ? 0 : -errno);
	fprintf(out, "exec=%d\n", execl("/bin/true", "true", (char *)NULL) < 0 ? -errno : 0);
	res = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	fprintf(out, "mmap_exec=%d\n", res != MAP_FAILED ? 0 : -errno);
	fflush(out);
}

static char *run_child(enum jail_profile p, int *ret_status)
{
	static char buf[4096];
	int pfd[2];
	size_t len = 0;
	ssize_t n;
	pid_t pid;

	if (pipe(pfd) < 0)
		return NULL;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		FILE *out = fdopen(pfd[1], "w");

		close(pfd[0]);
		report(out, p);
		_exit(0);
	}
	close(pfd[1]);
	while (len < sizeof(buf) - 1 && (n = read(pfd[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = 0;
	close(pfd[0]);
	waitpid(pid, ret_status, 0);
	return buf;
}

static const char *value(const char *out, const char *key)
{
	static char v[128];
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "%s=", key);
	for (p = out; (p = strstr(p, pat)); p++)
		if (p == out || p[-1] == '\n') {
			p += strlen(pat);
			snprintf(v, sizeof(v), "%.*s", (int)strcspn(p, "\n"), p);
			return v;
		}
	return "(missing)";
}

static void check_profile(enum jail_profile p, const char *name)
{
	int status = -1;
	char *out = run_child(p, &status);

	ok(out && WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: the jailed child ran to its end (status 0x%x)",
	   name, status);
	if (!out)
		return;
	is_str(value(out, "enter"), "0");
	is_str(value(out, "seccomp"), "2");
	is_str(value(out, "nnp"), "1");
	is_str(value(out, "capeff"), "0000000000000000");
	if (geteuid() == 0)
		is_str(value(out, "capbnd"), "0000000000000000");
	is_str(value(out, "unix"), "0");
	is_str(value(out, "thread"), "0");
	is_str(value(out, "inet"), "-1"); /* -EPERM */
	is_str(value(out, "create"), "-1");
	is_str(value(out, "fork"), "-1");
	is_str(value(out, "exec"), "-1");
	is_str(value(out, "mmap_exec"), "-1");
}

TEST(proxy_profile)
{
	check_profile(JAIL_PROXY, "proxy");
}

TEST(monitor_profile)
{
	check_profile(JAIL_MONITOR, "monitor");
}

/* A monitor serving shared directories (virtio-fs): a file server's
 * capabilities kept, its calls allowed, the rest as jailed as ever. */
static void report_fs(FILE *out, const char *dir)
{
	struct {
		struct file_handle fh;
		unsigned char h[MAX_HANDLE_SZ];
	} fh = {.fh.handle_bytes = MAX_HANDLE_SZ};
	char v[128], path[512];
	int dfd, fd, mnt;

	fprintf(out, "drop=%d\n", jail_drop_caps_except(JAIL_FS_CAPS));
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	fprintf(out, "enter=%d\n", jail_seccomp(JAIL_MONITOR_FS));
	status_field("CapEff", v, sizeof(v));
	fprintf(out, "capeff=%s\n", v);
	fprintf(out, "mkdir=%d\n", mkdirat(dfd, "d", 0755) < 0 ? -errno : 0);
	fd = openat(dfd, "f", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	fprintf(out, "create=%d\n", fd >= 0 ? 0 : -errno);
	if (fd >= 0)
		close(fd);
	fprintf(out, "chown=%d\n", fchownat(dfd, "f", 1000, 1000, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0);
	fprintf(out, "rename=%d\n", renameat2(dfd, "f", dfd, "g", RENAME_NOREPLACE) < 0 ? -errno : 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d/g", dfd);
	fprintf(out, "xattr=%d\n", setxattr(path, "user.k", "v", 1, 0) < 0 ? -errno : 0);
	fprintf(out, "handle=%d\n", name_to_handle_at(dfd, "g", &fh.fh, &mnt, 0) < 0 ? -errno : 0);
	fprintf(out, "unlink=%d\n", unlinkat(dfd, "g", 0) < 0 ? -errno : 0);
	fprintf(out, "unshare_fs=%d\n", unshare(CLONE_FS) < 0 ? -errno : 0);
	fprintf(out, "unshare_ns=%d\n", unshare(CLONE_NEWNS) < 0 ? -errno : 0);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	fprintf(out, "inet=%d\n", fd >= 0 ? 0 : -errno);
	fprintf(out, "exec=%d\n", execl("/bin/true", "true", (char *)NULL) < 0 ? -errno : 0);
	fflush(out);
}

TEST(monitor_fs_profile)
{
	char dir[] = "/tmp/kvrun-jail-fs-XXXXXX", buf[4096], want[32];
	size_t len = 0;
	ssize_t n;
	int pfd[2], status = -1;
	pid_t pid;

	if (geteuid() != 0) {
		ok(1, "# SKIP needs root: a file server's capabilities");
		return;
	}
	ok(mkdtemp(dir) != NULL && pipe(pfd) == 0, "a directory and a pipe");
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		FILE *out = fdopen(pfd[1], "w");

		close(pfd[0]);
		report_fs(out, dir);
		_exit(0);
	}
	close(pfd[1]);
	while (len < sizeof(buf) - 1 && (n = read(pfd[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = 0;
	close(pfd[0]);
	waitpid(pid, &status, 0);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the jailed child ran to its end (0x%x)", status);
	snprintf(want, sizeof(want), "%016llx", (unsigned long long)JAIL_FS_CAPS);
	is_str(value(buf, "drop"), "0");
	is_str(value(buf, "enter"), "0");
	is_str(value(buf, "capeff"), want);
	is_str(value(buf, "mkdir"), "0");
	is_str(value(buf, "create"), "0");
	is_str(value(buf, "chown"), "0");
	is_str(value(buf, "rename"), "0");
	is_str(value(buf, "xattr"), "0");
	is_str(value(buf, "handle"), "0");
	is_str(value(buf, "unlink"), "0");
	is_str(value(buf, "unshare_fs"), "0");
	is_str(value(buf, "unshare_ns"), "-1"); /* -EPERM: only CLONE_FS */
	is_str(value(buf, "inet"), "-1");
	is_str(value(buf, "exec"), "-1");
	rm_rf(dir);
}

/* What the monitor does for `kvrun checkpoint`, under its jail: the VM's
 * snapshot and the disk's copy go into files it was given (created
 * before the jail, as the client creates them), the disk opened read-only;
 * a snapshot by path (a file of its own) stays refused. */
static void jailed_checkpoint(FILE *out, int snap_fd, const char *disk, int copy_fd, const char *path)
{
	struct vm_config cfg = {.ncpus = 1, .mem_size = 2 << 20};
	struct vm *vm = NULL;
	int in, r;

	r = vm_create(&cfg, &vm);
	if (r >= 0)
		r = vm_memslots_wait(vm);
	fprintf(out, "vm=%d\n", r);
	if (r < 0)
		return;
	memset(guest_mem_ptr(&vm->mem, 0x5000, 4096), 0x3c, 4096);
	fprintf(out, "enter=%d\n", jail_enter(JAIL_MONITOR));
	fprintf(out, "save_fd=%d\n", vm_snapshot_save_fd(vm, snap_fd, NULL, 0, NULL));
	in = open(disk, O_RDONLY | O_CLOEXEC);
	fprintf(out, "open_disk=%d\n", in >= 0 ? 0 : -errno);
	fprintf(out, "copy=%d\n", in >= 0 ? fd_copy_sparse(in, copy_fd) : -EBADF);
	fprintf(out, "save_path=%d\n", vm_snapshot_save(vm, path, NULL, 0, NULL) < 0 ? -1 : 0);
	fflush(out);
}

TEST(monitor_checkpoint_into_fds)
{
	char dir[] = "/tmp/kvrun-jail-ckpt-XXXXXX", snap[128], disk[128], copy[128], other[128], buf[4096];
	static char data[8192];
	struct vm_snapshot *s = NULL;
	struct stat st;
	int pfd[2], status = -1, snap_fd, disk_fd, copy_fd, kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	size_t len = 0;
	ssize_t n;
	pid_t pid;

	if (kvm < 0) {
		ok(1, "# SKIP /dev/kvm: %s", strerror(errno));
		return;
	}
	close(kvm);
	if (!mkdtemp(dir) || pipe(pfd) < 0) {
		ok(0, "temporary directory and pipe");
		return;
	}
	snprintf(snap, sizeof(snap), "%s/vm.snap", dir);
	snprintf(disk, sizeof(disk), "%s/disk.img", dir);
	snprintf(copy, sizeof(copy), "%s/copy.img", dir);
	snprintf(other, sizeof(other), "%s/other.snap", dir);
	snap_fd = open(snap, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	copy_fd = open(copy, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	disk_fd = open(disk, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	memset(data, 0x42, sizeof(data));
	/* Data, a hole, data, and a hole to the end. */
	ok(pwrite(disk_fd, data, sizeof(data), 0) == sizeof(data) && pwrite(disk_fd, data, 4096, 1 << 20) == 4096 &&
	       ftruncate(disk_fd, 4 << 20) == 0,
	   "disk image written");
	close(disk_fd);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		FILE *out = fdopen(pfd[1], "w");

		close(pfd[0]);
		jailed_checkpoint(out, snap_fd, disk, copy_fd, other);
		_exit(0);
	}
	close(pfd[1]);
	while (len < sizeof(buf) - 1 && (n = read(pfd[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = 0;
	close(pfd[0]);
	waitpid(pid, &status, 0);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the jailed child ran to its end (status 0x%x)", status);
	is_str(value(buf, "vm"), "0");
	is_str(value(buf, "enter"), "0");
	is_str(value(buf, "save_fd"), "0");
	is_str(value(buf, "open_disk"), "0");
	is_str(value(buf, "copy"), "0");
	is_str(value(buf, "save_path"), "-1");
	ok(access(other, F_OK) < 0, "no snapshot file of its own");

	is_int(vm_snapshot_open(snap, 0, &s), 0);
	if (s) {
		struct vm_config cfg;

		vm_snapshot_config(s, &cfg);
		ok(cfg.ncpus == 1 && cfg.mem_size == 2 << 20, "the snapshot checks out (its checksums included)");
		vm_snapshot_close(s);
	}
	ok(fstat(copy_fd, &st) == 0 && st.st_size == 4 << 20, "the copy has the disk's size");
	ok(pread(copy_fd, buf, 4096, 4096) == 4096 && memcmp(buf, data, 4096) == 0, "data copied");
	ok(pread(copy_fd, buf, 4096, 1 << 20) == 4096 && memcmp(buf, data, 4096) == 0, "data after a hole copied");
	ok(st.st_blocks * 512 < (1 << 20), "holes kept (%lld bytes allocated)", (long long)st.st_blocks * 512);
	close(snap_fd);
	close(copy_fd);
	unlink(snap);
	unlink(disk);
	unlink(copy);
	rmdir(dir);
}

TEST(switch)
{
	unsetenv("KVRUN_JAIL");
	ok(jail_enabled(), "on by default");
	setenv("KVRUN_JAIL", "0", 1);
	ok(!jail_enabled(), "KVRUN_JAIL=0 turns it off");
	setenv("KVRUN_JAIL", "off", 1);
	ok(!jail_enabled(), "KVRUN_JAIL=off turns it off");
	setenv("KVRUN_JAIL", "1", 1);
	ok(jail_enabled(), "KVRUN_JAIL=1 keeps it on");
	unsetenv("KVRUN_JAIL");
}

TAP_MAIN()
