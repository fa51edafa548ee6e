/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Containment: FUSE requests crafted to reach outside the shared
 * directory or to hurt the server. Each must get an error, leave the
 * canary beside the share (outside/secret, outside/dir) as it was, and
 * the server must go on serving. Needs root; skips otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuse-client.h"
#include "tap.h"

#define ROOT FUSE_ROOT_ID

static struct fc c;

static void setup_opts(const struct fs_server_opts *o)
{
	int r = fc_open(&c, o, true);

	if (r < 0) {
		printf("# setup: %s\n", strerror(-r));
		abort();
	}
}

/* The server still answers, the canary is intact, replies were framed. */
static void teardown(void)
{
	struct fuse_attr a;

	ok(fc_getattr(&c, ROOT, &a) == 0 && S_ISDIR(a.mode), "the server still serves");
	ok(fc_canary_intact(&c), "nothing outside the share was read or changed");
	ok(c.framing_ok, "every reply had the request's unique and its own length");
	fc_close(&c);
}

static uint64_t lookup(uint64_t dir, const char *name)
{
	struct fuse_entry_out e = {0};

	return fc_lookup(&c, dir, name, &e) == 0 ? e.nodeid : 0;
}

TEST(needs_root)
{
	if (geteuid() != 0)
		tap_skip_all("needs root: the server gives new files the caller's owner");
}

TEST(bad_names)
{
	struct fuse_entry_out e;
	char longname[NAME_MAX + 2];

	setup_opts(NULL);
	mkdir(fc_path(&c, "d"), 0755);
	is_int(fc_lookup(&c, ROOT, "..", &e), -EINVAL);
	is_int(fc_lookup(&c, ROOT, ".", &e), -EINVAL);
	is_int(fc_lookup(&c, lookup(ROOT, "d"), "..", &e), -EINVAL);
	is_int(fc_lookup(&c, ROOT, "../outside/secret", &e), -EINVAL);
	is_int(fc_lookup(&c, ROOT, "d/../../outside", &e), -EINVAL);
	is_int(fc_lookup(&c, ROOT, "/etc", &e), -EINVAL);
	is_int(fc_lookup(&c, ROOT, "", &e), -EINVAL);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	is_int(fc_lookup(&c, ROOT, longname, &e), -ENAMETOOLONG);
	/* A name without its NUL. */
	is_int(fc_call(&c, FUSE_LOOKUP, ROOT, &(struct iovec){"outside", 7}, 1, &e, sizeof(e), NULL), -EINVAL);
	is_int(fc_mkdir(&c, ROOT, "../outside/new", S_IFDIR | 0755, NULL), -EINVAL);
	is_int(fc_mkdir(&c, ROOT, "..", S_IFDIR | 0755, NULL), -EINVAL);
	is_int(fc_create(&c, ROOT, "../outside/secret", O_RDWR | O_CREAT | O_TRUNC, S_IFREG | 0644, NULL, NULL),
	       -EINVAL);
	is_int(fc_mknod(&c, ROOT, "a/b", S_IFREG | 0644, 0, NULL), -EINVAL);
	is_int(fc_symlink(&c, ROOT, "../esc", "x", NULL), -EINVAL);
	is_int(fc_unlink(&c, ROOT, "../outside/secret"), -EINVAL);
	is_int(fc_rmdir(&c, ROOT, "../outside/dir"), -EINVAL);
	is_int(fc_rmdir(&c, ROOT, ".."), -EINVAL);
	is_int(fc_rename(&c, ROOT, "../outside/secret", ROOT, "stolen", 0), -EINVAL);
	is_int(fc_rename(&c, ROOT, "d", ROOT, "../outside/d", 0), -EINVAL);
	is_int(fc_rename(&c, ROOT, "d", ROOT, "..", 0), -EINVAL);
	is_int(fc_link(&c, lookup(ROOT, "d"), ROOT, "../outside/l", NULL), -EINVAL);
	ok(access(fc_out_path(&c, "new"), F_OK) < 0 && access(fc_out_path(&c, "d"), F_OK) < 0,
	   "nothing was made outside");
	teardown();
}

TEST(symlink_escapes)
{
	struct fuse_entry_out e;
	struct fuse_attr a;
	uint64_t fh, rel, abs, dirl, loop;
	char target[256];

	setup_opts(NULL);
	/* Symlinks to outside, made by the host and by the client. */
	symlink("../outside/secret", fc_path(&c, "rel"));
	snprintf(target, sizeof(target), "%s", fc_out_path(&c, "secret"));
	is_int(fc_symlink(&c, ROOT, "abs", target, &e), 0);
	symlink("../outside/dir", fc_path(&c, "dirl"));
	symlink("loop2", fc_path(&c, "loop1"));
	symlink("loop1", fc_path(&c, "loop2"));
	rel = lookup(ROOT, "rel");
	abs = lookup(ROOT, "abs");
	dirl = lookup(ROOT, "dirl");
	loop = lookup(ROOT, "loop1");
	ok(rel && abs && dirl && loop, "the symlinks themselves can be looked up");
	is_int(fc_getattr(&c, rel, &a), 0);
	ok(S_ISLNK(a.mode) && a.size == strlen("../outside/secret"), "getattr describes the link, not its target");
	is_int(fc_open_node(&c, rel, O_RDONLY, false, &fh), -ELOOP);
	is_int(fc_open_node(&c, abs, O_RDWR | O_TRUNC, false, &fh), -ELOOP);
	is_int(fc_open_node(&c, loop, O_RDONLY, false, &fh), -ELOOP);
	is_int(fc_open_node(&c, dirl, O_RDONLY, true, &fh), -ENOTDIR);
	/* A symlink is never a directory to work in. */
	is_int(fc_lookup(&c, dirl, "anything", &e), -ENOTDIR);
	is_int(fc_mkdir(&c, dirl, "new", S_IFDIR | 0755, NULL), -ENOTDIR);
	is_int(fc_create(&c, dirl, "new", O_WRONLY | O_CREAT, S_IFREG | 0644, NULL, NULL), -ENOTDIR);
	is_int(fc_unlink(&c, dirl, "secret"), -ENOTDIR);
	is_int(fc_rename(&c, ROOT, "rel", dirl, "x", 0), -ENOTDIR);
	/* Attributes and xattrs of a link change the link only. */
	struct fuse_setattr_in in = {.valid = FATTR_SIZE, .size = 0};
	is_int(fc_setattr(&c, rel, &in, NULL), -EINVAL);
	in.valid = FATTR_MODE;
	in.mode = 0777;
	is_int(fc_setattr(&c, abs, &in, NULL), -EOPNOTSUPP);
	in.valid = FATTR_UID | FATTR_GID;
	in.uid = in.gid = 4444;
	is_int(fc_setattr(&c, abs, &in, NULL), 0);
	in.valid = FATTR_MTIME;
	in.mtime = 1;
	is_int(fc_setattr(&c, rel, &in, NULL), 0);
	is_int(fc_setxattr(&c, rel, "user.x", "1", 1, 0), -EPERM);
	size_t n;
	is_int(fc_getxattr(&c, abs, "user.x", 0, NULL, &n), -ENODATA);
	/* CREATE over an existing symlink does not follow it. */
	is_int(fc_create(&c, ROOT, "rel", O_RDWR | O_CREAT | O_TRUNC, S_IFREG | 0644, NULL, NULL), -ELOOP);
	/* Hard-linking the link links the link. */
	is_int(fc_link(&c, rel, ROOT, "rel2", &e), 0);
	struct stat st;
	ok(lstat(fc_path(&c, "rel2"), &st) == 0 && S_ISLNK(st.st_mode), "LINK of a symlink: a second link to the link");
	/* READLINK shows the target, which the client resolves itself. */
	is_int(fc_readlink(&c, abs, target, sizeof(target)), 0);
	ok(!strcmp(target, fc_out_path(&c, "secret")), "readlink gives the target text");
	teardown();
}

TEST(forged_nodes_and_handles)
{
	struct fuse_entry_out e;
	char buf[64];
	size_t n;
	uint64_t fh, f;

	setup_opts(NULL);
	fc_put_file(&c, "f", "share data");
	f = lookup(ROOT, "f");
	/* Node IDs the server never gave out. */
	for (uint64_t id = 0; id < 64; id++) {
		if (id == ROOT || id == f)
			continue;
		if (fc_getattr(&c, id, NULL) != -ESTALE)
			ok(false, "node %llu answered", (unsigned long long)id);
	}
	is_int(fc_getattr(&c, UINT64_MAX, NULL), -ESTALE);
	is_int(fc_lookup(&c, 0, "f", &e), -ESTALE);
	is_int(fc_link(&c, 424242, ROOT, "x", NULL), -ESTALE);
	is_int(fc_link(&c, ROOT, ROOT, "rootlink", NULL), -EPERM);
	is_int(fc_rename(&c, ROOT, "f", 424242, "f", 0), -ESTALE);
	is_int(fc_mkdir(&c, 424242, "x", S_IFDIR | 0755, NULL), -ESTALE);
	/* Handles: forged, stale, of the wrong kind. */
	is_int(fc_open_node(&c, f, O_RDONLY, false, &fh), 0);
	is_int(fc_read(&c, f, fh ^ (1ULL << 32), 0, 10, buf, &n), -EBADF);
	is_int(fc_read(&c, f, fh + 1, 0, 10, buf, &n), -EBADF);
	is_int(fc_read(&c, f, UINT64_MAX, 0, 10, buf, &n), -EBADF);
	is_int(fc_readdir(&c, ROOT, fh, 0, 100, false, buf, &n), -EBADF);
	is_int(fc_release(&c, f, fh, false), 0);
	is_int(fc_read(&c, f, fh, 0, 10, buf, &n), -EBADF);
	/* A new handle in the freed slot is not the old fh. */
	uint64_t fh2;
	is_int(fc_open_node(&c, f, O_RDONLY, false, &fh2), 0);
	ok(fh2 != fh, "a reused slot has a new generation");
	is_int(fc_read(&c, f, fh, 0, 10, buf, &n), -EBADF);
	/* A node forgotten is gone for the client, even while a handle of it
	 * is open (which still reads). */
	fc_forget(&c, f, 1);
	is_int(fc_getattr(&c, f, NULL), -ESTALE);
	is_int(fc_read(&c, f, fh2, 0, 5, buf, &n), 0);
	is_int(fc_lookup(&c, ROOT, "f", &e), 0);
	ok(e.nodeid == f, "looked up again: the same node, still open");
	teardown();
}

/* Requests with broken framing or absurd numbers. */
TEST(malformed)
{
	uint8_t req[512] = {0};
	struct fuse_in_header *h = (void *)req;
	struct fuse_out_header *oh;
	struct fuse_entry_out e;
	uint64_t fh, f;
	size_t n;
	char buf[64];

	setup_opts(NULL);
	fc_put_file(&c, "f", "0123456789");
	f = lookup(ROOT, "f");
	oh = (void *)c.reply;
	/* Shorter than a header: nothing to answer. */
	is_int(fc_raw(&c, req, 10, 4096), 0);
	is_int(fc_raw(&c, req, 0, 4096), 0);
	/* The header's length differs from what came. */
	h->opcode = FUSE_GETATTR;
	h->unique = 77;
	h->nodeid = ROOT;
	h->len = 400;
	ok(fc_raw(&c, req, sizeof(*h) + 16, 4096) == 16 && oh->error == -EINVAL && oh->unique == 77,
	   "len beyond the buffer -> EINVAL");
	h->len = 8;
	ok(fc_raw(&c, req, sizeof(*h) + 16, 4096) == 16 && oh->error == -EINVAL, "len below a header -> EINVAL");
	/* Fixed arguments cut short. */
	h->len = sizeof(*h) + 4;
	ok(fc_raw(&c, req, h->len, 4096) == 16 && oh->error == -EINVAL, "short GETATTR arguments -> EINVAL");
	h->opcode = FUSE_SETATTR;
	h->len = sizeof(*h) + 40;
	ok(fc_raw(&c, req, h->len, 4096) == 16 && oh->error == -EINVAL, "short SETATTR arguments -> EINVAL");
	h->opcode = FUSE_INIT;
	h->len = sizeof(*h) + 4;
	ok(fc_raw(&c, req, h->len, 4096) == 16 && oh->error == -EINVAL, "short INIT -> EINVAL");
	/* No room for even a reply header: no reply. */
	h->opcode = FUSE_GETATTR;
	h->len = sizeof(*h) + 16;
	is_int(fc_raw(&c, req, h->len, 8), 0);
	/* Room for the header only: the error says so. */
	ok(fc_raw(&c, req, h->len, 20) == 16 && oh->error == -EINVAL, "a reply that does not fit -> EINVAL");
	/* Arguments larger than any request may carry. */
	uint8_t *huge = calloc(1, 200000);
	h = (void *)huge;
	h->opcode = FUSE_SETXATTR;
	h->len = 200000;
	h->nodeid = ROOT;
	ok(fc_raw(&c, huge, 200000, 4096) == 16 && oh->error == -EINVAL, "200 KB of SETXATTR arguments -> EINVAL");
	free(huge);
	/* SETXATTR whose value is shorter than it says. */
	struct fuse_setxattr_in sx = {.size = 1000};
	struct iovec p[3] = {{&sx, 8}, {"user.a", 7}, {"v", 1}};
	is_int(fc_call(&c, FUSE_SETXATTR, f, p, 3, NULL, 0, NULL), -EINVAL);
	sx.size = UINT32_MAX;
	is_int(fc_call(&c, FUSE_SETXATTR, f, p, 3, NULL, 0, NULL), -E2BIG);

	/* READ and WRITE with absurd sizes and offsets. */
	is_int(fc_open_node(&c, f, O_RDWR, false, &fh), 0);
	is_int(fc_read(&c, f, fh, (uint64_t)INT64_MAX + 1, 10, buf, &n), -EINVAL);
	is_int(fc_read(&c, f, fh, UINT64_MAX, 10, buf, &n), -EINVAL);
	is_int(fc_call_room(
		   &c, FUSE_READ, f,
		   &(struct iovec){&(struct fuse_read_in){.fh = fh, .size = UINT32_MAX}, sizeof(struct fuse_read_in)},
		   1, 16 + 64, buf, sizeof(buf), &n),
	       0);
	ok(n == 10 && !memcmp(buf, "0123456789", 10), "READ of 4 GiB into 64 bytes of room: the file's 10 bytes");
	struct fuse_write_in wi = {.fh = fh, .offset = 0, .size = 100};
	struct iovec wp[2] = {{&wi, sizeof(wi)}, {"abc", 3}};
	is_int(fc_call(&c, FUSE_WRITE, f, wp, 2, NULL, 0, NULL), -EINVAL);
	wi.size = UINT32_MAX;
	is_int(fc_call(&c, FUSE_WRITE, f, wp, 2, NULL, 0, NULL), -EINVAL);
	wi.size = 3;
	wi.offset = (uint64_t)INT64_MAX + 5;
	is_int(fc_call(&c, FUSE_WRITE, f, wp, 2, NULL, 0, NULL), -EINVAL);
	wi.offset = INT64_MAX - 1;
	ok(fc_call(&c, FUSE_WRITE, f, wp, 2, NULL, 0, NULL) < 0, "WRITE past the largest file size fails");
	/* WRITE whose header is cut: just a fuse_write_in half there. */
	is_int(fc_call(&c, FUSE_WRITE, f, &(struct iovec){&wi, 20}, 1, NULL, 0, NULL), -EINVAL);
	struct fuse_fallocate_in fa = {.fh = fh, .offset = UINT64_MAX, .length = 10};
	is_int(fc_simple(&c, FUSE_FALLOCATE, f, &fa, sizeof(fa)), -EINVAL);
	/* Locks with impossible ranges. */
	is_int(fc_lk(&c, FUSE_SETLK, f, fh, 1, F_WRLCK, UINT64_MAX - 5, UINT64_MAX - 1, 0, NULL), -EINVAL);
	is_int(fc_lk(&c, FUSE_SETLK, f, fh, 1, F_WRLCK, 100, 50, 0, NULL), -EINVAL);
	/* BATCH_FORGET announcing more entries than it carries. */
	struct {
		struct fuse_batch_forget_in h;
		struct fuse_forget_one one;
	} bf = {{UINT32_MAX, 0}, {f, 1}};
	is_int(fc_simple(&c, FUSE_BATCH_FORGET, 0, &bf, sizeof(bf)), FC_NO_REPLY);
	is_int(fc_getattr(&c, f, NULL), -ESTALE);
	f = lookup(ROOT, "f");
	/* A READDIR asking for 4 GiB. */
	uint64_t dh;
	is_int(fc_open_node(&c, ROOT, O_RDONLY, true, &dh), 0);
	is_int(
	    fc_call(&c, FUSE_READDIRPLUS, ROOT,
	            &(struct iovec){&(struct fuse_read_in){.fh = dh, .size = UINT32_MAX}, sizeof(struct fuse_read_in)},
	            1, NULL, 0, &n),
	    0);
	ok(n > 0 && n <= 128 * 1024, "READDIRPLUS of 4 GiB: bounded (%zu bytes)", n);
	/* The file holds what it held. */
	int fd = open(fc_path(&c, "f"), O_RDONLY);
	ok(fd >= 0 && read(fd, buf, 20) == 10 && !memcmp(buf, "0123456789", 10), "the file is unchanged");
	close(fd);
	(void)e;
	teardown();
}

TEST(fd_bounds)
{
	struct fs_server_opts o;
	struct fs_server_stats st;
	struct fuse_entry_out e;
	uint64_t nodes[100], fhs[8];
	int base_fds, r;
	bool all = true;

	fs_server_opts_default(&o);
	o.max_inode_fds = 8;
	o.max_handles = 4;
	o.max_inodes = 150;
	setup_opts(&o);
	base_fds = fc_count_fds();
	for (int i = 0; i < 100; i++) {
		char name[16];

		snprintf(name, sizeof(name), "f%d", i);
		fc_put_file(&c, name, name);
		is_int(fc_lookup(&c, ROOT, name, &e), 0);
		nodes[i] = e.nodeid;
	}
	fs_server_get_stats(c.s, &st);
	ok(st.inodes == 101 && st.inode_fds <= 8 && st.evictions >= 92,
	   "100 inodes held with %llu descriptors (%llu evictions)", (unsigned long long)st.inode_fds,
	   (unsigned long long)st.evictions);
	ok(fc_count_fds() - base_fds <= 8, "the process holds at most 8 more descriptors (%d)",
	   fc_count_fds() - base_fds);
	/* Every inode still answers: reopened by file handle. */
	for (int i = 0; i < 100; i++) {
		struct fuse_attr a;
		char name[16];

		snprintf(name, sizeof(name), "f%d", i);
		if (fc_getattr(&c, nodes[i], &a) != 0 || a.size != strlen(name))
			all = false;
	}
	fs_server_get_stats(c.s, &st);
	ok(all && st.reopens >= 90 && st.inode_fds <= 8, "all 100 answer after reopening (%llu reopens)",
	   (unsigned long long)st.reopens);
	/* An evicted file deleted on the host is stale, not another file. */
	unlink(fc_path(&c, "f0"));
	fc_put_file(&c, "g0", "new file");
	for (int i = 50; i < 60; i++)
		fc_getattr(&c, nodes[i], NULL);
	is_int(fc_getattr(&c, nodes[0], NULL), -ESTALE);
	/* The handle bound: 4 open files at most. */
	for (int i = 0; i < 4; i++)
		is_int(fc_open_node(&c, nodes[10 + i], O_RDONLY, false, &fhs[i]), 0);
	is_int(fc_open_node(&c, nodes[20], O_RDONLY, false, &fhs[4]), -EMFILE);
	is_int(fc_open_node(&c, ROOT, O_RDONLY, true, &fhs[4]), -EMFILE);
	is_int(fc_create(&c, ROOT, "new", O_RDWR | O_CREAT, S_IFREG | 0644, NULL, NULL), -EMFILE);
	ok(access(fc_path(&c, "new"), F_OK) < 0, "a CREATE refused leaves no file");
	ok(fc_count_fds() - base_fds <= 8 + 4, "at most 8 + 4 descriptors (%d)", fc_count_fds() - base_fds);
	is_int(fc_release(&c, nodes[10], fhs[0], false), 0);
	is_int(fc_open_node(&c, nodes[20], O_RDONLY, false, &fhs[4]), 0);
	/* Lock owners are bounded like handles. */
	for (int i = 0; i < 4; i++)
		fc_lk(&c, FUSE_SETLK, nodes[11], fhs[1], 100 + i, F_RDLCK, i, i, 0, NULL);
	is_int(fc_lk(&c, FUSE_SETLK, nodes[11], fhs[1], 999, F_RDLCK, 50, 50, 0, NULL), -ENOLCK);
	/* The inode bound: 150 known at most. */
	for (int i = 0; i < 60 && (r = fc_lookup(&c, ROOT, "g0", &e)) == 0; i++) {
		char name[16];

		snprintf(name, sizeof(name), "h%d", i);
		fc_put_file(&c, name, "h");
		r = fc_lookup(&c, ROOT, name, &e);
		if (r)
			break;
	}
	is_int(r, -ENFILE);
	fs_server_get_stats(c.s, &st);
	is_int(st.inodes, 150);
	is_int(fc_mkdir(&c, ROOT, "newdir", S_IFDIR | 0755, NULL), -ENFILE);
	ok(access(fc_path(&c, "newdir"), F_OK) < 0, "a MKDIR refused leaves no directory");
	teardown();
}

/* When every inode with a descriptor is busy (open here; the same holds
 * for inodes without a file handle), nothing can be evicted: a lookup past
 * the descriptor bound answers ENFILE. */
TEST(fd_bound_all_busy)
{
	struct fs_server_opts o;
	struct fuse_entry_out e;
	uint64_t fh;
	int r = 0, i;

	fs_server_opts_default(&o);
	o.max_inode_fds = 4;
	setup_opts(&o);
	/* Pin the inodes: an open handle keeps an inode from eviction. */
	for (i = 0; i < 10 && r == 0; i++) {
		char name[16];

		snprintf(name, sizeof(name), "p%d", i);
		fc_put_file(&c, name, "p");
		r = fc_lookup(&c, ROOT, name, &e);
		if (r == 0)
			r = fc_open_node(&c, e.nodeid, O_RDONLY, false, &fh);
	}
	is_int(r, -ENFILE);
	ok(i == 4, "3 inodes open besides the root, the 4th lookup refused (at %d)", i);
	teardown();
}

/* The names of a READDIR (plus: READDIRPLUS) of dir, joined by spaces
 * into out, "." and ".." left out. */
static void list_names(uint64_t dir, bool plus, char *out, size_t size)
{
	uint8_t buf[8192];
	uint64_t fh;
	size_t n = 0, used = 0;

	out[0] = '\0';
	if (fc_open_node(&c, dir, O_RDONLY, true, &fh) < 0 ||
	    fc_readdir(&c, dir, fh, 0, sizeof(buf), plus, buf, &n) < 0)
		return;
	for (size_t p = 0; p < n;) {
		struct fuse_dirent *d =
		    plus ? &((struct fuse_direntplus *)(buf + p))->dirent : (struct fuse_dirent *)(buf + p);

		if (!(d->namelen <= 2 && !memcmp(d->name, "..", d->namelen)))
			used += (size_t)snprintf(out + used, size - used, "%s%.*s", used ? " " : "", (int)d->namelen,
			                         d->name);
		p += plus ? FUSE_DIRENTPLUS_SIZE((struct fuse_direntplus *)(buf + p)) : FUSE_DIRENT_SIZE(d);
	}
	fc_release(&c, dir, fh, true);
}

static bool names_are(const char *got, const char *a, const char *b)
{
	char ab[64], ba[64];

	snprintf(ab, sizeof(ab), "%s %s", a, b);
	snprintf(ba, sizeof(ba), "%s %s", b, a);
	return !strcmp(got, ab) || !strcmp(got, ba);
}

/* A share of a few names of a directory (a single-file bind mount, the
 * files of a container's directory): the rest of it is out of reach, and
 * its root cannot be changed; the names shown are served as usual. */
TEST(root_names)
{
	char *const names[] = {"shown", "dir", "absent", NULL};
	struct fs_server_opts o;
	struct fuse_entry_out e;
	struct fuse_setattr_in sa = {.valid = FATTR_MODE, .mode = S_IFDIR | 0777};
	char got[256], buf[16];
	uint64_t shown, dir, sub, fh;
	struct stat before, after;
	uint32_t written;
	size_t n;

	fs_server_opts_default(&o);
	o.root_names = names;
	setup_opts(&o);
	fc_put_file(&c, "shown", "old");
	fc_put_file(&c, "hidden", "secret");
	mkdir(fc_path(&c, "dir"), 0755);
	fc_put_file(&c, "dir/inner", "in");
	mkdir(fc_path(&c, "hiddendir"), 0755);
	stat(c.share, &before);
	shown = lookup(ROOT, "shown");
	dir = lookup(ROOT, "dir");
	ok(shown && dir, "the names shown are found");
	is_int(fc_lookup(&c, ROOT, "hidden", &e), -ENOENT);
	is_int(fc_lookup(&c, ROOT, "hiddendir", &e), -ENOENT);
	is_int(fc_lookup(&c, ROOT, "absent", &e), -ENOENT);
	list_names(ROOT, false, got, sizeof(got));
	ok(names_are(got, "shown", "dir"), "READDIR of the root lists only what is shown: '%s'", got);
	list_names(ROOT, true, got, sizeof(got));
	ok(names_are(got, "shown", "dir"), "READDIRPLUS too: '%s'", got);
	/* Below a shown directory, everything is the client's. */
	sub = lookup(dir, "inner");
	ok(sub != 0, "a shown directory's entries are found");
	is_int(fc_create(&c, dir, "made", O_RDWR | O_CREAT, S_IFREG | 0644, NULL, &fh), 0);
	is_int(fc_unlink(&c, dir, "inner"), 0);
	/* The shown file is read and written in place. */
	is_int(fc_open_node(&c, shown, O_RDWR, false, &fh), 0);
	is_int(fc_write(&c, shown, fh, 0, "new", 3, &written), 0);
	is_int(fc_read(&c, shown, fh, 0, sizeof(buf), buf, &n), 0);
	ok(n == 3 && !memcmp(buf, "new", 3), "the shown file reads what was written");
	fc_release(&c, shown, fh, false);
	/* The root itself cannot change. */
	is_int(fc_create(&c, ROOT, "absent", O_RDWR | O_CREAT, S_IFREG | 0644, NULL, NULL), -EPERM);
	is_int(fc_mkdir(&c, ROOT, "absent", S_IFDIR | 0755, NULL), -EPERM);
	is_int(fc_mknod(&c, ROOT, "absent", S_IFIFO | 0644, 0, NULL), -EPERM);
	is_int(fc_symlink(&c, ROOT, "absent", "/etc", NULL), -EPERM);
	is_int(fc_link(&c, lookup(dir, "made"), ROOT, "absent", NULL), -EPERM);
	is_int(fc_unlink(&c, ROOT, "shown"), -EPERM);
	is_int(fc_unlink(&c, ROOT, "hidden"), -EPERM);
	is_int(fc_rmdir(&c, ROOT, "dir"), -EPERM);
	is_int(fc_rename(&c, ROOT, "shown", dir, "moved", 0), -EPERM);
	is_int(fc_rename(&c, dir, "made", ROOT, "absent", 0), -EPERM);
	is_int(fc_rename(&c, dir, "made", ROOT, "hidden", RENAME_EXCHANGE), -EPERM);
	is_int(fc_setattr(&c, ROOT, &sa, NULL), -EPERM);
	is_int(fc_setxattr(&c, ROOT, "user.x", "1", 1, 0), -EPERM);
	is_int(fc_removexattr(&c, ROOT, "user.x"), -EPERM);
	stat(c.share, &after);
	ok(after.st_mode == before.st_mode && access(fc_path(&c, "absent"), F_OK) < 0 &&
	       access(fc_path(&c, "hidden"), F_OK) == 0 && access(fc_path(&c, "dir/made"), F_OK) == 0,
	   "on the host: the root as it was, nothing made in it, nothing removed");
	teardown();
}

TEST(root_names_refused)
{
	char *const dotdot[] = {"ok", "..", NULL}, *const slash[] = {"a/b", NULL}, *const empty[] = {"", NULL};
	struct fs_server_opts o;
	struct fs_server *s = NULL;

	fs_server_opts_default(&o);
	o.root = "/tmp";
	o.root_names = dotdot;
	is_int(fs_server_new(&o, &s), -EINVAL);
	o.root_names = slash;
	is_int(fs_server_new(&o, &s), -EINVAL);
	o.root_names = empty;
	is_int(fs_server_new(&o, &s), -EINVAL);
	ok(s == NULL, "no server");
}

/* A share given as a descriptor is served from it alone: its path may be
 * gone (a jailed process no longer sees it). */
TEST(root_fd)
{
	struct fs_server_opts o;
	struct fuse_entry_out e;
	char moved[128];
	int fds_before = fc_count_fds(), dirfd, procfd;

	fs_server_opts_default(&o);
	setup_opts(&o);
	fc_put_file(&c, "f", "x");
	dirfd = open(c.share, O_PATH | O_DIRECTORY | O_CLOEXEC);
	procfd = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
	fs_worker_free(c.w);
	fs_server_free(c.s);
	o.root = c.share;
	o.root_fd = dirfd;
	o.proc_fd = procfd;
	is_int(fs_server_new(&o, &c.s), 0);
	is_int(fs_worker_new(c.s, &c.w), 0);
	close(dirfd);
	close(procfd);
	/* The share moves away: the server does not look its path up. */
	snprintf(moved, sizeof(moved), "%s/moved", c.base);
	is_int(rename(c.share, moved), 0);
	is_int(fc_init(&c, FUSE_KERNEL_VERSION, FUSE_KERNEL_MINOR_VERSION, UINT32_MAX, NULL), 0);
	is_int(fc_lookup(&c, ROOT, "f", &e), 0);
	is_int(fc_mkdir(&c, ROOT, "d", S_IFDIR | 0755, NULL), 0);
	snprintf(moved, sizeof(moved), "%s/moved/d", c.base);
	ok(access(moved, F_OK) == 0, "made in the directory the descriptor names");
	/* Opening a file reopens an O_PATH descriptor through proc_fd. */
	uint64_t fh;
	is_int(fc_open_node(&c, e.nodeid, O_RDONLY, false, &fh), 0);
	fc_release(&c, e.nodeid, fh, false);
	snprintf(moved, sizeof(moved), "%s/moved", c.base);
	rename(moved, c.share);
	teardown();
	ok(fc_count_fds() == fds_before, "no descriptor left (%d, before %d)", fc_count_fds(), fds_before);
}

TAP_MAIN()
