/* SPDX-License-Identifier: Apache-2.0 */
/* The container's terminal, host side (monitor-int.h). */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "runtime/host/console.h"
#include "runtime/monitor/monitor-int.h"
#include "runtime/monitor/monitor-relay.h"

/* A terminal: one pty stream from the guest (on the stdin port), relayed
 * to a new host pty whose master goes to the console socket, or to our
 * own stdin and stdout (stdin, when it is the caller's tty, made raw: the
 * guest's pty does the line discipline, ^C included). */
int monitor_terminal_host_side(struct monitor *m)
{
	int master, r;
	char name[128];

	if (m->tty_fd >= 0 || !m->a->b->spec->process->terminal)
		return 0;
	if (m->a->console_socket) {
		const struct oci_console_size *cs = &m->a->b->spec->process->console_size;

		r = console_open_pty(&master, &m->tty_fd, name, sizeof(name));
		if (r < 0)
			return r;
		/* As runc's pty: the size the engine asked for, which is also
		 * the one the guest's pty starts with when nothing else is known. */
		(void)console_set_size(master, cs->height, cs->width);
		r = console_send_fd(m->a->console_socket, master, name);
		close(master);
		if (r < 0)
			return r;
		/* The caller's stdio is not the container's: holding it would
		 * keep create's stdout/stderr pipes from reaching EOF. */
		stdio_to_null();
	} else if (isatty(STDIN_FILENO) && console_make_raw(STDIN_FILENO, &m->tty_saved) == 0) {
		m->tty_raw = true;
		m->tty_fd = STDIN_FILENO;
	}
	return 0;
}

int monitor_terminal_setup(struct monitor *m)
{
	int in = STDIN_FILENO, out = STDOUT_FILENO, r;

	r = monitor_terminal_host_side(m);
	if (r >= 0)
		r = guest_channel_accept(&m->ch, CHAN_STDIN, GUEST_REPLY_TIMEOUT_MS, "the container's terminal stream");
	if (r < 0)
		return r;
	/* The other stdio ports take no stream: none stays open. */
	guest_channel_unlisten(&m->ch);
	/* The console socket's pty carries both ways. The caller's own tty
	 * (our stdin, raw) is only where input comes from: output goes to our
	 * stdout whatever it is, as runc copies the pty to its stdout (`kvrun
	 * run id > out` under a terminal fills out). */
	if (m->tty_fd >= 0 && !m->tty_raw)
		in = out = m->tty_fd;
	m->relays[CHAN_STDIN] = relay_start(in, m->ch.stream_fds[CHAN_STDIN], true);
	m->relays[CHAN_STDOUT] = relay_start(m->ch.stream_fds[CHAN_STDIN], out, false);
	if (!m->relays[CHAN_STDIN] || !m->relays[CHAN_STDOUT])
		return err_set(-ENOMEM, "cannot start the terminal relays");
	return 0;
}

/* The size the guest's pty starts with: that of our end of the terminal
 * when it has one already (early_create: the engine may have sized the
 * master while the guest booted), else process.consoleSize. What the
 * guest got is what follow_size() passes changes against. */
void monitor_terminal_start_size(struct monitor *m, struct proto_process *p)
{
	unsigned rows, cols;

	if (m->tty_fd >= 0 && console_get_size(m->tty_fd, &rows, &cols) == 0 && rows && cols) {
		p->rows = (uint16_t)rows;
		p->cols = (uint16_t)cols;
	}
	/* The guest sizes its pty only when both are known. */
	m->rows = p->terminal && p->rows && p->cols ? p->rows : 0;
	m->cols = p->terminal && p->rows && p->cols ? p->cols : 0;
}
