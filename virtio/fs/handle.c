/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Open files and directories. The client's fh is a slot number and a
 * generation, so a stale or forged fh never reaches another file's
 * descriptor. A handle lives until RELEASE and the end of the last request
 * using it, whichever comes last.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "virtio/fs/server-int.h"

int fs_htable_init(struct fs_htable *h, uint32_t max)
{
	int r;

	memset(h, 0, sizeof(*h));
	r = pthread_mutex_init(&h->lock, NULL);
	if (r)
		return -r;
	h->max = max;
	return 0;
}

static uint64_t fh_of(uint32_t slot, uint32_t gen)
{
	return (uint64_t)gen << 32 | slot;
}

/* A free slot, growing the table when needed; UINT32_MAX when full. */
static uint32_t free_slot(struct fs_htable *h)
{
	struct fs_handle **n;
	uint32_t cap;

	for (uint32_t k = 0; k < h->cap; k++) {
		uint32_t i = (h->hint + k) % h->cap;

		if (!h->slots[i]) {
			h->hint = i + 1;
			return i;
		}
	}
	if (h->cap >= h->max)
		return UINT32_MAX;
	cap = h->cap ? h->cap * 2 : 64;
	if (cap > h->max)
		cap = h->max;
	n = realloc(h->slots, cap * sizeof(*n));
	if (!n)
		return UINT32_MAX;
	memset(n + h->cap, 0, (cap - h->cap) * sizeof(*n));
	h->slots = n;
	h->cap = cap;
	h->hint = h->used + 1;
	return h->used;
}

int fs_handle_add(struct fs_server *s, int fd, struct fs_inode *ino, bool dir, uint64_t *ret_fh)
{
	struct fs_htable *h = &s->ht;
	struct fs_handle *e = calloc(1, sizeof(*e));
	uint32_t slot;

	if (e && dir && fs_dirbuf_new(&e->dirbuf) < 0) {
		free(e);
		e = NULL;
	}
	if (!e) {
		close(fd);
		return -ENOMEM;
	}
	e->fd = fd;
	e->ino = ino;
	e->dir = dir;
	e->refs = 1; /* the client's, until RELEASE */
	pthread_mutex_lock(&h->lock);
	slot = h->used < h->max ? free_slot(h) : UINT32_MAX;
	if (slot == UINT32_MAX) {
		pthread_mutex_unlock(&h->lock);
		fs_dirbuf_free(e->dirbuf);
		free(e);
		close(fd);
		return -EMFILE;
	}
	e->gen = ++h->gen;
	h->slots[slot] = e;
	h->used++;
	*ret_fh = fh_of(slot, e->gen);
	pthread_mutex_unlock(&h->lock);
	return 0;
}

bool fs_handle_room(struct fs_server *s)
{
	bool room;

	pthread_mutex_lock(&s->ht.lock);
	room = s->ht.used < s->ht.max;
	pthread_mutex_unlock(&s->ht.lock);
	return room;
}

static struct fs_handle *find(struct fs_htable *h, uint64_t fh, bool dir)
{
	uint32_t slot = (uint32_t)fh, gen = (uint32_t)(fh >> 32);
	struct fs_handle *e;

	if (slot >= h->cap)
		return NULL;
	e = h->slots[slot];
	if (!e || e->gen != gen || e->closing || e->dir != dir)
		return NULL;
	return e;
}

int fs_handle_get(struct fs_server *s, uint64_t fh, bool dir, struct fs_handle **ret)
{
	struct fs_handle *e;

	pthread_mutex_lock(&s->ht.lock);
	e = find(&s->ht, fh, dir);
	if (e)
		e->refs++;
	pthread_mutex_unlock(&s->ht.lock);
	if (!e)
		return -EBADF;
	*ret = e;
	return 0;
}

static void handle_close(struct fs_server *s, struct fs_handle *e)
{
	close(e->fd);
	fs_dirbuf_free(e->dirbuf);
	fs_inode_put(&s->it, e->ino);
	free(e);
}

void fs_handle_put(struct fs_server *s, struct fs_handle *e)
{
	bool last;

	if (!e)
		return;
	pthread_mutex_lock(&s->ht.lock);
	last = --e->refs == 0;
	pthread_mutex_unlock(&s->ht.lock);
	if (last)
		handle_close(s, e);
}

int fs_handle_release(struct fs_server *s, uint64_t fh, bool dir, struct fs_handle **ret)
{
	struct fs_handle *e;

	pthread_mutex_lock(&s->ht.lock);
	e = find(&s->ht, fh, dir);
	if (e) {
		e->closing = true;
		s->ht.slots[(uint32_t)fh] = NULL;
		s->ht.used--;
	}
	pthread_mutex_unlock(&s->ht.lock);
	if (!e)
		return -EBADF;
	*ret = e; /* the caller puts the client's reference */
	return 0;
}

void fs_htable_clear(struct fs_server *s)
{
	struct fs_htable *h = &s->ht;

	for (uint32_t i = 0; i < h->cap; i++) {
		struct fs_handle *e = h->slots[i];

		if (!e)
			continue;
		h->slots[i] = NULL;
		h->used--;
		handle_close(s, e);
	}
}

void fs_htable_destroy(struct fs_server *s)
{
	fs_htable_clear(s);
	free(s->ht.slots);
	s->ht.slots = NULL;
	pthread_mutex_destroy(&s->ht.lock);
}

int fs_dirbuf_new(struct fs_dirbuf **ret)
{
	struct fs_dirbuf *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	d->buf = malloc(FS_DIRBUF_SIZE);
	if (!d->buf || pthread_mutex_init(&d->lock, NULL)) {
		free(d->buf);
		free(d);
		return -ENOMEM;
	}
	*ret = d;
	return 0;
}

void fs_dirbuf_free(struct fs_dirbuf *d)
{
	if (!d)
		return;
	pthread_mutex_destroy(&d->lock);
	free(d->buf);
	free(d);
}
