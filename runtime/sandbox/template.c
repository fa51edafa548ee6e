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

#include "common/clock.h"
#include "common/cleanup.h"
#include "common/error.h"
#include "common/hash.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/progress.h"
#include "common/protocol.h"
#include "config.h"
#include "runtime/sandbox/guest-channel.h"
#include "runtime/sandbox/sandbox.h"
#include "runtime/sandbox/template.h"
#include "vmm/snapshot.h"

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
	             "cmdline %s\nacpi %d\nvcpus %u\nmemory %" PRIu64 "\nnics %u\nshares %u\n",
	             KVRUN_VERSION, KVRUN_COMMIT, p->kernel, (unsigned long long)st.st_dev,
	             (unsigned long long)st.st_ino, (long long)st.st_size, (long long)st.st_mtim.tv_sec,
	             st.st_mtim.tv_nsec, isize, icrc, cmdline, p->use_acpi, p->ncpus, p->mem_size, nics,
	             SANDBOX_TEMPLATE_SHARES) < 0)
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

/* HELLO both ways, then a STATS round trip: its answer comes from the loop
 * that waits for START, where the template is taken. */
static int reach_ready(struct guest_channel *ch)
{
	struct proto_msg m = {.type = PROTO_MSG_STATS}, ans = {0};
	int r;

	r = guest_channel_open_control(ch, guest_boot_timeout_ms(), "the guest to boot");
	if (r >= 0)
		r = guest_channel_request(ch, &m, GUEST_REPLY_TIMEOUT_MS, &ans);
	proto_msg_free(&ans);
	return r;
}

static int boot_and_save(const struct vm_plan *p, unsigned int nics, const char *work, const char *console,
                         const char *snap)
{
	struct guest_channel ch;
	struct progress *pg = NULL;
	int64_t t0 = clock_now_ms();
	int r;

	r = guest_channel_init(&ch, work, "v");
	if (r >= 0)
		r = guest_channel_listen(&ch, 1);
	if (r >= 0)
		pg = progress_start(p->emulating_host
		                        ? "template build: booting the guest (its kernel is emulated here: "
		                          "minutes)"
		                        : "template build: booting the guest",
		                    0, NULL, NULL);
	if (r >= 0)
		r = sandbox_start(&(struct sandbox_opts){.plan = p,
		                                         .disks = {{.id = "rootfs"}},
		                                         .ndisks = 1,
		                                         .vsock_path = ch.base,
		                                         .console_path = console,
		                                         .template_nics = nics,
		                                         .template_shares = SANDBOX_TEMPLATE_SHARES},
		                  &ch.sb);
	if (r >= 0)
		r = reach_ready(&ch);
	progress_stop(pg);
	if (r >= 0) {
		log_debug("template VM ready after %lld ms", (long long)(clock_now_ms() - t0));
		pg = progress_start("template build: saving the VM", 0, NULL, NULL);
		r = sandbox_save(ch.sb, snap, NULL);
		progress_stop(pg);
	}
	sandbox_free(ch.sb, NULL);
	guest_channel_close(&ch);
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
	char id[TEMPLATE_ID_LEN + 1], cpus[16], mem[32], nics[16], shares[16], kernel[256];
	struct stat st = {0};
	size_t len;

	snprintf(id, sizeof(id), "%.*s", TEMPLATE_ID_LEN, name);
	if (asprintf(&path, "%s/%s", dir, name) < 0 || asprintf(&snap, "%s/%s.snap", dir, id) < 0)
		return;
	if (read_file_all(path, KEY_MAX, &text, &len) < 0 || stat(snap, &st) < 0)
		return;
	fprintf(f, "%-16s %5s %8llu %4s %6s %10llu  %s\n", id, key_field(text, "vcpus", cpus, sizeof(cpus)),
	        strtoull(key_field(text, "memory", mem, sizeof(mem)), NULL, 10) >> 20,
	        key_field(text, "nics", nics, sizeof(nics)), key_field(text, "shares", shares, sizeof(shares)),
	        (unsigned long long)st.st_blocks * 512 >> 10, key_field(text, "kernel", kernel, sizeof(kernel)));
}

int template_list(const char *dir, FILE *f)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *de;

	fprintf(f, "%-16s %5s %8s %4s %6s %10s  %s\n", "ID", "VCPUS", "MEM(MiB)", "NICS", "SHARES", "DISK(KiB)",
	        "KERNEL");
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

/* ---- launching ---------------------------------------------------------- */

int template_lookup(const struct sandbox_opts *o, char **ret_path)
{
	unsigned int nics = o->net ? o->net->cfg.nr_ifaces : 0;
	int r = template_find(o->plan, nics, ret_path);

	if (r < 0) {
		log_warn("looking for a template: %s", err_msg());
		err_clear();
		r = 0;
	}
	if (r == 1 && o->nshares > SANDBOX_TEMPLATE_SHARES) {
		log_info("VM: cold boot (%u shared directories, a template has %d slots for them)", o->nshares,
		         SANDBOX_TEMPLATE_SHARES);
		free(*ret_path);
		*ret_path = NULL;
		return 0;
	}
	if (r == 0)
		log_info("VM: cold boot (%s)", o->plan->use_templates ? "no template" : "templates off");
	return r;
}

int template_launch(const struct sandbox_opts *o, const char *path, struct sandbox **ret)
{
	struct sandbox_opts ro = *o;
	bool fatal = false;
	int r;

	if (!path)
		return sandbox_start(o, ret);
	log_info("VM: restoring template %s", path);
	r = sandbox_restore(&ro, path, SNAPSHOT_OPEN_TRUST_MEMORY, true, &fatal, ret);
	if (r >= 0)
		return r;
	/* A damaged template file, or a failure that is the container's
	 * (its TAPs), is an error the user must see. */
	if (fatal)
		return err_prefix(r, "template %s", path);
	/* A sound file whose state this host's KVM refused (seen: now and
	 * then an MSR value on nested hosts) costs a boot, not the container. */
	log_warn("template %s could not be restored (%s): cold boot instead", path, err_msg());
	err_clear();
	log_info("VM: cold boot (template refused)");
	return sandbox_start(o, ret);
}
