/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kvrun-fs-host: kvrun's virtio-fs file server (virtio/fs/fuse-server.h)
 * answering the host kernel's /dev/fuse instead of a guest, so that the
 * server can be tested and measured at native speed with the host's own
 * FUSE client (pjdfstest, benchmarks).
 *
 *   kvrun-fs-host [options] SHARED_DIR MOUNTPOINT
 *
 * Mounts a FUSE file system at MOUNTPOINT (mount(2): fd=, rootmode,
 * user_id, group_id, default_permissions, allow_other; nosuid, nodev),
 * prints "ready" on stdout, and serves it with N threads until it is
 * unmounted (umount MOUNTPOINT) or until SIGINT/SIGTERM, which unmount it.
 * Needs root. Exit status: 0 after an unmount, 1 on an error, 2 on a bad
 * command line.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/fuse.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "virtio/fs/fuse-server.h"

#define MAX_THREADS 64

struct host {
	struct fs_server *server;
	int fuse_fd;
	const char *mountpoint;
	size_t bufsize;
	/* One thread reads /dev/fuse at a time; the others wait for their
	 * turn. The reader, once it has a request that may take long (slow()),
	 * hands the turn on when more requests are queued; otherwise it runs
	 * the request and reads the next itself: a handoff between threads
	 * per request halves the metadata rate on a small host. Nothing here
	 * blocks for long (waiting locks are deferred), so a request queued
	 * behind a short one waits at most for that one. */
	pthread_mutex_t lock;
	pthread_cond_t turn;
	unsigned int nthreads, max_threads, readers, waiting;
	bool stop;
	pthread_t threads[MAX_THREADS];
};

static void *serve(void *arg);

/* Under the lock: one more thread, if allowed. */
static void spawn_locked(struct host *h)
{
	if (h->nthreads < h->max_threads && pthread_create(&h->threads[h->nthreads], NULL, serve, h) == 0)
		h->nthreads++;
}

/* Whether the request may take long enough for the next one not to wait
 * for it: data transfers beyond 64 KiB, syncs, fallocate, copies. A handoff
 * costs a thread wake-up, more than a short request. */
static bool slow(const uint8_t *req, size_t len)
{
	const struct fuse_in_header *h = (const void *)req;
	const struct fuse_read_in *rw = (const void *)(h + 1);

	if (len < sizeof(*h))
		return false;
	switch (h->opcode) {
	case FUSE_READ:
	case FUSE_WRITE:
		return len >= sizeof(*h) + sizeof(*rw) && rw->size > 65536;
	case FUSE_FSYNC:
	case FUSE_FSYNCDIR:
	case FUSE_FALLOCATE:
	case FUSE_COPY_FILE_RANGE:
	case FUSE_SYNCFS:
		return true;
	default:
		return false;
	}
}

/* Whether more requests wait in /dev/fuse. */
static bool queued(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

/* Under the lock: read the next request, taking the reader's turn. The
 * request's length, 0 to read again, or -1 once the file system is gone. */
static ssize_t next_request(struct host *h, uint8_t *in)
{
	ssize_t n;

	while (!h->stop && h->readers) {
		h->waiting++;
		pthread_cond_wait(&h->turn, &h->lock);
		h->waiting--;
	}
	if (h->stop)
		return -1;
	h->readers++;
	pthread_mutex_unlock(&h->lock);
	n = read(h->fuse_fd, in, h->bufsize);
	if (n < 0 && errno != EINTR && errno != EAGAIN && errno != ENOENT && errno != ENODEV)
		fprintf(stderr, "kvrun-fs-host: reading /dev/fuse: %s\n", strerror(errno));
	pthread_mutex_lock(&h->lock);
	h->readers--;
	/* ENODEV: unmounted; ENOENT: the request was interrupted first. */
	if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == ENOENT))
		n = 0;
	if (n < 0) {
		h->stop = true;
		pthread_cond_broadcast(&h->turn);
		return -1;
	}
	if (n > 0 && slow(in, (size_t)n) && queued(h->fuse_fd)) {
		if (h->waiting)
			pthread_cond_signal(&h->turn);
		else
			spawn_locked(h);
	}
	return n;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: kvrun-fs-host [options] SHARED_DIR MOUNTPOINT\n"
	           "Serve SHARED_DIR at MOUNTPOINT through /dev/fuse with kvrun's virtio-fs server.\n\n"
	           "  --threads N            worker threads at most (default 4, at most 64); one reads\n"
	           "                         at a time, another takes over during long requests\n"
	           "  --max-write BYTES      largest READ/WRITE (default 1048576)\n"
	           "  --max-inodes N         inodes the kernel may know at once (default 262144)\n"
	           "  --max-inode-fds N      O_PATH descriptors kept (default 65536)\n"
	           "  --max-handles N        open files and directories (default 4096)\n"
	           "  --entry-timeout S      name cache timeout in seconds (default 1)\n"
	           "  --attr-timeout S       attribute cache timeout (default 1)\n"
	           "  --negative-timeout S   cache of missing names (default 0)\n"
	           "  --read-only            refuse every change with EROFS\n"
	           "  --locks host|guest     POSIX and flock locks on the host's files (default), or\n"
	           "                         left to the FUSE client (no lock forwarding, no FLUSH)\n");
}

static bool parse_u32(const char *s, uint32_t *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || end == s || v > UINT32_MAX)
		return false;
	*ret = (uint32_t)v;
	return true;
}

static bool parse_secs(const char *s, double *ret)
{
	char *end;

	*ret = strtod(s, &end);
	return *end == '\0' && end != s && *ret >= 0 && *ret < 1e6;
}

static bool parse_locks(const char *s, enum fs_locks *ret)
{
	static const enum fs_locks modes[] = {FS_LOCKS_HOST, FS_LOCKS_GUEST};

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (strcmp(s, fs_locks_name(modes[i])) == 0) {
			*ret = modes[i];
			return true;
		}
	return false;
}

static int parse_args(int argc, char **argv, struct fs_server_opts *o, unsigned int *threads)
{
	static const struct option longopts[] = {
	    {"threads", required_argument, NULL, 't'},
	    {"max-write", required_argument, NULL, 'w'},
	    {"max-inodes", required_argument, NULL, 'i'},
	    {"max-inode-fds", required_argument, NULL, 'f'},
	    {"max-handles", required_argument, NULL, 'h'},
	    {"entry-timeout", required_argument, NULL, 'e'},
	    {"attr-timeout", required_argument, NULL, 'a'},
	    {"negative-timeout", required_argument, NULL, 'n'},
	    {"read-only", no_argument, NULL, 'r'},
	    {"locks", required_argument, NULL, 'l'},
	    {"help", no_argument, NULL, 'H'},
	    {0},
	};
	uint32_t v;
	bool ok = true;
	int c;

	while (ok && (c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			ok = parse_u32(optarg, &v) && v >= 1 && v <= MAX_THREADS;
			*threads = v;
			break;
		case 'w':
			ok = parse_u32(optarg, &o->max_write);
			break;
		case 'i':
			ok = parse_u32(optarg, &o->max_inodes);
			break;
		case 'f':
			ok = parse_u32(optarg, &o->max_inode_fds);
			break;
		case 'h':
			ok = parse_u32(optarg, &o->max_handles);
			break;
		case 'e':
			ok = parse_secs(optarg, &o->entry_timeout);
			break;
		case 'a':
			ok = parse_secs(optarg, &o->attr_timeout);
			break;
		case 'n':
			ok = parse_secs(optarg, &o->negative_timeout);
			break;
		case 'r':
			o->read_only = true;
			break;
		case 'l':
			ok = parse_locks(optarg, &o->locks);
			if (!ok)
				fprintf(stderr, "kvrun-fs-host: --locks: expected host or guest, not '%s'\n", optarg);
			break;
		case 'H':
			usage(stdout);
			exit(0);
		default:
			ok = false;
		}
	}
	if (!ok || optind + 2 != argc) {
		if (!ok && optind > 0)
			fprintf(stderr, "kvrun-fs-host: bad option or value near '%s'\n", argv[optind - 1]);
		usage(stderr);
		return -EINVAL;
	}
	o->root = argv[optind];
	return 0;
}

/* A waiting lock the server keeps: its reply is written when it comes. */
static void *defer_reply(void *opaque)
{
	return opaque;
}

static void write_reply(void *token, const void *reply, size_t len)
{
	struct host *h = token;

	if (write(h->fuse_fd, reply, len) < 0 && errno != ENOENT && errno != ENODEV)
		fprintf(stderr, "kvrun-fs-host: writing a reply: %s\n", strerror(errno));
}

/* One thread: read a request, run it, write the reply, until the file
 * system is unmounted (ENODEV). */
static void *serve(void *arg)
{
	struct host *h = arg;
	struct fs_worker *w = NULL;
	uint8_t *in = malloc(h->bufsize), *out = malloc(h->bufsize);
	ssize_t n;

	if (!in || !out || fs_worker_new(h->server, &w) < 0) {
		fprintf(stderr, "kvrun-fs-host: out of memory\n");
		goto out;
	}
	pthread_mutex_lock(&h->lock);
	while ((n = next_request(h, in)) >= 0) {
		size_t len;

		pthread_mutex_unlock(&h->lock);
		len = n ? fs_server_run(h->server, w,
		                        &(struct fs_request){.in = &(struct iovec){in, (size_t)n},
		                                             .nin = 1,
		                                             .out = &(struct iovec){out, h->bufsize},
		                                             .nout = 1,
		                                             .defer = defer_reply,
		                                             .complete = write_reply,
		                                             .opaque = h})
		        : 0;
		if (len && len != FS_DEFERRED)
			write_reply(h, out, len);
		pthread_mutex_lock(&h->lock);
	}
	pthread_mutex_unlock(&h->lock);
out:
	fs_worker_free(w);
	free(in);
	free(out);
	return NULL;
}

/* SIGINT/SIGTERM: unmount, which ends the serving threads. */
static void *signals(void *arg)
{
	struct host *h = arg;
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	if (sigwait(&set, &sig) == 0)
		umount2(h->mountpoint, MNT_DETACH);
	return NULL;
}

static int do_mount(struct host *h)
{
	char opts[256];

	h->fuse_fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (h->fuse_fd < 0)
		return err_setsys(-errno, "/dev/fuse");
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=%o,user_id=%u,group_id=%u,default_permissions,allow_other",
	         h->fuse_fd, S_IFDIR, getuid(), getgid());
	if (mount("kvrun-fs", h->mountpoint, "fuse.kvrun-fs", MS_NOSUID | MS_NODEV, opts) < 0)
		return err_setsys(-errno, "mounting FUSE at %s", h->mountpoint);
	return 0;
}

int main(int argc, char **argv)
{
	struct fs_server_opts o;
	struct host h = {.fuse_fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER, .turn = PTHREAD_COND_INITIALIZER};
	unsigned int threads = 4, joined = 0;
	pthread_t sig_th;
	struct rlimit rl;
	sigset_t set;
	int r;

	fs_server_opts_default(&o);
	if (parse_args(argc, argv, &o, &threads) < 0)
		return 2;
	h.mountpoint = argv[argc - 1];
	h.bufsize = o.max_write + FS_REPLY_OVERHEAD;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	/* The client applied its umask already. */
	umask(0);
	/* Room for the server's descriptor bounds. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	r = fs_server_new(&o, &h.server);
	if (r >= 0)
		r = do_mount(&h);
	if (r < 0) {
		fprintf(stderr, "kvrun-fs-host: %s\n", err_msg());
		fs_server_free(h.server);
		return 1;
	}
	pthread_create(&sig_th, NULL, signals, &h);
	pthread_detach(sig_th);
	h.max_threads = threads;
	pthread_mutex_lock(&h.lock);
	spawn_locked(&h);
	pthread_mutex_unlock(&h.lock);
	printf("ready\n");
	fflush(stdout);
	/* Threads may start while others end: join until none is left. */
	for (;;) {
		pthread_t t;

		pthread_mutex_lock(&h.lock);
		if (joined == h.nthreads) {
			pthread_mutex_unlock(&h.lock);
			break;
		}
		t = h.threads[joined++];
		pthread_mutex_unlock(&h.lock);
		pthread_join(t, NULL);
	}
	/* First: the server's lock thread may still answer deferred locks. */
	fs_server_free(h.server);
	close(h.fuse_fd);
	return joined ? 0 : 1;
}
