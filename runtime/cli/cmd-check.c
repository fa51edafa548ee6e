/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun check [--fix]`: whether this host can run kvrun, and how well, in
 * one screen: /dev/kvm and the kind of virtualisation behind it, the vhost
 * devices, the kernel and initramfs a container would get, templates,
 * cgroups, and the engines with the lines that register kvrun where they
 * are missing. Exit status 1 when kvrun cannot run here. The probing is in
 * runtime/host/host-probe.h and engine-probe.h; $KVRUN_HOST_ROOT points
 * it at a fake root (tests). */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "config.h"
#include "runtime/cli/cli-args.h"
#include "runtime/host/engine-probe.h"
#include "runtime/host/host-probe.h"
#include "runtime/host/install-paths.h"
#include "runtime/sandbox/template.h"
#include "runtime/sandbox/vm-config.h"

enum level { OK, INFO, WARN, FAIL, NONE };

struct check {
	const char *root; /* $KVRUN_HOST_ROOT, or "" */
	char kvrun[PATH_MAX]; /* this binary, as the engines would name it */
	int fails, warns;
	bool fix;
};

_printf_(3, 4) static void say(struct check *c, enum level lv, const char *fmt, ...)
{
	static const char *const tags[] = {"ok", "info", "warn", "FAIL", "-"};
	va_list ap;

	c->fails += lv == FAIL;
	c->warns += lv == WARN;
	printf("  %-5s ", tags[lv]);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* Lines of text, indented under the last one. */
static void block(const char *text)
{
	for (const char *l = text; l && *l;) {
		const char *nl = strchr(l, '\n');
		int len = nl ? (int)(nl - l) : (int)strlen(l);

		printf("          %.*s\n", len, l);
		l = nl ? nl + 1 : NULL;
	}
}

static void check_kvm(struct check *c)
{
	struct host_kvm kvm;
	enum host_virt virt = host_virt_probe(c->root);
	const char *env = getenv("KVRUN_EMULATING_HOST");

	host_kvm_probe(c->root, &kvm);
	if (!kvm.present)
		say(c, FAIL, "/dev/kvm: missing (%s): load kvm_intel or kvm_amd, or enable virtualisation for this VM",
		    strerror(kvm.error));
	else if (!kvm.usable)
		say(c, FAIL, "/dev/kvm: cannot open it read-write (%s): run as root or join its group",
		    strerror(kvm.error));
	else if (kvm.api_version && kvm.api_version != 12)
		say(c, FAIL, "/dev/kvm: KVM API %d, kvrun speaks 12", kvm.api_version);
	else if (kvm.api_version)
		say(c, OK, "/dev/kvm: read-write, KVM API %d", kvm.api_version);
	else
		say(c, OK, "/dev/kvm: present, read-write");
	switch (virt) {
	case HOST_VIRT_HARDWARE:
		say(c, OK, "virtualisation: hardware (vmx/svm, not itself a VM): guests run at native speed");
		break;
	case HOST_VIRT_NESTED:
		say(c, OK,
		    "virtualisation: nested, hardware-assisted (vmx/svm inside a VM): guests run a little slower "
		    "than on bare metal");
		break;
	case HOST_VIRT_EMULATED:
		say(c, WARN,
		    "virtualisation: nested, emulated guest kernel (a VM without vmx/svm): guest kernel code is "
		    "emulated, so a Linux boot takes minutes; kvrun adds the kernel command line such a host "
		    "needs (docs/kernels.md)");
		break;
	case HOST_VIRT_NONE:
		say(c, FAIL, "virtualisation: none (no vmx/svm in /proc/cpuinfo): enable VT-x/AMD-V");
		break;
	case HOST_VIRT_UNKNOWN:
		say(c, INFO, "virtualisation: unknown (/proc/cpuinfo unreadable)");
		break;
	}
	if (env && *env)
		say(c, INFO, "$KVRUN_EMULATING_HOST=%s: kvrun treats this host as %semulating", env,
		    strcmp(env, "0") ? "" : "not ");
}

static void check_vhost(struct check *c)
{
	if (host_dev_present(c->root, "/dev/vhost-net"))
		say(c, OK, "/dev/vhost-net: present: the host kernel serves the network queues");
	else
		say(c, INFO, "/dev/vhost-net: missing (modprobe vhost_net): network queues are served in userspace");
	say(c, INFO, "/dev/vhost-vsock: %s (not used: kvrun's vsock device is its own)",
	    host_dev_present(c->root, "/dev/vhost-vsock") ? "present" : "missing");
}

static void check_templates(struct check *c, const struct vm_plan *p)
{
	_cleanup_free_ char *list = NULL, *match = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&list, &size);
	int n = -1; /* the header line */

	if (!f || template_list(p->template_dir, f) < 0) {
		if (f)
			fclose(f);
		say(c, WARN, "templates: %s: %s", p->template_dir, err_msg());
		err_clear();
		return;
	}
	fclose(f);
	for (const char *l = list; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		n++;
	template_find(p, 0, &match);
	err_clear();
	if (!p->use_templates)
		say(c, INFO, "templates: off (config or $KVRUN_TEMPLATES)");
	else if (match)
		say(c, OK, "templates: %d in %s, one for the default VM (containers restore it instead of booting)", n,
		    p->template_dir);
	else
		say(c, INFO, "templates: %d in %s, none for the default VM (`kvrun template build` makes one)", n,
		    p->template_dir);
}

static void check_vm(struct check *c, const char *kernel_flag)
{
	struct oci_spec spec = {0};
	struct vm_plan p = {0};

	if (vm_plan_make(&spec, kernel_flag, &p) < 0) {
		say(c, FAIL, "kernel and initramfs: %s", err_msg());
		err_clear();
		return;
	}
	/* The default location's "from" goes on to say how to name another
	 * kernel: what a missing kernel's error needs, not this line. */
	say(c, OK, "kernel: %s (from %.*s), release %s, %s", p.kernel, (int)strcspn(p.kernel_from, ";"), p.kernel_from,
	    p.kernel_release ? p.kernel_release : "unknown",
	    p.module_dir ? "modular" : "everything built in (no modules)");
	if (p.module_dir)
		say(c, OK, "modules: %u from %s", p.nr_modules, p.module_dir);
	say(c, OK, "initramfs: %s (%s)", p.initrd, p.initrd_from);
	say(c, INFO, "default VM: %u vCPU, %llu MiB, %s", p.ncpus, (unsigned long long)(p.mem_size >> 20),
	    p.use_acpi ? "devices described by ACPI" : "devices on the kernel command line");
	check_templates(c, &p);
	vm_plan_done(&p);
}

static void check_cgroups(struct check *c)
{
	struct host_cgroups cg;

	host_cgroups_probe(c->root, &cg);
	say(c, cg.layout == HOST_CGROUP_NONE ? WARN : OK, "cgroups: %s%s%s", host_cgroup_layout_name(cg.layout),
	    cg.controllers[0] ? ", controllers " : "", cg.controllers);
	say(c, OK, "cgroup driver: %s",
	    cg.systemd ? "systemd is the init system: engines set to the systemd driver pass --systemd-cgroup, and "
	                 "kvrun's scopes are transient units"
	               : "cgroupfs (systemd is not running: --systemd-cgroup paths are written as cgroupfs paths)");
}

static void engine_line(struct check *c, const struct engine_status *s)
{
	_cleanup_free_ char *snippet = NULL, *bak = NULL;

	if (s->error)
		say(c, WARN, "%s: %s", s->name, s->error);
	if (s->runtime && !s->other_kvrun) {
		say(c, OK, "%s (%s): runtime \"%s\"%s", s->name, s->binary, s->runtime,
		    s->is_default ? ", the default" : "");
		return;
	}
	if (s->runtime)
		say(c, WARN, "%s (%s): runtime \"%s\" runs %s, not this kvrun (%s)", s->name, s->binary, s->runtime,
		    s->runtime_path ? s->runtime_path : "nothing", c->kvrun);
	if (c->fix) {
		int r = engine_fix(c->root, s, c->kvrun, &bak);

		if (r > 0) {
			say(c, OK, "%s: runtime \"kvrun\" added to %s%s%s; restart %s", s->name, s->config,
			    bak ? " (the old file is " : "", bak ? bak : "", s->name);
			return;
		}
		say(c, WARN, "%s: --fix: %s", s->name, err_msg());
		err_clear();
		return;
	}
	if (engine_snippet(s, c->kvrun, &snippet) < 0)
		return;
	if (!s->runtime)
		say(c, WARN, "%s (%s): no runtime runs kvrun; add to %s%s (or run kvrun check --fix):", s->name,
		    s->binary, s->config, s->id == ENGINE_DOCKER ? ", merged into its object" : "");
	block(snippet);
}

static int check_engines(struct check *c)
{
	for (int id = 0; id < ENGINE_COUNT; id++) {
		struct engine_status s;
		int r = engine_probe(c->root, id, c->kvrun, &s);

		if (r < 0)
			return r;
		if (s.binary)
			engine_line(c, &s);
		else
			say(c, NONE, "%s: not installed", s.name);
		engine_status_done(&s);
	}
	return 0;
}

/* This binary as an engine would name it: its path without the fake root. */
static void self_path(struct check *c)
{
	size_t n = strlen(c->root);

	if (!realpath("/proc/self/exe", c->kvrun))
		snprintf(c->kvrun, sizeof(c->kvrun), "%s/kvrun", KVRUN_BINDIR);
	if (n && !strncmp(c->kvrun, c->root, n) && c->kvrun[n] == '/')
		memmove(c->kvrun, c->kvrun + n, strlen(c->kvrun + n) + 1);
}

static int run_check(struct cli_context *ctx, int argc, char **argv)
{
	struct check c = {.root = getenv("KVRUN_HOST_ROOT")};
	const struct cli_flag flags[] = {
	    {"fix", NULL, CLI_BOOL, &c.fix,
	     "register kvrun with each installed engine that lacks it (the old file is kept as <file>.kvrun-backup)"},
	    CLI_FLAG_END,
	};
	int r, i;

	r = cli_parse_args(&cli_cmd_check, flags, argc, argv, CLI_ARGS_EXACT, 0, &i);
	if (r != 0)
		return r < 0 ? r : 0;
	if (!c.root)
		c.root = "";
	self_path(&c);
	printf("kvrun %s (commit %s) at %s\n", KVRUN_VERSION, KVRUN_COMMIT, c.kvrun);
	check_kvm(&c);
	check_vhost(&c);
	check_vm(&c, ctx->kernel);
	check_cgroups(&c);
	r = check_engines(&c);
	if (r < 0)
		return r;
	if (c.fails)
		printf("kvrun cannot run containers here: %d problem(s) marked FAIL above.\n", c.fails);
	else
		printf("kvrun can run containers here%s.\n", c.warns ? " (see the warnings above)" : "");
	return c.fails ? 1 : 0;
}

const struct cli_command cli_cmd_check = {
    .name = "check",
    .summary = "check whether this host can run kvrun containers, and how well",
    .args = "",
    .text = "Checks /dev/kvm and the kind of virtualisation behind it (hardware, nested, or a\n"
	    "nested host that emulates guest kernel code), the vhost devices, the kernel and\n"
	    "initramfs a container would get and where they come from, templates, the cgroup\n"
	    "layout and driver, and each installed engine (docker, podman, containerd,\n"
	    "CRI-O): whether a runtime entry runs kvrun, with the lines to add where none\n"
	    "does. Exits 1 when kvrun cannot run containers here.",
    .run = run_check,
};
