/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The FUSE server through a fake transport (fuse-client.c): every opcode,
 * its answers and its errors, checked against what the host file system
 * holds afterwards. Needs root (the server gives new files the caller's
 * owner); skips otherwise.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fuse-client.h"
#include "tap.h"

#define ROOT FUSE_ROOT_ID

static struct fc c;

static void setup(void)
{
	int r = fc_open(&c, NULL, true);

	if (r < 0) {
		printf("# setup: %s\n", strerror(-r));
		abort();
	}
}

static void teardown(void)
{
	ok(c.framing_ok, "every reply had the request's unique and its own length");
	fc_close(&c);
}

static uint64_t lookup(const char *name)
{
	struct fuse_entry_out e = {0};

	return fc_lookup(&c, ROOT, name, &e) == 0 ? e.nodeid : 0;
}

/* First: the others need root. */
TEST(needs_root)
{
	if (geteuid() != 0)
		tap_skip_all("needs root: the server gives new files the caller's owner");
}

TEST(init)
{
	struct fuse_init_out out;

	ok(fc_open(&c, NULL, false) == 0, "server up");
	is_int(fc_getattr(&c, ROOT, NULL), -EIO);
	is_int(fc_init(&c, 6, 40, 0, NULL), -EPROTO);
	is_int(fc_init(&c, 7, 30, 0, NULL), -EPROTO);
	memset(&out, 0xff, sizeof(out));
	is_int(fc_init(&c, 8, 0, 0, &out), 0);
	ok(out.major == 7 && out.minor == FUSE_KERNEL_MINOR_VERSION, "a newer major gets ours back (%u.%u)", out.major,
	   out.minor);
	is_int(fc_getattr(&c, ROOT, NULL), -EIO);
	is_int(fc_init(&c, 7, 99, FUSE_POSIX_LOCKS | FUSE_WRITEBACK_CACHE | FUSE_DO_READDIRPLUS | FUSE_EXPORT_SUPPORT,
	               &out),
	       0);
	is_int(out.minor, FUSE_KERNEL_MINOR_VERSION);
	is_int(out.flags, FUSE_POSIX_LOCKS | FUSE_DO_READDIRPLUS);
	is_int(out.max_write, FS_DEFAULT_MAX_WRITE);
	is_int(out.max_pages, FS_DEFAULT_MAX_WRITE / 4096);
	is_int(out.time_gran, 1);
	is_int(fc_init(&c, 7, 31, 0, NULL), -EINVAL);
	is_int(fc_getattr(&c, ROOT, NULL), 0);
	teardown();

	/* An older client: its minor wins. */
	ok(fc_open(&c, NULL, false) == 0, "server up");
	is_int(fc_init(&c, 7, 31, FUSE_ASYNC_READ, &out), 0);
	ok(out.minor == 31 && out.flags == FUSE_ASYNC_READ, "minor 31 agreed (%u), flags %#x", out.minor, out.flags);
	teardown();
}

TEST(lookup_forget)
{
	struct fuse_entry_out e, e2;
	struct fs_server_stats st;
	struct stat hs;
	struct fs_server_opts o;

	setup();
	fc_put_file(&c, "f", "hello");
	mkdir(fc_path(&c, "d"), 0750);
	stat(fc_path(&c, "f"), &hs);
	is_int(fc_lookup(&c, ROOT, "f", &e), 0);
	ok(e.nodeid > ROOT && e.attr.ino == hs.st_ino && e.attr.size == 5 && e.attr.mode == hs.st_mode,
	   "entry of f: node %llu, host inode and attributes", (unsigned long long)e.nodeid);
	ok(e.entry_valid == 1 && e.attr_valid == 1, "1 s timeouts");
	is_int(fc_lookup(&c, ROOT, "f", &e2), 0);
	is_int(e2.nodeid, e.nodeid);
	link(fc_path(&c, "f"), fc_path(&c, "hard"));
	is_int(fc_lookup(&c, ROOT, "hard", &e2), 0);
	ok(e2.nodeid == e.nodeid, "a hard link is the same node");
	is_int(fc_lookup(&c, ROOT, "missing", &e2), -ENOENT);
	is_int(fc_lookup(&c, e.nodeid, "x", &e2), -ENOTDIR);
	is_int(fc_lookup(&c, 999999, "f", &e2), -ESTALE);
	fs_server_get_stats(c.s, &st);
	is_int(st.inodes, 2);
	/* Three lookups of one node: two forgets keep it, the third ends it. */
	fc_forget(&c, e.nodeid, 2);
	is_int(fc_getattr(&c, e.nodeid, NULL), 0);
	fc_forget(&c, e.nodeid, 1);
	is_int(fc_getattr(&c, e.nodeid, NULL), -ESTALE);
	fs_server_get_stats(c.s, &st);
	ok(st.inodes == 1 && st.inode_fds == 1, "only the root is left (%llu inodes, %llu fds)",
	   (unsigned long long)st.inodes, (unsigned long long)st.inode_fds);
	fc_forget(&c, ROOT, 100);
	is_int(fc_getattr(&c, ROOT, NULL), 0);

	/* BATCH_FORGET of two nodes, one unknown. */
	uint64_t a = lookup("f"), b = lookup("d");
	struct {
		struct fuse_batch_forget_in h;
		struct fuse_forget_one one[3];
	} bf = {{3, 0}, {{a, 1}, {b, 1}, {777777, 5}}};
	is_int(fc_simple(&c, FUSE_BATCH_FORGET, 0, &bf, sizeof(bf)), FC_NO_REPLY);
	ok(fc_getattr(&c, a, NULL) == -ESTALE && fc_getattr(&c, b, NULL) == -ESTALE, "batch forget dropped both");
	teardown();

	/* Negative entries, when asked for. */
	fs_server_opts_default(&o);
	o.negative_timeout = 2.5;
	fc_open(&c, &o, true);
	memset(&e, 0xff, sizeof(e));
	is_int(fc_lookup(&c, ROOT, "missing", &e), 0);
	ok(e.nodeid == 0 && e.entry_valid == 2 && e.entry_valid_nsec == 500000000, "negative entry for 2.5 s");
	teardown();
}

TEST(getattr_setattr)
{
	struct fuse_setattr_in in = {0};
	struct fuse_attr a;
	struct stat hs;
	uint64_t f, fh;

	setup();
	fc_put_file(&c, "f", "0123456789");
	f = lookup("f");
	is_int(fc_getattr(&c, f, &a), 0);
	ok(a.size == 10 && S_ISREG(a.mode), "getattr: size 10, regular");

	in.valid = FATTR_MODE;
	in.mode = S_IFREG | 0640;
	is_int(fc_setattr(&c, f, &in, &a), 0);
	stat(fc_path(&c, "f"), &hs);
	ok((a.mode & 07777) == 0640 && (hs.st_mode & 07777) == 0640, "chmod 0640 (host %o)", hs.st_mode & 07777);

	in.valid = FATTR_UID | FATTR_GID;
	in.uid = 1234;
	in.gid = 4321;
	is_int(fc_setattr(&c, f, &in, &a), 0);
	stat(fc_path(&c, "f"), &hs);
	ok(a.uid == 1234 && a.gid == 4321 && hs.st_uid == 1234 && hs.st_gid == 4321, "chown 1234:4321 on the host");

	in.valid = FATTR_SIZE;
	in.size = 3;
	is_int(fc_setattr(&c, f, &in, &a), 0);
	stat(fc_path(&c, "f"), &hs);
	ok(a.size == 3 && hs.st_size == 3, "truncate to 3");
	in.size = (uint64_t)INT64_MAX + 1;
	is_int(fc_setattr(&c, f, &in, NULL), -EFBIG);

	in.valid = FATTR_ATIME | FATTR_MTIME;
	in.atime = 1000000000;
	in.atimensec = 5;
	in.mtime = 1100000000;
	in.mtimensec = 7;
	is_int(fc_setattr(&c, f, &in, &a), 0);
	stat(fc_path(&c, "f"), &hs);
	ok(hs.st_atim.tv_sec == 1000000000 && hs.st_atim.tv_nsec == 5 && hs.st_mtim.tv_sec == 1100000000 &&
	       a.mtime == 1100000000 && a.mtimensec == 7,
	   "explicit atime and mtime");
	in.valid = FATTR_MTIME | FATTR_MTIME_NOW;
	is_int(fc_setattr(&c, f, &in, &a), 0);
	stat(fc_path(&c, "f"), &hs);
	ok(hs.st_mtim.tv_sec > 1600000000 && hs.st_atim.tv_sec == 1000000000, "mtime now, atime kept");
	in.valid = FATTR_ATIME | FATTR_ATIME_NOW | FATTR_CTIME;
	is_int(fc_setattr(&c, f, &in, NULL), 0);
	stat(fc_path(&c, "f"), &hs);
	ok(hs.st_atim.tv_sec > 1600000000, "atime now (ctime is the host's)");

	/* Truncate through an open file (FATTR_FH), and a foreign fh. */
	is_int(fc_open_node(&c, f, O_RDWR, false, &fh), 0);
	in.valid = FATTR_SIZE | FATTR_FH;
	in.fh = fh;
	in.size = 1;
	is_int(fc_setattr(&c, f, &in, &a), 0);
	is_int(a.size, 1);
	in.fh = fh + 1;
	is_int(fc_setattr(&c, f, &in, NULL), -EBADF);
	mkdir(fc_path(&c, "d"), 0755);
	in.fh = fh;
	is_int(fc_setattr(&c, lookup("d"), &in, NULL), -EBADF);
	in.valid = FATTR_SIZE;
	is_int(fc_setattr(&c, lookup("d"), &in, NULL), -EISDIR);
	is_int(fc_release(&c, f, fh, false), 0);

	symlink("f", fc_path(&c, "l"));
	in.valid = FATTR_MODE;
	in.mode = 0600;
	is_int(fc_setattr(&c, lookup("l"), &in, NULL), -EOPNOTSUPP);
	in.valid = FATTR_UID;
	in.uid = 77;
	is_int(fc_setattr(&c, lookup("l"), &in, NULL), 0);
	lstat(fc_path(&c, "l"), &hs);
	ok(hs.st_uid == 77, "lchown of the symlink itself");
	stat(fc_path(&c, "f"), &hs);
	ok(hs.st_uid == 1234, "its target untouched");
	teardown();
}

TEST(create_owner_mode)
{
	struct fuse_entry_out e;
	struct stat hs;
	uint64_t fh, d;

	setup();
	c.uid = 1000;
	c.gid = 1001;
	is_int(fc_create(&c, ROOT, "new", O_WRONLY | O_CREAT | O_EXCL, S_IFREG | 0664, &e, &fh), 0);
	stat(fc_path(&c, "new"), &hs);
	ok(hs.st_uid == 1000 && hs.st_gid == 1001 && (hs.st_mode & 07777) == 0664 && e.attr.uid == 1000,
	   "created as 1000:1001 mode 0664 (host %u:%u %o)", hs.st_uid, hs.st_gid, hs.st_mode & 07777);
	is_int(fc_create(&c, ROOT, "new", O_WRONLY | O_CREAT | O_EXCL, S_IFREG | 0600, &e, NULL), -EEXIST);
	c.uid = 2000;
	is_int(fc_create(&c, ROOT, "new", O_RDWR | O_CREAT | O_TRUNC, S_IFREG | 0600, &e, NULL), 0);
	stat(fc_path(&c, "new"), &hs);
	ok(hs.st_uid == 1000 && (hs.st_mode & 07777) == 0664, "an existing file keeps its owner and mode");
	is_int(fc_create(&c, ROOT, "bad", O_ACCMODE | O_CREAT, S_IFREG | 0600, NULL, NULL), -EINVAL);
	mkdir(fc_path(&c, "dir"), 0755);
	is_int(fc_create(&c, ROOT, "dir", O_RDONLY | O_CREAT, S_IFREG | 0600, NULL, NULL), -EISDIR);
	mkfifo(fc_path(&c, "fifo"), 0666);
	is_int(fc_create(&c, ROOT, "fifo", O_RDONLY | O_CREAT, S_IFREG | 0600, NULL, NULL), -EEXIST);

	/* A set-group-ID directory passes its group on. */
	c.uid = 0;
	c.gid = 0;
	is_int(fc_mkdir(&c, ROOT, "sg", S_IFDIR | 0777, &e), 0);
	d = e.nodeid;
	chown(fc_path(&c, "sg"), 0, 555);
	chmod(fc_path(&c, "sg"), 02777);
	c.uid = 1000;
	c.gid = 1001;
	is_int(fc_mkdir(&c, d, "sub", S_IFDIR | 0755, &e), 0);
	stat(fc_path(&c, "sg/sub"), &hs);
	ok(hs.st_uid == 1000 && hs.st_gid == 555 && (hs.st_mode & 02000), "mkdir in a setgid dir: group 555, setgid");
	is_int(fc_mknod(&c, d, "file", S_IFREG | 0644, 0, &e), 0);
	stat(fc_path(&c, "sg/file"), &hs);
	ok(hs.st_uid == 1000 && hs.st_gid == 555 && S_ISREG(hs.st_mode), "mknod in it: group 555");
	is_int(fc_symlink(&c, d, "sl", "target", &e), 0);
	lstat(fc_path(&c, "sg/sl"), &hs);
	ok(hs.st_uid == 1000 && S_ISLNK(hs.st_mode), "symlink owned by the caller");
	is_int(fc_mknod(&c, d, "fifo", S_IFIFO | 0600, 0, &e), 0);
	stat(fc_path(&c, "sg/fifo"), &hs);
	ok(S_ISFIFO(hs.st_mode) && hs.st_uid == 1000 && (hs.st_mode & 0777) == 0600, "a real FIFO");
	is_int(fc_mknod(&c, d, "sock", S_IFSOCK | 0600, 0, &e), 0);
	is_int(fc_mknod(&c, d, "dir", S_IFDIR | 0600, 0, &e), -EINVAL);
	is_int(fc_mkdir(&c, ROOT, "dir", S_IFDIR | 0755, &e), -EEXIST);
	teardown();
}

TEST(override)
{
	struct fuse_setattr_in in = {0};
	struct fuse_entry_out e;
	struct fuse_attr a;
	struct stat hs;
	char v[128];
	ssize_t n;
	uint64_t f, fh;

	setup();
	/* A device node: a plain file with no permissions on the host. */
	c.uid = 1000;
	c.gid = 1000;
	is_int(fc_mknod(&c, ROOT, "null", S_IFCHR | 0666, makedev(1, 3), &e), 0);
	ok(S_ISCHR(e.attr.mode) && (e.attr.mode & 0777) == 0666 && e.attr.rdev == makedev(1, 3) && e.attr.uid == 1000,
	   "the client sees a char device 1,3 owned by 1000");
	stat(fc_path(&c, "null"), &hs);
	ok(S_ISREG(hs.st_mode) && (hs.st_mode & 07777) == 0 && hs.st_size == 0 && hs.st_uid == 1000,
	   "the host has an empty regular file, mode 0 (%o)", hs.st_mode);
	n = getxattr(fc_path(&c, "null"), "user.containers.override_stat", v, sizeof(v) - 1);
	v[n > 0 ? n : 0] = '\0';
	is_str(v, "1000:1000:0666:char-1-3");
	is_int(fc_mknod(&c, ROOT, "sda", S_IFBLK | 0660, makedev(8, 0), &e), 0);
	ok(S_ISBLK(e.attr.mode) && e.attr.rdev == makedev(8, 0), "a block device 8,0");
	in.valid = FATTR_MODE;
	in.mode = S_IFCHR | 0600;
	is_int(fc_setattr(&c, lookup("null"), &in, &a), 0);
	stat(fc_path(&c, "null"), &hs);
	ok(S_ISCHR(a.mode) && (a.mode & 0777) == 0600 && (hs.st_mode & 07777) == 0,
	   "chmod of the device: override only");
	in.valid = FATTR_UID;
	in.uid = 7;
	is_int(fc_setattr(&c, lookup("null"), &in, &a), 0);
	ok(a.uid == 7 && S_ISCHR(a.mode), "chown of the device");

	/* Set-user-ID: kept off the host. */
	c.uid = 0;
	c.gid = 0;
	fc_put_file(&c, "prog", "#!/bin/sh\n");
	f = lookup("prog");
	in.valid = FATTR_MODE;
	in.mode = S_IFREG | 04755;
	is_int(fc_setattr(&c, f, &in, &a), 0);
	stat(fc_path(&c, "prog"), &hs);
	ok((a.mode & 07777) == 04755 && (hs.st_mode & 07777) == 0,
	   "chmod 4755: the client sees it, the host has 0 (%o)", hs.st_mode & 07777);
	in.mode = S_IFREG | 02711;
	is_int(fc_setattr(&c, f, &in, &a), 0);
	ok((a.mode & 07777) == 02711, "chmod 2711");
	in.mode = S_IFREG | 0755;
	is_int(fc_setattr(&c, f, &in, &a), 0);
	stat(fc_path(&c, "prog"), &hs);
	ok((a.mode & 07777) == 0755 && (hs.st_mode & 07777) == 0755 &&
	       getxattr(fc_path(&c, "prog"), "user.containers.override_stat", v, sizeof(v)) < 0,
	   "chmod 755: a plain file again, no xattr");
	is_int(fc_create(&c, ROOT, "suid", O_WRONLY | O_CREAT, S_IFREG | 04711, &e, &fh), 0);
	stat(fc_path(&c, "suid"), &hs);
	ok((e.attr.mode & 07777) == 04711 && (hs.st_mode & 07777) == 0, "create 4711: host mode 0");
	uint32_t w;
	is_int(fc_write(&c, e.nodeid, fh, 0, "data", 4, &w), 0);
	is_int(fc_mkdir(&c, ROOT, "sgdir", S_IFDIR | 02755, &e), 0);

	/* The override xattr is the server's own. */
	size_t len = 0;
	is_int(fc_getxattr(&c, lookup("null"), "user.containers.override_stat", 0, NULL, &len), -ENODATA);
	is_int(fc_setxattr(&c, f, "user.containers.override_stat", "0:0:4755", 8, 0), -EPERM);
	is_int(fc_removexattr(&c, lookup("null"), "user.containers.override_stat"), -EPERM);
	is_int(fc_listxattr(&c, lookup("null"), 0, NULL, &len), 0);
	is_int(len, 0);
	/* A host chmod makes it a plain file again (the host's word wins). */
	chmod(fc_path(&c, "null"), 0644);
	is_int(fc_getattr(&c, lookup("null"), &a), 0);
	ok(S_ISREG(a.mode) && (a.mode & 07777) == 0644, "after a host chmod: plain file");
	teardown();
}

TEST(names)
{
	struct fuse_entry_out e, e2;
	char buf[256];
	uint64_t d, f;

	setup();
	is_int(fc_mkdir(&c, ROOT, "d", S_IFDIR | 0755, &e), 0);
	d = e.nodeid;
	fc_put_file(&c, "d/f", "x");
	f = lookup("d") ? 0 : 0;
	is_int(fc_lookup(&c, d, "f", &e), 0);
	f = e.nodeid;
	is_int(fc_link(&c, f, ROOT, "hard", &e2), 0);
	ok(e2.nodeid == f && e2.attr.nlink == 2, "LINK: same node, 2 links");
	is_int(fc_link(&c, d, ROOT, "dirlink", NULL), -EPERM);
	is_int(fc_link(&c, f, ROOT, "hard", NULL), -EEXIST);
	is_int(fc_symlink(&c, ROOT, "sym", "d/f", &e), 0);
	is_int(fc_readlink(&c, e.nodeid, buf, sizeof(buf)), 0);
	is_str(buf, "d/f");
	is_int(fc_readlink(&c, f, buf, sizeof(buf)), -EINVAL);

	is_int(fc_rename(&c, d, "f", ROOT, "moved", 0), 0);
	ok(access(fc_path(&c, "moved"), F_OK) == 0 && access(fc_path(&c, "d/f"), F_OK) < 0,
	   "RENAME moved d/f to moved");
	fc_put_file(&c, "other", "y");
	is_int(fc_rename(&c, ROOT, "moved", ROOT, "other", RENAME_NOREPLACE), -EEXIST);
	is_int(fc_rename(&c, ROOT, "moved", ROOT, "other", RENAME_EXCHANGE), 0);
	int fd = open(fc_path(&c, "other"), O_RDONLY);
	ok(fd >= 0 && read(fd, buf, 1) == 1 && buf[0] == 'x', "RENAME_EXCHANGE swapped the files");
	close(fd);
	is_int(fc_rename(&c, ROOT, "moved", ROOT, "x", 0x80), -EINVAL);
	int r = fc_rename(&c, ROOT, "moved", ROOT, "wh", RENAME_WHITEOUT);
	ok(r == 0 || r == -EINVAL || r == -EPERM, "RENAME_WHITEOUT as the host allows (%d)", r);
	is_int(fc_rename(&c, ROOT, "nothing", ROOT, "y", 0), -ENOENT);
	is_int(fc_rename(&c, ROOT, "other", f, "y", 0), -ENOTDIR);

	is_int(fc_unlink(&c, ROOT, "hard"), 0);
	is_int(fc_unlink(&c, ROOT, "hard"), -ENOENT);
	is_int(fc_unlink(&c, ROOT, "d"), -EISDIR);
	fc_put_file(&c, "d/g", "z");
	is_int(fc_rmdir(&c, ROOT, "d"), -ENOTEMPTY);
	unlink(fc_path(&c, "d/g"));
	is_int(fc_rmdir(&c, ROOT, "d"), 0);
	is_int(fc_rmdir(&c, ROOT, "other"), -ENOTDIR);
	teardown();
}

TEST(read_write)
{
	static char big[300000];
	struct fuse_entry_out e;
	char buf[64];
	size_t n;
	uint32_t w;
	uint64_t fh, fh2, f;

	setup();
	is_int(fc_create(&c, ROOT, "data", O_RDWR | O_CREAT, S_IFREG | 0644, &e, &fh), 0);
	f = e.nodeid;
	is_int(fc_write(&c, f, fh, 0, "hello world", 11, &w), 0);
	is_int(w, 11);
	is_int(fc_write(&c, f, fh, 100, "tail", 4, &w), 0);
	is_int(fc_read(&c, f, fh, 6, 5, buf, &n), 0);
	ok(n == 5 && !memcmp(buf, "world", 5), "read back 'world'");
	is_int(fc_read(&c, f, fh, 1000, 10, buf, &n), 0);
	is_int(n, 0);
	is_int(fc_read(&c, f, fh, 100, 64, buf, &n), 0);
	ok(n == 4 && !memcmp(buf, "tail", 4), "read at the end: 4 bytes");
	/* A large write and read (several buffer segments on both sides). */
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7 + i / 251);
	is_int(fc_write(&c, f, fh, 4096, big, sizeof(big), &w), 0);
	is_int(w, sizeof(big));
	char *back = malloc(sizeof(big));
	is_int(fc_call_room(&c, FUSE_READ, f,
	                    &(struct iovec){&(struct fuse_read_in){.fh = fh, .offset = 4096, .size = sizeof(big)},
	                                    sizeof(struct fuse_read_in)},
	                    1, sizeof(big) + 16, back, sizeof(big), &n),
	       0);
	ok(n == sizeof(big) && !memcmp(back, big, sizeof(big)), "300000 bytes read back");
	/* A reply area smaller than asked: a short read. */
	is_int(fc_call_room(&c, FUSE_READ, f,
	                    &(struct iovec){&(struct fuse_read_in){.fh = fh, .offset = 4096, .size = 100000},
	                                    sizeof(struct fuse_read_in)},
	                    1, 16 + 1000, back, 100000, &n),
	       0);
	ok(n == 1000 && !memcmp(back, big, 1000), "read clamped to the 1000 bytes of room");
	free(back);
	is_int(fc_simple(&c, FUSE_FSYNC, f, &(struct fuse_fsync_in){.fh = fh}, sizeof(struct fuse_fsync_in)), 0);
	is_int(fc_simple(&c, FUSE_FSYNC, f, &(struct fuse_fsync_in){.fh = fh, .fsync_flags = 1},
	                 sizeof(struct fuse_fsync_in)),
	       0);
	is_int(fc_flush(&c, f, fh, 1), 0);
	is_int(fc_release(&c, f, fh, false), 0);
	is_int(fc_read(&c, f, fh, 0, 5, buf, &n), -EBADF);
	is_int(fc_release(&c, f, fh, false), -EBADF);

	/* OPEN: access modes, O_TRUNC, O_APPEND, what cannot be opened. */
	is_int(fc_open_node(&c, f, O_RDONLY, false, &fh), 0);
	is_int(fc_write(&c, f, fh, 0, "x", 1, NULL), -EBADF);
	is_int(fc_open_node(&c, f, O_WRONLY | O_APPEND, false, &fh2), 0);
	is_int(fc_write(&c, f, fh2, 0, "END", 3, NULL), 0);
	struct stat hs;
	stat(fc_path(&c, "data"), &hs);
	is_int(hs.st_size, 4096 + sizeof(big) + 3);
	is_int(fc_open_node(&c, f, O_WRONLY | O_TRUNC, false, &fh2), 0);
	stat(fc_path(&c, "data"), &hs);
	is_int(hs.st_size, 0);
	is_int(fc_open_node(&c, f, O_ACCMODE, false, &fh2), -EINVAL);
	is_int(fc_open_node(&c, ROOT, O_RDONLY, false, &fh2), -EISDIR);
	symlink("data", fc_path(&c, "l"));
	is_int(fc_open_node(&c, lookup("l"), O_RDONLY, false, &fh2), -ELOOP);
	mkfifo(fc_path(&c, "fifo"), 0666);
	is_int(fc_open_node(&c, lookup("fifo"), O_RDONLY, false, &fh2), -EINVAL);
	is_int(fc_open_node(&c, f, O_RDONLY, true, &fh2), -ENOTDIR);
	is_int(fc_open_node(&c, ROOT, O_RDONLY, true, &fh2), 0);
	is_int(fc_read(&c, ROOT, fh2, 0, 10, buf, &n), -EBADF);
	is_int(fc_release(&c, ROOT, fh2, false), -EBADF);
	is_int(fc_release(&c, ROOT, fh2, true), 0);
	teardown();
}

TEST(file_ops)
{
	struct fuse_entry_out e, e2;
	struct fuse_lseek_out lo;
	struct fuse_write_out wo;
	struct stat hs;
	uint64_t fh, fh2;
	uint32_t w;

	setup();
	is_int(fc_create(&c, ROOT, "a", O_RDWR | O_CREAT, S_IFREG | 0644, &e, &fh), 0);
	struct fuse_fallocate_in fa = {.fh = fh, .offset = 0, .length = 1 << 20};
	is_int(fc_simple(&c, FUSE_FALLOCATE, e.nodeid, &fa, sizeof(fa)), 0);
	stat(fc_path(&c, "a"), &hs);
	ok(hs.st_size == 1 << 20 && hs.st_blocks >= 2048, "FALLOCATE 1 MiB");
	fa.mode = 0x100; /* not a mode */
	ok(fc_simple(&c, FUSE_FALLOCATE, e.nodeid, &fa, sizeof(fa)) < 0, "FALLOCATE with a bad mode fails");
	ftruncate(open(fc_path(&c, "a"), O_WRONLY | O_TRUNC), 0);
	is_int(fc_write(&c, e.nodeid, fh, 65536, "data", 4, &w), 0);
	struct fuse_lseek_in ls = {.fh = fh, .offset = 0, .whence = SEEK_DATA};
	struct iovec p = {&ls, sizeof(ls)};
	is_int(fc_call(&c, FUSE_LSEEK, e.nodeid, &p, 1, &lo, sizeof(lo), NULL), 0);
	is_int(lo.offset, 65536);
	ls.whence = SEEK_HOLE;
	ls.offset = 65536;
	is_int(fc_call(&c, FUSE_LSEEK, e.nodeid, &p, 1, &lo, sizeof(lo), NULL), 0);
	ok(lo.offset >= 65540, "SEEK_HOLE after the data (%llu)", (unsigned long long)lo.offset);
	ls.whence = 77;
	is_int(fc_call(&c, FUSE_LSEEK, e.nodeid, &p, 1, &lo, sizeof(lo), NULL), -EINVAL);

	is_int(fc_create(&c, ROOT, "b", O_RDWR | O_CREAT, S_IFREG | 0644, &e2, &fh2), 0);
	struct fuse_copy_file_range_in cr = {
	    .fh_in = fh, .off_in = 65536, .nodeid_out = e2.nodeid, .fh_out = fh2, .off_out = 10, .len = 4};
	p = (struct iovec){&cr, sizeof(cr)};
	is_int(fc_call(&c, FUSE_COPY_FILE_RANGE, e.nodeid, &p, 1, &wo, sizeof(wo), NULL), 0);
	is_int(wo.size, 4);
	char buf[16] = "";
	int fd = open(fc_path(&c, "b"), O_RDONLY);
	ok(pread(fd, buf, 4, 10) == 4 && !memcmp(buf, "data", 4), "COPY_FILE_RANGE copied 'data'");
	close(fd);
	cr.flags = 1;
	is_int(fc_call(&c, FUSE_COPY_FILE_RANGE, e.nodeid, &p, 1, &wo, sizeof(wo), NULL), -EINVAL);
	cr.flags = 0;
	cr.nodeid_out = e.nodeid;
	is_int(fc_call(&c, FUSE_COPY_FILE_RANGE, e.nodeid, &p, 1, &wo, sizeof(wo), NULL), -EBADF);

	struct fuse_statfs_out so;
	is_int(fc_call(&c, FUSE_STATFS, ROOT, NULL, 0, &so, sizeof(so), NULL), 0);
	ok(so.st.blocks > 0 && so.st.bsize > 0 && so.st.namelen == 255, "STATFS of the host file system");
	is_int(fc_simple(&c, FUSE_SYNCFS, ROOT, &(struct fuse_syncfs_in){0}, sizeof(struct fuse_syncfs_in)), 0);

	/* ACCESS by permission bits. */
	chmod(fc_path(&c, "a"), 0640);
	chown(fc_path(&c, "a"), 1000, 2000);
	struct fuse_access_in ac = {.mask = R_OK | W_OK};
	c.uid = 1000;
	is_int(fc_simple(&c, FUSE_ACCESS, e.nodeid, &ac, sizeof(ac)), 0);
	c.uid = 1001;
	c.gid = 2000;
	is_int(fc_simple(&c, FUSE_ACCESS, e.nodeid, &ac, sizeof(ac)), -EACCES);
	ac.mask = R_OK;
	is_int(fc_simple(&c, FUSE_ACCESS, e.nodeid, &ac, sizeof(ac)), 0);
	c.gid = 3000;
	is_int(fc_simple(&c, FUSE_ACCESS, e.nodeid, &ac, sizeof(ac)), -EACCES);
	c.uid = c.gid = 0;
	ac.mask = X_OK;
	is_int(fc_simple(&c, FUSE_ACCESS, e.nodeid, &ac, sizeof(ac)), -EACCES);
	is_int(fc_simple(&c, FUSE_ACCESS, ROOT, &ac, sizeof(ac)), 0);
	teardown();
}

TEST(readdir)
{
	uint8_t buf[8192];
	struct fs_server_stats st;
	struct fuse_attr ra;
	size_t n;
	uint64_t fh;
	int names = 0;
	bool dotdot_root = false, sub_type = false;

	setup();
	for (int i = 0; i < 40; i++) {
		char name[32];

		snprintf(name, sizeof(name), "file-with-a-longish-name-%02d", i);
		fc_put_file(&c, name, "x");
	}
	mkdir(fc_path(&c, "sub"), 0755);
	fc_getattr(&c, ROOT, &ra);
	is_int(fc_open_node(&c, ROOT, O_RDONLY, true, &fh), 0);
	/* Small reads: the listing resumes at each entry's offset. */
	uint64_t off = 0;
	for (int round = 0; round < 100; round++) {
		is_int(fc_readdir(&c, ROOT, fh, off, 512, false, buf, &n), 0);
		if (!n)
			break;
		for (size_t p = 0; p < n;) {
			struct fuse_dirent *d = (struct fuse_dirent *)(buf + p);

			if (d->namelen == 2 && !memcmp(d->name, "..", 2))
				dotdot_root = d->ino == ra.ino;
			else if (d->namelen == 3 && !memcmp(d->name, "sub", 3))
				sub_type = d->type == DT_DIR;
			else if (d->namelen > 2)
				names++;
			off = d->off;
			p += FUSE_DIRENT_SIZE(d);
		}
	}
	is_int(names, 40);
	ok(dotdot_root, "the root's '..' is the root itself");
	ok(sub_type, "sub is DT_DIR");
	is_int(fc_readdir(&c, ROOT, fh, 0, 8192, false, buf, &n), 0);
	ok(n > 0, "back at offset 0");
	is_int(fc_release(&c, ROOT, fh, true), 0);

	/* READDIRPLUS: one client reference per entry but . and .. */
	is_int(fc_open_node(&c, ROOT, O_RDONLY, true, &fh), 0);
	is_int(fc_readdir(&c, ROOT, fh, 0, 8192, true, buf, &n), 0);
	int entries = 0, with_node = 0;
	for (size_t p = 0; p < n;) {
		struct fuse_direntplus *d = (struct fuse_direntplus *)(buf + p);

		entries++;
		with_node += d->entry_out.nodeid != 0;
		if (d->dirent.namelen == 3 && !memcmp(d->dirent.name, "sub", 3))
			ok(S_ISDIR(d->entry_out.attr.mode) && d->dirent.type == DT_DIR, "plus: sub's attributes");
		p += FUSE_DIRENTPLUS_SIZE(d);
	}
	fs_server_get_stats(c.s, &st);
	ok(entries > 2 && with_node == entries - 2 && st.inodes == (uint64_t)with_node + 1,
	   "plus: %d entries, %d with nodes, %llu inodes", entries, with_node, (unsigned long long)st.inodes);
	/* A reply area of a few bytes: no entry is looked up in vain. */
	uint64_t before = st.inodes;
	is_int(fc_call_room(&c, FUSE_READDIRPLUS, ROOT,
	                    &(struct iovec){&(struct fuse_read_in){.fh = fh, .offset = 0, .size = 4096},
	                                    sizeof(struct fuse_read_in)},
	                    1, 16 + 100, buf, sizeof(buf), &n),
	       0);
	is_int(n, 0);
	fs_server_get_stats(c.s, &st);
	is_int(st.inodes, before);
	is_int(fc_readdir(&c, ROOT, fh + (1ULL << 32), 0, 100, true, buf, &n), -EBADF);
	is_int(fc_readdir(&c, ROOT, fh, (uint64_t)INT64_MAX + 2, 100, true, buf, &n), -EINVAL);
	is_int(fc_simple(&c, FUSE_FSYNCDIR, ROOT, &(struct fuse_fsync_in){.fh = fh}, sizeof(struct fuse_fsync_in)), 0);
	is_int(fc_release(&c, ROOT, fh, true), 0);
	teardown();
}

TEST(xattr)
{
	char buf[256];
	size_t n;
	uint64_t f;

	setup();
	fc_put_file(&c, "f", "x");
	f = lookup("f");
	is_int(fc_setxattr(&c, f, "user.one", "value-1", 7, 0), 0);
	is_int(fc_setxattr(&c, f, "user.two", "2", 1, 0), 0);
	is_int(fc_setxattr(&c, f, "user.one", "v", 1, XATTR_CREATE), -EEXIST);
	is_int(fc_setxattr(&c, f, "user.none", "v", 1, XATTR_REPLACE), -ENODATA);
	ok(getxattr(fc_path(&c, "f"), "user.one", buf, sizeof(buf)) == 7, "on the host");
	is_int(fc_getxattr(&c, f, "user.one", 0, NULL, &n), 0);
	is_int(n, 7);
	is_int(fc_getxattr(&c, f, "user.one", 3, buf, &n), -ERANGE);
	is_int(fc_getxattr(&c, f, "user.one", sizeof(buf), buf, &n), 0);
	ok(n == 7 && !memcmp(buf, "value-1", 7), "value-1");
	is_int(fc_getxattr(&c, f, "user.none", sizeof(buf), buf, &n), -ENODATA);
	is_int(fc_listxattr(&c, f, 0, NULL, &n), 0);
	is_int(n, 18);
	is_int(fc_listxattr(&c, f, 5, buf, &n), -ERANGE);
	is_int(fc_listxattr(&c, f, sizeof(buf), buf, &n), 0);
	ok(n == 18 && !memcmp(buf, "user.one\0user.two\0", 18), "list: user.one user.two");
	is_int(fc_removexattr(&c, f, "user.one"), 0);
	is_int(fc_removexattr(&c, f, "user.one"), -ENODATA);
	is_int(fc_setxattr(&c, ROOT, "user.dir", "d", 1, 0), 0);
	symlink("f", fc_path(&c, "l"));
	is_int(fc_setxattr(&c, lookup("l"), "user.x", "d", 1, 0), -EPERM);
	is_int(fc_getxattr(&c, lookup("l"), "user.x", 0, NULL, &n), -ENODATA);
	is_int(fc_listxattr(&c, lookup("l"), 0, NULL, &n), 0);
	is_int(n, 0);
	char name[300];
	memset(name, 'a', sizeof(name) - 1);
	memcpy(name, "user.", 5);
	name[sizeof(name) - 1] = 0;
	is_int(fc_setxattr(&c, f, name, "v", 1, 0), -ERANGE);
	teardown();
}

TEST(locks)
{
	struct fuse_entry_out e;
	struct fuse_file_lock lk;
	uint64_t fh, fh2;
	struct fs_server_stats st;

	setup();
	is_int(fc_create(&c, ROOT, "lk", O_RDWR | O_CREAT, S_IFREG | 0644, &e, &fh), 0);
	is_int(fc_open_node(&c, e.nodeid, O_RDWR, false, &fh2), 0);
	/* Owner 1 write-locks 0..99; owner 2 sees it and cannot lock. */
	is_int(fc_lk(&c, FUSE_SETLK, e.nodeid, fh, 1, F_WRLCK, 0, 99, 0, NULL), 0);
	is_int(fc_lk(&c, FUSE_GETLK, e.nodeid, fh2, 2, F_RDLCK, 50, 60, 0, &lk), 0);
	ok(lk.type == F_WRLCK && lk.start == 0 && lk.end == 99, "GETLK by owner 2: owner 1's write lock 0-99");
	is_int(fc_lk(&c, FUSE_GETLK, e.nodeid, fh, 1, F_RDLCK, 50, 60, 0, &lk), 0);
	ok(lk.type == F_UNLCK, "GETLK by owner 1: no conflict with itself");
	is_int(fc_lk(&c, FUSE_SETLK, e.nodeid, fh2, 2, F_RDLCK, 50, 60, 0, NULL), -EAGAIN);
	is_int(fc_lk(&c, FUSE_SETLK, e.nodeid, fh2, 2, F_RDLCK, 100, INT64_MAX, 0, NULL), 0);
	fs_server_get_stats(c.s, &st);
	is_int(st.plocks, 2);
	/* Owner 1 closes (FLUSH): its locks go. */
	is_int(fc_flush(&c, e.nodeid, fh, 1), 0);
	is_int(fc_lk(&c, FUSE_SETLK, e.nodeid, fh2, 2, F_WRLCK, 0, 99, 0, NULL), 0);
	is_int(fc_lk(&c, FUSE_SETLK, e.nodeid, fh2, 2, F_UNLCK, 0, INT64_MAX, 0, NULL), 0);
	is_int(fc_lk(&c, FUSE_SETLK, e.nodeid, fh, 3, F_UNLCK, 0, INT64_MAX, 0, NULL), 0);
	/* Bad locks. */
	is_int(fc_lk(&c, FUSE_SETLK, e.nodeid, fh, 1, 77, 0, 1, 0, NULL), -EINVAL);
	is_int(fc_lk(&c, FUSE_SETLK, e.nodeid, fh, 1, F_WRLCK, 10, 5, 0, NULL), -EINVAL);
	is_int(fc_lk(&c, FUSE_SETLK, ROOT, fh, 1, F_WRLCK, 0, 5, 0, NULL), -EBADF);
	/* flock: per open file. */
	is_int(fc_lk(&c, FUSE_SETLK, e.nodeid, fh, 1, F_WRLCK, 0, 0, FUSE_LK_FLOCK, NULL), 0);
	is_int(fc_lk(&c, FUSE_SETLK, e.nodeid, fh2, 2, F_RDLCK, 0, 0, FUSE_LK_FLOCK, NULL), -EAGAIN);
	struct fuse_release_in rel = {.fh = fh, .release_flags = FUSE_RELEASE_FLOCK_UNLOCK};
	is_int(fc_simple(&c, FUSE_RELEASE, e.nodeid, &rel, sizeof(rel)), 0);
	is_int(fc_lk(&c, FUSE_SETLKW, e.nodeid, fh2, 2, F_RDLCK, 0, 0, FUSE_LK_FLOCK, NULL), 0);
	is_int(fc_release(&c, e.nodeid, fh2, false), 0);
	fc_forget(&c, e.nodeid, 1);
	fs_server_get_stats(c.s, &st);
	ok(st.plocks == 0 && st.handles == 0, "the inode's lock descriptors went with it");
	teardown();
}

/* Lock requests reach no host lock: another open file description of the
 * host file can take a write lock and flock. */
static bool host_file_unlocked(const char *path)
{
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	int fd = open(path, O_RDWR | O_CLOEXEC);
	bool ok = fd >= 0 && fcntl(fd, F_OFD_SETLK, &fl) == 0 && flock(fd, LOCK_EX | LOCK_NB) == 0;

	if (fd >= 0)
		close(fd);
	return ok;
}

TEST(guest_locks)
{
	struct fs_server_opts o;
	struct fuse_init_out io;
	struct fuse_entry_out e;
	struct fs_server_stats st;
	uint64_t fh, fh2;
	int hfd;

	is_str(fs_locks_name(FS_LOCKS_HOST), "host");
	is_str(fs_locks_name(FS_LOCKS_GUEST), "guest");
	ok(fs_locks_name((enum fs_locks)7) == NULL, "no name for another value");

	/* Host locks (the default): forwarding agreed, FLUSH served, no
	 * FOPEN_NOFLUSH. */
	ok(fc_open(&c, NULL, false) == 0, "server up (host locks)");
	is_int(fc_init(&c, 7, 38, FUSE_POSIX_LOCKS | FUSE_FLOCK_LOCKS | FUSE_ASYNC_READ, &io), 0);
	is_int(io.flags, FUSE_POSIX_LOCKS | FUSE_FLOCK_LOCKS | FUSE_ASYNC_READ);
	is_int(fc_create(&c, ROOT, "f", O_RDWR | O_CREAT, S_IFREG | 0644, &e, &fh), 0);
	is_int(c.open_flags, 0);
	is_int(fc_open_node(&c, e.nodeid, O_RDWR, false, &fh2), 0);
	is_int(c.open_flags, 0);
	is_int(fc_flush(&c, e.nodeid, fh, 1), 0);
	is_int(fc_lk(&c, FUSE_SETLK, e.nodeid, fh, 1, F_WRLCK, 0, INT64_MAX, 0, NULL), 0);
	ok(!host_file_unlocked(fc_path(&c, "f")), "host locks: the client's lock is on the host file");
	teardown();

	/* Guest locks: no forwarding offered, files opened without FLUSH. */
	fs_server_opts_default(&o);
	o.locks = FS_LOCKS_GUEST;
	ok(fc_open(&c, &o, false) == 0, "server up (guest locks)");
	is_int(fc_init(&c, 7, 38, FUSE_POSIX_LOCKS | FUSE_FLOCK_LOCKS | FUSE_ASYNC_READ, &io), 0);
	is_int(io.flags, FUSE_ASYNC_READ);
	is_int(fc_create(&c, ROOT, "f", O_RDWR | O_CREAT, S_IFREG | 0644, &e, &fh), 0);
	is_int(c.open_flags, FOPEN_NOFLUSH);
	is_int(fc_open_node(&c, e.nodeid, O_RDWR, false, &fh2), 0);
	is_int(c.open_flags, FOPEN_NOFLUSH);
	/* A client that sends them anyway: ENOSYS, before any check of the
	 * handle, and nothing held on the host. */
	is_int(fc_flush(&c, e.nodeid, fh, 1), -ENOSYS);
	is_int(fc_lk(&c, FUSE_SETLK, e.nodeid, fh, 1, F_WRLCK, 0, INT64_MAX, 0, NULL), -ENOSYS);
	is_int(fc_lk(&c, FUSE_SETLKW, e.nodeid, fh, 1, F_WRLCK, 0, INT64_MAX, 0, NULL), -ENOSYS);
	is_int(fc_lk(&c, FUSE_SETLK, e.nodeid, fh, 1, F_WRLCK, 0, 0, FUSE_LK_FLOCK, NULL), -ENOSYS);
	is_int(fc_lk(&c, FUSE_SETLK, e.nodeid, 999, 1, F_WRLCK, 0, 0, 0, NULL), -ENOSYS);
	is_int(fc_simple(&c, FUSE_SETLK, e.nodeid, NULL, 0), -ENOSYS);
	ok(host_file_unlocked(fc_path(&c, "f")), "guest locks: nothing locked on the host file");
	/* Nor do they see the host's locks. */
	hfd = open(fc_path(&c, "f"), O_RDWR | O_CLOEXEC);
	ok(hfd >= 0 && flock(hfd, LOCK_EX) == 0, "a host process holds flock");
	is_int(fc_lk(&c, FUSE_GETLK, e.nodeid, fh2, 2, F_WRLCK, 0, INT64_MAX, 0, NULL), -ENOSYS);
	if (hfd >= 0)
		close(hfd);
	fs_server_get_stats(c.s, &st);
	ok(st.plocks == 0 && st.deferred == 0, "no lock descriptor, no waiting lock");
	struct fuse_release_in rel = {.fh = fh, .release_flags = FUSE_RELEASE_FLOCK_UNLOCK};
	is_int(fc_simple(&c, FUSE_RELEASE, e.nodeid, &rel, sizeof(rel)), 0);
	is_int(fc_release(&c, e.nodeid, fh2, false), 0);
	fs_server_get_stats(c.s, &st);
	is_int(st.handles, 0);
	teardown();

	/* A client before 7.35 knows no FOPEN_NOFLUSH: none given, and its
	 * FLUSH gets ENOSYS (the client then sends no more). */
	ok(fc_open(&c, &o, false) == 0, "server up (guest locks)");
	is_int(fc_init(&c, 7, 31, FUSE_POSIX_LOCKS | FUSE_FLOCK_LOCKS, &io), 0);
	is_int(io.flags, 0);
	is_int(fc_create(&c, ROOT, "f", O_RDWR | O_CREAT, S_IFREG | 0644, &e, &fh), 0);
	is_int(c.open_flags, 0);
	is_int(fc_flush(&c, e.nodeid, fh, 1), -ENOSYS);
	teardown();
}

TEST(misc_ops)
{
	struct fuse_init_out io;
	uint8_t req[64] = {0};
	struct fuse_in_header *h = (void *)req;

	setup();
	is_int(fc_simple(&c, FUSE_BMAP, ROOT, NULL, 0), -ENOSYS);
	is_int(fc_simple(&c, FUSE_IOCTL, ROOT, NULL, 0), -ENOSYS);
	is_int(fc_simple(&c, FUSE_SETUPMAPPING, ROOT, NULL, 0), -ENOSYS);
	is_int(fc_simple(&c, FUSE_TMPFILE, ROOT, NULL, 0), -ENOSYS);
	is_int(fc_simple(&c, CUSE_INIT, ROOT, NULL, 0), -ENOSYS);
	is_int(fc_simple(&c, 0, ROOT, NULL, 0), -ENOSYS);
	is_int(fc_simple(&c, UINT32_MAX, ROOT, NULL, 0), -ENOSYS);
	is_int(fc_simple(&c, FUSE_INTERRUPT, ROOT, &(struct fuse_interrupt_in){12345}, 8), FC_NO_REPLY);
	/* A FORGET answers nothing, even on a full reply area. */
	h->len = sizeof(*h) + 8;
	h->opcode = FUSE_FORGET;
	h->nodeid = 12345;
	is_int(fc_raw(&c, req, h->len, 4096), 0);
	is_int(fc_simple(&c, FUSE_DESTROY, 0, NULL, 0), 0);
	is_int(fc_getattr(&c, ROOT, NULL), -EIO);
	is_int(fc_init(&c, 7, 38, 0, &io), 0);
	is_int(fc_getattr(&c, ROOT, NULL), 0);
	teardown();
}

TEST(read_only)
{
	struct fs_server_opts o;
	struct fuse_entry_out e;
	uint64_t fh;

	fs_server_opts_default(&o);
	o.read_only = true;
	is_int(fc_open(&c, &o, true), 0);
	fc_put_file(&c, "f", "x");
	is_int(fc_lookup(&c, ROOT, "f", &e), 0);
	is_int(fc_mkdir(&c, ROOT, "d", S_IFDIR | 0755, NULL), -EROFS);
	is_int(fc_create(&c, ROOT, "g", O_WRONLY | O_CREAT, S_IFREG | 0644, NULL, NULL), -EROFS);
	is_int(fc_unlink(&c, ROOT, "f"), -EROFS);
	is_int(fc_setxattr(&c, e.nodeid, "user.a", "b", 1, 0), -EROFS);
	is_int(fc_open_node(&c, e.nodeid, O_WRONLY, false, &fh), -EROFS);
	is_int(fc_open_node(&c, e.nodeid, O_RDONLY | O_TRUNC, false, &fh), -EROFS);
	is_int(fc_open_node(&c, e.nodeid, O_RDONLY, false, &fh), 0);
	ok(access(fc_path(&c, "f"), F_OK) == 0, "nothing changed");
	teardown();
}

TEST(bad_options)
{
	struct fs_server_opts o;
	struct fs_server *s = NULL;

	fs_server_opts_default(&o);
	is_int(fs_server_new(&o, &s), -EINVAL);
	o.root = "/nonexistent/kvrun-fs";
	is_int(fs_server_new(&o, &s), -ENOENT);
	o.root = "/etc/hostname";
	is_int(fs_server_new(&o, &s), -ENOTDIR);
	o.root = "/tmp";
	o.max_write = 100;
	is_int(fs_server_new(&o, &s), -EINVAL);
	o.max_write = 1 << 20;
	o.max_inode_fds = 1;
	is_int(fs_server_new(&o, &s), -EINVAL);
	o.max_inode_fds = 16;
	o.attr_timeout = -1;
	is_int(fs_server_new(&o, &s), -EINVAL);
	o.attr_timeout = 1;
	o.locks = (enum fs_locks)2;
	is_int(fs_server_new(&o, &s), -EINVAL);
	ok(s == NULL, "no server made");
}

/* Deferred locks: what the transport's complete() received. */
struct done {
	int calls;
	struct fuse_out_header oh;
};

static struct done dn;

static void *t_defer(void *opaque)
{
	return opaque;
}

static void t_complete(void *token, const void *reply, size_t len)
{
	struct done *d = token;

	if (len == sizeof(d->oh))
		memcpy(&d->oh, reply, len);
	__atomic_fetch_add(&d->calls, 1, __ATOMIC_SEQ_CST);
}

/* A SETLKW run with deferral; the server's return and the unique used. */
static size_t setlkw_deferred(uint64_t node, uint64_t fh, uint64_t owner, uint64_t unique)
{
	struct {
		struct fuse_in_header h;
		struct fuse_lk_in lk;
	} req = {{.len = sizeof(req), .opcode = FUSE_SETLKW, .unique = unique, .nodeid = node},
	         {.fh = fh, .owner = owner, .lk = {0, INT64_MAX, F_WRLCK, 1}}};
	uint8_t out[64];
	struct fs_request fr = {.in = &(struct iovec){&req, sizeof(req)},
	                        .nin = 1,
	                        .out = &(struct iovec){out, sizeof(out)},
	                        .nout = 1,
	                        .defer = t_defer,
	                        .complete = t_complete,
	                        .opaque = &dn};

	return fs_server_run(c.s, c.w, &fr);
}

static bool wait_done(int calls)
{
	for (int i = 0; i < 3000 && __atomic_load_n(&dn.calls, __ATOMIC_SEQ_CST) < calls; i++)
		usleep(1000);
	return __atomic_load_n(&dn.calls, __ATOMIC_SEQ_CST) == calls;
}

TEST(deferred_locks)
{
	struct fuse_entry_out e;
	struct fs_server_stats st;
	uint64_t fh1, fh2;

	setup();
	memset(&dn, 0, sizeof(dn));
	is_int(fc_create(&c, ROOT, "lk", O_RDWR | O_CREAT, S_IFREG | 0644, &e, &fh1), 0);
	is_int(fc_open_node(&c, e.nodeid, O_RDWR, false, &fh2), 0);
	is_int(fc_lk(&c, FUSE_SETLK, e.nodeid, fh1, 1, F_WRLCK, 0, INT64_MAX, 0, NULL), 0);
	ok(setlkw_deferred(e.nodeid, fh2, 2, 9001) == FS_DEFERRED, "a SETLKW that must wait is deferred");
	fs_server_get_stats(c.s, &st);
	ok(st.deferred == 1 && dn.calls == 0, "kept by the server, not answered");
	is_int(fc_lk(&c, FUSE_SETLK, e.nodeid, fh1, 1, F_UNLCK, 0, INT64_MAX, 0, NULL), 0);
	ok(wait_done(1) && dn.oh.error == 0 && dn.oh.unique == 9001 && dn.oh.len == 16,
	   "granted once owner 1 unlocked: complete() with the reply (error %d)", dn.oh.error);
	/* Owner 2 holds it now; owner 1 waits and is interrupted. */
	ok(setlkw_deferred(e.nodeid, fh1, 1, 9002) == FS_DEFERRED, "owner 1 waits in turn");
	is_int(fc_simple(&c, FUSE_INTERRUPT, ROOT, &(struct fuse_interrupt_in){9002}, 8), FC_NO_REPLY);
	ok(wait_done(2) && dn.oh.error == -EINTR && dn.oh.unique == 9002, "INTERRUPT: EINTR (%d)", dn.oh.error);
	/* An INTERRUPT that came before its request. */
	is_int(fc_simple(&c, FUSE_INTERRUPT, ROOT, &(struct fuse_interrupt_in){9003}, 8), FC_NO_REPLY);
	ok(setlkw_deferred(e.nodeid, fh1, 1, 9003) == FS_DEFERRED && wait_done(3) && dn.oh.error == -EINTR,
	   "an INTERRUPT before its request still ends it");
	/* Cancelled (a device reset). */
	ok(setlkw_deferred(e.nodeid, fh1, 1, 9004) == FS_DEFERRED, "waits again");
	fs_server_cancel_waits(c.s, true);
	ok(wait_done(4) && dn.oh.error == -EINTR && dn.oh.unique == 9004, "cancelled: EINTR");
	fs_server_cancel_waits(c.s, false);
	/* DESTROY while one waits: answered before the handles close. */
	ok(setlkw_deferred(e.nodeid, fh1, 1, 9005) == FS_DEFERRED, "waits once more");
	is_int(fc_simple(&c, FUSE_DESTROY, 0, NULL, 0), 0);
	ok(dn.calls == 5 && dn.oh.error == -EINTR && dn.oh.unique == 9005, "DESTROY answered it first: EINTR");
	is_int(fc_init(&c, 7, 38, 0, NULL), 0);
	/* Freed while waiting: answered before the server is gone. */
	is_int(fc_lookup(&c, ROOT, "lk", &e), 0);
	is_int(fc_open_node(&c, e.nodeid, O_RDWR, false, &fh1), 0);
	is_int(fc_open_node(&c, e.nodeid, O_RDWR, false, &fh2), 0);
	is_int(fc_lk(&c, FUSE_SETLK, e.nodeid, fh1, 1, F_WRLCK, 0, INT64_MAX, 0, NULL), 0);
	ok(setlkw_deferred(e.nodeid, fh2, 2, 9006) == FS_DEFERRED, "waits after a new INIT");
	teardown();
	ok(dn.calls == 6 && dn.oh.error == -EINTR && dn.oh.unique == 9006, "the server's end answers it: EINTR");
}

/* Requests of other threads, each with its own worker, on one server. */
struct racer {
	uint64_t node, fh;
	int result; /* the last request's reply error */
	int runs;
	bool stop;
	bool lock; /* one SETLKW, waiting in its call (no transport deferral) */
};

static void *race(void *arg)
{
	struct racer *r = arg;
	struct fs_worker *w;
	uint8_t out[16 + 4096];

	if (fs_worker_new(c.s, &w) < 0)
		return NULL;
	do {
		struct {
			struct fuse_in_header h;
			union {
				struct fuse_read_in rd;
				struct fuse_lk_in lk;
			} u;
		} req = {{.opcode = r->lock ? FUSE_SETLKW : FUSE_READ, .unique = 7000, .nodeid = r->node}};
		struct fuse_out_header oh;

		if (r->lock) {
			req.h.len = sizeof(req.h) + sizeof(req.u.lk);
			req.u.lk = (struct fuse_lk_in){.fh = r->fh, .owner = 77, .lk = {0, INT64_MAX, F_WRLCK, 1}};
		} else {
			req.h.len = sizeof(req.h) + sizeof(req.u.rd);
			req.u.rd = (struct fuse_read_in){.fh = r->fh, .size = 4096};
		}
		fs_server_handle(c.s, w, &(struct iovec){&req, req.h.len}, 1, &(struct iovec){out, sizeof(out)}, 1);
		memcpy(&oh, out, sizeof(oh));
		__atomic_store_n(&r->result, oh.error, __ATOMIC_SEQ_CST);
		__atomic_fetch_add(&r->runs, 1, __ATOMIC_SEQ_CST);
	} while (!r->lock && !__atomic_load_n(&r->stop, __ATOMIC_SEQ_CST));
	fs_worker_free(w);
	return NULL;
}

/* DESTROY while others run: it waits for them (a lock waiting in its call
 * gives up, EINTR) and keeps the rest out until every inode and handle is
 * gone; the server then answers the others EIO until the next INIT. */
TEST(destroy_runs_alone)
{
	struct fuse_entry_out e;
	struct fs_server_stats st;
	struct racer readers[3] = {{0}}, waiter = {0};
	pthread_t rt[3], wt;
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	int hostfd, fds;
	char big[8192];

	setup();
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	fc_put_file(&c, "data", big);
	is_int(fc_lookup(&c, ROOT, "data", &e), 0);
	for (int i = 0; i < 3; i++) {
		readers[i].node = e.nodeid;
		is_int(fc_open_node(&c, e.nodeid, O_RDONLY, false, &readers[i].fh), 0);
	}
	is_int(fc_create(&c, ROOT, "lk", O_RDWR | O_CREAT, S_IFREG | 0644, &e, &waiter.fh), 0);
	waiter.node = e.nodeid;
	waiter.lock = true;
	waiter.result = 1;
	hostfd = open(fc_path(&c, "lk"), O_RDWR);
	ok(hostfd >= 0 && fcntl(hostfd, F_OFD_SETLK, &fl) == 0, "a host process holds a write lock");
	fds = fc_count_fds();
	pthread_create(&wt, NULL, race, &waiter);
	for (int i = 0; i < 3; i++)
		pthread_create(&rt[i], NULL, race, &readers[i]);
	usleep(50000);
	ok(__atomic_load_n(&waiter.runs, __ATOMIC_SEQ_CST) == 0, "the SETLKW waits in its call");
	for (int i = 0; i < 3; i++)
		ok(__atomic_load_n(&readers[i].runs, __ATOMIC_SEQ_CST) > 0 && readers[i].result == 0,
		   "reader %d reads (%d runs)", i, readers[i].runs);
	is_int(fc_simple(&c, FUSE_DESTROY, 0, NULL, 0), 0);
	pthread_join(wt, NULL);
	is_int(waiter.result, -EINTR);
	fs_server_get_stats(c.s, &st);
	ok(!st.initialized && st.inodes == 1 && st.handles == 0 && st.plocks == 0,
	   "nothing the client knew is left: %llu inodes, %llu handles", (unsigned long long)st.inodes,
	   (unsigned long long)st.handles);
	usleep(20000);
	for (int i = 0; i < 3; i++)
		ok(__atomic_load_n(&readers[i].result, __ATOMIC_SEQ_CST) == -EIO, "reader %d: EIO after it (%d)", i,
		   readers[i].result);
	for (int i = 0; i < 3; i++) {
		__atomic_store_n(&readers[i].stop, true, __ATOMIC_SEQ_CST);
		pthread_join(rt[i], NULL);
	}
	ok(fc_count_fds() < fds, "the handles' descriptors are closed (%d, were %d)", fc_count_fds(), fds);
	is_int(fc_init(&c, 7, 38, 0, NULL), 0);
	is_int(fc_lookup(&c, ROOT, "data", &e), 0);
	close(hostfd);
	teardown();
}

/* The descriptor bounds are cut to fit RLIMIT_NOFILE. */
TEST(rlimit_fit)
{
	struct rlimit old, low = {.rlim_cur = 264, .rlim_max = 0};
	struct fs_server_stats st;

	getrlimit(RLIMIT_NOFILE, &old);
	low.rlim_max = old.rlim_max;
	ok(setrlimit(RLIMIT_NOFILE, &low) == 0, "RLIMIT_NOFILE lowered to 264");
	setup();
	fs_server_get_stats(c.s, &st);
	ok(st.max_handles == 50 && st.max_inode_fds == 100, "bounds cut to %u inode descriptors, %u handles",
	   st.max_inode_fds, st.max_handles);
	ok(st.max_inode_fds + 2 * st.max_handles + 64 <= 264, "they fit with 64 to spare");
	teardown();
	setrlimit(RLIMIT_NOFILE, &old);
	setup();
	fs_server_get_stats(c.s, &st);
	ok(old.rlim_cur < 65536 + 2 * 4096 + 64 || (st.max_inode_fds == 65536 && st.max_handles == 4096),
	   "with room: the defaults (%u, %u)", st.max_inode_fds, st.max_handles);
	teardown();
}

TAP_MAIN()
