/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Locks: GETLK, SETLK, SETLKW (POSIX record locks and flock), and
 * INTERRUPT, which ends a SETLKW that waits.
 *
 * A POSIX lock belongs to a process (the client's lock owner) and a file;
 * the host's open file description locks (F_OFD_*) belong to a
 * descriptor. So each (inode, owner) gets a descriptor of its own, opened
 * at its first lock and closed at the owner's FLUSH (a close() in the
 * client), which releases its locks as POSIX requires. flock locks belong
 * to the open file, the client's handle: flock() on the handle's
 * descriptor. A lock that must wait is kept by the server (fs_request's
 * defer/complete) and retried by the lock thread, so no worker waits for
 * an unlock that needs a worker; a transport without deferral waits in
 * the call. Both poll (the host call would block a thread that nothing
 * could wake), so an INTERRUPT or a reset ends the wait.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "virtio/fs/server-int.h"

#define FS_OFFSET_MAX INT64_MAX /* FUSE's "to the end of the file" */

struct fs_plock {
	uint64_t owner;
	int fd;
	struct fs_plock *next;
};

struct fs_intr {
	uint64_t unique;
	bool interrupted;
	struct fs_intr *next;
};

void fs_plocks_drop(struct fs_inode *ino, void *server)
{
	struct fs_server *s = server;

	pthread_mutex_lock(&s->plock_lock);
	while (ino->plocks) {
		struct fs_plock *p = ino->plocks;

		ino->plocks = p->next;
		close(p->fd);
		free(p);
		s->nplocks--;
	}
	pthread_mutex_unlock(&s->plock_lock);
}

void fs_plocks_release_owner(struct fs_server *s, struct fs_inode *ino, uint64_t owner)
{
	pthread_mutex_lock(&s->plock_lock);
	for (struct fs_plock **pp = &ino->plocks; *pp; pp = &(*pp)->next) {
		struct fs_plock *p = *pp;

		if (p->owner == owner) {
			*pp = p->next;
			close(p->fd);
			free(p);
			s->nplocks--;
			break;
		}
	}
	pthread_mutex_unlock(&s->plock_lock);
}

/* A descriptor of ino for locking (read-write where the host allows). */
static int lock_open(struct fs_server *s, struct fs_inode *ino)
{
	int fd = fs_reopen(s, ino, O_RDWR);

	return fd >= 0 ? fd : fs_reopen(s, ino, O_RDONLY);
}

/* Under plock_lock: owner's descriptor on ino, made when create. */
static int plock_fd(struct fs_server *s, struct fs_inode *ino, uint64_t owner, bool create)
{
	struct fs_plock *p;

	for (p = ino->plocks; p; p = p->next)
		if (p->owner == owner)
			return p->fd;
	if (!create)
		return -ENOENT;
	if (s->nplocks >= s->opts.max_handles)
		return -ENOLCK;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOLCK;
	p->fd = lock_open(s, ino);
	if (p->fd < 0) {
		int r = p->fd;

		free(p);
		return r;
	}
	p->owner = owner;
	p->next = ino->plocks;
	ino->plocks = p;
	s->nplocks++;
	return p->fd;
}

static int to_flock(const struct fuse_file_lock *lk, struct flock *fl)
{
	if (lk->type != F_RDLCK && lk->type != F_WRLCK && lk->type != F_UNLCK)
		return -EINVAL;
	if (lk->start > FS_OFFSET_MAX || (lk->end != FS_OFFSET_MAX && lk->end < lk->start) ||
	    (lk->end > FS_OFFSET_MAX && lk->end != UINT64_MAX))
		return -EINVAL;
	*fl = (struct flock){.l_type = (short)lk->type, .l_whence = SEEK_SET, .l_start = (off_t)lk->start};
	fl->l_len = lk->end >= FS_OFFSET_MAX ? 0 : (off_t)(lk->end - lk->start + 1);
	return 0;
}

/* The lock request's node must be the open file's, and a regular file. */
static int lock_target(struct fs_ctx *c, const struct fuse_lk_in *in, struct fs_handle **ret)
{
	int r = fs_handle_get(c->s, in->fh, false, ret);

	if (r >= 0 && (*ret)->ino->nodeid != c->h.nodeid) {
		fs_handle_put(c->s, *ret);
		r = -EBADF;
	}
	return r;
}

int fs_op_getlk(struct fs_ctx *c)
{
	const struct fuse_lk_in *in = fs_arg(c, 0);
	struct fuse_lk_out out = {0};
	struct fs_handle *h;
	struct flock fl;
	bool temp = false;
	int r, fd;

	r = to_flock(&in->lk, &fl);
	if (r >= 0)
		r = lock_target(c, in, &h);
	if (r < 0)
		return r;
	pthread_mutex_lock(&c->s->plock_lock);
	fd = plock_fd(c->s, h->ino, in->owner, false);
	/* Without locks of its own the owner conflicts with every lock. */
	if (fd < 0) {
		fd = lock_open(c->s, h->ino);
		temp = fd >= 0;
	}
	r = fd < 0 ? fd : fcntl(fd, F_OFD_GETLK, &fl) < 0 ? -errno : 0;
	if (temp)
		close(fd);
	pthread_mutex_unlock(&c->s->plock_lock);
	fs_handle_put(c->s, h);
	if (r < 0)
		return r;
	out.lk.type = (uint32_t)fl.l_type;
	if (fl.l_type != F_UNLCK) {
		out.lk.start = (uint64_t)fl.l_start;
		out.lk.end = fl.l_len ? (uint64_t)(fl.l_start + fl.l_len - 1) : FS_OFFSET_MAX;
		out.lk.pid = fl.l_pid > 0 ? (uint32_t)fl.l_pid : 0; /* another owner than the host knows */
	}
	return fs_reply(c, &out, sizeof(out));
}

struct lock_try {
	struct fs_server *s;
	struct fs_handle *h;
	const struct fuse_lk_in *in;
	struct flock fl;
};

static int try_lock(struct lock_try *t)
{
	int r, fd, op;

	if (t->in->lk_flags & FUSE_LK_FLOCK) {
		op = t->fl.l_type == F_UNLCK ? LOCK_UN : t->fl.l_type == F_RDLCK ? LOCK_SH : LOCK_EX;
		return flock(t->h->fd, op | LOCK_NB) < 0 ? (errno == EWOULDBLOCK ? -EAGAIN : -errno) : 0;
	}
	pthread_mutex_lock(&t->s->plock_lock);
	fd = plock_fd(t->s, t->h->ino, t->in->owner, t->fl.l_type != F_UNLCK);
	if (fd == -ENOENT)
		r = 0; /* unlocking an owner that holds nothing */
	else
		r = fd < 0 ? fd : fcntl(fd, F_OFD_SETLK, &t->fl) < 0 ? -errno : 0;
	pthread_mutex_unlock(&t->s->plock_lock);
	return r == -EACCES ? -EAGAIN : r;
}

static bool was_interrupted(struct fs_server *s, uint64_t unique)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(s->recent_intr); i++)
		if (s->recent_intr[i] == unique)
			return true;
	return false;
}

/* Retry t until it is granted, fails otherwise, or an INTERRUPT for this
 * request (or fs_server_cancel_waits(), or a DESTROY waiting for the
 * requests in flight) ends the wait with EINTR. */
static int wait_lock(struct fs_ctx *c, struct lock_try *t)
{
	struct fs_server *s = c->s;
	struct fs_intr me = {.unique = c->h.unique};
	long delay_ms = 1;
	int r;

	pthread_mutex_lock(&s->intr_lock);
	me.interrupted = was_interrupted(s, me.unique);
	me.next = s->waits;
	s->waits = &me;
	pthread_mutex_unlock(&s->intr_lock);
	for (;;) {
		struct timespec until;

		r = try_lock(t);
		if (r != -EAGAIN)
			break;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += delay_ms * 1000000;
		until.tv_sec += until.tv_nsec / 1000000000;
		until.tv_nsec %= 1000000000;
		pthread_mutex_lock(&s->intr_lock);
		if (!me.interrupted && !s->cancel && !s->destroying)
			pthread_cond_timedwait(&s->intr_cond, &s->intr_lock, &until);
		r = me.interrupted || s->cancel || s->destroying ? -EINTR : 0;
		pthread_mutex_unlock(&s->intr_lock);
		if (r < 0)
			break;
		delay_ms = delay_ms < 64 ? delay_ms * 2 : 100;
	}
	pthread_mutex_lock(&s->intr_lock);
	for (struct fs_intr **pp = &s->waits; *pp; pp = &(*pp)->next)
		if (*pp == &me) {
			*pp = me.next;
			break;
		}
	pthread_mutex_unlock(&s->intr_lock);
	return r;
}

/* A deferred lock: retried by the lock thread until granted, refused or
 * interrupted, then answered through the transport. */
struct fs_parked {
	struct lock_try t; /* holds a reference to the handle */
	struct fuse_lk_in in;
	uint64_t unique;
	bool interrupted;
	int result; /* once finished */
	void *token;
	void (*complete)(void *token, const void *reply, size_t len);
	struct fs_parked *next;
};

static void parked_finish(struct fs_server *s, struct fs_parked *p, int r)
{
	struct fuse_out_header oh = {.len = sizeof(oh), .error = r, .unique = p->unique};

	fs_handle_put(s, p->t.h);
	p->complete(p->token, &oh, sizeof(oh));
	free(p);
}

/* One pass over the deferred locks (intr_lock held): those finished move
 * to *done, to be completed without the lock. */
static void lock_pass(struct fs_server *s, struct fs_parked **done)
{
	struct fs_parked **pp = &s->parked;

	while (*pp) {
		struct fs_parked *p = *pp;
		int r = p->interrupted || s->cancel || s->lock_thread_stop ? -EINTR : try_lock(&p->t);

		if (r == -EAGAIN) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		s->nparked--;
		p->result = r;
		p->next = *done;
		*done = p;
	}
}

static void *lock_thread(void *arg)
{
	struct fs_server *s = arg;
	long delay_ms = 1;

	pthread_setname_np(pthread_self(), FS_LOCK_THREAD_NAME);
	pthread_mutex_lock(&s->intr_lock);
	for (;;) {
		struct fs_parked *done = NULL;
		struct timespec until;

		lock_pass(s, &done);
		if (done) {
			s->completing = true;
			pthread_mutex_unlock(&s->intr_lock);
			while (done) {
				struct fs_parked *p = done;

				done = p->next;
				parked_finish(s, p, p->result);
			}
			pthread_mutex_lock(&s->intr_lock);
			s->completing = false;
			pthread_cond_broadcast(&s->intr_cond); /* fs_locks_drain() */
			delay_ms = 1;
			continue;
		}
		if (s->lock_thread_stop && !s->parked)
			break;
		if (!s->parked) {
			pthread_cond_wait(&s->intr_cond, &s->intr_lock);
			delay_ms = 1;
			continue;
		}
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += delay_ms * 1000000;
		until.tv_sec += until.tv_nsec / 1000000000;
		until.tv_nsec %= 1000000000;
		pthread_cond_timedwait(&s->intr_cond, &s->intr_lock, &until);
		delay_ms = delay_ms < 64 ? delay_ms * 2 : 100;
	}
	pthread_mutex_unlock(&s->intr_lock);
	return NULL;
}

/* Keep t for the lock thread; 0, or -errno when it cannot be kept (the
 * caller then waits in place). */
static int park(struct fs_ctx *c, struct lock_try *t)
{
	struct fs_server *s = c->s;
	struct fs_parked *p;
	int r = 0;

	pthread_mutex_lock(&s->intr_lock);
	if (s->nparked >= FS_MAX_PARKED)
		r = -ENOLCK;
	else if (!s->lock_thread_started && !s->lock_thread_stop) {
		r = -pthread_create(&s->lock_thread, NULL, lock_thread, s);
		s->lock_thread_started = r == 0;
	}
	pthread_mutex_unlock(&s->intr_lock);
	if (r < 0)
		return r;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->in = *t->in;
	p->t = *t;
	p->t.in = &p->in;
	p->unique = c->h.unique;
	p->complete = c->req->complete;
	p->token = c->req->defer(c->req->opaque);
	if (!p->token) {
		free(p);
		return -ENOMEM;
	}
	pthread_mutex_lock(&s->intr_lock);
	p->interrupted = was_interrupted(s, p->unique);
	p->next = s->parked;
	s->parked = p;
	s->nparked++;
	pthread_cond_broadcast(&s->intr_cond);
	pthread_mutex_unlock(&s->intr_lock);
	return 0;
}

void fs_locks_drain(struct fs_server *s)
{
	bool was;

	pthread_mutex_lock(&s->intr_lock);
	was = s->cancel;
	s->cancel = true;
	pthread_cond_broadcast(&s->intr_cond);
	while (s->parked || s->completing)
		pthread_cond_wait(&s->intr_cond, &s->intr_lock);
	s->cancel = was;
	pthread_mutex_unlock(&s->intr_lock);
}

void fs_locks_stop(struct fs_server *s)
{
	bool started;

	pthread_mutex_lock(&s->intr_lock);
	s->lock_thread_stop = true;
	started = s->lock_thread_started;
	pthread_cond_broadcast(&s->intr_cond);
	pthread_mutex_unlock(&s->intr_lock);
	if (started)
		pthread_join(s->lock_thread, NULL);
}

static int do_setlk(struct fs_ctx *c, bool wait)
{
	struct lock_try t = {.s = c->s, .in = fs_arg(c, 0)};
	int r;

	r = to_flock(&t.in->lk, &t.fl);
	if (r >= 0)
		r = lock_target(c, t.in, &t.h);
	if (r < 0)
		return r;
	r = try_lock(&t);
	if (r == -EAGAIN && wait && t.fl.l_type != F_UNLCK) {
		/* The handle's reference goes with a parked lock, whose reply
		 * is written later: no room for it, no wait. */
		if (c->out_len < sizeof(struct fuse_out_header))
			r = -EINVAL;
		else if (c->req->defer && c->req->complete && (r = park(c, &t)) == 0)
			return FS_LATER;
		else if (r != -ENOLCK)
			r = wait_lock(c, &t);
	}
	fs_handle_put(c->s, t.h);
	return r < 0 ? r : fs_reply(c, NULL, 0);
}

int fs_op_setlk(struct fs_ctx *c)
{
	return do_setlk(c, false);
}

int fs_op_setlkw(struct fs_ctx *c)
{
	return do_setlk(c, true);
}

int fs_op_interrupt(struct fs_ctx *c)
{
	const struct fuse_interrupt_in *in = fs_arg(c, 0);
	struct fs_server *s = c->s;
	bool found = false;

	pthread_mutex_lock(&s->intr_lock);
	for (struct fs_intr *w = s->waits; w; w = w->next)
		if (w->unique == in->unique)
			w->interrupted = found = true;
	for (struct fs_parked *p = s->parked; p; p = p->next)
		if (p->unique == in->unique)
			p->interrupted = found = true;
	if (found)
		pthread_cond_broadcast(&s->intr_cond);
	/* The request may not have started waiting yet. */
	if (!found) {
		s->recent_intr[s->recent_next] = in->unique;
		s->recent_next = (s->recent_next + 1) % ARRAY_SIZE(s->recent_intr);
	}
	pthread_mutex_unlock(&s->intr_lock);
	return FS_NO_REPLY;
}

void fs_server_cancel_waits(struct fs_server *s, bool cancel)
{
	pthread_mutex_lock(&s->intr_lock);
	s->cancel = cancel;
	pthread_cond_broadcast(&s->intr_cond);
	pthread_mutex_unlock(&s->intr_lock);
}
