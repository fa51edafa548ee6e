/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jail_mount() (jail.h): the jail's namespaces and its root. The root is a
 * small tmpfs, mounted over /tmp in the jail's own mount namespace (the
 * host's /tmp is untouched), that holds the state directory at
 * JAIL_STATE_DIR (and, on their own mounts, the files of it that stay
 * writable once jail_begin() seals it), each bound path at its own path,
 * the device nodes and, for a file server, the process's own
 * /proc/self/fd (nothing else of /proc). The process pivots into it and
 * the host's tree is detached. Every source
 * is opened (O_PATH, in the new namespace) before the tmpfs covers
 * anything, and bound through /proc/self/fd, so a source under /tmp is
 * found all the same.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/fileio.h"
#include "runtime/host/jail-int.h"

#define STAGE "/tmp"
#define OLD_ROOT "/.host"
#define ROOT_OPTIONS "mode=0755,size=256k,nr_inodes=256"
/* The state directory, the binds, two device nodes and /proc/self/fd. */
#define MAX_SOURCES (JAIL_MAX_BINDS + 4)
/* A file server reaches the files it holds as O_PATH descriptors through
 * their links there (path-based calls: chmod, *xattr, utimensat...). */
#define PROC_FDS "/proc/self/fd"

struct source {
	int fd; /* O_PATH */
	const char *target; /* path in the jail */
	bool dir, writable, device;
};

/* Namespaces are per thread: a thread that exists now would stay in the
 * host's. */
static int check_single_threaded(void)
{
	_cleanup_free_ char *status = NULL;
	const char *t;
	int r = read_file_all("/proc/self/status", 1 << 16, &status, NULL);

	if (r < 0)
		return err_setsys(r, "jail: read /proc/self/status");
	t = strstr(status, "\nThreads:");
	if (!t || strtol(t + 9, NULL, 10) != 1)
		return err_set(-EBUSY, "jail: the process has threads already (the jail must come before them)");
	return 0;
}

static int enter_net(const struct jail_config *c)
{
	_cleanup_close_ int fd = -1;

	switch (c->net) {
	case JAIL_NET_KEEP:
		return 0;
	case JAIL_NET_NEW:
		if (unshare(CLONE_NEWNET) < 0)
			return err_setsys(-errno, "jail: new network namespace");
		return 0;
	case JAIL_NET_JOIN:
		fd = open(c->netns_path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || setns(fd, CLONE_NEWNET) < 0)
			return err_setsys(-errno, "jail: network namespace %s", c->netns_path);
		return 0;
	}
	return -EINVAL;
}

static int add_source(struct source *s, unsigned int *n, const char *path, const char *target, bool writable,
                      bool device)
{
	struct stat st;
	int fd;

	if (*n == MAX_SOURCES)
		return err_set(-ENOSPC, "jail: too many paths");
	if (path[0] != '/' || !strcmp(path, "/"))
		return err_set(-EINVAL, "jail: %s is not an absolute path below /", path);
	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return err_setsys(-errno, "jail: %s", path);
	if (fstat(fd, &st) < 0) {
		close(fd);
		return err_setsys(-errno, "jail: %s", path);
	}
	s[(*n)++] = (struct source){
	    .fd = fd, .target = target, .dir = S_ISDIR(st.st_mode), .writable = writable, .device = device};
	return 0;
}

static int open_sources(const struct jail_config *c, struct source *s, unsigned int *ret_n)
{
	unsigned int n = 0;
	int r = 0;

	if (c->state_dir)
		r = add_source(s, &n, c->state_dir, JAIL_STATE_DIR, true, false);
	for (unsigned int i = 0; r >= 0 && i < c->nbinds; i++) {
		const char *p = c->binds[i].path;

		if (!strncmp(p, JAIL_STATE_DIR "/", sizeof(JAIL_STATE_DIR)) || !strcmp(p, JAIL_STATE_DIR) ||
		    !strncmp(p, "/dev/", 5))
			r = err_set(-EINVAL, "jail: %s would hide what the jail itself puts there", p);
		else
			r = add_source(s, &n, p, p, c->binds[i].writable, false);
	}
	if (r >= 0 && c->devices)
		r = add_source(s, &n, "/dev/kvm", "/dev/kvm", true, true);
	if (r >= 0 && c->devices && access("/dev/vhost-net", F_OK) == 0)
		r = add_source(s, &n, "/dev/vhost-net", "/dev/vhost-net", true, true);
	/* This process's own directory of descriptors (opened here, before
	 * the pivot: "self" is resolved now), read-only. */
	if (r >= 0 && c->file_server)
		r = add_source(s, &n, PROC_FDS, PROC_FDS, false, false);
	*ret_n = n;
	return r;
}

/* An empty directory or file at the target, its parents made. */
static int make_target(const struct source *s, char *path, size_t size)
{
	char *slash;
	int fd, r;

	if ((size_t)snprintf(path, size, "%s%s", STAGE, s->target) >= size)
		return err_set(-ENAMETOOLONG, "jail: %s is too long", s->target);
	slash = strrchr(path, '/');
	*slash = 0;
	r = mkdir_p(path, 0755);
	if (r < 0)
		return err_setsys(r, "jail: create %s", path);
	*slash = '/';
	if (s->dir)
		return mkdir(path, 0755) < 0 && errno != EEXIST ? err_setsys(-errno, "jail: create %s", path) : 0;
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_setsys(-errno, "jail: create %s", path);
	close(fd);
	return 0;
}

static int bind_source(const struct source *s)
{
	unsigned long flags = MS_BIND | MS_REMOUNT | MS_NOSUID | (s->device ? 0 : MS_NODEV | MS_NOEXEC);
	char target[PATH_MAX], from[64];
	int r;

	r = make_target(s, target, sizeof(target));
	if (r < 0)
		return r;
	snprintf(from, sizeof(from), "/proc/self/fd/%d", s->fd);
	if (mount(from, target, NULL, MS_BIND, NULL) < 0)
		return err_setsys(-errno, "jail: bind %s", s->target);
	/* Device nodes are read-only mounts too: KVM and vhost are opened
	 * read-write all the same (a read-only mount does not stop that for
	 * a device), and their modes and owners cannot be changed (a file
	 * server keeps CAP_FOWNER and CAP_CHOWN). */
	if (!s->writable || s->device)
		flags |= MS_RDONLY;
	if (mount(NULL, target, NULL, flags, NULL) < 0)
		return err_setsys(-errno, "jail: restrict %s", s->target);
	return 0;
}

/* Into the staged root; the host's tree goes. The root itself is then
 * read-only: nothing can be created in it. */
static int pivot(void)
{
	if (mkdir(STAGE OLD_ROOT, 0700) < 0)
		return err_setsys(-errno, "jail: create %s", STAGE OLD_ROOT);
	if (syscall(SYS_pivot_root, STAGE, STAGE OLD_ROOT) < 0)
		return err_setsys(-errno, "jail: pivot_root");
	if (chdir("/") < 0)
		return err_setsys(-errno, "jail: chdir /");
	if (umount2(OLD_ROOT, MNT_DETACH) < 0)
		return err_setsys(-errno, "jail: detach the host's tree");
	if (rmdir(OLD_ROOT) < 0)
		return err_setsys(-errno, "jail: remove %s", OLD_ROOT);
	if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return err_setsys(-errno, "jail: make the root read-only");
	return 0;
}

/* Each of the state directory's writable files on its own mount, which
 * stays writable when the directory's is made read-only. */
static int bind_state_files(const struct jail_config *c)
{
	char path[PATH_MAX];

	for (unsigned int i = 0; c->state_dir && i < JAIL_MAX_STATE_FILES && c->state_files[i]; i++) {
		if (strchr(c->state_files[i], '/') || c->state_files[i][0] == '.')
			return err_set(-EINVAL, "jail: %s is not a name in the state directory", c->state_files[i]);
		snprintf(path, sizeof(path), "%s%s/%s", STAGE, JAIL_STATE_DIR, c->state_files[i]);
		if (mount(path, path, NULL, MS_BIND, NULL) < 0)
			return err_setsys(-errno, "jail: bind %s/%s", c->state_dir, c->state_files[i]);
	}
	return 0;
}

static int build_root(const struct jail_config *c)
{
	struct source s[MAX_SOURCES];
	unsigned int n = 0;
	int r;

	if (unshare(CLONE_NEWNS) < 0)
		return err_setsys(-errno, "jail: new mount namespace");
	/* Nothing mounted here from now on reaches the host. */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return err_setsys(-errno, "jail: make the host's mounts one-way (slave)");
	/* In the new namespace: a bind's source must be one of its mounts. */
	r = open_sources(c, s, &n);
	if (r >= 0 && mount("tmpfs", STAGE, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, ROOT_OPTIONS) < 0)
		r = err_setsys(-errno, "jail: mount its root on %s", STAGE);
	for (unsigned int i = 0; r >= 0 && i < n; i++)
		r = bind_source(&s[i]);
	for (unsigned int i = 0; i < n; i++)
		close(s[i].fd);
	if (r >= 0)
		r = bind_state_files(c);
	return r >= 0 ? pivot() : r;
}

int jail_mount(const struct jail_config *c, struct jail **ret)
{
	struct jail *j;
	int r;

	if (c->uid == 0 || c->gid == 0)
		return err_set(-EINVAL, "jail: no uid or gid chosen");
	if (c->file_server && c->profile != JAIL_MONITOR)
		return err_set(-EINVAL, "jail: only a monitor serves files");
	r = check_single_threaded();
	if (r >= 0)
		r = enter_net(c);
	if (r >= 0)
		r = build_root(c);
	if (r < 0)
		return r;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	*j = (struct jail){.profile = c->profile,
	                   .uid = c->uid,
	                   .gid = c->gid,
	                   .pid = getpid(),
	                   .log_only = jail_log_only(),
	                   .seal_state_dir = c->state_dir && !c->state_dir_writable,
	                   .file_server = c->file_server};
	*ret = j;
	return 0;
}
