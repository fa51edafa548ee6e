/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "poll-loop.h"

#define MAX_WATCH 256

struct watch {
	int fd;
	event_handler_fn fn;
	void *opaque;
};

struct event_loop {
	int epfd;
	struct watch w[MAX_WATCH];
	bool stop;
};

int event_loop_new(struct event_loop **ret)
{
	struct event_loop *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	for (int i = 0; i < MAX_WATCH; i++)
		l->w[i].fd = -1;
	*ret = l;
	return 0;
}

void event_loop_free(struct event_loop *l)
{
	if (!l)
		return;
	close(l->epfd);
	free(l);
}

int event_loop_add(struct event_loop *l, int fd, uint32_t events, event_handler_fn handler, void *opaque)
{
	for (int i = 0; i < MAX_WATCH; i++) {
		if (l->w[i].fd >= 0)
			continue;
		struct epoll_event ev = {.events = events, .data.u32 = i};

		if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
			return -errno;
		l->w[i] = (struct watch){fd, handler, opaque};
		return 0;
	}
	return -ENOSPC;
}

static int find(struct event_loop *l, int fd)
{
	for (int i = 0; i < MAX_WATCH; i++)
		if (l->w[i].fd == fd)
			return i;
	return -1;
}

int event_loop_modify(struct event_loop *l, int fd, uint32_t events)
{
	int i = find(l, fd);
	struct epoll_event ev = {.events = events, .data.u32 = i};

	if (i < 0)
		return -ENOENT;
	return epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0 ? -errno : 0;
}

int event_loop_remove(struct event_loop *l, int fd)
{
	int i = find(l, fd);

	if (i < 0)
		return -ENOENT;
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
	l->w[i].fd = -1;
	return 0;
}

int poll_loop_once(struct event_loop *l, int timeout_ms)
{
	struct epoll_event ev[16];
	int n = epoll_wait(l->epfd, ev, 16, timeout_ms), called = 0;

	for (int k = 0; k < n; k++) {
		struct watch *w = &l->w[ev[k].data.u32];

		/* A handler may have removed this fd meanwhile. */
		if (w->fd < 0)
			continue;
		w->fn(w->fd, ev[k].events, w->opaque);
		called++;
	}
	return called;
}

int event_loop_run(struct event_loop *l)
{
	l->stop = false;
	while (!l->stop)
		poll_loop_once(l, -1);
	return 0;
}

int event_loop_start(struct event_loop *l)
{
	return -ENOTSUP;
}

void event_loop_stop(struct event_loop *l)
{
	l->stop = true;
}
