/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun template build|list|rm`: the VM templates containers start from
 * (runtime/sandbox/template.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/error.h"
#include "runtime/cli/cli-args.h"
#include "runtime/cli/cli-help.h"
#include "runtime/sandbox/template.h"

static const struct cli_command template_build_cmd = {
    .name = "template build",
    .summary = "boot a VM until guest-init is ready and keep it as a template",
    .args = "",
    .text = "The VM's shape is what `create` would use by default (kvrun's config file),\n"
	    "changed by the options below. Containers whose VM has this shape start from\n"
	    "the template instead of booting a kernel; --nics N gives it N network devices\n"
	    "(link down until a container's TAP is attached), for containers whose network\n"
	    "namespace has exactly N interfaces.",
};

static const struct cli_command template_list_cmd = {
    .name = "template list",
    .alias = "ls",
    .summary = "list the templates: id, shape, size, when built",
    .args = "",
};

static const struct cli_command template_rm_cmd = {
    .name = "template rm",
    .summary = "remove templates",
    .args = "ID...",
};

static int plan_for(const char *kernel, unsigned long long vcpus, unsigned long long memory_mib, struct vm_plan *ret)
{
	struct oci_spec spec = {0};
	int r;

	r = vm_plan_make(&spec, kernel, ret);
	if (r < 0)
		return r;
	if (vcpus) {
		if (vcpus > 32)
			return err_set(-EINVAL, "--vcpus: at most 32");
		ret->ncpus = (unsigned int)vcpus;
	}
	if (memory_mib) {
		if (memory_mib < VM_CONFIG_MIN_MEMORY >> 20 || memory_mib > (1ULL << 20))
			return err_set(-EINVAL, "--memory: from %llu MiB to 1 TiB", VM_CONFIG_MIN_MEMORY >> 20);
		ret->mem_size = memory_mib << 20;
	}
	return 0;
}

static int do_build(int argc, char **argv)
{
	const char *kernel = NULL, *console = NULL;
	unsigned long long vcpus = 0, memory = 0, nics = 0;
	const struct cli_flag flags[] = {
	    {"vcpus", NULL, CLI_UINT, &vcpus, "vCPUs of the VM"},
	    {"memory", NULL, CLI_UINT, &memory, "guest RAM in MiB"},
	    {"kernel", NULL, CLI_STRING, &kernel, "kernel to boot"},
	    {"nics", NULL, CLI_UINT, &nics, "network interfaces (0-8): serves containers with exactly that many"},
	    {"console", NULL, CLI_STRING, &console, "write the guest's console to this file"},
	    CLI_FLAG_END,
	};
	_cleanup_free_ char *path = NULL;
	struct vm_plan plan = {0};
	struct timespec t0, t1;
	int r, i;

	r = cli_parse_args(&template_build_cmd, flags, argc, argv, CLI_ARGS_EXACT, 0, &i);
	if (r != 0)
		return r < 0 ? r : 0;
	r = plan_for(kernel, vcpus, memory, &plan);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (r >= 0)
		r = template_build(&plan, (unsigned int)nics, console, &path);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (r >= 0)
		printf("%s (%u vCPU, %llu MiB, built in %.1f s)\n", path, plan.ncpus,
		       (unsigned long long)(plan.mem_size >> 20),
		       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	vm_plan_done(&plan);
	return r < 0 ? r : 0;
}

/* The template directory of the default plan (config file, environment). */
static int template_dir(char **ret)
{
	struct oci_spec spec = {0};
	struct vm_plan plan = {0};
	const char *env = getenv("KVRUN_TEMPLATE_DIR");
	int r;

	if (env && *env) {
		*ret = strdup(env);
		return *ret ? 0 : -ENOMEM;
	}
	r = vm_plan_make(&spec, NULL, &plan);
	if (r < 0)
		return r;
	*ret = plan.template_dir;
	plan.template_dir = NULL;
	vm_plan_done(&plan);
	return 0;
}

/* `kvrun template --help`: the verb, then each sub-command with its flags. */
static int template_help(void)
{
	const struct cli_flag none[] = {CLI_FLAG_END};
	char *argv[] = {(char *)"build", (char *)"--help", NULL};

	bool text = cli_help_get_format() == CLI_HELP_TEXT;

	cli_print_help(&cli_cmd_template, NULL, stdout);
	if (text)
		fputc('\n', stdout);
	do_build(2, argv);
	if (text)
		fputc('\n', stdout);
	cli_print_help(&template_list_cmd, none, stdout);
	if (text)
		fputc('\n', stdout);
	cli_print_help(&template_rm_cmd, none, stdout);
	return 0;
}

static int list_or_rm(int argc, char **argv)
{
	const struct cli_flag none[] = {CLI_FLAG_END};
	bool rm = !strcmp(argv[0], "rm");
	_cleanup_free_ char *dir = NULL;
	int r, i;

	r = rm ? cli_parse_args(&template_rm_cmd, none, argc, argv, CLI_ARGS_MIN, 1, &i)
	       : cli_parse_args(&template_list_cmd, none, argc, argv, CLI_ARGS_EXACT, 0, &i);
	if (r != 0)
		return r < 0 ? r : 0;
	r = template_dir(&dir);
	if (r < 0)
		return r;
	if (!rm)
		return template_list(dir, stdout);
	for (; i < argc; i++) {
		r = template_remove(dir, argv[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

static int run_template(struct cli_context *ctx, int argc, char **argv)
{
	if (argc < 2)
		return err_set(-EINVAL, "usage: kvrun template build|list|rm ...");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))
		return template_help();
	if (!strcmp(argv[1], "build"))
		return do_build(argc - 1, argv + 1);
	if (strcmp(argv[1], "list") && strcmp(argv[1], "ls") && strcmp(argv[1], "rm"))
		return err_set(-EINVAL, "unknown template command '%s' (build, list, rm)", argv[1]);
	return list_or_rm(argc - 1, argv + 1);
}

const struct cli_command cli_cmd_template = {
    .name = "template",
    .summary = "build, list and remove VM templates (kvrun's own)",
    .args = "build [--vcpus N] [--memory MiB] [--kernel FILE] [--nics N] | list | rm ID...",
    .run = run_template,
};
