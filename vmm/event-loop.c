/* SPDX-License-Identifier: Apache-2.0 */
/*
 * epoll loop with a stop eventfd. Registrations are heap entries that epoll
 * points at; a removed entry is unlinked at once but only freed by the loop
 * thread between two epoll_wait() batches (or at free time), because events
 * already returned in the current batch may still point at it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "vmm/event-loop.h"

struct loop_entry {
	int fd;
	uint32_t events;
	event_handler_fn handler;
	void *opaque;
	bool removed;
	struct loop_entry *next;
};

struct event_loop {
	int epfd;
	int stopfd;
	pthread_mutex_t lock;
	pthread_cond_t idle;
	struct loop_entry *entries; /* live */
	struct loop_entry *dead; /* removed, not yet freed */
	struct loop_entry *running; /* entry whose handler runs now */
	pthread_t thread;
	bool thread_started;
	bool in_run;
	pthread_t run_thread; /* valid while in_run */
};

#define LOOP_MAX_EVENTS 32

int event_loop_new(struct event_loop **ret)
{
	struct event_loop *l;
	struct epoll_event ev = {.events = EPOLLIN};

	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	l->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (l->epfd < 0 || l->stopfd < 0)
		goto fail;
	ev.data.ptr = NULL; /* NULL marks the stop eventfd */
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->stopfd, &ev) < 0)
		goto fail;
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->idle, NULL);
	*ret = l;
	return 0;
fail : {
	int r = -errno;

	if (l->epfd >= 0)
		close(l->epfd);
	if (l->stopfd >= 0)
		close(l->stopfd);
	free(l);
	return r;
}
}

static void free_list(struct loop_entry *e)
{
	while (e) {
		struct loop_entry *n = e->next;

		free(e);
		e = n;
	}
}

void event_loop_free(struct event_loop *l)
{
	if (!l)
		return;
	event_loop_stop(l);
	free_list(l->entries);
	free_list(l->dead);
	close(l->epfd);
	close(l->stopfd);
	pthread_mutex_destroy(&l->lock);
	pthread_cond_destroy(&l->idle);
	free(l);
}

static struct loop_entry *find_entry(struct event_loop *l, int fd, struct loop_entry ***ret_link)
{
	struct loop_entry **link = &l->entries;

	for (; *link; link = &(*link)->next) {
		if ((*link)->fd == fd) {
			if (ret_link)
				*ret_link = link;
			return *link;
		}
	}
	return NULL;
}

int event_loop_add(struct event_loop *l, int fd, uint32_t events, event_handler_fn handler, void *opaque)
{
	struct loop_entry *e;
	struct epoll_event ev = {.events = events};
	int r = 0;

	if (fd < 0 || !handler)
		return -EINVAL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	*e = (struct loop_entry){.fd = fd, .events = events, .handler = handler, .opaque = opaque};
	ev.data.ptr = e;
	pthread_mutex_lock(&l->lock);
	if (find_entry(l, fd, NULL))
		r = -EEXIST;
	else if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		r = -errno;
	if (r == 0) {
		e->next = l->entries;
		l->entries = e;
	}
	pthread_mutex_unlock(&l->lock);
	if (r)
		free(e);
	return r;
}

int event_loop_modify(struct event_loop *l, int fd, uint32_t events)
{
	struct loop_entry *e;
	int r = 0;

	pthread_mutex_lock(&l->lock);
	e = find_entry(l, fd, NULL);
	if (!e) {
		r = -ENOENT;
	} else {
		struct epoll_event ev = {.events = events, .data.ptr = e};

		if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
			r = -errno;
		else
			e->events = events;
	}
	pthread_mutex_unlock(&l->lock);
	return r;
}

static bool on_loop_thread(struct event_loop *l)
{
	return l->in_run && pthread_equal(pthread_self(), l->run_thread);
}

int event_loop_remove(struct event_loop *l, int fd)
{
	struct loop_entry *e, **link;

	pthread_mutex_lock(&l->lock);
	e = find_entry(l, fd, &link);
	if (!e) {
		pthread_mutex_unlock(&l->lock);
		return -ENOENT;
	}
	/* The fd may already be closed by a careless caller: ignore errors. */
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
	*link = e->next;
	e->removed = true;
	e->next = l->dead;
	l->dead = e;
	/* From another thread, wait until its handler has returned. */
	if (!on_loop_thread(l))
		while (l->running == e)
			pthread_cond_wait(&l->idle, &l->lock);
	pthread_mutex_unlock(&l->lock);
	return 0;
}

static void dispatch(struct event_loop *l, struct epoll_event *evs, int n, bool *stop)
{
	for (int i = 0; i < n; i++) {
		struct loop_entry *e = evs[i].data.ptr;

		if (!e) {
			uint64_t v;

			if (read(l->stopfd, &v, sizeof(v)) == sizeof(v))
				*stop = true;
			continue;
		}
		pthread_mutex_lock(&l->lock);
		if (e->removed) {
			pthread_mutex_unlock(&l->lock);
			continue;
		}
		l->running = e;
		pthread_mutex_unlock(&l->lock);
		e->handler(e->fd, evs[i].events, e->opaque);
		pthread_mutex_lock(&l->lock);
		l->running = NULL;
		pthread_cond_broadcast(&l->idle);
		pthread_mutex_unlock(&l->lock);
	}
}

int event_loop_run(struct event_loop *l)
{
	struct epoll_event evs[LOOP_MAX_EVENTS];
	bool stop = false;
	int r = 0;

	pthread_mutex_lock(&l->lock);
	l->run_thread = pthread_self();
	l->in_run = true;
	pthread_mutex_unlock(&l->lock);
	while (!stop) {
		struct loop_entry *dead;
		int n;

		pthread_mutex_lock(&l->lock);
		dead = TAKE_PTR(l->dead);
		pthread_mutex_unlock(&l->lock);
		free_list(dead);
		n = epoll_wait(l->epfd, evs, LOOP_MAX_EVENTS, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		dispatch(l, evs, n, &stop);
	}
	pthread_mutex_lock(&l->lock);
	l->in_run = false;
	pthread_mutex_unlock(&l->lock);
	return r;
}

static void *loop_thread(void *arg)
{
	int r = event_loop_run(arg);

	if (r < 0)
		log_debug("event loop: %s", strerror(-r));
	return NULL;
}

int event_loop_start(struct event_loop *l)
{
	int r;

	if (l->thread_started)
		return -EBUSY;
	r = pthread_create(&l->thread, NULL, loop_thread, l);
	if (r)
		return -r;
	l->thread_started = true;
	return 0;
}

void event_loop_stop(struct event_loop *l)
{
	uint64_t one = 1;

	if (write(l->stopfd, &one, sizeof(one)) < 0)
		log_debug("event loop: stop: %s", strerror(errno));
	if (l->thread_started && !pthread_equal(pthread_self(), l->thread)) {
		pthread_join(l->thread, NULL);
		l->thread_started = false;
		/* The loop consumed at most our wakeup; drop any leftover so that
		 * a later run starts clean. */
		uint64_t v;
		while (read(l->stopfd, &v, sizeof(v)) == sizeof(v))
			;
	}
}
