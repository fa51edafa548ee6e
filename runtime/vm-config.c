/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/fileio.h"
#include "common/log.h"
#include "config.h"
#include "oci-spec/kvrun-config.h"
#include "runtime/initramfs.h"
#include "runtime/vm-config.h"

/* Always on the command line: the console for --debug, no reboot loop (a
 * panic or reboot ends the VM through the i8042 reset), and a quiet boot,
 * since every console byte costs VM exits. */
#define CMDLINE_BASE "console=ttyS0 reboot=k panic=-1 quiet"

/*
 * Emulating-host quirks. Where guest kernel code is emulated by the host
 * (nested KVM whose CPUID leaves leak the host CPU's features), the guest
 * kernel must not use instructions the emulator lacks: XSAVE/XRSTOR,
 * FSGSBASE, PCID and the features cleared below. pvmhost=1 turns on the
 * workarounds in kvrun's kernel (kernel/patches). Added only on such hosts.
 */
#define CMDLINE_EMULATING_HOST                                                                              \
	"noxsave nofsgsbase nopcid "                                                                        \
	"clearcpuid=smap,smep,popcnt,rdrand,rdseed,rdpid,erms,fsrm,clflushopt,clwb,umip,invpcid,movbe,aes," \
	"pclmulqdq,sha_ni,avx,avx2,fma,f16c,bmi1,bmi2,adx,vaes,vpclmulqdq,abm pvmhost=1"

bool vm_host_is_emulating(void)
{
	_cleanup_fclose_ FILE *f = NULL;
	const char *env = getenv("KVRUN_EMULATING_HOST");
	char line[4096];
	bool hv = false;

	if (env && *env)
		return strcmp(env, "0") != 0;
	f = fopen("/proc/cpuinfo", "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5) != 0)
			continue;
		/* A guest with KVM but no virtualisation extensions of its own:
		 * /dev/kvm is then a paravirtual or emulating implementation. */
		hv = strstr(line, " hypervisor") != NULL;
		return hv && !strstr(line, " vmx") && !strstr(line, " svm");
	}
	return false;
}

static int check_file(const char *path, const char *what, const char *from)
{
	if (access(path, R_OK) == 0)
		return 0;
	return err_setsys(-errno, "%s %s (from %s)", what, path, from);
}

static int find_kernel(const struct oci_spec *spec, const struct kvrun_config *cfg, const char *cfg_path, char **ret)
{
	const char *path = oci_map_get(&spec->annotations, VM_CONFIG_ANNOTATION_KERNEL);
	const char *from = "annotation " VM_CONFIG_ANNOTATION_KERNEL;
	int r;

	if (!path) {
		path = getenv("KVRUN_KERNEL");
		from = "$KVRUN_KERNEL";
	}
	if (!path || !*path) {
		path = cfg->kernel;
		from = cfg_path;
	}
	if (!path) {
		path = VM_CONFIG_DEFAULT_KERNEL;
		from = "the default location; set \"kernel\" in " VM_CONFIG_DEFAULT_FILE
		       ", the " VM_CONFIG_ANNOTATION_KERNEL " annotation or $KVRUN_KERNEL";
	}
	r = check_file(path, "kernel", from);
	if (r < 0)
		return r;
	*ret = realpath(path, NULL);
	return *ret ? 0 : err_setsys(-errno, "kernel %s", path);
}

/* kvrun-init: $KVRUN_INIT, the build tree next to this binary, or the
 * installed libexec directory. */
static int find_init(char **ret)
{
	const char *env = getenv("KVRUN_INIT");
	char exe[PATH_MAX], *slash;
	ssize_t n;

	if (env && *env) {
		*ret = strdup(env);
		return *ret ? check_file(env, "guest init", "$KVRUN_INIT") : -ENOMEM;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = 0;
			if (asprintf(ret, "%s/../guest-init/kvrun-init", exe) < 0)
				return -ENOMEM;
			if (access(*ret, X_OK) == 0)
				return 0;
			free(*ret);
		}
	}
	*ret = strdup(KVRUN_LIBEXECDIR "/kvrun-init");
	return *ret ? check_file(*ret, "guest init", "the installed location") : -ENOMEM;
}

static int cache_dir(char **ret)
{
	const char *env = getenv("KVRUN_CACHE_DIR"), *home;

	if (env && *env)
		*ret = strdup(env);
	else if (geteuid() == 0)
		*ret = strdup("/var/cache/kvrun");
	else if ((env = getenv("XDG_CACHE_HOME")) && *env)
		return asprintf(ret, "%s/kvrun", env) < 0 ? -ENOMEM : 0;
	else if ((home = getenv("HOME")) && *home)
		return asprintf(ret, "%s/.cache/kvrun", home) < 0 ? -ENOMEM : 0;
	else
		*ret = strdup("/tmp/kvrun-cache");
	return *ret ? 0 : -ENOMEM;
}

static int make_initrd(const struct kvrun_config *cfg, const char *cfg_path, char **ret)
{
	_cleanup_free_ char *init = NULL, *dir = NULL;
	struct initramfs_spec is = {0};
	int r, hit = 0;

	if (cfg->initrd) {
		r = check_file(cfg->initrd, "initrd", cfg_path);
		if (r < 0)
			return r;
		*ret = strdup(cfg->initrd);
		return *ret ? 0 : -ENOMEM;
	}
	r = find_init(&init);
	if (r < 0)
		return r;
	r = cache_dir(&dir);
	if (r < 0)
		return r;
	is.init_path = init;
	r = initramfs_get(&is, dir, ret, &hit);
	if (r < 0)
		return err_prefix(r, "initramfs in %s", dir);
	log_debug("initramfs %s (%s)", *ret, hit ? "cached" : "built");
	return 0;
}

static uint64_t plan_memory(const struct oci_spec *spec, const struct kvrun_config *cfg)
{
	const struct oci_linux_resources *res = spec->linux_spec ? spec->linux_spec->resources : NULL;
	uint64_t m = cfg->memory ? cfg->memory : VM_CONFIG_DEFAULT_MEMORY;

	if (res && res->memory.has_limit && res->memory.limit > 0)
		m = (uint64_t)res->memory.limit;
	m &= ~((1ULL << 20) - 1);
	return m < VM_CONFIG_MIN_MEMORY ? VM_CONFIG_MIN_MEMORY : m;
}

static unsigned int plan_cpus(const struct oci_spec *spec, const struct kvrun_config *cfg)
{
	const struct oci_linux_resources *res = spec->linux_spec ? spec->linux_spec->resources : NULL;
	unsigned int n = cfg->cpus ? cfg->cpus : 1;

	if (res && res->cpu.has_quota && res->cpu.quota > 0 && res->cpu.has_period && res->cpu.period > 0)
		n = (unsigned int)(((uint64_t)res->cpu.quota + res->cpu.period - 1) / res->cpu.period);
	if (n > 32)
		n = 32;
	return n ? n : 1;
}

int vm_plan_make(const struct oci_spec *spec, struct vm_plan *ret)
{
	const char *cfg_path = getenv("KVRUN_CONFIG");
	struct kvrun_config cfg = {0};
	struct vm_plan p = {0};
	int r;

	if (!cfg_path || !*cfg_path)
		cfg_path = VM_CONFIG_DEFAULT_FILE;
	r = kvrun_config_load(cfg_path, &cfg);
	if (r < 0 && r != -ENOENT)
		return r;
	r = find_kernel(spec, &cfg, cfg_path, &p.kernel);
	if (r >= 0)
		r = make_initrd(&cfg, cfg_path, &p.initrd);
	if (r >= 0 && cfg.cmdline_extra && !(p.cmdline_extra = strdup(cfg.cmdline_extra)))
		r = -ENOMEM;
	p.early_create = cfg.early_create;
	p.mem_size = plan_memory(spec, &cfg);
	p.ncpus = plan_cpus(spec, &cfg);
	p.emulating_host = vm_host_is_emulating();
	/* Such hosts hang on the hypercalls a second vCPU brings (IPIs). */
	if (p.emulating_host)
		p.ncpus = 1;
	kvrun_config_clear(&cfg);
	if (r < 0) {
		vm_plan_done(&p);
		return r;
	}
	*ret = p;
	return 0;
}

void vm_plan_done(struct vm_plan *p)
{
	free(p->kernel);
	free(p->initrd);
	free(p->cmdline_extra);
	*p = (struct vm_plan){0};
}

int vm_plan_cmdline(const struct vm_plan *p, char *const *devices, char **ret)
{
	_cleanup_free_ char *s = NULL;
	char *t;

	s = strdup(CMDLINE_BASE);
	if (!s)
		return -ENOMEM;
	if (p->emulating_host) {
		if (asprintf(&t, "%s %s", s, CMDLINE_EMULATING_HOST) < 0)
			return -ENOMEM;
		free(s);
		s = t;
	}
	for (size_t i = 0; devices && devices[i]; i++) {
		if (asprintf(&t, "%s %s", s, devices[i]) < 0)
			return -ENOMEM;
		free(s);
		s = t;
	}
	if (p->cmdline_extra) {
		if (asprintf(&t, "%s %s", s, p->cmdline_extra) < 0)
			return -ENOMEM;
		free(s);
		s = t;
	}
	*ret = TAKE_PTR(s);
	return 0;
}
