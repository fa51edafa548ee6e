/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The inode table: what the client knows by node ID, each inode held by an
 * O_PATH descriptor the server opened itself. Two hash tables (by node ID,
 * by host device and inode number) and a list of idle inodes whose
 * descriptor may be closed when the descriptor bound is reached; such an
 * inode is reopened by its file handle the next time it is used.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "virtio/fs/server-int.h"

#define FS_MIN_BUCKETS 1024

static size_t key_hash(uint64_t dev, uint64_t ino)
{
	uint64_t h = ino * 0x9e3779b97f4a7c15ULL ^ dev * 0xc2b2ae3d27d4eb4fULL;

	return (size_t)(h ^ h >> 29);
}

static size_t id_bucket(const struct fs_itable *t, uint64_t id)
{
	return (size_t)id & (t->nbuckets - 1);
}

static size_t key_bucket(const struct fs_itable *t, uint64_t dev, uint64_t ino)
{
	return key_hash(dev, ino) & (t->nbuckets - 1);
}

static void hash_insert(struct fs_itable *t, struct fs_inode *i)
{
	size_t a = id_bucket(t, i->nodeid), b = key_bucket(t, i->dev, i->ino);

	i->id_next = t->by_id[a];
	t->by_id[a] = i;
	if (i->detached)
		return;
	i->key_next = t->by_key[b];
	t->by_key[b] = i;
}

static void hash_remove(struct fs_itable *t, struct fs_inode *i)
{
	struct fs_inode **p;

	for (p = &t->by_id[id_bucket(t, i->nodeid)]; *p; p = &(*p)->id_next)
		if (*p == i) {
			*p = i->id_next;
			break;
		}
	if (i->detached)
		return;
	for (p = &t->by_key[key_bucket(t, i->dev, i->ino)]; *p; p = &(*p)->key_next)
		if (*p == i) {
			*p = i->key_next;
			break;
		}
}

/* Double the buckets once there are more inodes than buckets; on failure
 * the chains just grow longer. */
static void maybe_grow(struct fs_itable *t)
{
	size_t n = t->nbuckets * 2, old = t->nbuckets;
	struct fs_inode **a, **b, **oa = t->by_id;

	if (t->count < t->nbuckets)
		return;
	a = calloc(n, sizeof(*a));
	b = calloc(n, sizeof(*b));
	if (!a || !b) {
		free(a);
		free(b);
		return;
	}
	free(t->by_key);
	t->by_id = a;
	t->by_key = b;
	t->nbuckets = n;
	for (size_t k = 0; k < old; k++)
		for (struct fs_inode *i = oa[k], *next; i; i = next) {
			next = i->id_next;
			hash_insert(t, i);
		}
	free(oa);
}

static struct fs_inode *find_id(struct fs_itable *t, uint64_t id)
{
	for (struct fs_inode *i = t->by_id[id_bucket(t, id)]; i; i = i->id_next)
		if (i->nodeid == id)
			return i;
	return NULL;
}

static struct fs_inode *find_key(struct fs_itable *t, uint64_t dev, uint64_t ino)
{
	for (struct fs_inode *i = t->by_key[key_bucket(t, dev, ino)]; i; i = i->key_next)
		if (i->dev == dev && i->ino == ino)
			return i;
	return NULL;
}

static bool on_lru(const struct fs_itable *t, const struct fs_inode *i)
{
	return i->lru_prev || t->lru_head == i;
}

static void lru_remove(struct fs_itable *t, struct fs_inode *i)
{
	if (!on_lru(t, i))
		return;
	if (i->lru_prev)
		i->lru_prev->lru_next = i->lru_next;
	else
		t->lru_head = i->lru_next;
	if (i->lru_next)
		i->lru_next->lru_prev = i->lru_prev;
	else
		t->lru_tail = i->lru_prev;
	i->lru_prev = i->lru_next = NULL;
}

static void lru_push(struct fs_itable *t, struct fs_inode *i)
{
	i->lru_prev = NULL;
	i->lru_next = t->lru_head;
	if (t->lru_head)
		t->lru_head->lru_prev = i;
	t->lru_head = i;
	if (!t->lru_tail)
		t->lru_tail = i;
}

/* Take i out of the table (the lock held). Its descriptors are closed by
 * inode_destroy() after the lock is dropped: the last close of a file
 * deleted meanwhile frees it on the host, which can take long, and no
 * other request should wait for that. */
static struct fs_inode *inode_detach(struct fs_itable *t, struct fs_inode *i)
{
	hash_remove(t, i);
	lru_remove(t, i);
	if (i->fd >= 0)
		t->nfds--;
	t->count--;
	return i;
}

static void inode_destroy(struct fs_itable *t, struct fs_inode *i)
{
	if (!i)
		return;
	if (t->on_free)
		t->on_free(i, t->opaque);
	if (i->fd >= 0)
		close(i->fd);
	free(i->fh);
	free(i);
}

/* The handle that reopens i, made while its descriptor is still open.
 * False when the file system has none or it belongs to another mount. */
static bool make_handle(struct fs_itable *t, struct fs_inode *i)
{
	struct file_handle *fh;
	int mnt;

	if (i->fh)
		return true;
	if (!t->handles_ok)
		return false;
	fh = malloc(sizeof(*fh) + MAX_HANDLE_SZ);
	if (!fh)
		return false;
	fh->handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(i->fd, "", fh, &mnt, AT_EMPTY_PATH) < 0 || mnt != t->mount_id) {
		free(fh);
		return false;
	}
	i->fh = fh;
	return true;
}

/* Close the descriptor of the least recently used idle inode. */
static bool evict_one(struct fs_itable *t)
{
	struct fs_inode *i;

	while ((i = t->lru_tail)) {
		lru_remove(t, i);
		if (!make_handle(t, i)) {
			i->pinned = true;
			continue;
		}
		close(i->fd);
		i->fd = -1;
		t->nfds--;
		t->evictions++;
		return true;
	}
	return false;
}

static int reserve_locked(struct fs_itable *t)
{
	while (t->nfds >= t->max_fds)
		if (!evict_one(t))
			return -ENFILE;
	t->nfds++;
	return 0;
}

int fs_fd_reserve(struct fs_itable *t)
{
	int r;

	pthread_mutex_lock(&t->lock);
	r = reserve_locked(t);
	pthread_mutex_unlock(&t->lock);
	return r;
}

void fs_fd_unreserve(struct fs_itable *t)
{
	pthread_mutex_lock(&t->lock);
	t->nfds--;
	pthread_mutex_unlock(&t->lock);
}

static int reopen_locked(struct fs_itable *t, struct fs_inode *i)
{
	int r = reserve_locked(t), fd;

	if (r < 0)
		return r;
	fd = open_by_handle_at(t->mount_fd, i->fh, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		log_debug("virtio-fs: reopening inode %llu: %m", (unsigned long long)i->ino);
		t->nfds--;
		return -ESTALE;
	}
	i->fd = fd;
	t->reopens++;
	return 0;
}

int fs_inode_get(struct fs_itable *t, uint64_t nodeid, struct fs_inode **ret)
{
	struct fs_inode *i;
	int r = 0;

	pthread_mutex_lock(&t->lock);
	i = find_id(t, nodeid);
	if (!i || !i->nlookup) {
		r = -ESTALE;
		goto out;
	}
	lru_remove(t, i);
	if (i->fd < 0)
		r = reopen_locked(t, i);
	if (r < 0) {
		if (!i->refs && i->fd >= 0)
			lru_push(t, i);
		goto out;
	}
	i->refs++;
	*ret = i;
out:
	pthread_mutex_unlock(&t->lock);
	return r;
}

void fs_inode_ref(struct fs_itable *t, struct fs_inode *ino)
{
	pthread_mutex_lock(&t->lock);
	ino->refs++;
	pthread_mutex_unlock(&t->lock);
}

/* The inode to destroy once the lock is dropped, or NULL. */
static struct fs_inode *put_locked(struct fs_itable *t, struct fs_inode *i)
{
	if (--i->refs)
		return NULL;
	if (!i->nlookup && i != t->root)
		return inode_detach(t, i);
	if (i->fd >= 0 && !i->pinned && i != t->root)
		lru_push(t, i);
	return NULL;
}

void fs_inode_put(struct fs_itable *t, struct fs_inode *ino)
{
	struct fs_inode *gone;

	if (!ino)
		return;
	pthread_mutex_lock(&t->lock);
	gone = put_locked(t, ino);
	pthread_mutex_unlock(&t->lock);
	inode_destroy(t, gone);
}

/* Whether the descriptor fd is the file the evicted inode i was: an inode
 * number can be reused once no descriptor holds the old file. */
static bool same_file(struct fs_itable *t, const struct fs_inode *i, int fd)
{
	struct file_handle *fh = malloc(sizeof(*fh) + MAX_HANDLE_SZ);
	bool same;
	int mnt;

	if (!fh)
		return false;
	fh->handle_bytes = MAX_HANDLE_SZ;
	same = name_to_handle_at(fd, "", fh, &mnt, AT_EMPTY_PATH) == 0 && fh->handle_bytes == i->fh->handle_bytes &&
	       fh->handle_type == i->fh->handle_type && !memcmp(fh->f_handle, i->fh->f_handle, fh->handle_bytes);
	free(fh);
	return same;
}

/* A stale inode keeps its node ID (the client may still name it, and gets
 * ESTALE) but no longer stands for its host identity. */
static void detach_key(struct fs_itable *t, struct fs_inode *i)
{
	for (struct fs_inode **p = &t->by_key[key_bucket(t, i->dev, i->ino)]; *p; p = &(*p)->key_next)
		if (*p == i) {
			*p = i->key_next;
			break;
		}
	i->key_next = NULL;
	i->detached = true;
}

static struct fs_inode *inode_new(struct fs_itable *t, int fd, const struct stat *st, uint32_t type)
{
	struct fs_inode *i = calloc(1, sizeof(*i));

	if (!i)
		return NULL;
	i->nodeid = t->next_id++;
	i->dev = st->st_dev;
	i->ino = st->st_ino;
	i->type = type;
	i->fd = fd;
	hash_insert(t, i);
	t->count++;
	maybe_grow(t);
	return i;
}

int fs_inode_add(struct fs_itable *t, int fd, const struct stat *st, uint32_t type, struct fs_inode **ret)
{
	struct fs_inode *i;
	int r = 0;

	pthread_mutex_lock(&t->lock);
	i = find_key(t, st->st_dev, st->st_ino);
	if (i && i->fd < 0 && !same_file(t, i, fd)) {
		detach_key(t, i);
		i = NULL;
	}
	if (i) {
		lru_remove(t, i);
		if (i->fd < 0) {
			i->fd = fd; /* evicted: take the fresh descriptor */
		} else {
			close(fd);
			t->nfds--;
		}
	} else if (t->count >= t->max || !(i = inode_new(t, fd, st, type))) {
		r = t->count >= t->max ? -ENFILE : -ENOMEM;
		close(fd);
		t->nfds--;
		goto out;
	}
	i->nlookup++;
	i->refs++;
	*ret = i;
out:
	pthread_mutex_unlock(&t->lock);
	return r;
}

int fs_inode_find(struct fs_itable *t, const struct stat *st, struct fs_inode **ret)
{
	struct fs_inode *i;

	pthread_mutex_lock(&t->lock);
	i = find_key(t, st->st_dev, st->st_ino);
	/* Only while a descriptor holds it: the inode number is not reused. */
	if (i && i->fd >= 0 && i->type == (st->st_mode & S_IFMT)) {
		lru_remove(t, i);
		i->nlookup++;
		i->refs++;
		*ret = i;
	} else {
		i = NULL;
	}
	pthread_mutex_unlock(&t->lock);
	return i ? 0 : -ENOENT;
}

void fs_inode_forget(struct fs_itable *t, uint64_t nodeid, uint64_t n)
{
	struct fs_inode *i, *gone = NULL;

	pthread_mutex_lock(&t->lock);
	i = find_id(t, nodeid);
	if (i && i != t->root && i->nlookup) {
		i->nlookup = n < i->nlookup ? i->nlookup - n : 0;
		if (!i->nlookup && !i->refs)
			gone = inode_detach(t, i);
	}
	pthread_mutex_unlock(&t->lock);
	inode_destroy(t, gone);
}

/* Whether inodes can be reopened by handle here: a handle of the root
 * that opens again (open_by_handle_at needs CAP_DAC_READ_SEARCH). The
 * root's mount ID is learnt on the way. */
static void probe_handles(struct fs_itable *t)
{
	struct file_handle *fh = malloc(sizeof(*fh) + MAX_HANDLE_SZ);
	int fd;

	if (!fh)
		return;
	fh->handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(t->root->fd, "", fh, &t->mount_id, AT_EMPTY_PATH) < 0) {
		log_debug("virtio-fs: no file handles on the shared directory: %m");
		free(fh);
		return;
	}
	fd = open_by_handle_at(t->mount_fd, fh, O_PATH | O_CLOEXEC);
	free(fh);
	if (fd < 0) {
		log_debug("virtio-fs: no reopening by file handle here: %m");
		return;
	}
	close(fd);
	t->handles_ok = true;
}

int fs_itable_init(struct fs_itable *t, int root_fd, int mount_fd, const struct stat *st, size_t max, size_t max_fds)
{
	struct fs_inode *root;
	int r;

	memset(t, 0, sizeof(*t));
	t->mount_fd = -1;
	r = pthread_mutex_init(&t->lock, NULL);
	if (r) {
		close(root_fd);
		return -r;
	}
	t->nbuckets = FS_MIN_BUCKETS;
	t->by_id = calloc(t->nbuckets, sizeof(*t->by_id));
	t->by_key = calloc(t->nbuckets, sizeof(*t->by_key));
	root = calloc(1, sizeof(*root));
	if (!t->by_id || !t->by_key || !root) {
		free(root);
		free(t->by_id);
		free(t->by_key);
		t->by_id = t->by_key = NULL;
		pthread_mutex_destroy(&t->lock);
		close(root_fd);
		return -ENOMEM;
	}
	t->max = max;
	t->max_fds = max_fds;
	t->next_id = FUSE_ROOT_ID + 1;
	root->nodeid = FUSE_ROOT_ID;
	root->dev = st->st_dev;
	root->ino = st->st_ino;
	root->type = S_IFDIR;
	root->fd = root_fd;
	root->nlookup = 1;
	root->pinned = true;
	hash_insert(t, root);
	t->count = 1;
	t->nfds = 1;
	t->root = root;
	t->mount_fd = mount_fd;
	probe_handles(t);
	return 0;
}

void fs_itable_clear(struct fs_itable *t)
{
	struct fs_inode *gone = NULL;

	pthread_mutex_lock(&t->lock);
	for (size_t k = 0; k < t->nbuckets; k++) {
		struct fs_inode *i = t->by_id[k], *next;

		for (; i; i = next) {
			next = i->id_next;
			if (i == t->root)
				continue;
			inode_detach(t, i);
			i->id_next = gone;
			gone = i;
		}
	}
	t->root->refs = 0;
	pthread_mutex_unlock(&t->lock);
	while (gone) {
		struct fs_inode *i = gone;

		gone = i->id_next;
		inode_destroy(t, i);
	}
}

void fs_itable_destroy(struct fs_itable *t)
{
	if (!t->by_id)
		return;
	fs_itable_clear(t);
	inode_destroy(t, inode_detach(t, t->root));
	free(t->by_id);
	free(t->by_key);
	t->by_id = t->by_key = NULL;
	pthread_mutex_destroy(&t->lock);
}

int fs_reopen(struct fs_server *s, const struct fs_inode *ino, int flags)
{
	char name[16];
	int fd;

	snprintf(name, sizeof(name), "%d", ino->fd);
	fd = openat(s->proc_fd, name, flags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}
