/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The FUSE server's front: setting up, framing (header, arguments copied
 * out of the client's buffers before use, the reply), the opcode table,
 * INIT and DESTROY.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "virtio/fs/server-int.h"
#include "virtio/virtqueue.h"

/* What the server asks for at INIT, when the client offers it; lock
 * forwarding only with FS_LOCKS_HOST. */
#define FS_WANTED_FLAGS                                                                                         \
	(FUSE_ASYNC_READ | FUSE_ATOMIC_O_TRUNC | FUSE_BIG_WRITES | FUSE_AUTO_INVAL_DATA | FUSE_DO_READDIRPLUS | \
	 FUSE_READDIRPLUS_AUTO | FUSE_ASYNC_DIO | FUSE_PARALLEL_DIROPS | FUSE_MAX_PAGES | FUSE_CACHE_SYMLINKS)
#define FS_LOCK_FLAGS (FUSE_POSIX_LOCKS | FUSE_FLOCK_LOCKS)

#define W FS_OP_WRITES
#define L FS_OP_HOST_LOCKS
#define FS_OP_WRITES 1 /* refused with EROFS on a read-only share */
#define FS_OP_HOST_LOCKS 2 /* only with FS_LOCKS_HOST: ENOSYS with FS_LOCKS_GUEST */

struct fs_op {
	int (*fn)(struct fs_ctx *c);
	uint16_t arg_size; /* fixed arguments the request must carry */
	uint8_t flags;
};

static int fs_op_init(struct fs_ctx *c);
static int fs_op_destroy(struct fs_ctx *c);

static const struct fs_op fs_ops[] = {
    [FUSE_LOOKUP] = {fs_op_lookup, 0, 0},
    [FUSE_FORGET] = {fs_op_forget, sizeof(struct fuse_forget_in), 0},
    [FUSE_GETATTR] = {fs_op_getattr, sizeof(struct fuse_getattr_in), 0},
    [FUSE_SETATTR] = {fs_op_setattr, sizeof(struct fuse_setattr_in), W},
    [FUSE_READLINK] = {fs_op_readlink, 0, 0},
    [FUSE_SYMLINK] = {fs_op_symlink, 0, W},
    [FUSE_MKNOD] = {fs_op_mknod, sizeof(struct fuse_mknod_in), W},
    [FUSE_MKDIR] = {fs_op_mkdir, sizeof(struct fuse_mkdir_in), W},
    [FUSE_UNLINK] = {fs_op_unlink, 0, W},
    [FUSE_RMDIR] = {fs_op_rmdir, 0, W},
    [FUSE_RENAME] = {fs_op_rename, sizeof(struct fuse_rename_in), W},
    [FUSE_LINK] = {fs_op_link, sizeof(struct fuse_link_in), W},
    [FUSE_OPEN] = {fs_op_open, sizeof(struct fuse_open_in), 0},
    [FUSE_READ] = {fs_op_read, sizeof(struct fuse_read_in), 0},
    [FUSE_WRITE] = {fs_op_write, sizeof(struct fuse_write_in), W},
    [FUSE_STATFS] = {fs_op_statfs, 0, 0},
    [FUSE_RELEASE] = {fs_op_release, sizeof(struct fuse_release_in), 0},
    [FUSE_FSYNC] = {fs_op_fsync, sizeof(struct fuse_fsync_in), 0},
    [FUSE_SETXATTR] = {fs_op_setxattr, FUSE_COMPAT_SETXATTR_IN_SIZE, W},
    [FUSE_GETXATTR] = {fs_op_getxattr, sizeof(struct fuse_getxattr_in), 0},
    [FUSE_LISTXATTR] = {fs_op_listxattr, sizeof(struct fuse_getxattr_in), 0},
    [FUSE_REMOVEXATTR] = {fs_op_removexattr, 0, W},
    [FUSE_FLUSH] = {fs_op_flush, sizeof(struct fuse_flush_in), L},
    [FUSE_INIT] = {fs_op_init, 8, 0},
    [FUSE_OPENDIR] = {fs_op_opendir, sizeof(struct fuse_open_in), 0},
    [FUSE_READDIR] = {fs_op_readdir, sizeof(struct fuse_read_in), 0},
    [FUSE_RELEASEDIR] = {fs_op_releasedir, sizeof(struct fuse_release_in), 0},
    [FUSE_FSYNCDIR] = {fs_op_fsyncdir, sizeof(struct fuse_fsync_in), 0},
    [FUSE_GETLK] = {fs_op_getlk, sizeof(struct fuse_lk_in), L},
    [FUSE_SETLK] = {fs_op_setlk, sizeof(struct fuse_lk_in), L},
    [FUSE_SETLKW] = {fs_op_setlkw, sizeof(struct fuse_lk_in), L},
    [FUSE_ACCESS] = {fs_op_access, sizeof(struct fuse_access_in), 0},
    [FUSE_CREATE] = {fs_op_create, sizeof(struct fuse_create_in), W},
    [FUSE_INTERRUPT] = {fs_op_interrupt, sizeof(struct fuse_interrupt_in), 0},
    [FUSE_DESTROY] = {fs_op_destroy, 0, 0},
    [FUSE_BATCH_FORGET] = {fs_op_batch_forget, sizeof(struct fuse_batch_forget_in), 0},
    [FUSE_FALLOCATE] = {fs_op_fallocate, sizeof(struct fuse_fallocate_in), W},
    [FUSE_READDIRPLUS] = {fs_op_readdirplus, sizeof(struct fuse_read_in), 0},
    [FUSE_RENAME2] = {fs_op_rename2, sizeof(struct fuse_rename2_in), W},
    [FUSE_LSEEK] = {fs_op_lseek, sizeof(struct fuse_lseek_in), 0},
    [FUSE_COPY_FILE_RANGE] = {fs_op_copy_file_range, sizeof(struct fuse_copy_file_range_in), W},
    [FUSE_SYNCFS] = {fs_op_syncfs, sizeof(struct fuse_syncfs_in), 0},
};

#undef W
#undef L

void fs_server_opts_default(struct fs_server_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->max_write = FS_DEFAULT_MAX_WRITE;
	o->max_inodes = 262144;
	o->max_inode_fds = 65536;
	o->max_handles = 4096;
	o->entry_timeout = 1.0;
	o->attr_timeout = 1.0;
	o->root_fd = -1;
	o->proc_fd = -1;
}

/* ---- INIT and DESTROY ---------------------------------------------- */

static int fs_op_init(struct fs_ctx *c)
{
	const struct fuse_init_in *in = fs_arg(c, 0);
	struct fuse_init_out out = {.major = FUSE_KERNEL_VERSION};
	struct fs_server *s = c->s;
	uint32_t minor;

	if (in->major < 7)
		return -EPROTO;
	if (in->major > 7) {
		/* The client asks again with our major (FUSE's rule). */
		out.minor = FUSE_KERNEL_MINOR_VERSION;
		return fs_reply(c, &out, sizeof(out));
	}
	if (in->minor < FS_MIN_MINOR || c->arg_len < offsetof(struct fuse_init_in, flags2))
		return -EPROTO;
	minor = in->minor < FUSE_KERNEL_MINOR_VERSION ? in->minor : FUSE_KERNEL_MINOR_VERSION;
	pthread_mutex_lock(&s->state_lock);
	if (s->initialized) {
		pthread_mutex_unlock(&s->state_lock);
		return -EINVAL;
	}
	s->minor = minor;
	__atomic_store_n(&s->initialized, true, __ATOMIC_RELEASE);
	s->max_write = s->opts.max_write;
	pthread_mutex_unlock(&s->state_lock);
	out.minor = minor;
	out.flags = in->flags & (FS_WANTED_FLAGS | (s->opts.locks == FS_LOCKS_HOST ? FS_LOCK_FLAGS : 0));
	out.max_readahead = in->max_readahead < s->max_write ? in->max_readahead : s->max_write;
	out.max_background = 64;
	out.congestion_threshold = 48;
	out.max_write = s->max_write;
	out.time_gran = 1;
	out.max_pages = (uint16_t)((s->max_write + 4095) / 4096);
	return fs_reply(c, &out, sizeof(out));
}

static int fs_op_destroy(struct fs_ctx *c)
{
	/* The client unmounted: nothing it knew stays open. Only this
	 * request runs now (session_enter()): Linux sends DESTROY last, but
	 * another driver may not. */
	fs_locks_drain(c->s);
	fs_htable_clear(c->s);
	fs_itable_clear(&c->s->it);
	pthread_mutex_lock(&c->s->state_lock);
	__atomic_store_n(&c->s->initialized, false, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&c->s->state_lock);
	return fs_reply(c, NULL, 0);
}

/* ---- dispatch ------------------------------------------------------ */

static size_t iov_total(const struct iovec *iov, unsigned int n)
{
	size_t t = 0;

	for (unsigned int i = 0; i < n; i++)
		t += iov[i].iov_len;
	return t;
}

/* Copy the arguments out of the client's buffers: it may change them
 * while the request runs. WRITE's data stays where it is. */
static int copy_args(struct fs_ctx *c)
{
	size_t n = c->h.len - sizeof(c->h);

	if (c->h.opcode == FUSE_WRITE && n > sizeof(struct fuse_write_in))
		n = sizeof(struct fuse_write_in);
	if (n > FS_ARGS_MAX)
		return -EINVAL;
	c->arg_len = iov_to_buf(c->in, c->nin, sizeof(c->h), c->w->args, n);
	c->arg = c->w->args;
	return 0;
}

static int dispatch(struct fs_ctx *c)
{
	const struct fs_op *op = c->h.opcode < ARRAY_SIZE(fs_ops) ? &fs_ops[c->h.opcode] : NULL;
	bool init;
	int r;

	if (c->h.len != c->in_len || c->h.len < sizeof(c->h))
		return -EINVAL;
	if (!op || !op->fn)
		return -ENOSYS;
	/* Locks kept by the client: it has no reason to send these, and
	 * nothing it sends reaches a host lock. */
	if ((op->flags & FS_OP_HOST_LOCKS) && c->s->opts.locks != FS_LOCKS_HOST)
		return -ENOSYS;
	r = copy_args(c);
	if (r < 0)
		return r;
	if (c->arg_len < op->arg_size)
		return -EINVAL;
	/* INIT set it under the lock; a request after it sees it set. */
	init = __atomic_load_n(&c->s->initialized, __ATOMIC_ACQUIRE);
	if (!init && c->h.opcode != FUSE_INIT)
		return -EIO;
	if ((op->flags & FS_OP_WRITES) && c->s->opts.read_only)
		return -EROFS;
	return op->fn(c);
}

size_t fs_server_handle(struct fs_server *s, struct fs_worker *w, const struct iovec *in, unsigned int nin,
                        const struct iovec *out, unsigned int nout)
{
	struct fs_request req = {.in = in, .nin = nin, .out = out, .nout = nout};

	return fs_server_run(s, w, &req);
}

/* DESTROY runs alone: it waits for the requests in flight (a lock waiting
 * in its call gives up, EINTR) and keeps new ones out until it is done.
 * Writers first: a driver that keeps requests coming cannot hold it off. */
static void session_enter(struct fs_server *s, bool alone)
{
	if (!alone) {
		pthread_rwlock_rdlock(&s->session);
		return;
	}
	pthread_mutex_lock(&s->intr_lock);
	s->destroying++;
	pthread_cond_broadcast(&s->intr_cond);
	pthread_mutex_unlock(&s->intr_lock);
	pthread_rwlock_wrlock(&s->session);
	pthread_mutex_lock(&s->intr_lock);
	s->destroying--;
	pthread_mutex_unlock(&s->intr_lock);
}

size_t fs_server_run(struct fs_server *s, struct fs_worker *w, const struct fs_request *req)
{
	struct fs_ctx c = {
	    .s = s, .w = w, .in = req->in, .nin = req->nin, .out = req->out, .nout = req->nout, .req = req};
	const struct iovec *in = req->in, *out = req->out;
	unsigned int nin = req->nin, nout = req->nout;
	int r;

	c.in_len = iov_total(in, nin);
	c.out_len = iov_total(out, nout);
	if (iov_to_buf(in, nin, 0, &c.h, sizeof(c.h)) < sizeof(c.h)) {
		log_debug("virtio-fs: request without a header (%zu bytes)", c.in_len);
		return 0;
	}
	session_enter(s, c.h.opcode == FUSE_DESTROY);
	r = dispatch(&c);
	pthread_rwlock_unlock(&s->session);
	if (r == FS_NO_REPLY)
		return 0;
	if (r == FS_LATER)
		return FS_DEFERRED;
	if (c.out_len < sizeof(struct fuse_out_header))
		return 0;
	if (r < 0) {
		log_debug("virtio-fs: opcode %u: %s", c.h.opcode, strerror(-r));
		fs_reply_error(&c, r);
	}
	return c.reply_len;
}

/* ---- lifetime ------------------------------------------------------ */

static int check_opts(const struct fs_server_opts *o)
{
	if (!o->root || !*o->root)
		return err_set(-EINVAL, "virtio-fs: no shared directory");
	if (o->max_write < 4096 || o->max_write > (16u << 20))
		return err_set(-EINVAL, "virtio-fs: max_write %u is not within 4 KiB..16 MiB", o->max_write);
	if (o->max_inodes < 2 || o->max_inode_fds < 2 || o->max_handles < 1)
		return err_set(-EINVAL, "virtio-fs: inode, descriptor and handle bounds must be at least 2, 2 and 1");
	if (o->entry_timeout < 0 || o->attr_timeout < 0 || o->negative_timeout < 0)
		return err_set(-EINVAL, "virtio-fs: negative cache timeout");
	if (!fs_locks_name(o->locks))
		return err_set(-EINVAL, "virtio-fs: unknown lock mode %d", (int)o->locks);
	return 0;
}

/* The descriptor bounds must fit RLIMIT_NOFILE: inode descriptors, a
 * handle and a lock descriptor per handle, and room for the rest of the
 * process. What does not fit is cut (a client past a cut bound gets
 * ENFILE or EMFILE, not a server out of descriptors). */
static void fit_rlimit(struct fs_server_opts *o)
{
	struct rlimit rl;
	uint64_t avail;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return;
	avail = rl.rlim_cur > FS_FD_RESERVE + 8 ? rl.rlim_cur - FS_FD_RESERVE : 8;
	if ((uint64_t)o->max_inode_fds + 2ULL * o->max_handles <= avail)
		return;
	if (o->max_handles > avail / 4)
		o->max_handles = avail / 4 ? (uint32_t)(avail / 4) : 1;
	if ((uint64_t)o->max_inode_fds > avail - 2ULL * o->max_handles)
		o->max_inode_fds = (uint32_t)(avail - 2ULL * o->max_handles);
	if (o->max_inode_fds < 2)
		o->max_inode_fds = 2;
	log_debug("virtio-fs: RLIMIT_NOFILE %llu: at most %u inode descriptors and %u handles",
	          (unsigned long long)rl.rlim_cur, o->max_inode_fds, o->max_handles);
}

/* The shared directory as an O_PATH descriptor (the root inode's), and
 * opened for reading (syncfs, open_by_handle_at): from root_fd when given,
 * so that nothing is resolved by path. */
static int open_root(struct fs_server *s, struct stat *st)
{
	int fd = s->opts.root_fd >= 0 ? openat(s->opts.root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC)
	                              : open(s->opts.root, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return err_setsys(-errno, "virtio-fs: shared directory %s", s->opts.root);
	if (fstat(fd, st) < 0) {
		close(fd);
		return err_setsys(-errno, "virtio-fs: shared directory %s", s->opts.root);
	}
	s->root_dir_fd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->root_dir_fd < 0) {
		close(fd);
		return err_setsys(-errno, "virtio-fs: shared directory %s", s->opts.root);
	}
	return fd;
}

static int open_proc(struct fs_server *s)
{
	struct statfs sf;

	s->proc_fd = s->opts.proc_fd >= 0 ? fcntl(s->opts.proc_fd, F_DUPFD_CLOEXEC, 3)
	                                  : open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (s->proc_fd < 0)
		return err_setsys(-errno, "virtio-fs: /proc/self/fd");
	if (fstatfs(s->proc_fd, &sf) < 0 || sf.f_type != PROC_SUPER_MAGIC)
		return err_set(-ENODEV, "virtio-fs: /proc/self/fd is not on procfs");
	return 0;
}

/* A copy of the names a share shows of its root (NULL: all), each one
 * path component. */
static int copy_names(char *const *names, char ***ret)
{
	size_t n = 0;

	*ret = NULL;
	if (!names)
		return 0;
	while (names[n])
		n++;
	*ret = calloc(n + 1, sizeof(char *));
	if (!*ret)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!*names[i] || strchr(names[i], '/') || !strcmp(names[i], ".") || !strcmp(names[i], ".."))
			return err_set(-EINVAL, "virtio-fs: '%s' is not a name in the shared directory", names[i]);
		if (!((*ret)[i] = strdup(names[i])))
			return -ENOMEM;
	}
	return 0;
}

int fs_server_new(const struct fs_server_opts *opts, struct fs_server **ret)
{
	pthread_rwlockattr_t ra;
	struct fs_server *s;
	struct stat st;
	int r, fd;

	r = check_opts(opts);
	if (r < 0)
		return r;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->opts = *opts;
	s->opts.root = s->root = strdup(opts->root);
	r = copy_names(opts->root_names, &s->root_names);
	s->opts.root_names = s->root_names;
	fit_rlimit(&s->opts);
	opts = &s->opts;
	s->proc_fd = s->root_dir_fd = -1;
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&s->session, &ra);
	pthread_rwlockattr_destroy(&ra);
	pthread_mutex_init(&s->state_lock, NULL);
	pthread_mutex_init(&s->plock_lock, NULL);
	pthread_mutex_init(&s->intr_lock, NULL);
	pthread_cond_init(&s->intr_cond, NULL);
	if (r >= 0)
		r = s->root ? fs_htable_init(&s->ht, opts->max_handles) : -ENOMEM;
	if (r >= 0)
		r = open_proc(s);
	fd = r >= 0 ? open_root(s, &st) : r;
	if (fd >= 0)
		r = fs_itable_init(&s->it, fd, s->root_dir_fd, &st, opts->max_inodes, opts->max_inode_fds);
	else
		r = fd;
	if (r < 0) {
		fs_server_free(s);
		return r;
	}
	s->it.on_free = fs_plocks_drop;
	s->it.opaque = s;
	*ret = s;
	return 0;
}

void fs_server_free(struct fs_server *s)
{
	if (!s)
		return;
	fs_locks_stop(s);
	if (s->ht.slots || s->ht.max)
		fs_htable_destroy(s);
	fs_itable_destroy(&s->it);
	if (s->proc_fd >= 0)
		close(s->proc_fd);
	if (s->root_dir_fd >= 0)
		close(s->root_dir_fd);
	pthread_rwlock_destroy(&s->session);
	pthread_mutex_destroy(&s->state_lock);
	pthread_mutex_destroy(&s->plock_lock);
	pthread_mutex_destroy(&s->intr_lock);
	pthread_cond_destroy(&s->intr_cond);
	for (char **n = s->root_names; n && *n; n++)
		free(*n);
	free(s->root_names);
	free(s->root);
	free(s);
}

void fs_server_reset(struct fs_server *s)
{
	fs_locks_drain(s);
	fs_htable_clear(s);
	fs_itable_clear(&s->it);
	pthread_mutex_lock(&s->state_lock);
	__atomic_store_n(&s->initialized, false, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&s->state_lock);
}

int fs_worker_new(struct fs_server *s, struct fs_worker **ret)
{
	struct fs_worker *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->s = s;
	w->args = malloc(FS_ARGS_MAX);
	w->reply = malloc(FS_REPLY_MAX);
	if (!w->args || !w->reply) {
		fs_worker_free(w);
		return -ENOMEM;
	}
	*ret = w;
	return 0;
}

void fs_worker_free(struct fs_worker *w)
{
	if (!w)
		return;
	free(w->args);
	free(w->reply);
	free(w);
}

void fs_server_get_stats(struct fs_server *s, struct fs_server_stats *ret)
{
	memset(ret, 0, sizeof(*ret));
	pthread_mutex_lock(&s->it.lock);
	ret->inodes = s->it.count;
	ret->inode_fds = s->it.nfds;
	ret->evictions = s->it.evictions;
	ret->reopens = s->it.reopens;
	pthread_mutex_unlock(&s->it.lock);
	pthread_mutex_lock(&s->ht.lock);
	ret->handles = s->ht.used;
	pthread_mutex_unlock(&s->ht.lock);
	pthread_mutex_lock(&s->plock_lock);
	ret->plocks = s->nplocks;
	pthread_mutex_unlock(&s->plock_lock);
	pthread_mutex_lock(&s->intr_lock);
	ret->deferred = s->nparked;
	pthread_mutex_unlock(&s->intr_lock);
	pthread_mutex_lock(&s->state_lock);
	ret->initialized = s->initialized;
	ret->max_inode_fds = s->opts.max_inode_fds;
	ret->max_handles = s->opts.max_handles;
	ret->minor = s->minor;
	pthread_mutex_unlock(&s->state_lock);
}

bool fs_server_mounted(struct fs_server *s)
{
	return __atomic_load_n(&s->initialized, __ATOMIC_ACQUIRE);
}

uint32_t fs_server_max_write(const struct fs_server *s)
{
	return s->opts.max_write;
}

const char *fs_locks_name(enum fs_locks locks)
{
	switch (locks) {
	case FS_LOCKS_HOST:
		return "host";
	case FS_LOCKS_GUEST:
		return "guest";
	}
	return NULL;
}

const char *fs_server_root(const struct fs_server *s)
{
	return s->opts.root;
}
