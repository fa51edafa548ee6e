/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The virtio-fs FUSE passthrough server (virtio/fs/fuse-server.h) driven by
 * a fuzzed client: a program of requests, each an opcode (one the server
 * knows, or any number), a node id (one an earlier reply gave, the root,
 * or any number), an argument body of fuzzed bytes (with a file handle an
 * earlier reply gave at its start, or not), the header's length right or
 * fuzzed, the request and reply cut into several buffers at fuzzed places,
 * and reply room of fuzzed size, exactly malloc'd so that AddressSanitizer
 * sees a write past it. The first byte picks the share: read-only (0xff)
 * or not, locks on the host or left to the client (its low bit:
 * FS_LOCKS_GUEST). Bounds are small (64 KiB transfers, 64 inodes, 16
 * descriptors and handles) so that the paths past them are reached.
 *
 * Checked after each request: the reply fits the room given, its header
 * says its length and the request's unique. After the program: the canary
 * beside the shared directory (tests/unit/virtio/fs/fuse-client.c) is
 * unchanged and nothing else appeared there. Waits (SETLKW) are cancelled
 * up front, so a lock request never blocks the run. $KVRUN_FUZZ_TRACE
 * prints each reply's opcode and error (to see what a seed reaches).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuse-client.h"
#include "fuzz.h"

#define MAX_OPS 48
#define MAX_BODY 8192
#define MAX_ROOM (128u << 10)
#define MAX_IDS 16

static const uint32_t opcodes[] = {
    FUSE_LOOKUP,      FUSE_FORGET,      FUSE_GETATTR,      FUSE_SETATTR,
    FUSE_READLINK,    FUSE_SYMLINK,     FUSE_MKNOD,        FUSE_MKDIR,
    FUSE_UNLINK,      FUSE_RMDIR,       FUSE_RENAME,       FUSE_LINK,
    FUSE_OPEN,        FUSE_READ,        FUSE_WRITE,        FUSE_STATFS,
    FUSE_RELEASE,     FUSE_FSYNC,       FUSE_SETXATTR,     FUSE_GETXATTR,
    FUSE_LISTXATTR,   FUSE_REMOVEXATTR, FUSE_FLUSH,        FUSE_INIT,
    FUSE_OPENDIR,     FUSE_READDIR,     FUSE_RELEASEDIR,   FUSE_FSYNCDIR,
    FUSE_GETLK,       FUSE_SETLK,       FUSE_SETLKW,       FUSE_ACCESS,
    FUSE_CREATE,      FUSE_INTERRUPT,   FUSE_BMAP,         FUSE_DESTROY,
    FUSE_IOCTL,       FUSE_POLL,        FUSE_BATCH_FORGET, FUSE_FALLOCATE,
    FUSE_READDIRPLUS, FUSE_RENAME2,     FUSE_LSEEK,        FUSE_COPY_FILE_RANGE,
    50 /* SYNCFS */,  51 /* TMPFILE */, 52 /* STATX */,
};

struct run {
	struct fc c;
	uint64_t nodes[MAX_IDS], fhs[MAX_IDS];
	unsigned int nnodes, nfhs;
	char canary[256];
	ssize_t canary_len;
};

static uint64_t pick(struct fz *f, const uint64_t *ids, unsigned int n, uint64_t dflt)
{
	uint8_t b = fz_u8(f);

	if (b < 200)
		return n ? ids[b % n] : dflt;
	if (b < 230)
		return dflt;
	return fz_u64(f);
}

static void remember(uint64_t *ids, unsigned int *n, uint64_t id)
{
	if (*n < MAX_IDS)
		ids[(*n)++] = id;
	else
		ids[id % MAX_IDS] = id;
}

/* Up to 4 buffers of buf[0..len), cut where the input says. */
static unsigned int cut(struct fz *f, uint8_t *buf, size_t len, struct iovec *iov)
{
	unsigned int n = 1 + fz_u8(f) % 4, k = 0;
	size_t at = 0;

	for (unsigned int i = 0; i + 1 < n && at < len; i++) {
		size_t piece = fz_u16(f) % (len - at + 1);

		iov[k++] = (struct iovec){buf + at, piece};
		at += piece;
	}
	iov[k++] = (struct iovec){buf + at, len - at};
	return k;
}

/* What the reply says, and the ids it hands out. */
static void take_reply(struct run *t, uint32_t op, uint64_t unique, const struct iovec *out, unsigned int nout,
                       size_t room, size_t len)
{
	uint8_t r[16 + sizeof(struct fuse_entry_out) + sizeof(struct fuse_open_out)] = {0};
	struct fuse_out_header h;
	size_t got = 0;

	if (len > room)
		abort();
	if (!len)
		return;
	if (len < sizeof(h))
		abort();
	for (unsigned int i = 0; i < nout && got < sizeof(r) && got < len; i++) {
		size_t n = out[i].iov_len;

		if (n > sizeof(r) - got)
			n = sizeof(r) - got;
		if (n > len - got)
			n = len - got;
		memcpy(r + got, out[i].iov_base, n);
		got += n;
	}
	memcpy(&h, r, sizeof(h));
	if (h.len != len || h.unique != unique)
		abort();
	if (getenv("KVRUN_FUZZ_TRACE"))
		fprintf(stderr, "opcode %u: error %d, %zu bytes\n", op, h.error, len);
	if (h.error)
		return;
	if ((op == FUSE_LOOKUP || op == FUSE_MKDIR || op == FUSE_MKNOD || op == FUSE_SYMLINK || op == FUSE_LINK ||
	     op == FUSE_CREATE || op == 51) &&
	    len >= 16 + sizeof(struct fuse_entry_out))
		remember(t->nodes, &t->nnodes, ((const struct fuse_entry_out *)(r + 16))->nodeid);
	if ((op == FUSE_OPEN || op == FUSE_OPENDIR) && len >= 16 + sizeof(struct fuse_open_out))
		remember(t->fhs, &t->nfhs, ((const struct fuse_open_out *)(r + 16))->fh);
	if ((op == FUSE_CREATE || op == 51) && len >= 16 + sizeof(struct fuse_entry_out) + sizeof(struct fuse_open_out))
		remember(t->fhs, &t->nfhs,
		         ((const struct fuse_open_out *)(r + 16 + sizeof(struct fuse_entry_out)))->fh);
}

static void one_request(struct run *t, struct fz *f, uint8_t *in, uint8_t **room_bufs)
{
	uint8_t sel = fz_u8(f);
	uint32_t op = sel < 240 ? opcodes[sel % (sizeof(opcodes) / sizeof(opcodes[0]))] : fz_u32(f);
	size_t body = fz_u16(f) % (MAX_BODY + 1), rooms[3], room = 0;
	struct fuse_in_header h = {.opcode = op, .unique = ++t->c.unique, .uid = 0, .gid = 0, .pid = 4242};
	struct iovec iv[4], ov[3];
	unsigned int nin, nout = 1 + fz_u8(f) % 3;
	uint8_t flags = fz_u8(f);

	h.nodeid = pick(f, t->nodes, t->nnodes, FUSE_ROOT_ID);
	body = fz_take(f, in + sizeof(h), body);
	/* A file handle where READ, WRITE, RELEASE, FLUSH, ... keep it. */
	if ((flags & 1) && body >= 8) {
		uint64_t fh = pick(f, t->fhs, t->nfhs, 0);

		memcpy(in + sizeof(h), &fh, sizeof(fh));
	}
	h.len = (uint32_t)(sizeof(h) + body);
	if (flags & 2)
		h.len = fz_u32(f);
	memcpy(in, &h, sizeof(h));
	nin = cut(f, in, sizeof(h) + body, iv);
	for (unsigned int i = 0; i < nout; i++) {
		rooms[i] = fz_u8(f) & 1 ? fz_u16(f) % 512 : fz_u32(f) % (MAX_ROOM + 1);
		room_bufs[i] = malloc(rooms[i] ? rooms[i] : 1);
		if (!room_bufs[i])
			abort();
		ov[i] = (struct iovec){room_bufs[i], rooms[i]};
		room += rooms[i];
	}
	take_reply(t, op, h.unique, ov, nout, room, fs_server_handle(t->c.s, t->c.w, iv, nin, ov, nout));
	for (unsigned int i = 0; i < nout; i++) {
		free(room_bufs[i]);
		room_bufs[i] = NULL;
	}
}

/* The canary beside the share is intact and alone there. */
static void check_outside(struct run *t)
{
	char buf[256];
	int fd = open(fc_out_path(&t->c, "secret"), O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf));
	DIR *d = opendir(t->c.outside);
	struct dirent *de;

	if (fd >= 0)
		close(fd);
	if (n != t->canary_len || memcmp(buf, t->canary, (size_t)n) != 0 || !d)
		abort();
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && strcmp(de->d_name, "secret") &&
		    strcmp(de->d_name, "dir"))
			abort();
	closedir(d);
}

static void populate(struct run *t)
{
	int fd;

	fc_put_file(&t->c, "file", "some data in a shared file\n");
	if (mkdir(fc_path(&t->c, "sub"), 0755) < 0 || symlink("../outside/secret", fc_path(&t->c, "escape")) < 0 ||
	    symlink("/etc/passwd", fc_path(&t->c, "abs")) < 0)
		abort();
	fd = open(fc_out_path(&t->c, "secret"), O_RDONLY | O_CLOEXEC);
	t->canary_len = fd < 0 ? -1 : read(fd, t->canary, sizeof(t->canary));
	if (fd >= 0)
		close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t in[sizeof(struct fuse_in_header) + MAX_BODY];
	struct fz f = {data, size};
	struct fs_server_opts o;
	uint8_t *rooms[3] = {NULL, NULL, NULL};
	struct run t = {0};
	unsigned int nops;
	uint8_t mode;

	fs_server_opts_default(&o);
	mode = fz_u8(&f);
	o.read_only = mode == 0xff;
	o.locks = mode & 1 ? FS_LOCKS_GUEST : FS_LOCKS_HOST;
	o.max_write = 64u << 10;
	o.max_inodes = 64;
	o.max_inode_fds = 16;
	o.max_handles = 16;
	if (fc_open(&t.c, &o, true) < 0)
		abort();
	populate(&t);
	fs_server_cancel_waits(t.c.s, true);
	nops = 1 + fz_u8(&f) % MAX_OPS;
	for (unsigned int i = 0; i < nops && f.n; i++)
		one_request(&t, &f, in, rooms);
	check_outside(&t);
	fs_server_cancel_waits(t.c.s, false);
	fc_close(&t.c);
	return 0;
}
