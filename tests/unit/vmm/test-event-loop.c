/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "tap.h"
#include "vmm/event-loop.h"

struct ctx {
	struct event_loop *l;
	atomic_int calls;
	int other_fd;
	bool stop_after;
	bool remove_self;
};

static void handler(int fd, uint32_t revents, void *opaque)
{
	struct ctx *c = opaque;
	uint64_t v;

	if (read(fd, &v, sizeof(v)) != sizeof(v))
		return;
	atomic_fetch_add(&c->calls, 1);
	if (c->remove_self)
		event_loop_remove(c->l, fd);
	if (c->other_fd >= 0)
		event_loop_remove(c->l, c->other_fd);
	if (c->stop_after)
		event_loop_stop(c->l);
}

static void kick(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) != sizeof(one))
		printf("# write failed\n");
}

TEST(add_remove_stop_from_handler)
{
	struct event_loop *l;
	struct ctx c = {.other_fd = -1, .stop_after = true};
	int fd = eventfd(0, EFD_NONBLOCK);

	is_int(event_loop_new(&l), 0);
	c.l = l;
	is_int(event_loop_add(l, fd, EPOLLIN, handler, &c), 0);
	is_int(event_loop_add(l, fd, EPOLLIN, handler, &c), -EEXIST);
	kick(fd);
	/* The handler stops the loop: run() returns. */
	is_int(event_loop_run(l), 0);
	is_int(atomic_load(&c.calls), 1);
	is_int(event_loop_modify(l, fd, EPOLLIN), 0);
	is_int(event_loop_remove(l, fd), 0);
	is_int(event_loop_remove(l, fd), -ENOENT);
	event_loop_free(l);
	close(fd);
}

TEST(remove_other_from_handler)
{
	struct event_loop *l;
	struct ctx c1 = {.other_fd = -1}, c2 = {.other_fd = -1, .stop_after = true};
	int fd1 = eventfd(0, EFD_NONBLOCK), fd2 = eventfd(0, EFD_NONBLOCK);

	event_loop_new(&l);
	c1.l = c2.l = l;
	/* Both ready in the same batch; whichever runs first removes the
	 * other, which must then not be called. */
	c1.other_fd = fd2;
	c1.remove_self = true;
	c2.other_fd = fd1;
	c2.remove_self = true;
	event_loop_add(l, fd1, EPOLLIN, handler, &c1);
	event_loop_add(l, fd2, EPOLLIN, handler, &c2);
	kick(fd1);
	kick(fd2);
	is_int(event_loop_start(l), 0);
	for (int i = 0; i < 2000 && atomic_load(&c1.calls) + atomic_load(&c2.calls) == 0; i++)
		usleep(1000);
	usleep(20000);
	is_int(atomic_load(&c1.calls) + atomic_load(&c2.calls), 1);
	event_loop_stop(l);
	event_loop_free(l);
	close(fd1);
	close(fd2);
}

TEST(stop_from_other_thread_and_remove_waits)
{
	struct event_loop *l;
	struct ctx c = {.other_fd = -1};
	int fd = eventfd(0, EFD_NONBLOCK);

	event_loop_new(&l);
	c.l = l;
	event_loop_add(l, fd, EPOLLIN, handler, &c);
	is_int(event_loop_start(l), 0);
	is_int(event_loop_start(l), -EBUSY);
	kick(fd);
	for (int i = 0; i < 2000 && atomic_load(&c.calls) == 0; i++)
		usleep(1000);
	is_int(atomic_load(&c.calls), 1);
	/* Removal from another thread while the loop runs. */
	is_int(event_loop_remove(l, fd), 0);
	kick(fd);
	usleep(20000);
	is_int(atomic_load(&c.calls), 1);
	event_loop_stop(l);
	ok(1, "stop joined the loop thread");
	event_loop_free(l);
	close(fd);
}

struct slow {
	atomic_int entered, left;
};

static void slow_handler(int fd, uint32_t revents, void *opaque)
{
	struct slow *sl = opaque;
	uint64_t v;

	if (read(fd, &v, sizeof(v)) != sizeof(v))
		return;
	atomic_store(&sl->entered, 1);
	usleep(100000);
	atomic_store(&sl->left, 1);
}

TEST(remove_waits_for_running_handler)
{
	struct event_loop *l;
	struct slow sl = {0};
	int fd = eventfd(0, EFD_NONBLOCK);

	event_loop_new(&l);
	event_loop_add(l, fd, EPOLLIN, slow_handler, &sl);
	event_loop_start(l);
	kick(fd);
	for (int i = 0; i < 2000 && !atomic_load(&sl.entered); i++)
		usleep(1000);
	ok(atomic_load(&sl.entered), "handler started");
	is_int(event_loop_remove(l, fd), 0);
	ok(atomic_load(&sl.left), "remove returned only after the handler did");
	event_loop_free(l);
	close(fd);
}

TAP_MAIN()
