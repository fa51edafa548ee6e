/* SPDX-License-Identifier: Apache-2.0 */
/* `kvrun restore <id>`: create a container from a checkpoint. */
#include <errno.h>

#include "common/error.h"
#include "runtime/cli/cli-args.h"
#include "runtime/store/checkpoint.h"
#include "runtime/cli/create.h"
#include "runtime/cli/launch.h"
#include "runtime/cli/launch-ctl.h"

static int run_restore(struct cli_context *ctx, int argc, char **argv)
{
	struct create_opts o = {0};
	const char *image_path = NULL, *work_path = NULL, *parent_path = NULL, *cgroups_mode = NULL;
	const char *lsm_profile = NULL, *lsm_mount_context = NULL;
	bool tcp = false, ext_unix = false, shell_job = false, file_locks = false, auto_dedup = false;
	bool lazy = false;
	_cleanup_strv_ struct cli_strv empty_ns = {0};
	const struct cli_flag flags[] = {
	    CREATE_FLAG_CONSOLE_SOCKET(o),
	    {"image-path", NULL, CLI_STRING, &image_path, "path to criu image files for restoring"},
	    {"work-path", NULL, CLI_STRING, &work_path, "path for saving work files and logs"},
	    {"parent-path", NULL, CLI_STRING, &parent_path, "path for previous criu image files in pre-dump"},
	    {"tcp-established", NULL, CLI_BOOL, &tcp, "allow open tcp connections"},
	    {"ext-unix-sk", NULL, CLI_BOOL, &ext_unix, "allow external unix sockets"},
	    {"shell-job", NULL, CLI_BOOL, &shell_job, "allow shell jobs"},
	    {"file-locks", NULL, CLI_BOOL, &file_locks, "handle file locks, for safety"},
	    {"manage-cgroups-mode", NULL, CLI_STRING, &cgroups_mode,
	     "cgroups mode: 'soft' (default), 'full' and 'strict'"},
	    {"bundle", "b", CLI_STRING, &o.bundle, "path to the root of the bundle directory"},
	    CREATE_FLAG_DETACH(o),
	    CREATE_FLAG_PID_FILE(o),
	    CREATE_FLAG_NO_SUBREAPER(o),
	    CREATE_FLAG_NO_PIVOT(o),
	    {"empty-ns", NULL, CLI_STRV, &empty_ns, "create a namespace, but don't restore its properties"},
	    {"auto-dedup", NULL, CLI_BOOL, &auto_dedup, "enable auto deduplication of memory images"},
	    {"lazy-pages", NULL, CLI_BOOL, &lazy, "use userfaultfd to lazily restore memory pages"},
	    {"lsm-profile", NULL, CLI_STRING, &lsm_profile,
	     "Specify an LSM profile to be used during restore in the form of TYPE:NAME."},
	    {"lsm-mount-context", NULL, CLI_STRING, &lsm_mount_context,
	     "Specify an LSM mount context to be used during restore."},
	    CLI_FLAG_END,
	};
	_cleanup_bundle_ struct bundle *b = NULL;
	pid_t pid;
	int r, i;

	r = cli_parse_args(&cli_cmd_restore, flags, argc, argv, CLI_ARGS_EXACT, 1, &i);
	if (r != 0)
		return r < 0 ? r : 0;
	r = checkpoint_check_cgroups_mode(cgroups_mode);
	if (r < 0)
		return r;
	/* A checkpoint is one whole VM image: no pre-dump chain, no pages
	 * served later; and no LSM policy exists in the VM. */
	if (parent_path && *parent_path)
		return err_set(-EOPNOTSUPP, "--parent-path is not supported: a checkpoint is one whole VM image");
	if (lazy)
		return err_set(-EOPNOTSUPP, "--lazy-pages is not supported: the VM's memory is restored whole");
	if ((lsm_profile && *lsm_profile) || (lsm_mount_context && *lsm_mount_context))
		return err_set(-EOPNOTSUPP, "--%s is not supported: no LSM is enabled in the container's VM",
		               lsm_profile && *lsm_profile ? "lsm-profile" : "lsm-mount-context");
	/* runc's default: ./checkpoint */
	o.image_path = image_path && *image_path ? image_path : "checkpoint";
	r = checkpoint_check_image(o.image_path);
	if (r < 0)
		return r;
	r = create_prepare(ctx, argv[i], &o, o.detach, &b);
	if (r < 0)
		return r;
	r = launch_container(ctx, argv[i], &o, b, &pid);
	if (r < 0 || o.detach)
		return r;
	return launch_wait(ctx, argv[i], pid);
}

const struct cli_command cli_cmd_restore = {
    .name = "restore",
    .summary = "restore a container from a previous checkpoint",
    .args = "<container-id>",
    .text = "Where \"<container-id>\" is the name for the instance of the container to be\n"
	    "restored.\n\n"
	    "DESCRIPTION:\n"
	    "   Restores the saved state of the container instance that was previously saved\n"
	    "using the kvrun checkpoint command.",
    .run = run_restore,
};
