/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/fileio.h"
#include "runtime/monitor/monitor-relay.h"

#define RELAY_BUF (64 * 1024)

struct relay {
	pthread_t thread;
	int from, to;
	bool to_guest;
};

static void *relay_thread(void *opaque)
{
	struct relay *r = opaque;
	char *buf = malloc(RELAY_BUF);
	ssize_t n;

	while (buf) {
		n = read(r->from, buf, RELAY_BUF);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || write_all(r->to, buf, (size_t)n) < 0)
			break;
	}
	if (r->to_guest)
		shutdown(r->to, SHUT_WR);
	free(buf);
	return NULL;
}

struct relay *relay_start(int from, int to, bool to_guest)
{
	struct relay *r = calloc(1, sizeof(*r));
	sigset_t all, old;
	int e;

	if (!r)
		return NULL;
	*r = (struct relay){.from = from, .to = to, .to_guest = to_guest};
	/* Signals are for the monitor's main thread (its signalfd). */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	e = pthread_create(&r->thread, NULL, relay_thread, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		free(r);
		return NULL;
	}
	if (to_guest)
		pthread_detach(r->thread);
	return r;
}

void relay_join(struct relay *r)
{
	if (!r)
		return;
	if (!r->to_guest) {
		pthread_join(r->thread, NULL);
		free(r);
	}
	/* The stdin copy may block on a host fd forever: it is detached, and
	 * ends with the process. */
}
