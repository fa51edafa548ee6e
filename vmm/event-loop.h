/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The VMM's event loop: one epoll thread serving ioeventfds, backends (TAP,
 * vsock sockets), control sockets and signals. Handlers run on the loop
 * thread and must not block.
 */
#ifndef KVRUN_VMM_EVENT_LOOP_H
#define KVRUN_VMM_EVENT_LOOP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct event_loop;

/* events: EPOLLIN/EPOLLOUT/... as given to epoll; revents as returned. */
typedef void (*event_handler_fn)(int fd, uint32_t revents, void *opaque);

int event_loop_new(struct event_loop **ret);
/* Stops the thread if running, then frees. Accepts NULL. */
void event_loop_free(struct event_loop *l);

/* Watch fd; handler(fd, revents, opaque) is called on the loop thread. */
int event_loop_add(struct event_loop *l, int fd, uint32_t events, event_handler_fn handler, void *opaque);
int event_loop_modify(struct event_loop *l, int fd, uint32_t events);
/* After this returns, handler is not running and will not be called for fd. */
int event_loop_remove(struct event_loop *l, int fd);

/* Run on the calling thread until event_loop_stop(). */
int event_loop_run(struct event_loop *l);
/* Run on a new thread. */
int event_loop_start(struct event_loop *l);
/* Safe from any thread and from handlers; joins the thread if started. */
void event_loop_stop(struct event_loop *l);

#endif
