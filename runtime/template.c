/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/hash.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/protocol.h"
#include "config.h"
#include "runtime/sandbox.h"
#include "runtime/template.h"

#define BUILD_TIMEOUT_S_DEFAULT 600
#define KEY_MAX 8192

static int initrd_digest(const char *path, uint64_t *ret_size, uint32_t *ret_crc)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	static uint8_t buf[1 << 16];
	uLong crc = crc32(0, Z_NULL, 0);
	uint64_t size = 0;
	ssize_t n;

	if (fd < 0)
		return err_setsys(-errno, "open initrd %s", path);
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		crc = crc32(crc, buf, (uInt)n);
		size += (uint64_t)n;
	}
	if (n < 0)
		return err_setsys(-errno, "read initrd %s", path);
	*ret_size = size;
	*ret_crc = (uint32_t)crc;
	return 0;
}

int template_key(const struct vm_plan *p, unsigned int nics, char **ret_text, char id[TEMPLATE_ID_LEN + 1])
{
	_cleanup_free_ char *cmdline = NULL;
	struct stat st;
	uint64_t isize = 0;
	uint32_t icrc = 0;
	int r;

	if (stat(p->kernel, &st) < 0)
		return err_setsys(-errno, "kernel %s", p->kernel);
	r = initrd_digest(p->initrd, &isize, &icrc);
	if (r < 0)
		return r;
	/* The devices' fragments are fixed by the build, which is in the key. */
	r = vm_plan_cmdline(p, NULL, &cmdline);
	if (r < 0)
		return r;
	if (asprintf(ret_text,
	             "build kvrun %s %s\nkernel %s %llu %llu %lld %lld.%09ld\ninitrd %" PRIu64 " %08x\n"
	             "cmdline %s\nacpi %d\nvcpus %u\nmemory %" PRIu64 "\nnics %u\n",
	             KVRUN_VERSION, KVRUN_COMMIT, p->kernel, (unsigned long long)st.st_dev,
	             (unsigned long long)st.st_ino, (long long)st.st_size, (long long)st.st_mtim.tv_sec,
	             st.st_mtim.tv_nsec, isize, icrc, cmdline, p->use_acpi, p->ncpus, p->mem_size, nics) < 0)
		return -ENOMEM;
	snprintf(id, TEMPLATE_ID_LEN + 1, "%016" PRIx64, fnv1a64(*ret_text, strlen(*ret_text)));
	return 0;
}

static int paths(const char *dir, const char *id, char **ret_snap, char **ret_key)
{
	if (asprintf(ret_snap, "%s/%s.snap", dir, id) < 0)
		return -ENOMEM;
	if (asprintf(ret_key, "%s/%s.key", dir, id) < 0) {
		free(*ret_snap);
		return -ENOMEM;
	}
	return 0;
}

int template_find(const struct vm_plan *p, unsigned int nics, char **ret_path)
{
	_cleanup_free_ char *text = NULL, *snap = NULL, *key = NULL, *saved = NULL;
	char id[TEMPLATE_ID_LEN + 1];
	size_t len;
	int r;

	*ret_path = NULL;
	if (!p->use_templates || !p->template_dir)
		return 0;
	r = template_key(p, nics, &text, id);
	if (r < 0)
		return r;
	r = paths(p->template_dir, id, &snap, &key);
	if (r < 0)
		return r;
	if (read_file_all(key, KEY_MAX, &saved, &len) < 0 || strcmp(saved, text) != 0 || access(snap, R_OK) < 0) {
		log_debug("no template %s in %s", id, p->template_dir);
		return 0;
	}
	*ret_path = TAKE_PTR(snap);
	return 1;
}

/* ---- building ----------------------------------------------------------- */

struct build {
	struct sandbox *sb;
	int listen_fd, ctl;
	int64_t deadline_ms;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Until fd is readable; the VM ending or the deadline is an error. */
static int wait_for(struct build *b, int fd, const char *what)
{
	struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = sandbox_done_fd(b->sb), .events = POLLIN}};

	for (;;) {
		int64_t left = b->deadline_ms - now_ms();
		int n;

		if (left <= 0)
			return err_set(-ETIMEDOUT, "timed out waiting for %s", what);
		n = poll(p, 2, (int)left);
		if (n < 0 && errno != EINTR)
			return err_setsys(-errno, "poll");
		if (n > 0 && p[0].revents)
			return 0;
		if (n > 0 && p[1].revents)
			return err_set(-ECONNRESET, "the VM ended (%s) while waiting for %s",
			               vm_exit_reason_name(b->sb->vm->result.reason), what);
	}
}

static int recv_type(struct build *b, uint16_t type, struct proto_msg *m)
{
	int r = wait_for(b, b->ctl, "guest-init");

	/* The whole frame by the build's deadline, however the guest sends it. */
	if (r >= 0)
		r = proto_recv_timeout(b->ctl, (int)(b->deadline_ms - now_ms()), m);
	if (r < 0)
		return err_prefix(r, "reading from guest-init");
	if (m->type != type) {
		proto_msg_free(m);
		return err_set(-EPROTO, "guest-init sent %s, expected %s", proto_type_name(m->type),
		               proto_type_name(type));
	}
	return 0;
}

/* HELLO both ways, then a STATS round trip: its answer comes from the loop
 * that waits for START, where the template is taken. */
static int reach_ready(struct build *b)
{
	struct proto_msg m = {0};
	int r;

	r = wait_for(b, b->listen_fd, "the guest to boot");
	if (r < 0)
		return r;
	b->ctl = accept4(b->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (b->ctl < 0)
		return err_setsys(-errno, "accept the guest's control stream");
	r = recv_type(b, PROTO_MSG_HELLO, &m);
	if (r < 0)
		return r;
	proto_msg_free(&m);
	m = (struct proto_msg){.type = PROTO_MSG_HELLO};
	m.u.hello = (struct proto_hello){KVRUN_PROTO_VERSION, KVRUN_PROTO_VERSION, (char *)"kvrun"};
	r = proto_send_timeout(b->ctl, &m, (int)(b->deadline_ms - now_ms()));
	if (r >= 0) {
		m = (struct proto_msg){.type = PROTO_MSG_STATS, .id = 1};
		r = proto_send_timeout(b->ctl, &m, (int)(b->deadline_ms - now_ms()));
	}
	if (r < 0)
		return err_setsys(r, "writing to guest-init");
	r = recv_type(b, PROTO_MSG_STATS, &m);
	proto_msg_free(&m);
	return r;
}

static int listen_ctl(const char *vsock_path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s_%u", vsock_path, KVRUN_PROTO_CONTROL_PORT) >=
	    sizeof(sa.sun_path))
		return err_set(-ENAMETOOLONG, "socket path %s too long", vsock_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return err_setsys(-errno, "socket");
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 1) < 0) {
		int r = err_setsys(-errno, "listen on %s", sa.sun_path);

		close(fd);
		return r;
	}
	return fd;
}

static int build_timeout_ms(void)
{
	const char *s = getenv("KVRUN_BOOT_TIMEOUT");
	long v = s ? strtol(s, NULL, 10) : 0;

	return (int)((v > 0 && v < 86400 ? v : BUILD_TIMEOUT_S_DEFAULT) * 1000);
}

static int boot_and_save(const struct vm_plan *p, unsigned int nics, const char *work, const char *console,
                         const char *snap)
{
	_cleanup_free_ char *vsock = NULL;
	struct build b = {.listen_fd = -1, .ctl = -1, .deadline_ms = now_ms() + build_timeout_ms()};
	int64_t t0 = now_ms();
	int r;

	if (asprintf(&vsock, "%s/v", work) < 0)
		return -ENOMEM;
	b.listen_fd = listen_ctl(vsock);
	if (b.listen_fd < 0)
		return b.listen_fd;
	r = sandbox_start(
	    &(struct sandbox_opts){.plan = p, .vsock_path = vsock, .console_path = console, .template_nics = nics},
	    &b.sb);
	if (r >= 0)
		r = reach_ready(&b);
	if (r >= 0) {
		log_debug("template VM ready after %lld ms", (long long)(now_ms() - t0));
		r = sandbox_save(b.sb, snap);
	}
	sandbox_free(b.sb, NULL);
	if (b.ctl >= 0)
		close(b.ctl);
	close(b.listen_fd);
	return r;
}

int template_build(const struct vm_plan *p, unsigned int nics, const char *console, char **ret_path)
{
	_cleanup_free_ char *text = NULL, *snap = NULL, *key = NULL, *work = NULL;
	char id[TEMPLATE_ID_LEN + 1];
	int r;

	if (nics > NET_CONFIG_MAX_IFACES)
		return err_set(-EINVAL, "%u network interfaces (at most %u)", nics, NET_CONFIG_MAX_IFACES);
	r = template_key(p, nics, &text, id);
	if (r < 0)
		return r;
	r = mkdir_p(p->template_dir, 0700);
	if (r < 0)
		return err_setsys(r, "create %s", p->template_dir);
	r = paths(p->template_dir, id, &snap, &key);
	if (r < 0)
		return r;
	if (asprintf(&work, "%s/.build-XXXXXX", p->template_dir) < 0)
		return -ENOMEM;
	if (!mkdtemp(work))
		return err_setsys(-errno, "create a directory in %s", p->template_dir);
	r = boot_and_save(p, nics, work, console, snap);
	rm_rf(work);
	if (r < 0)
		return err_prefix(r, "template %s", id);
	r = write_file_atomic(key, text, strlen(text), 0600);
	if (r < 0) {
		unlink(snap);
		return err_setsys(r, "write %s", key);
	}
	if (ret_path)
		*ret_path = TAKE_PTR(snap);
	return 0;
}

/* ---- listing ------------------------------------------------------------ */

static const char *key_field(const char *text, const char *name, char *buf, size_t size)
{
	size_t n = strlen(name);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, name, n) == 0 && l[n] == ' ') {
			snprintf(buf, size, "%.*s", (int)strcspn(l + n + 1, " \n"), l + n + 1);
			return buf;
		}
	}
	return "?";
}

static void list_one(const char *dir, const char *name, FILE *f)
{
	_cleanup_free_ char *path = NULL, *text = NULL, *snap = NULL;
	char id[TEMPLATE_ID_LEN + 1], cpus[16], mem[32], nics[16], kernel[256];
	struct stat st = {0};
	size_t len;

	snprintf(id, sizeof(id), "%.*s", TEMPLATE_ID_LEN, name);
	if (asprintf(&path, "%s/%s", dir, name) < 0 || asprintf(&snap, "%s/%s.snap", dir, id) < 0)
		return;
	if (read_file_all(path, KEY_MAX, &text, &len) < 0 || stat(snap, &st) < 0)
		return;
	fprintf(f, "%-16s %5s %8llu %4s %10llu  %s\n", id, key_field(text, "vcpus", cpus, sizeof(cpus)),
	        strtoull(key_field(text, "memory", mem, sizeof(mem)), NULL, 10) >> 20,
	        key_field(text, "nics", nics, sizeof(nics)), (unsigned long long)st.st_blocks * 512 >> 10,
	        key_field(text, "kernel", kernel, sizeof(kernel)));
}

int template_list(const char *dir, FILE *f)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *de;

	fprintf(f, "%-16s %5s %8s %4s %10s  %s\n", "ID", "VCPUS", "MEM(MiB)", "NICS", "DISK(KiB)", "KERNEL");
	if (!d)
		return errno == ENOENT ? 0 : err_setsys(-errno, "open %s", dir);
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);

		if (n == TEMPLATE_ID_LEN + 4 && strcmp(de->d_name + TEMPLATE_ID_LEN, ".key") == 0)
			list_one(dir, de->d_name, f);
	}
	return 0;
}

int template_remove(const char *dir, const char *id)
{
	_cleanup_free_ char *snap = NULL, *key = NULL;
	int r;

	if (strlen(id) != TEMPLATE_ID_LEN || strspn(id, "0123456789abcdef") != TEMPLATE_ID_LEN)
		return err_set(-EINVAL, "'%s' is not a template id", id);
	r = paths(dir, id, &snap, &key);
	if (r < 0)
		return r;
	/* The key first: without it the snapshot is never used. */
	if (unlink(key) < 0)
		return err_setsys(-errno, "template %s", id);
	if (unlink(snap) < 0 && errno != ENOENT)
		return err_setsys(-errno, "remove %s", snap);
	return 0;
}
