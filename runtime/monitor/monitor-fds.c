/* SPDX-License-Identifier: Apache-2.0 */
/*
 * create/run --preserve-fds: the creator's fds 3.. cannot cross into the
 * VM, so each becomes a vsock stream that the container's process has at
 * the same number, relayed here (blocking copies, as stdio) in the
 * direction the host fd was opened for: read from it into the stream, or
 * from the stream into it, or both for one opened read-write (a socket).
 */
#include <errno.h>
#include <stdlib.h>

#include "common/error.h"
#include "runtime/monitor/monitor-int.h"
#include "runtime/monitor/monitor-relay.h"

int monitor_fds_start(struct monitor *m, struct proto_process *p)
{
	const struct preserved_fds *pf = m->a->preserved;

	if (!pf || !pf->n)
		return 0;
	p->extra_fds = calloc(pf->n, sizeof(*p->extra_fds));
	if (!p->extra_fds)
		return -ENOMEM;
	for (unsigned int i = 0; i < pf->n; i++)
		p->extra_fds[i] = (struct proto_extra_fd){GUEST_PORT_EXTRA + i, pf->mode[i]};
	p->n_extra_fds = pf->n;
	return 0;
}

int monitor_fds_accept(struct monitor *m)
{
	const struct preserved_fds *pf = m->a->preserved;
	int r;

	for (unsigned int i = 0; pf && i < pf->n; i++) {
		int host = 3 + (int)i, stream;

		r = guest_channel_accept_extra(&m->ch, i, GUEST_REPLY_TIMEOUT_MS);
		if (r < 0)
			return r;
		stream = m->ch.extra_stream[i];
		/* Into the guest: not waited for (the host fd may never end). */
		if ((pf->mode[i] & PROTO_EXTRA_FD_READ) && !relay_start(host, stream, true))
			return err_set(-ENOMEM, "cannot relay preserved fd %d", host);
		if ((pf->mode[i] & PROTO_EXTRA_FD_WRITE) && !(m->fd_relays[i] = relay_start(stream, host, false)))
			return err_set(-ENOMEM, "cannot relay preserved fd %d", host);
	}
	return 0;
}

void monitor_fds_join(struct monitor *m)
{
	for (unsigned int i = 0; i < PROTO_MAX_EXTRA_FDS; i++) {
		relay_join(m->fd_relays[i]);
		m->fd_relays[i] = NULL;
	}
}
