/* SPDX-License-Identifier: Apache-2.0 */
/* Templates without a VM: the config keys and switches, the key (what
 * changes it), lookup (a key file whose text differs is no match), list
 * and remove. Building one boots Linux: tests/integration/test_template.py. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "oci-spec/kvrun-config.h"
#include "runtime/sandbox/sandbox.h"
#include "runtime/sandbox/template.h"
#include "runtime/sandbox/vm-config.h"
#include "tap.h"

static char tmp[] = "/tmp/kvrun-template-XXXXXX";
static char kernel[256], initrd[256], dir[256];

static struct oci_spec *spec_from(const char *json)
{
	struct oci_spec *s = NULL;

	if (oci_spec_parse(json, strlen(json), "config.json", &s) < 0)
		abort();
	return s;
}

TEST(config_keys)
{
	struct kvrun_config c;
	const char *good = "{\"template_dir\": \"/t\", \"templates\": false}";

	is_int(kvrun_config_parse(good, strlen(good), "cfg", &c), 0);
	is_str(c.template_dir, "/t");
	is_int(c.templates, 0);
	kvrun_config_clear(&c);
	is_int(kvrun_config_parse("{}", 2, "cfg", &c), 0);
	is_int(c.templates, -1);
	ok(!c.template_dir, "no template_dir when absent");
	is_int(kvrun_config_parse("{\"templates\": \"yes\"}", 20, "cfg", &c), -EINVAL);
	is_str(err_msg(), "cfg: templates: expected true or false");
}

TEST(plan_switches)
{
	struct oci_spec *s = spec_from("{\"ociVersion\": \"1.2.0\", \"root\": {\"path\": \"rootfs\"}}");
	struct oci_spec *off = spec_from("{\"ociVersion\": \"1.2.0\", \"root\": {\"path\": \"rootfs\"}, "
	                                 "\"annotations\": {\"io.kvrun.template\": \"false\"}}");
	char cfg[300];
	struct vm_plan p;

	snprintf(cfg, sizeof(cfg), "%s/config.json", tmp);
	setenv("KVRUN_CONFIG", cfg, 1);
	unsetenv("KVRUN_TEMPLATE_DIR");
	is_int(vm_plan_make(s, NULL, &p), 0);
	is_str(p.template_dir, VM_CONFIG_DEFAULT_TEMPLATE_DIR);
	ok(p.use_templates, "templates on by default");
	vm_plan_done(&p);
	setenv("KVRUN_TEMPLATE_DIR", dir, 1);
	is_int(vm_plan_make(off, NULL, &p), 0);
	is_str(p.template_dir, dir);
	ok(!p.use_templates, "annotation io.kvrun.template=false turns them off");
	vm_plan_done(&p);
	setenv("KVRUN_TEMPLATES", "0", 1);
	is_int(vm_plan_make(s, NULL, &p), 0);
	ok(!p.use_templates, "KVRUN_TEMPLATES=0 turns them off");
	vm_plan_done(&p);
	unsetenv("KVRUN_TEMPLATES");
	is_int(write_file_atomic(cfg, "{\"templates\": false}", 20, 0644), 0);
	is_int(vm_plan_make(s, NULL, &p), 0);
	ok(!p.use_templates, "\"templates\": false turns them off");
	vm_plan_done(&p);
	unlink(cfg);
	oci_spec_free(s);
	oci_spec_free(off);
}

TEST(key_lookup_list_remove)
{
	struct vm_plan p = {.kernel = kernel,
	                    .initrd = initrd,
	                    .template_dir = dir,
	                    .use_templates = true,
	                    .mem_size = 256ULL << 20,
	                    .ncpus = 1};
	char id[TEMPLATE_ID_LEN + 1], id2[TEMPLATE_ID_LEN + 1], path[400], buf[4096];
	char *text = NULL, *text2 = NULL, *found = NULL;
	FILE *f;

	is_int(template_key(&p, 0, &text, id), 0);
	ok(strlen(id) == TEMPLATE_ID_LEN, "id is %d hex digits: %s", TEMPLATE_ID_LEN, id);
	ok(strstr(text, "vcpus 1\n") && strstr(text, "memory 268435456\n") && strstr(text, "nics 0\n"),
	   "the key names the VM's shape");
	ok(strstr(text, "shares 8\n") != NULL, "and its shared directory slots");
	is_int(template_key(&p, 0, &text2, id2), 0);
	is_str(id2, id);
	free(text2);
	p.mem_size = 512ULL << 20;
	is_int(template_key(&p, 0, &text2, id2), 0);
	ok(strcmp(id, id2) != 0, "another memory size, another template");
	free(text2);
	p.mem_size = 256ULL << 20;
	is_int(write_file_atomic(initrd, "initrd-2", 8, 0644), 0);
	is_int(template_key(&p, 0, &text2, id2), 0);
	ok(strcmp(id, id2) != 0, "another initramfs content, another template");
	free(text2);
	is_int(write_file_atomic(initrd, "initrd-1", 8, 0644), 0);

	is_int(template_find(&p, 0, &found), 0);
	ok(!found, "nothing found in an empty directory");
	mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/%s.snap", dir, id);
	is_int(write_file_atomic(path, "snapshot", 8, 0600), 0);
	snprintf(path, sizeof(path), "%s/%s.key", dir, id);
	is_int(write_file_atomic(path, "build other\n", 12, 0600), 0);
	is_int(template_find(&p, 0, &found), 0);
	ok(!found, "a key file with another text is no match");
	is_int(write_file_atomic(path, text, strlen(text), 0600), 0);
	is_int(template_find(&p, 0, &found), 1);
	ok(found && strstr(found, id) && strstr(found, ".snap"), "found %s", found ? found : "nothing");
	free(found);
	is_int(template_find(&p, 1, &found), 0);
	ok(!found, "a container with one interface does not use a template without");
	is_int(template_key(&p, 1, &text2, id2), 0);
	ok(strcmp(id, id2) != 0 && strstr(text2, "nics 1\n"), "one network device, another template");
	free(text2);
	p.use_templates = false;
	is_int(template_find(&p, 0, &found), 0);
	p.use_templates = true;

	f = fmemopen(buf, sizeof(buf), "w");
	is_int(template_list(dir, f), 0);
	fclose(f);
	ok(strstr(buf, id) && strstr(buf, kernel) && strstr(buf, " 256 "), "list shows it");
	ok(strstr(buf, " SHARES ") && strstr(buf, "      8 "), "and its shared directory slots: %s", buf);
	is_int(template_remove(dir, "zz"), -EINVAL);
	is_int(template_remove(dir, "0123456789abcdef"), -ENOENT);
	is_int(template_remove(dir, id), 0);
	is_int(template_find(&p, 0, &found), 0);
	f = fmemopen(buf, sizeof(buf), "w");
	template_list(dir, f);
	fclose(f);
	ok(!strstr(buf, id), "gone from the list");
	free(text);
}

TEST(build_refuses_too_many_nics)
{
	struct vm_plan p = {
	    .kernel = kernel, .initrd = initrd, .template_dir = dir, .mem_size = 256ULL << 20, .ncpus = 1};
	struct stat st;

	is_int(template_build(&p, NET_CONFIG_MAX_IFACES + 1, NULL, NULL), -EINVAL);
	ok(strstr(err_msg(), "at most 8"), "the error says why: %s", err_msg());
	ok(stat(dir, &st) < 0 || st.st_nlink == 2, "nothing left in the template directory");
}

/* A template's network devices and a container's TAPs agree on the queue
 * pairs; each device has its own MAC, locally administered and unicast. */
TEST(template_net_shape)
{
	struct vm_plan p = {.ncpus = 1};
	uint8_t a[6], b[6];

	is_int(sandbox_net_queue_pairs(&p), 1);
	p.ncpus = 3;
	is_int(sandbox_net_queue_pairs(&p), 3);
	p.ncpus = 32;
	is_int(sandbox_net_queue_pairs(&p), NET_MAX_QUEUE_PAIRS);
	sandbox_template_mac(0, a);
	sandbox_template_mac(7, b);
	ok(memcmp(a, b, 6) != 0, "devices have their own MACs");
	ok((a[0] & 3) == 2 && (b[0] & 3) == 2, "locally administered, unicast");
}

TEST(cleanup)
{
	is_int(rm_rf(tmp), 0);
}

static __attribute__((constructor)) void setup(void)
{
	if (!mkdtemp(tmp))
		abort();
	snprintf(kernel, sizeof(kernel), "%s/vmlinux", tmp);
	snprintf(initrd, sizeof(initrd), "%s/initrd", tmp);
	snprintf(dir, sizeof(dir), "%s/templates", tmp);
	if (write_file_atomic(kernel, "kernel", 6, 0644) < 0 || write_file_atomic(initrd, "initrd-1", 8, 0644) < 0)
		abort();
	setenv("KVRUN_INIT", kernel, 1);
	setenv("KVRUN_CACHE_DIR", tmp, 1);
	setenv("KVRUN_KERNEL", kernel, 1);
}

TAP_MAIN()
