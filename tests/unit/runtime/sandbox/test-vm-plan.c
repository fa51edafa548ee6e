/* SPDX-License-Identifier: Apache-2.0 */
/* The pieces of create that need no VM: kvrun's config file, the kernel
 * lookup, the command line, the root filesystem's mode and the root disk
 * image (the START spec built from a bundle: tests/unit/runtime/monitor). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/fileio.h"
#include "oci-spec/kvrun-config.h"
#include "runtime/host/rootfs-image.h"
#include "runtime/sandbox/vm-config.h"
#include "tap.h"

static char tmp[] = "/tmp/kvrun-vm-plan-XXXXXX";

static struct oci_spec *spec_from(const char *json)
{
	struct oci_spec *s = NULL;
	int r = oci_spec_parse(json, strlen(json), "config.json", &s);

	ok(r == 0, "spec parses: %s", r < 0 ? err_msg() : "");
	return s;
}

TEST(config_file)
{
	struct kvrun_config c;
	const char *good = "{\"kernel\": \"/k\", \"initrd\": \"/i\", \"cmdline_extra\": \"a=b\", \"memory\": \"512M\", "
			   "\"cpus\": 2}";

	is_int(kvrun_config_parse(good, strlen(good), "cfg", &c), 0);
	is_str(c.kernel, "/k");
	is_str(c.initrd, "/i");
	is_str(c.cmdline_extra, "a=b");
	ok(c.memory == 512ULL << 20, "memory with a suffix");
	is_int(c.cpus, 2);
	ok(!c.early_create, "create waits for the guest by default");
	kvrun_config_clear(&c);
	is_int(kvrun_config_parse("{\"memory\": 1048576}", 19, "cfg", &c), 0);
	ok(c.memory == 1048576, "memory in bytes");
	kvrun_config_clear(&c);
	is_int(kvrun_config_parse("{\"kernal\": \"/k\"}", 16, "cfg", &c), -EINVAL);
	is_str(err_msg(), "cfg: unknown key \"kernal\"");
	is_int(kvrun_config_parse("{\"early_create\": true}", 22, "cfg", &c), 0);
	ok(c.early_create, "early_create");
	kvrun_config_clear(&c);
	is_int(kvrun_config_parse("{\"early_create\": 1}", 19, "cfg", &c), -EINVAL);
	ok(!c.rootfs_cache_off && !c.has_rootfs_cache_size, "root disk cache: default");
	{
		const char *j = "{\"rootfs_cache\": false, \"rootfs_cache_size\": \"2G\"}";

		is_int(kvrun_config_parse(j, strlen(j), "cfg", &c), 0);
		ok(c.rootfs_cache_off, "rootfs_cache false");
		ok(c.has_rootfs_cache_size && c.rootfs_cache_size == 2ULL << 30, "rootfs_cache_size with a suffix");
		kvrun_config_clear(&c);
		j = "{\"rootfs_cache_size\": 0}";
		is_int(kvrun_config_parse(j, strlen(j), "cfg", &c), 0);
		ok(c.has_rootfs_cache_size && c.rootfs_cache_size == 0, "rootfs_cache_size 0: keep no unused image");
		kvrun_config_clear(&c);
		j = "{\"rootfs_cache_size\": -1}";
		is_int(kvrun_config_parse(j, strlen(j), "cfg", &c), -EINVAL);
		is_str(err_msg(),
		       "cfg: rootfs_cache_size: expected a non-negative number of bytes or a size such as \"512M\"");
		j = "{\"rootfs_cache\": \"yes\"}";
		is_int(kvrun_config_parse(j, strlen(j), "cfg", &c), -EINVAL);
		is_str(err_msg(), "cfg: rootfs_cache: expected true or false");
	}
	ok(c.rootfs == KVRUN_ROOTFS_UNSET, "rootfs: unset by default");
	{
		const char *j = "{\"rootfs\": \"virtiofs\"}";

		is_int(kvrun_config_parse(j, strlen(j), "cfg", &c), 0);
		ok(c.rootfs == KVRUN_ROOTFS_VIRTIOFS, "rootfs virtiofs");
		kvrun_config_clear(&c);
		j = "{\"rootfs\": \"block\"}";
		is_int(kvrun_config_parse(j, strlen(j), "cfg", &c), 0);
		ok(c.rootfs == KVRUN_ROOTFS_BLOCK, "rootfs block");
		kvrun_config_clear(&c);
		j = "{\"rootfs\": \"nfs\"}";
		is_int(kvrun_config_parse(j, strlen(j), "cfg", &c), -EINVAL);
		is_str(err_msg(), "cfg: rootfs: expected \"block\" or \"virtiofs\", not \"nfs\"");
		j = "{\"rootfs\": true}";
		is_int(kvrun_config_parse(j, strlen(j), "cfg", &c), -EINVAL);
	}
	ok(c.fs_locks == KVRUN_FS_LOCKS_UNSET, "fs_locks: unset by default");
	{
		const char *j = "{\"fs_locks\": \"guest\"}";

		is_int(kvrun_config_parse(j, strlen(j), "cfg", &c), 0);
		ok(c.fs_locks == KVRUN_FS_LOCKS_GUEST, "fs_locks guest");
		kvrun_config_clear(&c);
		j = "{\"fs_locks\": \"host\"}";
		is_int(kvrun_config_parse(j, strlen(j), "cfg", &c), 0);
		ok(c.fs_locks == KVRUN_FS_LOCKS_HOST, "fs_locks host");
		kvrun_config_clear(&c);
		j = "{\"fs_locks\": \"local\"}";
		is_int(kvrun_config_parse(j, strlen(j), "cfg", &c), -EINVAL);
		is_str(err_msg(), "cfg: fs_locks: expected \"host\" or \"guest\", not \"local\"");
		j = "{\"fs_locks\": false}";
		is_int(kvrun_config_parse(j, strlen(j), "cfg", &c), -EINVAL);
		is_str(err_msg(), "cfg: fs_locks: expected \"host\" or \"guest\"");
	}
	is_int(kvrun_config_parse("{\"cpus\": 0}", 11, "cfg", &c), -EINVAL);
	is_int(kvrun_config_parse("{\"memory\": \"lots\"}", 18, "cfg", &c), -EINVAL);
	is_int(kvrun_config_parse("[1]", 3, "cfg", &c), -EINVAL);
	is_int(kvrun_config_parse("{", 1, "cfg", &c), -EINVAL);
	ok(strstr(err_msg(), "cfg: line 1") != NULL, "syntax error has a position: %s", err_msg());
	is_int(kvrun_config_load("/nonexistent/kvrun.json", &c), -ENOENT);
}

TEST(kernel_lookup)
{
	char kernel[256], cfg[256], json[600];
	struct oci_spec *s;
	struct vm_plan p;

	snprintf(kernel, sizeof(kernel), "%s/vmlinux", tmp);
	snprintf(cfg, sizeof(cfg), "%s/config.json", tmp);
	is_int(write_file_atomic(kernel, "x", 1, 0644), 0);
	setenv("KVRUN_INIT", kernel, 1); /* any file: the cpio only stores it */
	setenv("KVRUN_CACHE_DIR", tmp, 1);
	setenv("KVRUN_CONFIG", cfg, 1);
	setenv("KVRUN_KERNEL", "/nope", 1);
	s = spec_from("{\"ociVersion\": \"1.2.0\", \"root\": {\"path\": \"rootfs\"}}");
	is_int(vm_plan_make(s, NULL, &p), -ENOENT);
	is_str(err_msg(), "kernel /nope (from $KVRUN_KERNEL): No such file or directory");
	setenv("KVRUN_KERNEL", kernel, 1);
	is_int(vm_plan_make(s, NULL, &p), 0);
	is_str(p.kernel, kernel);
	ok(p.initrd && strncmp(p.initrd, tmp, strlen(tmp)) == 0, "initramfs built in the cache: %s", p.initrd);
	ok(p.mem_size == (p.emulating_host ? VM_CONFIG_EMULATING_HOST_MEMORY : 2ULL << 30),
	   "default memory: 2 GiB (256 MiB on an emulating host)");
	is_int(p.ncpus, p.emulating_host ? 1 : vm_default_cpus());
	vm_plan_done(&p);
	oci_spec_free(s);

	/* The annotation wins over the environment; the config file's size. */
	unsetenv("KVRUN_KERNEL");
	snprintf(json, sizeof(json), "{\"memory\": \"128M\", \"kernel\": \"%s\"}", "/from-config");
	is_int(write_file_atomic(cfg, json, strlen(json), 0644), 0);
	s = spec_from("{\"ociVersion\": \"1.2.0\", \"root\": {\"path\": \"rootfs\"}}");
	is_int(vm_plan_make(s, NULL, &p), -ENOENT);
	ok(strstr(err_msg(), "kernel /from-config (from ") != NULL, "config file named: %s", err_msg());
	oci_spec_free(s);
	snprintf(json, sizeof(json),
	         "{\"ociVersion\": \"1.2.0\", \"root\": {\"path\": \"rootfs\"}, \"annotations\": "
	         "{\"io.kvrun.kernel\": \"%s\"}, \"linux\": {\"resources\": {\"memory\": {\"limit\": 536870912}, "
	         "\"cpu\": {\"quota\": 150000, \"period\": 100000}}}}",
	         kernel);
	s = spec_from(json);
	setenv("KVRUN_EMULATING_HOST", "0", 1);
	is_int(vm_plan_make(s, NULL, &p), 0);
	is_str(p.kernel, kernel);
	ok(p.mem_size == 512ULL << 20, "memory from the limit");
	is_int(p.ncpus, 2);
	ok(!p.emulating_host, "KVRUN_EMULATING_HOST=0");
	vm_plan_done(&p);
	setenv("KVRUN_EMULATING_HOST", "1", 1);
	is_int(vm_plan_make(s, NULL, &p), 0);
	is_int(p.ncpus, 1);
	ok(!p.rootfs_virtiofs, "the root filesystem is a disk image by default");
	vm_plan_done(&p);
	oci_spec_free(s);
	unsetenv("KVRUN_EMULATING_HOST");

	/* The root filesystem: the config file, then the annotation. */
	snprintf(json, sizeof(json), "{\"kernel\": \"%s\", \"rootfs\": \"virtiofs\"}", kernel);
	is_int(write_file_atomic(cfg, json, strlen(json), 0644), 0);
	s = spec_from("{\"ociVersion\": \"1.2.0\", \"root\": {\"path\": \"rootfs\"}}");
	is_int(vm_plan_make(s, NULL, &p), 0);
	ok(p.rootfs_virtiofs, "config rootfs virtiofs");
	vm_plan_done(&p);
	oci_spec_free(s);
	s = spec_from("{\"ociVersion\": \"1.2.0\", \"root\": {\"path\": \"rootfs\"}, \"annotations\": "
	              "{\"io.kvrun.rootfs\": \"block\"}}");
	is_int(vm_plan_make(s, NULL, &p), 0);
	ok(!p.rootfs_virtiofs, "the annotation wins");
	vm_plan_done(&p);
	oci_spec_free(s);
	s = spec_from("{\"ociVersion\": \"1.2.0\", \"root\": {\"path\": \"rootfs\"}, \"annotations\": "
	              "{\"io.kvrun.rootfs\": \"disk\"}}");
	is_int(vm_plan_make(s, NULL, &p), -EINVAL);
	ok(strstr(err_msg(), "annotation io.kvrun.rootfs") != NULL, "a bad annotation is named: %s", err_msg());
	oci_spec_free(s);

	/* Where the shares' locks go: host, then the config file, then the
	 * annotation; vm_plan_fs_locks() decides the same. */
	enum fs_locks locks = FS_LOCKS_GUEST;
	s = spec_from("{\"ociVersion\": \"1.2.0\", \"root\": {\"path\": \"rootfs\"}}");
	is_int(vm_plan_make(s, NULL, &p), 0);
	ok(p.fs_locks == FS_LOCKS_HOST, "locks on the host by default");
	vm_plan_done(&p);
	is_int(vm_plan_fs_locks(s, &locks), 0);
	ok(locks == FS_LOCKS_HOST, "vm_plan_fs_locks: host by default");
	snprintf(json, sizeof(json), "{\"kernel\": \"%s\", \"fs_locks\": \"guest\"}", kernel);
	is_int(write_file_atomic(cfg, json, strlen(json), 0644), 0);
	is_int(vm_plan_make(s, NULL, &p), 0);
	ok(p.fs_locks == FS_LOCKS_GUEST, "config fs_locks guest");
	vm_plan_done(&p);
	is_int(vm_plan_fs_locks(s, &locks), 0);
	ok(locks == FS_LOCKS_GUEST, "vm_plan_fs_locks: the config file's");
	oci_spec_free(s);
	s = spec_from("{\"ociVersion\": \"1.2.0\", \"root\": {\"path\": \"rootfs\"}, \"annotations\": "
	              "{\"io.kvrun.fs.locks\": \"host\"}}");
	is_int(vm_plan_make(s, NULL, &p), 0);
	ok(p.fs_locks == FS_LOCKS_HOST, "the annotation wins over the config file");
	vm_plan_done(&p);
	is_int(vm_plan_fs_locks(s, &locks), 0);
	ok(locks == FS_LOCKS_HOST, "vm_plan_fs_locks: the annotation's");
	oci_spec_free(s);
	s = spec_from("{\"ociVersion\": \"1.2.0\", \"root\": {\"path\": \"rootfs\"}, \"annotations\": "
	              "{\"io.kvrun.fs.locks\": \"none\"}}");
	is_int(vm_plan_make(s, NULL, &p), -EINVAL);
	is_str(err_msg(), "annotation io.kvrun.fs.locks: expected \"host\" or \"guest\", not \"none\"");
	is_int(vm_plan_fs_locks(s, &locks), -EINVAL);
	is_str(err_msg(), "annotation io.kvrun.fs.locks: expected \"host\" or \"guest\", not \"none\"");
	oci_spec_free(s);
	snprintf(json, sizeof(json), "{\"kernel\": \"%s\", \"fs_locks\": \"both\"}", kernel);
	is_int(write_file_atomic(cfg, json, strlen(json), 0644), 0);
	s = spec_from("{\"ociVersion\": \"1.2.0\", \"root\": {\"path\": \"rootfs\"}}");
	is_int(vm_plan_fs_locks(s, &locks), -EINVAL);
	ok(strstr(err_msg(), "config.json: fs_locks: expected \"host\" or \"guest\", not \"both\"") != NULL,
	   "a bad config value is named with its file: %s", err_msg());
	oci_spec_free(s);
	unlink(cfg);
}

static struct oci_spec *res_spec(const char *resources)
{
	char json[1024];

	snprintf(json, sizeof(json),
	         "{\"ociVersion\": \"1.2.0\", \"root\": {\"path\": \"rootfs\"}, \"linux\": {\"resources\": %s}}",
	         resources);
	return spec_from(json);
}

static unsigned int cpus_for(const char *resources, unsigned int dflt)
{
	struct oci_spec *s = res_spec(resources);
	unsigned int n = 0;
	int r = s ? vm_plan_cpus(s->linux_spec->resources, dflt, &n) : -1;

	oci_spec_free(s);
	return r < 0 ? 0 : n;
}

TEST(vcpus_from_resources)
{
	struct oci_spec *s;
	unsigned int n = 0;

	is_int(vm_cpuset_count("0"), 1);
	is_int(vm_cpuset_count("0-3"), 4);
	is_int(vm_cpuset_count("0-3,6,8-9"), 7);
	is_int(vm_cpuset_count(""), -EINVAL);
	is_int(vm_cpuset_count("3-1"), -EINVAL);
	is_int(vm_cpuset_count("1,"), -EINVAL);
	is_int(vm_cpuset_count("a"), -EINVAL);
	is_int(vm_cpuset_count("1-"), -EINVAL);
	is_int(vm_plan_cpus(NULL, 0, &n), 0);
	is_int(n, vm_default_cpus());
	ok(vm_default_cpus() == (sysconf(_SC_NPROCESSORS_ONLN) < 2 ? 1 : 2), "default: 2, or the host's one CPU");
	is_int(vm_plan_cpus(NULL, 3, &n), 0);
	is_int(n, 3);
	is_int(cpus_for("{\"cpu\": {\"quota\": 100000, \"period\": 100000}}", 0), 1);
	is_int(cpus_for("{\"cpu\": {\"quota\": 150000, \"period\": 100000}}", 0), 2);
	is_int(cpus_for("{\"cpu\": {\"quota\": 400000, \"period\": 100000}}", 2), 4);
	is_int(cpus_for("{\"cpu\": {\"quota\": 50000, \"period\": 100000}}", 4), 1);
	/* runc's default period when only a quota is given */
	is_int(cpus_for("{\"cpu\": {\"quota\": 250000}}", 0), 3);
	is_int(cpus_for("{\"cpu\": {\"quota\": -1, \"period\": 100000}}", 2), 2);
	is_int(cpus_for("{\"cpu\": {\"quota\": -1, \"period\": 100000}}", 0), vm_default_cpus());
	is_int(cpus_for("{\"cpu\": {\"cpus\": \"0-3\"}}", 0), 4);
	is_int(cpus_for("{\"cpu\": {\"cpus\": \"2,5\"}}", 8), 2);
	/* both: the quota cannot use more CPUs than the set has, nor more than it pays for */
	is_int(cpus_for("{\"cpu\": {\"quota\": 400000, \"period\": 100000, \"cpus\": \"0-1\"}}", 0), 2);
	is_int(cpus_for("{\"cpu\": {\"quota\": 100000, \"period\": 100000, \"cpus\": \"0-7\"}}", 0), 1);
	is_int(cpus_for("{\"cpu\": {\"quota\": 10000000, \"period\": 100000}}", 0), VM_CONFIG_MAX_CPUS);
	is_int(cpus_for("{\"cpu\": {\"cpus\": \"0-127\"}}", 0), VM_CONFIG_MAX_CPUS);
	s = res_spec("{\"cpu\": {\"cpus\": \"0-x\"}}");
	is_int(vm_plan_cpus(s->linux_spec->resources, 0, &n), -EINVAL);
	ok(strstr(err_msg(), "invalid cpuset \"0-x\"") != NULL, "a bad cpuset is named: %s", err_msg());
	oci_spec_free(s);
}

TEST(memory_from_resources)
{
	struct oci_spec *s;

	ok(vm_plan_memory(NULL, 0) == VM_CONFIG_DEFAULT_MEMORY && VM_CONFIG_DEFAULT_MEMORY == 2ULL << 30,
	   "no limit, no config: 2 GiB");
	ok(vm_plan_memory(NULL, 512ULL << 20) == 512ULL << 20, "no limit: the config's memory");
	s = res_spec("{\"memory\": {\"limit\": 1073741824}}");
	ok(vm_plan_memory(s->linux_spec->resources, 512ULL << 20) == 1ULL << 30, "the limit wins over the config");
	oci_spec_free(s);
	s = res_spec("{\"memory\": {\"limit\": 134742016}}");
	ok(vm_plan_memory(s->linux_spec->resources, 0) == 128ULL << 20, "rounded down to MiB");
	oci_spec_free(s);
	s = res_spec("{\"memory\": {\"limit\": 16777216}}");
	ok(vm_plan_memory(s->linux_spec->resources, 0) == VM_CONFIG_MIN_MEMORY, "at least 64 MiB");
	oci_spec_free(s);
	s = res_spec("{\"memory\": {\"limit\": -1}}");
	ok(vm_plan_memory(s->linux_spec->resources, 0) == VM_CONFIG_DEFAULT_MEMORY, "-1 (unlimited): the default");
	oci_spec_free(s);
}

TEST(cmdline)
{
	struct vm_plan p = {.cmdline_extra = (char *)"loglevel=4"};
	char *devs[] = {(char *)"virtio_mmio.device=4K@0xd0001000:5", NULL};
	char *c = NULL;

	is_int(vm_plan_cmdline(&p, devs, &c), 0);
	is_str(c, "console=ttyS0 reboot=k panic=-1 quiet page_reporting.page_reporting_order=9 "
	          "virtio_mmio.device=4K@0xd0001000:5 loglevel=4");
	free(c);
	p.emulating_host = true;
	is_int(vm_plan_cmdline(&p, devs, &c), 0);
	ok(strstr(c, " noxsave ") && strstr(c, " pvmhost=1 GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX,") &&
	       strstr(c, ",-FMA4 virtio_mmio"),
	   "emulating-host quirks: %s", c);
	free(c);
}

TEST(rootfs_image)
{
	char dir[256], file[300], img[256], cmd[600];
	struct rootfs_scan scan;

	snprintf(dir, sizeof(dir), "%s/rootfs", tmp);
	snprintf(file, sizeof(file), "%s/rootfs/etc/motd", tmp);
	snprintf(img, sizeof(img), "%s/rootfs.img", tmp);
	is_int(mkdir_p(dir, 0755), 0);
	is_int(mkdir_p(file, 0755), 0);
	rmdir(file);
	is_int(write_file_atomic(file, "hello\n", 6, 0644), 0);
	is_int(rootfs_scan(dir, false, &scan), 0);
	is_int((int)scan.inodes, 3);
	ok(scan.bytes >= 3 * 4096, "at least a block per entry");
	ok(!scan.key, "no key unless asked");
	rootfs_scan_done(&scan);
	if (system("command -v mke2fs >/dev/null 2>&1 || test -x /sbin/mke2fs") != 0) {
		ok(1, "# SKIP mke2fs not installed");
		return;
	}
	is_int(rootfs_image_build(dir, img, NULL, 0), 0);
	snprintf(cmd, sizeof(cmd), "debugfs -R 'cat /etc/motd' %s 2>/dev/null | grep -qx hello", img);
	is_int(system(cmd), 0);
	is_int(rootfs_image_build(dir, img, NULL, 0), -EEXIST);
	unlink(img);
	is_int(rootfs_image_build("/nonexistent/rootfs", img, NULL, 0), -ENOENT);
	ok(access(img, F_OK) < 0, "no image left after a failure");
}

/* Whether the image at img has path as a directory ('d') or regular file
 * ('f'), by debugfs's stat. */
static bool image_has(const char *img, const char *path, char kind)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "debugfs -R 'stat \"%s\"' %s 2>/dev/null | grep -q 'Type: %s'", path, img,
	         kind == 'd' ? "directory" : "regular");
	return system(cmd) == 0;
}

TEST(rootfs_mount_points)
{
	const struct rootfs_mount_point pts[] = {
	    {"/proc", false},
	    {"/sys", false},
	    {"/dev/pts", false},
	    {"/etc/resolv.conf", true},
	    {"/private/hosts", true},
	    {"/var/run/secrets", false},
	    {"/etc/resolv.conf", true},
	    {"/a/../b/./c", false},
	    {"/b/c/d", true},
	    {"/etc/motd/x", false},
	    {"/up/../../../top", false},
	    {"relative", false},
	};
	char dir[256], img[256], path[512], cmd[600];
	_cleanup_free_ char *script = NULL;
	size_t len;
	struct stat st;

	snprintf(dir, sizeof(dir), "%s/mp-rootfs", tmp);
	snprintf(img, sizeof(img), "%s/mp.img", tmp);
	snprintf(path, sizeof(path), "%s/etc", dir);
	is_int(mkdir_p(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/proc", dir);
	is_int(mkdir_p(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/etc/motd", dir);
	is_int(write_file_atomic(path, "hi\n", 3, 0644), 0);
	snprintf(path, sizeof(path), "%s/private", dir);
	is_int(symlink("etc", path), 0);
	snprintf(path, sizeof(path), "%s/var", dir);
	is_int(mkdir_p(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/var/run", dir);
	is_int(symlink("/run", path), 0); /* dangling: /run is missing */

	is_int(rootfs_mount_point_script(dir, pts, ARRAY_SIZE(pts), &script, &len), 0);
	ok(script && !strstr(script, "\"/proc\""), "an existing mount point is left alone");
	ok(script && strstr(script, "mkdir \"/run\"\nmkdir \"/run/secrets\"\n"),
	   "a path through a dangling symlink is created where it points");
	ok(script && strstr(script, "write /dev/null \"hosts\""), "a file through a symlink: in its target");
	ok(script && strstr(script, "mkdir \"/b\"\nmkdir \"/b/c\"\ncd \"/b/c\"\nwrite /dev/null \"d\""),
	   "\"..\" and \".\" resolved; a made directory is not made twice");
	ok(script && !strstr(script, "motd/x") && !strstr(script, "relative"),
	   "blocked by a file, or relative: left to the guest");
	ok(script && strstr(script, "mkdir \"/top\""), "\"..\" stops at the root");
	if (system("command -v debugfs >/dev/null 2>&1 || test -x /sbin/debugfs") != 0) {
		ok(1, "# SKIP debugfs not installed");
		return;
	}
	is_int(rootfs_image_build(dir, img, pts, ARRAY_SIZE(pts)), 0);
	ok(image_has(img, "/sys", 'd'), "image: /sys");
	ok(image_has(img, "/dev/pts", 'd'), "image: /dev/pts and its parent");
	ok(image_has(img, "/etc/resolv.conf", 'f'), "image: an empty file for a file bind mount");
	ok(image_has(img, "/etc/hosts", 'f'), "image: a file point through a symlink");
	ok(image_has(img, "/run/secrets", 'd'), "image: through a dangling symlink");
	ok(image_has(img, "/b/c/d", 'f'), "image: \"..\" resolved");
	ok(image_has(img, "/etc/motd", 'f'), "image: the rootfs's own files");
	snprintf(cmd, sizeof(cmd), "debugfs -R 'stat /etc/resolv.conf' %s 2>/dev/null | grep -q 'Mode:  0755'", img);
	is_int(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "e2fsck -fn %s >/dev/null 2>&1", img);
	is_int(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/sys", dir);
	ok(lstat(path, &st) < 0, "the bundle's directory is not touched");
	snprintf(path, sizeof(path), "%s/etc/resolv.conf", dir);
	ok(lstat(path, &st) < 0, "the bundle's directory is not touched (files)");
	unlink(img);
}

TEST(cleanup)
{
	is_int(rm_rf(tmp), 0);
}

static __attribute__((constructor)) void setup(void)
{
	if (!mkdtemp(tmp))
		abort();
}

TAP_MAIN()
