/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <sys/stat.h>

#include "common/error.h"
#include "runtime/cli/create.h"
#include "runtime/store/state.h"

/* runc's rules: a terminal needs somewhere to send the pty when detached,
 * and a console socket is pointless without a terminal. */
static int check_console(const struct oci_process *p, const struct create_opts *o, bool detached)
{
	bool terminal = p && p->terminal;
	bool have_socket = o->console_socket && *o->console_socket;
	struct stat st;

	if (terminal && detached && !have_socket)
		return err_set(-EINVAL, "cannot allocate tty if kvrun will detach without setting console socket");
	if (!terminal && have_socket)
		return err_set(-EINVAL, "cannot use console socket if kvrun will not detach or allocate tty");
	if (have_socket) {
		if (stat(o->console_socket, &st) < 0)
			return err_setsys(-errno, "console socket %s", o->console_socket);
		if (!S_ISSOCK(st.st_mode))
			return err_set(-EINVAL, "console socket %s is not a socket", o->console_socket);
	}
	return 0;
}

int create_prepare(struct cli_context *ctx, const char *id, const struct create_opts *o, bool detached,
                   struct bundle **ret)
{
	_cleanup_bundle_ struct bundle *b = NULL;
	int r;

	r = container_check_new_id(ctx->root, id);
	if (r < 0)
		return r;
	r = bundle_load(o->bundle, &b);
	if (r < 0)
		return r;
	if (!b->spec->process)
		return err_set(-EINVAL, "%s/config.json: process: missing", b->path);
	r = check_console(b->spec->process, o, detached);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(b);
	return 0;
}
