/* SPDX-License-Identifier: Apache-2.0 */
/* Reading a kernel's release from its image (bzImage setup header, ELF
 * banner), finding its module tree, and what vm_plan_make() decides from
 * them: which module tree, whether the devices are described by ACPI, and
 * which source (annotation, --kernel, $KVRUN_KERNEL, config file) wins. */
#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "oci-spec/kvrun-config.h"
#include "runtime/host/kernel-info.h"
#include "runtime/sandbox/vm-config.h"
#include "tap.h"

static char tmp[] = "/tmp/kvrun-kernel-info-XXXXXX";

/* A bzImage-shaped buffer: boot signature, "HdrS", protocol 2.15 and a
 * kernel_version pointer to str at 0x200 + off. */
static size_t fake_bzimage(uint8_t *b, size_t size, uint16_t off, const char *str)
{
	memset(b, 0, size);
	b[0x1fe] = 0x55;
	b[0x1ff] = 0xaa;
	memcpy(b + 0x202, "HdrS", 4);
	b[0x206] = 0x0f;
	b[0x207] = 0x02;
	b[0x20e] = (uint8_t)off;
	b[0x20f] = (uint8_t)(off >> 8);
	if (str)
		memcpy(b + 0x200 + off, str, strlen(str) + 1);
	return size;
}

TEST(bzimage_release)
{
	static uint8_t b[0x1000];
	char *v = NULL;

	fake_bzimage(b, sizeof(b), 0x400, "6.1.0-57-cloud-amd64 (debian-kernel@lists.debian.org) #1 SMP");
	is_int(kernel_version_from_image(b, sizeof(b), &v), 0);
	is_str(v, "6.1.0-57-cloud-amd64");
	free(v);
	/* The field points outside the file, or at nothing printable. */
	fake_bzimage(b, sizeof(b), 0xf00, NULL);
	is_int(kernel_version_from_image(b, 0x1000, &v), -ENOENT);
	fake_bzimage(b, sizeof(b), 0x400, "");
	is_int(kernel_version_from_image(b, sizeof(b), &v), -ENOENT);
	fake_bzimage(b, sizeof(b), 0, NULL);
	is_int(kernel_version_from_image(b, sizeof(b), &v), -ENOENT);
	/* The release becomes a path component: no "/", ".", "..". */
	fake_bzimage(b, sizeof(b), 0x400, "../../etc (x)");
	is_int(kernel_version_from_image(b, sizeof(b), &v), -ENOENT);
	fake_bzimage(b, sizeof(b), 0x400, ".. (x)");
	is_int(kernel_version_from_image(b, sizeof(b), &v), -ENOENT);
	/* A release that runs to the end of the file is not trusted. */
	fake_bzimage(b, sizeof(b), 0x1000 - 0x200 - 4, NULL);
	memcpy(b + 0x1000 - 4, "6.1x", 4);
	is_int(kernel_version_from_image(b, sizeof(b), &v), 0);
	is_str(v, "6.1x");
	free(v);
}

/* An ELF64 vmlinux shape: an earlier "Linux version" outside .rodata,
 * the banner in .rodata. */
TEST(elf_rodata_release)
{
	static uint8_t img[4096];
	Elf64_Ehdr eh = {.e_shoff = 0x400, .e_shentsize = sizeof(Elf64_Shdr), .e_shnum = 3, .e_shstrndx = 2};
	Elf64_Shdr sh[3] = {
	    {0},
	    {.sh_name = 7, .sh_type = SHT_PROGBITS, .sh_offset = 0x200, .sh_size = 0x80},
	    {.sh_name = 15, .sh_type = SHT_STRTAB, .sh_offset = 0x300, .sh_size = 0x20},
	};
	char *v = NULL;

	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	memcpy(img, &eh, sizeof(eh));
	memcpy(img + 0x100, "Linux version 1.0.0 (elsewhere)", 31);
	memcpy(img + 0x200, "Linux version 6.12.99 (root@b) #1", 33);
	memcpy(img + 0x300, "\0.text\0.rodata\0.shstrtab", 24);
	memcpy(img + 0x400, sh, sizeof(sh));
	is_int(kernel_version_from_image(img, sizeof(img), &v), 0);
	is_str(v, "6.12.99");
	free(v);
	v = NULL;
	/* A section table past the end: the whole file is scanned. */
	eh.e_shoff = sizeof(img) - 8;
	memcpy(img, &eh, sizeof(eh));
	is_int(kernel_version_from_image(img, sizeof(img), &v), 0);
	is_str(v, "1.0.0");
	free(v);
}

TEST(elf_banner_release)
{
	const char img[] = "\x7f"
			   "ELF....Linux version %s (%s)\n\0....Linux version 6.12.58 (root@build) (gcc) #1 SMP\0";
	char *v = NULL;

	is_int(kernel_version_from_image(img, sizeof(img), &v), 0);
	is_str(v, "6.12.58");
	free(v);
	is_int(kernel_version_from_image("\x7f"
	                                 "ELF no banner",
	                                 13, &v),
	       -ENOENT);
	is_int(kernel_version_read("/nonexistent/vmlinux", &v), -ENOENT);
	ok(strstr(err_msg(), "kernel /nonexistent/vmlinux") != NULL, "message names the file: %s", err_msg());
}

TEST(module_dir)
{
	char kernel[300], moddir[300], cfg[300], *d = NULL;

	snprintf(kernel, sizeof(kernel), "%s/root/boot/vmlinuz-9.9.9-test", tmp);
	snprintf(moddir, sizeof(moddir), "%s/root/lib/modules/9.9.9-test", tmp);
	is_int(mkdir_p(moddir, 0755), 0);
	snprintf(cfg, sizeof(cfg), "%s/root/boot", tmp);
	is_int(mkdir_p(cfg, 0755), 0);
	is_int(write_file_atomic(kernel, "x", 1, 0644), 0);
	is_int(kernel_module_dir(kernel, "9.9.9-test", &d), 1);
	is_str(d, moddir);
	free(d);
	is_int(kernel_module_dir(kernel, "9.9.9-other", &d), 0);
	ok(d == NULL, "no tree for another release");
	ok(!kernel_config_says_no_modules(kernel), "no config beside the kernel");
	snprintf(cfg, sizeof(cfg), "%s/root/boot/config", tmp);
	is_int(write_file_atomic(cfg, "CONFIG_X=y\n# CONFIG_MODULES is not set\n", 40, 0644), 0);
	ok(kernel_config_says_no_modules(kernel), "config says no modules");
	unlink(cfg);
}

TEST(config_keys)
{
	struct kvrun_config c;
	const char *j1 = "{\"modules\": \"/lib/modules/6.1.0\", \"acpi\": true}";
	const char *j2 = "{\"modules\": \"none\", \"acpi\": \"auto\"}";

	is_int(kvrun_config_parse(j1, strlen(j1), "cfg", &c), 0);
	is_str(c.modules, "/lib/modules/6.1.0");
	is_int(c.acpi, KVRUN_ACPI_ON);
	kvrun_config_clear(&c);
	is_int(kvrun_config_parse(j2, strlen(j2), "cfg", &c), 0);
	is_str(c.modules, "none");
	is_int(c.acpi, KVRUN_ACPI_AUTO);
	kvrun_config_clear(&c);
	is_int(kvrun_config_parse("{\"modules\": \"rel\"}", 18, "cfg", &c), -EINVAL);
	is_str(err_msg(), "cfg: modules: expected an absolute directory, \"auto\" or \"none\"");
	is_int(kvrun_config_parse("{\"acpi\": \"maybe\"}", 17, "cfg", &c), -EINVAL);
	is_str(err_msg(), "cfg: acpi: expected true, false or \"auto\", not \"maybe\"");
}

static struct oci_spec *spec_with(const char *annotations)
{
	char json[1024];
	struct oci_spec *s = NULL;

	snprintf(json, sizeof(json),
	         "{\"ociVersion\": \"1.2.0\", \"root\": {\"path\": \"rootfs\"}, \"annotations\": {%s}}", annotations);
	ok(oci_spec_parse(json, strlen(json), "config.json", &s) == 0, "spec parses");
	return s;
}

/* A "modular" kernel whose tree has no depmod indexes: the plan fails with
 * advice; "none" and the acpi settings decide without the tree. */
TEST(plan_decisions)
{
	char kernel[300], other[300], cfg[300], json[1200], ann[800];
	static uint8_t b[0x1000];
	struct oci_spec *s;
	struct vm_plan p;

	snprintf(kernel, sizeof(kernel), "%s/root/boot/vmlinuz-9.9.9-test", tmp);
	snprintf(other, sizeof(other), "%s/other-vmlinux", tmp);
	snprintf(cfg, sizeof(cfg), "%s/config.json", tmp);
	snprintf(ann, sizeof(ann), "%s/root/lib/modules/9.9.9-test", tmp);
	is_int(mkdir_p(ann, 0755), 0);
	snprintf(ann, sizeof(ann), "%s/root/boot", tmp);
	is_int(mkdir_p(ann, 0755), 0);
	fake_bzimage(b, sizeof(b), 0x400, "9.9.9-test (me@here) #1");
	is_int(write_file_atomic(kernel, b, sizeof(b), 0644), 0);
	is_int(write_file_atomic(other, "no release", 10, 0644), 0);
	setenv("KVRUN_INIT", other, 1); /* any file: the cpio only stores it */
	setenv("KVRUN_CACHE_DIR", tmp, 1);
	setenv("KVRUN_CONFIG", cfg, 1);
	unsetenv("KVRUN_KERNEL");
	snprintf(json, sizeof(json), "{\"kernel\": \"%s\"}", kernel);
	is_int(write_file_atomic(cfg, json, strlen(json), 0644), 0);

	s = spec_with("");
	is_int(vm_plan_make(s, NULL, &p), -EINVAL);
	ok(strstr(err_msg(), "has no module index (modules.dep.bin): run depmod") != NULL, "depmod advice: %s",
	   err_msg());
	/* --kernel beats the config file; a kernel without a release string
	 * has no module tree and keeps the command-line path. */
	is_int(vm_plan_make(s, other, &p), 0);
	is_str(p.kernel, other);
	ok(!p.use_acpi && !p.module_dir && p.nr_modules == 0, "built-in kernel: command line, no modules");
	vm_plan_done(&p);
	oci_spec_free(s);

	/* The config file's "modules"/"acpi" describe its kernel. */
	snprintf(json, sizeof(json), "{\"kernel\": \"%s\", \"modules\": \"none\", \"acpi\": true}", kernel);
	is_int(write_file_atomic(cfg, json, strlen(json), 0644), 0);
	s = spec_with("");
	is_int(vm_plan_make(s, NULL, &p), 0);
	is_str(p.kernel_release, "9.9.9-test");
	ok(p.use_acpi && !p.module_dir, "acpi true, modules none");
	vm_plan_done(&p);
	setenv("KVRUN_KERNEL", other, 1);
	is_int(vm_plan_make(s, NULL, &p), 0);
	is_str(p.kernel, other);
	ok(!p.use_acpi, "another kernel does not take the config file's acpi");
	vm_plan_done(&p);
	unsetenv("KVRUN_KERNEL");
	oci_spec_free(s);

	/* Annotations win and apply to whichever kernel was chosen. */
	snprintf(ann, sizeof(ann),
	         "\"io.kvrun.kernel\": \"%s\", \"io.kvrun.kernel.modules\": \"none\", \"io.kvrun.kernel.acpi\": "
	         "\"false\"",
	         kernel);
	s = spec_with(ann);
	is_int(vm_plan_make(s, other, &p), 0);
	is_str(p.kernel, kernel);
	ok(!p.use_acpi && !p.module_dir, "annotations: no modules, no ACPI");
	vm_plan_done(&p);
	oci_spec_free(s);
	s = spec_with("\"io.kvrun.kernel.acpi\": \"sometimes\"");
	is_int(vm_plan_make(s, other, &p), -EINVAL);
	is_str(err_msg(), "annotation io.kvrun.kernel.acpi: expected true, false or \"auto\", not \"sometimes\"");
	oci_spec_free(s);
	s = spec_with("\"io.kvrun.kernel.modules\": \"/nonexistent/modules\"");
	is_int(vm_plan_make(s, other, &p), -ENOENT);
	ok(strstr(err_msg(), "module directory /nonexistent/modules (from annotation io.kvrun.kernel.modules)") != NULL,
	   "missing module directory named: %s", err_msg());
	oci_spec_free(s);
	snprintf(ann, sizeof(ann), "\"io.kvrun.initrd\": \"%s/nope.cpio\"", tmp);
	s = spec_with(ann);
	is_int(vm_plan_make(s, other, &p), -ENOENT);
	ok(strstr(err_msg(), "(from annotation io.kvrun.initrd)") != NULL, "initrd annotation named: %s", err_msg());
	oci_spec_free(s);
	unsetenv("KVRUN_CONFIG");
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
