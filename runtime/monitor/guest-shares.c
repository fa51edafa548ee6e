/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "runtime/monitor/guest-shares.h"

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

/* Workers of a share of directories and of one of single files. */
#define SHARE_WORKERS 4
#define SHARE_FILE_WORKERS 2

bool guest_mount_is_bind(const struct oci_mount *m)
{
	if (m->type && strcmp(m->type, "bind") == 0)
		return true;
	for (size_t i = 0; m->options && m->options[i]; i++)
		if (strcmp(m->options[i], "bind") == 0 || strcmp(m->options[i], "rbind") == 0)
			return true;
	return false;
}

/* podman binds a tmpfs of its own (<userdata>/shm) on /dev/shm. A VM
 * cannot share it, and nothing else can see into the VM's IPC namespace
 * anyway: the guest mounts a tmpfs of the same size there instead. */
bool guest_mount_is_shm(const struct oci_mount *m, unsigned long long *ret_size)
{
	struct statfs sf;

	*ret_size = 0;
	if (!guest_mount_is_bind(m) || !m->destination || strcmp(m->destination, "/dev/shm") != 0 || !m->source)
		return false;
	if (statfs(m->source, &sf) < 0 || sf.f_type != TMPFS_MAGIC)
		return false;
	*ret_size = (unsigned long long)sf.f_blocks * (unsigned long long)sf.f_bsize;
	return *ret_size > 0;
}

/* "ro" or "rro" after any "rw"/"rrw": runc's last word wins. */
static bool bind_read_only(const struct oci_mount *m)
{
	bool ro = false;

	for (size_t i = 0; m->options && m->options[i]; i++) {
		if (!strcmp(m->options[i], "ro") || !strcmp(m->options[i], "rro"))
			ro = true;
		else if (!strcmp(m->options[i], "rw") || !strcmp(m->options[i], "rrw"))
			ro = false;
	}
	return ro;
}

static const char *file_kind(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFSOCK:
		return "a socket";
	case S_IFCHR:
		return "a character device";
	case S_IFBLK:
		return "a block device";
	case S_IFIFO:
		return "a FIFO";
	default:
		return "not a directory or a regular file";
	}
}

/* The bind source's real path and whether it is a directory. */
static int resolve_source(const struct oci_mount *m, size_t i, char **ret, bool *ret_dir)
{
	struct stat st;

	if (!m->source || m->source[0] != '/')
		return err_set(-EINVAL, "mounts[%zu] (%s): bind mount source \"%s\" must be an absolute host path", i,
		               m->destination, m->source ? m->source : "");
	*ret = realpath(m->source, NULL);
	if (!*ret)
		return err_setsys(-errno, "mounts[%zu] (%s): bind mount source %s", i, m->destination, m->source);
	if (stat(*ret, &st) < 0) {
		free(*ret);
		return err_setsys(-errno, "mounts[%zu] (%s): bind mount source %s", i, m->destination, m->source);
	}
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
		free(*ret);
		return err_set(-EINVAL,
		               "mounts[%zu] (%s): bind mount source %s is %s: only directories and regular files can "
		               "be shared with the VM",
		               i, m->destination, m->source, file_kind(st.st_mode));
	}
	*ret_dir = S_ISDIR(st.st_mode);
	return 0;
}

/* A new share of dir (taken), opened. */
static int add_share(struct guest_shares *g, char *dir, bool read_only, bool whole, int *ret)
{
	struct guest_share *s;

	if (g->n >= GUEST_SHARES_MAX) {
		free(dir);
		return err_set(-ENOSPC, "more than %d host directories to share with the VM", GUEST_SHARES_MAX);
	}
	s = &g->shares[g->n++];
	*s = (struct guest_share){.dir = dir, .read_only = read_only, .files = !whole, .dir_fd = -1};
	if (!whole && !(s->names = calloc(1, sizeof(char *))))
		return -ENOMEM;
	s->dir_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (s->dir_fd < 0)
		return err_setsys(-errno, "open %s", dir);
	*ret = (int)g->n - 1;
	return 0;
}

static int find_share(const struct guest_shares *g, const char *dir, bool read_only, bool whole)
{
	for (unsigned int i = 0; i < g->n; i++)
		if ((int)i != g->root && g->shares[i].read_only == read_only && !strcmp(g->shares[i].dir, dir) &&
		    (whole ? !g->shares[i].names : true))
			return (int)i;
	return -1;
}

/* name into share s's list, once. */
static int add_name(struct guest_share *s, const char *name)
{
	char **v;

	for (size_t i = 0; i < s->n_names; i++)
		if (!strcmp(s->names[i], name))
			return 0;
	v = realloc(s->names, (s->n_names + 2) * sizeof(char *));
	if (!v)
		return -ENOMEM;
	s->names = v;
	v[s->n_names + 1] = NULL;
	v[s->n_names] = strdup(name);
	if (!v[s->n_names])
		return -ENOMEM;
	s->n_names++;
	return 0;
}

/* A bind of a directory: its own share (or one of the same directory). */
static int plan_dir(struct guest_shares *g, char *path, bool ro, struct guest_share_mount *out)
{
	int k = find_share(g, path, ro, true);

	if (k >= 0) {
		free(path);
		out->share = k;
		return 0;
	}
	return add_share(g, path, ro, true, &out->share);
}

/* A bind of a file: a name of its directory's share. */
static int plan_file(struct guest_shares *g, char *path, bool ro, struct guest_share_mount *out)
{
	char *slash = strrchr(path, '/');
	int k, r;

	out->name = strdup(slash + 1);
	if (!out->name) {
		free(path);
		return -ENOMEM;
	}
	/* The file's directory: "/" for a file at the top. */
	slash[slash == path ? 1 : 0] = '\0';
	k = find_share(g, path, ro, false);
	if (k >= 0)
		free(path);
	else if ((r = add_share(g, path, ro, false, &k)) < 0)
		return r;
	out->share = k;
	/* A directory shared whole shows the file already. */
	return g->shares[k].names ? add_name(&g->shares[k], out->name) : 0;
}

static int plan_mount(struct guest_shares *g, const struct oci_mount *m, size_t i)
{
	struct guest_share_mount *out = &g->mounts[i];
	unsigned long long shm;
	char *path = NULL;
	bool dir = false;
	int r;

	out->share = -1;
	if (!guest_mount_is_bind(m) || guest_mount_is_shm(m, &shm))
		return 0;
	r = resolve_source(m, i, &path, &dir);
	if (r < 0)
		return r;
	r = dir ? plan_dir(g, path, bind_read_only(m), out) : plan_file(g, path, bind_read_only(m), out);
	if (r == -ENOSPC)
		return err_prefix(r, "mounts[%zu] (%s)", i, m->destination);
	return r;
}

static int plan_root(struct guest_shares *g, const struct oci_spec *spec, const char *rootfs)
{
	char *dir = realpath(rootfs, NULL);
	int r;

	if (!dir)
		return err_setsys(-errno, "root filesystem %s", rootfs);
	/* Writable even with root.readonly: guest-init makes the mount
	 * points in it, then the mount read-only, as runc does. */
	r = add_share(g, dir, false, true, &g->root);
	return r < 0 ? err_prefix(r, "root filesystem") : 0;
}

int guest_shares_plan(const struct oci_spec *spec, const char *rootfs, enum fs_locks locks, struct guest_shares *ret)
{
	struct guest_shares g = {.root = -1};
	int r = 0;

	if (spec->n_mounts && !(g.mounts = calloc(spec->n_mounts, sizeof(*g.mounts))))
		return -ENOMEM;
	g.n_mounts = spec->n_mounts;
	if (rootfs)
		r = plan_root(&g, spec, rootfs);
	for (size_t i = 0; r >= 0 && i < spec->n_mounts; i++)
		r = plan_mount(&g, &spec->mounts[i], i);
	if (r < 0) {
		guest_shares_done(&g);
		*ret = (struct guest_shares){.root = -1};
		return r == -ENOMEM ? err_set(r, "out of memory") : r;
	}
	for (unsigned int i = 0; i < g.n; i++)
		g.shares[i].locks = locks;
	*ret = g;
	return 0;
}

void guest_shares_done(struct guest_shares *g)
{
	for (unsigned int i = 0; i < g->n; i++) {
		struct guest_share *s = &g->shares[i];

		if (s->dir_fd >= 0)
			close(s->dir_fd);
		for (size_t k = 0; k < s->n_names; k++)
			free(s->names[k]);
		free(s->names);
		free(s->dir);
	}
	for (size_t i = 0; i < g->n_mounts; i++)
		free(g->mounts[i].name);
	free(g->mounts);
	*g = (struct guest_shares){.root = -1};
}

int guest_shares_clone_mounts(struct guest_shares *g)
{
	for (unsigned int i = 0; i < g->n; i++) {
		struct guest_share *s = &g->shares[i];
#ifdef SYS_open_tree
		int fd = (int)syscall(SYS_open_tree, s->dir_fd, "",
		                      OPEN_TREE_CLONE | O_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
		int e = errno;
#else
		int fd = -1, e = ENOSYS;
#endif

		if (fd < 0 && (e == ENOSYS || e == EPERM || e == EINVAL)) {
			log_debug(
			    "shared directory %s: no private copy of its mount (%s): the engine's mount stays busy "
			    "while the VM serves it",
			    s->dir, strerror(e));
			continue;
		}
		if (fd < 0)
			return err_setsys(-e, "shared directory %s: a private copy of its mount (open_tree)", s->dir);
		close(s->dir_fd);
		s->dir_fd = fd;
	}
	return 0;
}

void guest_share_tag(unsigned int i, char tag[GUEST_SHARE_TAG_SIZE])
{
	sandbox_share_tag(i, tag, GUEST_SHARE_TAG_SIZE);
}

unsigned int guest_shares_to_sandbox(const struct guest_shares *g, int proc_fd, char tags[][GUEST_SHARE_TAG_SIZE],
                                     struct sandbox_share *out)
{
	for (unsigned int i = 0; i < g->n; i++) {
		const struct guest_share *s = &g->shares[i];

		guest_share_tag(i, tags[i]);
		out[i] = (struct sandbox_share){
		    .tag = tags[i],
		    .dir = s->dir,
		    .read_only = s->read_only,
		    .locks = s->locks,
		    .dir_fd = s->dir_fd,
		    .proc_fd = proc_fd,
		    .names = s->names,
		    .workers = s->files ? SHARE_FILE_WORKERS : SHARE_WORKERS,
		};
	}
	return g->n;
}
