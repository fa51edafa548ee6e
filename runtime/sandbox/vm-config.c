/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/fileio.h"
#include "common/log.h"
#include "config.h"
#include "oci-spec/kvrun-config.h"
#include "runtime/host/host-probe.h"
#include "runtime/host/initramfs.h"
#include "runtime/host/install-paths.h"
#include "runtime/host/jail.h"
#include "runtime/host/kernel-info.h"
#include "runtime/host/kmod-resolve.h"
#include "runtime/sandbox/vm-config.h"

/* Always on the command line: the console for --debug, no reboot loop (a
 * panic or reboot ends the VM through the i8042 reset), a quiet boot,
 * since every console byte costs VM exits, and free page reporting of
 * blocks of 2 MiB and up (order 9, the kernel's own default on x86-64 with
 * hugetlbfs, set so that any kernel uses it): a reported block is a whole
 * host huge page, given back without splitting it, and small blocks that
 * the guest reuses soon cost no exits. */
#define CMDLINE_BASE "console=ttyS0 reboot=k panic=-1 quiet page_reporting.page_reporting_order=9"

/*
 * Emulating-host quirks. Where guest kernel code is emulated by the host
 * (nested KVM whose CPUID leaves leak the host CPU's features), the guest
 * kernel must not use instructions the emulator lacks: XSAVE/XRSTOR,
 * FSGSBASE, PCID and the features cleared below. pvmhost=1 turns on the
 * workarounds in kvrun's kernel (kernel/patches). Added only on such hosts.
 *
 * Linux reads clearcpuid= into a 128-byte buffer and ignores the rest, so
 * the list must fit: AVX and what depends on it (AVX2, FMA, VAES,
 * VPCLMULQDQ) go with noxsave already; cx16 (cmpxchg16b, which stock
 * kernels' slab allocator uses) is missing from the emulator too.
 *
 * A guest whose kernel runs emulated gets a fraction of a core when the
 * host is busy: its timer ticks still come in real time, RCU's and the
 * lockup detectors' stall reports then fire and print stack dumps through
 * the (emulated, exit-per-byte) UART, which slows it further. Those reports
 * say nothing about the guest here, so they are off.
 */
#define CLEARCPUID_EMULATING_HOST                                                                \
	"smap,smep,popcnt,rdrand,rdseed,rdpid,erms,fsrm,clflushopt,clwb,umip,invpcid,movbe,aes," \
	"pclmulqdq,sha_ni,f16c,bmi1,cx16,bmi2,adx"
_Static_assert(sizeof(CLEARCPUID_EMULATING_HOST) <= 128, "Linux parses at most 127 bytes of clearcpuid=");
/*
 * Guest user code runs natively there, with the host's XCR0: AVX and
 * AVX-512 work in it, and CPUID (the host's leaves) says so. But the guest
 * kernel, without XSAVE, keeps only the x87/SSE part of a task's registers
 * across a task switch: the upper halves of the YMM/ZMM registers of a
 * process preempted inside AVX code come back as another process left
 * them. glibc's memcpy and string functions use AVX when CPUID allows it;
 * on that host about one busybox process in ten died of SIGSEGV at its
 * first thread-local access (its TLS block, copied with AVX, read back
 * zero), and none did with AVX turned off in glibc. The kernel hands an
 * unknown NAME=value parameter to init as an environment variable;
 * guest-init passes it on to the container's processes that set no
 * GLIBC_TUNABLES of their own (guest-init/process.c). Programs that pick
 * AVX without glibc's tunables (Go, for one) are not covered.
 */
#define TUNABLES_EMULATING_HOST                                                              \
	"GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX,-AVX2,-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ," \
	"-AVX512CD,-AVX_Fast_Unaligned_Load,-FMA,-FMA4"
#define CMDLINE_EMULATING_HOST                                            \
	"noxsave nofsgsbase nopcid clearcpuid=" CLEARCPUID_EMULATING_HOST \
	" rcupdate.rcu_cpu_stall_suppress=1 nowatchdog pvmhost=1 " TUNABLES_EMULATING_HOST

bool vm_host_is_emulating(void)
{
	const char *env = getenv("KVRUN_EMULATING_HOST");

	if (env && *env)
		return strcmp(env, "0") != 0;
	return host_virt_probe(NULL) == HOST_VIRT_EMULATED;
}

static int check_file(const char *path, const char *what, const char *from)
{
	if (access(path, R_OK) == 0)
		return 0;
	return err_setsys(-errno, "%s %s (from %s)", what, path, from);
}

/* Where the kernel and what describes it come from. */
struct kernel_choice {
	const char *path, *from;
	const char *initrd, *initrd_from;
	const char *modules, *modules_from; /* a directory, "auto", "none" or NULL (auto) */
	enum kvrun_acpi_mode acpi;
	char *default_path; /* the installed default, when path is it (owned) */
};

static int choose_kernel(const struct oci_spec *spec, const char *flag, const struct kvrun_config *cfg,
                         const char *cfg_path, struct kernel_choice *ch)
{
	const char *env = getenv("KVRUN_KERNEL"), *acpi;
	bool own = false; /* the config file's settings describe this kernel */

	*ch = (struct kernel_choice){0};
	ch->path = oci_map_get(&spec->annotations, VM_CONFIG_ANNOTATION_KERNEL);
	ch->from = "annotation " VM_CONFIG_ANNOTATION_KERNEL;
	if (!ch->path && flag && *flag) {
		ch->path = flag;
		ch->from = "--kernel";
	}
	if (!ch->path && env && *env) {
		ch->path = env;
		ch->from = "$KVRUN_KERNEL";
	}
	if (!ch->path && cfg->kernel) {
		ch->path = cfg->kernel;
		ch->from = cfg_path;
		own = true;
	}
	if (!ch->path) {
		int r = install_default_kernel(&ch->default_path);

		if (r < 0)
			return r;
		ch->path = ch->default_path;
		ch->from = "the default location; set \"kernel\" in " VM_CONFIG_DEFAULT_FILE
			   ", the " VM_CONFIG_ANNOTATION_KERNEL " annotation, --kernel or $KVRUN_KERNEL";
		own = true;
	}
	if (own) {
		ch->initrd = cfg->initrd;
		ch->initrd_from = cfg_path;
		ch->modules = cfg->modules;
		ch->modules_from = cfg_path;
		ch->acpi = cfg->acpi;
	}
	if (oci_map_get(&spec->annotations, VM_CONFIG_ANNOTATION_INITRD)) {
		ch->initrd = oci_map_get(&spec->annotations, VM_CONFIG_ANNOTATION_INITRD);
		ch->initrd_from = "annotation " VM_CONFIG_ANNOTATION_INITRD;
	}
	if (oci_map_get(&spec->annotations, VM_CONFIG_ANNOTATION_MODULES)) {
		ch->modules = oci_map_get(&spec->annotations, VM_CONFIG_ANNOTATION_MODULES);
		ch->modules_from = "annotation " VM_CONFIG_ANNOTATION_MODULES;
		if (strcmp(ch->modules, "auto") && strcmp(ch->modules, "none") && ch->modules[0] != '/')
			return err_set(-EINVAL, "annotation %s: expected an absolute directory, \"auto\" or \"none\"",
			               VM_CONFIG_ANNOTATION_MODULES);
	}
	acpi = oci_map_get(&spec->annotations, VM_CONFIG_ANNOTATION_ACPI);
	if (acpi)
		return kvrun_acpi_mode_parse(acpi, "annotation " VM_CONFIG_ANNOTATION_ACPI, &ch->acpi);
	return 0;
}

static int find_kernel(const struct kernel_choice *ch, char **ret)
{
	int r = check_file(ch->path, "kernel", ch->from);

	if (r < 0)
		return r;
	*ret = realpath(ch->path, NULL);
	return *ret ? 0 : err_setsys(-errno, "kernel %s", ch->path);
}

/* kvrun-init: $KVRUN_INIT, the build tree next to this binary, or the
 * installed libexec directory (install-paths.h). */
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
	if (install_path(INSTALL_LIBEXECDIR, "kvrun-init", ret) < 0)
		return -ENOMEM;
	return check_file(*ret, "guest init", "the installed location");
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

static int rootfs_cache_path(char **ret)
{
	_cleanup_free_ char *dir = NULL;
	int r = cache_dir(&dir);

	if (r < 0)
		return r;
	return asprintf(ret, "%s/rootfs", dir) < 0 ? -ENOMEM : 0;
}

/* Find the module tree of p->kernel per ch->modules; sets p->kernel_release
 * (when the image has one) and p->module_dir (NULL: nothing to load). */
static int find_modules(const struct kernel_choice *ch, struct vm_plan *p)
{
	const char *want = ch->modules ? ch->modules : "auto";
	int r;

	r = kernel_version_read(p->kernel, &p->kernel_release);
	if (r < 0 && r != -ENOENT)
		return r;
	err_clear();
	if (!strcmp(want, "none"))
		return 0;
	if (strcmp(want, "auto")) {
		struct stat st;

		if (stat(want, &st) < 0 || !S_ISDIR(st.st_mode))
			return err_setsys(stat(want, &st) < 0 ? -errno : -ENOTDIR, "module directory %s (from %s)",
			                  want, ch->modules_from);
		p->module_dir = strdup(want);
		return p->module_dir ? 0 : -ENOMEM;
	}
	/* A kernel whose own build says it has no modules never uses a tree
	 * that only shares its release. */
	if (!p->kernel_release || kernel_config_says_no_modules(p->kernel))
		return 0;
	r = kernel_module_dir(p->kernel, p->kernel_release, &p->module_dir);
	return r < 0 ? r : 0;
}

/* The module files for p, uncompressed copies under the cache. */
static int module_files(const struct vm_plan *p, const char *cache, char ***ret)
{
	_cleanup_free_ char *out = NULL;
	int r;

	if (asprintf(&out, "%s/modules-%s", cache, p->kernel_release ? p->kernel_release : "unknown") < 0)
		return -ENOMEM;
	r = mkdir_p(out, 0755);
	if (r < 0)
		return err_setsys(r, "create %s", out);
	r = kmod_initramfs_files(p->module_dir, kmod_kvrun_modules, out, ret);
	return r < 0 ? err_prefix(r, "modules of kernel %s in %s", p->kernel, p->module_dir) : 0;
}

static int make_initrd(const struct kernel_choice *ch, struct vm_plan *p)
{
	_cleanup_free_ char *init = NULL, *dir = NULL;
	struct initramfs_spec is = {0};
	char **mods = NULL;
	int r, hit = 0;

	if (ch->initrd) {
		r = check_file(ch->initrd, "initrd", ch->initrd_from);
		if (r < 0)
			return r;
		p->initrd = strdup(ch->initrd);
		return p->initrd ? 0 : -ENOMEM;
	}
	r = find_init(&init);
	if (r >= 0)
		r = cache_dir(&dir);
	if (r >= 0 && p->module_dir)
		r = module_files(p, dir, &mods);
	if (r < 0)
		return r;
	for (char **m = mods; m && *m; m++)
		p->nr_modules++;
	is.init_path = init;
	is.modules = (const char *const *)mods;
	p->init_path = strdup(init);
	if (!p->init_path) {
		kmod_files_free(mods);
		return -ENOMEM;
	}
	r = initramfs_get(&is, dir, &p->initrd, &hit);
	kmod_files_free(mods);
	if (r < 0)
		return err_prefix(r, "initramfs in %s", dir);
	log_debug("initramfs %s (%s), %u module(s)", p->initrd, hit ? "cached" : "built", p->nr_modules);
	return 0;
}

static bool plan_acpi(const struct kernel_choice *ch, const struct vm_plan *p)
{
	if (ch->acpi == KVRUN_ACPI_ON)
		return true;
	if (ch->acpi == KVRUN_ACPI_OFF)
		return false;
	/* A modular (distro) kernel has no virtio_mmio.device= parameter. */
	return p->module_dir != NULL;
}

uint64_t vm_plan_memory(const struct oci_linux_resources *res, uint64_t dflt)
{
	uint64_t m = dflt ? dflt : VM_CONFIG_DEFAULT_MEMORY;

	if (res && res->memory.has_limit && res->memory.limit > 0)
		m = (uint64_t)res->memory.limit;
	m &= ~((1ULL << 20) - 1);
	return m < VM_CONFIG_MIN_MEMORY ? VM_CONFIG_MIN_MEMORY : m;
}

int vm_cpuset_count(const char *list)
{
	const char *p = list;
	int n = 0;

	if (!p || !*p)
		return -EINVAL;
	for (;;) {
		char *end;
		unsigned long a, b;

		if (*p < '0' || *p > '9')
			return -EINVAL;
		a = b = strtoul(p, &end, 10);
		if (*end == '-') {
			if (end[1] < '0' || end[1] > '9')
				return -EINVAL;
			b = strtoul(end + 1, &end, 10);
		}
		if (b < a || b >= 65536)
			return -EINVAL;
		n += (int)(b - a + 1);
		if (*end == 0)
			return n;
		if (*end != ',')
			return -EINVAL;
		p = end + 1;
	}
}

unsigned int vm_default_cpus(void)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);

	if (online < 1)
		online = 1;
	return online < VM_CONFIG_DEFAULT_CPUS ? (unsigned int)online : VM_CONFIG_DEFAULT_CPUS;
}

int vm_plan_cpus(const struct oci_linux_resources *res, unsigned int dflt, unsigned int *ret)
{
	const struct oci_cpu *cpu = res ? &res->cpu : NULL;
	uint64_t n = dflt ? dflt : vm_default_cpus();
	bool set = false;

	if (cpu && cpu->has_quota && cpu->quota > 0) {
		uint64_t period = cpu->has_period && cpu->period ? cpu->period : VM_CONFIG_DEFAULT_CPU_PERIOD;

		n = ((uint64_t)cpu->quota + period - 1) / period;
		set = true;
	}
	if (cpu && cpu->cpus && *cpu->cpus) {
		int c = vm_cpuset_count(cpu->cpus);

		if (c < 0)
			return err_set(-EINVAL, "linux.resources.cpu.cpus: invalid cpuset \"%s\"", cpu->cpus);
		/* A quota cannot use more CPUs than the set has. */
		if (!set || (uint64_t)c < n)
			n = (uint64_t)c;
	}
	if (n > VM_CONFIG_MAX_CPUS)
		n = VM_CONFIG_MAX_CPUS;
	*ret = n ? (unsigned int)n : 1;
	return 0;
}

static int plan_templates(const struct oci_spec *spec, const struct kvrun_config *cfg, struct vm_plan *p)
{
	const char *dir = getenv("KVRUN_TEMPLATE_DIR"), *env = getenv("KVRUN_TEMPLATES");
	const char *ann = oci_map_get(&spec->annotations, VM_CONFIG_ANNOTATION_TEMPLATE);

	if (!dir || !*dir)
		dir = cfg->template_dir ? cfg->template_dir : VM_CONFIG_DEFAULT_TEMPLATE_DIR;
	p->template_dir = strdup(dir);
	p->use_templates =
	    cfg->templates != 0 && !(env && strcmp(env, "0") == 0) && !(ann && strcmp(ann, "false") == 0);
	return p->template_dir ? 0 : -ENOMEM;
}

/* The root filesystem: the annotation, else the config file, else block. */
static int plan_rootfs(const struct oci_spec *spec, const struct kvrun_config *cfg, struct vm_plan *p)
{
	const char *ann = oci_map_get(&spec->annotations, VM_CONFIG_ANNOTATION_ROOTFS);
	enum kvrun_rootfs_mode mode = cfg->rootfs;
	int r;

	if (ann) {
		r = kvrun_rootfs_mode_parse(ann, "annotation " VM_CONFIG_ANNOTATION_ROOTFS, &mode);
		if (r < 0)
			return r;
	}
	p->rootfs_virtiofs = mode == KVRUN_ROOTFS_VIRTIOFS;
	return 0;
}

/* Where the shares' locks are kept: the annotation, else the config
 * file, else on the host. */
static int plan_fs_locks(const struct oci_spec *spec, const struct kvrun_config *cfg, enum fs_locks *ret)
{
	const char *ann = oci_map_get(&spec->annotations, VM_CONFIG_ANNOTATION_FS_LOCKS);
	enum kvrun_fs_locks mode = cfg->fs_locks;
	int r;

	if (ann) {
		r = kvrun_fs_locks_parse(ann, "annotation " VM_CONFIG_ANNOTATION_FS_LOCKS, &mode);
		if (r < 0)
			return r;
	}
	*ret = mode == KVRUN_FS_LOCKS_GUEST ? FS_LOCKS_GUEST : FS_LOCKS_HOST;
	return 0;
}

static int plan_jail(const struct kvrun_config *cfg, struct vm_plan *p)
{
	const char *env = getenv("KVRUN_JAIL_UID_BASE");

	if ((env && *env) || !cfg->jail_uid_base)
		return jail_uid_base(&p->jail_uid_base);
	p->jail_uid_base = cfg->jail_uid_base;
	return jail_uid_base_check(p->jail_uid_base, "jail_uid_base");
}

/* Where the kernel and the initramfs came from, for `kvrun check`. */
static int plan_sources(const struct kernel_choice *ch, struct vm_plan *p)
{
	p->kernel_from = strdup(ch->from);
	if (!p->kernel_from)
		return -ENOMEM;
	if (ch->initrd)
		p->initrd_from = strdup(ch->initrd_from);
	else if (asprintf(&p->initrd_from, "built by kvrun from %s", p->init_path ? p->init_path : "kvrun-init") < 0)
		p->initrd_from = NULL;
	return p->initrd_from ? 0 : -ENOMEM;
}

static void log_plan(const struct kernel_choice *ch, const struct vm_plan *p)
{
	log_debug("kernel %s (from %s), release %s: %s%s%s, devices described by %s", p->kernel, ch->from,
	          p->kernel_release ? p->kernel_release : "unknown",
	          p->module_dir ? "modular, module tree " : "no module tree (everything built in)",
	          p->module_dir ? p->module_dir : "", p->module_dir && ch->initrd ? " (own initrd: not packed)" : "",
	          p->use_acpi ? "ACPI tables" : "the command line");
}

/* $KVRUN_CONFIG, else the default config file. */
static const char *config_path(void)
{
	const char *path = getenv("KVRUN_CONFIG");

	return path && *path ? path : VM_CONFIG_DEFAULT_FILE;
}

int vm_plan_fs_locks(const struct oci_spec *spec, enum fs_locks *ret)
{
	struct kvrun_config cfg = {.templates = -1};
	int r = kvrun_config_load(config_path(), &cfg);

	if (r >= 0 || r == -ENOENT)
		r = plan_fs_locks(spec, &cfg, ret);
	kvrun_config_clear(&cfg);
	return r;
}

int vm_plan_make(const struct oci_spec *spec, const char *kernel_flag, struct vm_plan *ret)
{
	const struct oci_linux_resources *res = spec->linux_spec ? spec->linux_spec->resources : NULL;
	const char *cfg_path = config_path(), *env;
	struct kvrun_config cfg = {.templates = -1};
	struct kernel_choice ch;
	struct vm_plan p = {0};
	int r;

	r = kvrun_config_load(cfg_path, &cfg);
	if (r < 0 && r != -ENOENT)
		return r;
	r = choose_kernel(spec, kernel_flag, &cfg, cfg_path, &ch);
	if (r >= 0)
		r = find_kernel(&ch, &p.kernel);
	if (r >= 0)
		r = find_modules(&ch, &p);
	if (r >= 0)
		r = make_initrd(&ch, &p);
	if (r >= 0 && cfg.cmdline_extra && !(p.cmdline_extra = strdup(cfg.cmdline_extra)))
		r = -ENOMEM;
	p.use_acpi = plan_acpi(&ch, &p);
	p.emulating_host = vm_host_is_emulating();
	p.mem_size = vm_plan_memory(res, cfg.memory         ? cfg.memory
	                                 : p.emulating_host ? VM_CONFIG_EMULATING_HOST_MEMORY
	                                                    : 0);
	if (r >= 0)
		r = vm_plan_cpus(res, cfg.cpus, &p.ncpus);
	if (r >= 0)
		r = plan_templates(spec, &cfg, &p);
	if (r >= 0)
		r = plan_rootfs(spec, &cfg, &p);
	if (r >= 0)
		r = plan_fs_locks(spec, &cfg, &p.fs_locks);
	p.early_create = cfg.early_create;
	env = getenv("KVRUN_ROOTFS_CACHE");
	if (r >= 0 && !cfg.rootfs_cache_off && !(env && strcmp(env, "0") == 0))
		r = rootfs_cache_path(&p.rootfs_cache_dir);
	p.rootfs_cache_size = cfg.has_rootfs_cache_size ? cfg.rootfs_cache_size : VM_CONFIG_ROOTFS_CACHE_SIZE;
	if (r >= 0)
		r = plan_jail(&cfg, &p);
	/* Such hosts hang on the hypercalls a second vCPU brings (IPIs). */
	if (p.emulating_host)
		p.ncpus = 1;
	if (r >= 0)
		r = plan_sources(&ch, &p);
	if (r >= 0)
		log_plan(&ch, &p);
	free(ch.default_path);
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
	free(p->template_dir);
	free(p->rootfs_cache_dir);
	free(p->kernel_release);
	free(p->module_dir);
	free(p->kernel_from);
	free(p->initrd_from);
	free(p->init_path);
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
