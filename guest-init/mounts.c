/* SPDX-License-Identifier: Apache-2.0 */
/* The container's root disk and the spec's mounts, as runc applies them. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/path.h"
#include "common/spec-support.h"
#include "guest-init/guest-init.h"

#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT 0x00002000
#endif

/* A virtio-fs tag from the host: one path component of at most 36 bytes
 * (it names a directory under GI_SHARES_DIR). */
static bool tag_ok(const char *tag)
{
	size_t n = tag ? strlen(tag) : 0;

	return n && n <= 36 && !strchr(tag, '/') && strcmp(tag, ".") && strcmp(tag, "..");
}

int gi_mount_root_disk(const struct proto_start *s, const char *target)
{
	const char *dev = s->root_device ? s->root_device : "/dev/vda";
	const char *type = s->root_fstype ? s->root_fstype : "ext4";
	bool shared = !strcmp(type, "virtiofs");
	/* A shared root is made read-only at the end, as runc does, once the
	 * mount points are made in it (a disk image has them already). */
	unsigned long flags = s->root_readonly && !shared ? MS_RDONLY : 0;
	int r;

	if (shared && !tag_ok(dev))
		return err_set(-EINVAL, "the root filesystem's virtio-fs tag '%s' is not a name", dev);
	r = shared ? 0 : gi_wait_disk(dev, 60 * 1000);
	gi_mark(7);
	if (r < 0)
		return r;
	r = mkdir_p(target, 0755);
	if (r < 0)
		return err_setsys(r, "mkdir %s", target);
	if (mount(dev, target, type, flags, NULL) < 0)
		return err_setsys(-errno, "mount %s (%s) on %s", dev, type, target);
	return 0;
}

/* Whether path is the root of a mount: a tag mounted there before (by an
 * earlier START of the same VM). */
static bool is_mount_root(const char *path)
{
	struct statx sx, px;
	char parent[PATH_MAX + 4];

	if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_INO, &sx) < 0)
		return false;
	if (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT)
		return sx.stx_attributes & STATX_ATTR_MOUNT_ROOT;
	snprintf(parent, sizeof(parent), "%s/..", path);
	return statx(AT_FDCWD, parent, 0, STATX_INO, &px) == 0 &&
	       (px.stx_dev_major != sx.stx_dev_major || px.stx_dev_minor != sx.stx_dev_minor);
}

int gi_mount_shares(const struct proto_start *s, const char *dir)
{
	char path[PATH_MAX];
	int r;

	for (size_t i = 0; i < s->n_mounts; i++) {
		const char *tag = s->mounts[i].share;
		bool seen = false;

		if (!tag)
			continue;
		for (size_t k = 0; k < i && !seen; k++)
			seen = s->mounts[k].share && !strcmp(s->mounts[k].share, tag);
		if (seen)
			continue;
		if (!tag_ok(tag))
			return err_set(-EINVAL, "mounts[%zu]: the virtio-fs tag '%s' is not a name", i, tag);
		snprintf(path, sizeof(path), "%s/%s", dir, tag);
		if (is_mount_root(path))
			continue; /* a pod's earlier container mounted it */
		r = mkdir_p(path, 0755);
		if (r < 0)
			return err_setsys(r, "mkdir %s", path);
		/* Flags (ro, nosuid...) are each bind mount's, made from it. */
		if (mount(tag, path, "virtiofs", 0, NULL) < 0)
			return err_setsys(-errno, "mount the shared directory %s (%s, virtio-fs tag %s)",
			                  s->mounts[i].source ? s->mounts[i].source : "", s->mounts[i].destination,
			                  tag);
	}
	return 0;
}

int gi_mount_options(char *const *options, unsigned long *ret_flags, unsigned long *ret_propagation, char **ret_data)
{
	unsigned long flags = 0, prop = 0;
	_cleanup_free_ char *data = strdup("");
	const struct spec_mount_option *o;

	if (!data)
		return -ENOMEM;
	/* The options kvrun features lists (common/spec-support.c). */
	for (char *const *opt = options; opt && *opt; opt++) {
		if ((o = spec_mount_option_find(*opt)) && o->propagation) {
			prop |= o->flag;
		} else if (o) {
			if (o->clear)
				flags &= ~o->flag;
			else
				flags |= o->flag;
		} else {
			char *nd;

			if (asprintf(&nd, "%s%s%s", data, data[0] ? "," : "", *opt) < 0)
				return -ENOMEM;
			free(data);
			data = nd;
		}
	}
	*ret_flags = flags;
	*ret_propagation = prop;
	*ret_data = TAKE_PTR(data);
	return 0;
}

/* Create dest as a directory, or as an empty file when the source is one. */
static int make_target(const char *dest, bool file)
{
	_cleanup_free_ char *parent = strdup(dest);
	struct stat st;
	char *slash;
	int fd, r;

	if (!parent)
		return -ENOMEM;
	if (!file)
		return mkdir_p(dest, 0755);
	slash = strrchr(parent, '/');
	if (slash && slash != parent) {
		*slash = '\0';
		r = mkdir_p(parent, 0755);
		if (r < 0)
			return r;
	}
	/* An existing mount point is used as is: opening it for writing
	 * would fail on a read-only root. */
	if (lstat(dest, &st) == 0)
		return 0;
	fd = open(dest, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return errno == EISDIR ? 0 : -errno;
	close(fd);
	return 0;
}

static int bind_mount(const char *src, const char *dest, unsigned long flags, const char *data)
{
	const unsigned long remount_mask =
	    MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME | MS_RELATIME | MS_STRICTATIME;

	if (mount(src, dest, NULL, MS_BIND | (flags & MS_REC), NULL) < 0)
		return err_setsys(-errno, "bind %s on %s", src, dest);
	/* A bind mount ignores other flags; they take effect on a remount. */
	if (flags & remount_mask)
		if (mount(NULL, dest, NULL, MS_BIND | MS_REMOUNT | (flags & remount_mask), data) < 0)
			return err_setsys(-errno, "remount %s", dest);
	return 0;
}

/* A file carried in the message: stage it in files_dir, bind it at dest. */
static int mount_copied_file(const struct proto_mount *m, size_t idx, const char *dest, const char *files_dir,
                             unsigned long flags)
{
	char staged[PATH_MAX];
	int r;

	r = mkdir_p(files_dir, 0755);
	if (r < 0)
		return err_setsys(r, "mkdir %s", files_dir);
	snprintf(staged, sizeof(staged), "%s/%zu", files_dir, idx);
	r = write_file_atomic(staged, m->data, m->data_len, m->data_mode ? m->data_mode : 0644);
	if (r < 0)
		return err_setsys(r, "write %s", staged);
	r = make_target(dest, true);
	if (r < 0)
		return err_setsys(r, "create %s", dest);
	return bind_mount(staged, dest, flags & ~MS_REC, NULL);
}

/* A bind of a shared host directory, or of one entry of it: from where
 * gi_mount_shares() mounted its tag. */
static int mount_share(const struct proto_mount *m, const char *dest, unsigned long flags, const char *data)
{
	char src[PATH_MAX];
	struct stat st;
	int r;

	if (!tag_ok(m->share) || (m->share_path && !tag_ok(m->share_path)))
		return err_set(-EINVAL, "bind mount of %s: bad virtio-fs tag or entry", m->destination);
	if (m->share_path)
		snprintf(src, sizeof(src), "%s/%s/%s", GI_SHARES_DIR, m->share, m->share_path);
	else
		snprintf(src, sizeof(src), "%s/%s", GI_SHARES_DIR, m->share);
	if (stat(src, &st) < 0)
		return err_setsys(-errno, "bind mount source %s (shared as %s)", m->source ? m->source : "", src);
	r = make_target(dest, !S_ISDIR(st.st_mode));
	if (r < 0)
		return err_setsys(r, "create %s", dest);
	return bind_mount(src, dest, flags | MS_BIND, data);
}

static unsigned long locked_flags(const char *path);

/* In a user namespace that does not own the VM's network namespace or a
 * cgroup namespace of its own, sysfs and cgroup2 cannot be mounted: the
 * VM's own are bound there instead (runc binds the host's cgroup2). */
static int mount_fs_userns(const char *fstype, const char *dest, unsigned long flags)
{
	const char *src = strcmp(fstype, "sysfs") == 0 ? "/sys" : "/sys/fs/cgroup";

	/* A remount must keep the flags the VM's mount is locked with. */
	return bind_mount(src, dest, flags | locked_flags(src) | MS_BIND | MS_REC, NULL);
}

static int mount_fs(const struct proto_mount *m, const char *type, const char *dest, unsigned long flags, char *data,
                    bool userns)
{
	const char *fstype = strcmp(type, "cgroup") == 0 ? "cgroup2" : type;
	int r;

	r = make_target(dest, false);
	if (r < 0)
		return err_setsys(r, "mkdir %s", dest);
	if (strcmp(fstype, "cgroup2") == 0)
		data[0] = '\0'; /* v1 options mean nothing to cgroup2 */
	if (mount(m->source ? m->source : fstype, dest, fstype, flags & ~MS_REC, data[0] ? data : NULL) == 0)
		return 0;
	if (errno == EPERM && userns && (strcmp(fstype, "sysfs") == 0 || strcmp(fstype, "cgroup2") == 0))
		return mount_fs_userns(fstype, dest, flags);
	return err_setsys(-errno, "mount %s (%s) on %s", m->source ? m->source : "", fstype, m->destination);
}

const char *gi_pod_shm_dir;

/* A tmpfs at /dev/shm that is the pod's (PROTO_POD_SHM_SOURCE). */
static const struct proto_mount *pod_shm_mount(const struct proto_start *s)
{
	for (size_t i = 0; i < s->n_mounts; i++) {
		const struct proto_mount *m = &s->mounts[i];

		if (m->destination && !strcmp(m->destination, "/dev/shm") && m->type && !strcmp(m->type, "tmpfs") &&
		    m->source && !strcmp(m->source, PROTO_POD_SHM_SOURCE))
			return m;
	}
	return NULL;
}

bool gi_pod_shm_ready(void)
{
	char parent[PATH_MAX];
	struct stat a, b;

	if (!gi_pod_shm_dir)
		return false;
	snprintf(parent, sizeof(parent), "%s/..", gi_pod_shm_dir);
	return stat(gi_pod_shm_dir, &a) == 0 && stat(parent, &b) == 0 && a.st_dev != b.st_dev;
}

void gi_pod_shm_setup(const struct proto_start *s)
{
	const struct proto_mount *m = pod_shm_mount(s);
	_cleanup_free_ char *data = NULL;
	unsigned long flags, prop;
	int r;

	if (!m || !gi_pod_shm_dir || gi_pod_shm_ready())
		return;
	r = gi_mount_options(m->options, &flags, &prop, &data);
	if (r >= 0 && (r = mkdir_p(gi_pod_shm_dir, 0755)) < 0)
		err_setsys(r, "mkdir %s", gi_pod_shm_dir);
	if (r >= 0 && mount("shm", gi_pod_shm_dir, "tmpfs", flags & (MS_NOSUID | MS_NODEV | MS_NOEXEC), data) < 0)
		r = err_setsys(-errno, "mount the pod's /dev/shm on %s", gi_pod_shm_dir);
	if (r < 0)
		log_warn("%s: each container of the pod gets a /dev/shm of its own", err_msg());
}

static int mount_one(const struct proto_mount *m, size_t idx, const char *rootfs, const char *files_dir, bool userns)
{
	_cleanup_free_ char *dest = NULL, *data = NULL, *src = NULL;
	unsigned long flags, prop;
	const char *type = m->type ? m->type : "";
	struct stat st;
	int r;

	if (!m->destination || m->destination[0] != '/')
		return err_set(-EINVAL, "mount destination must be absolute: %s", m->destination ? m->destination : "");
	r = path_join_in(rootfs, m->destination, &dest);
	if (r < 0)
		return err_setsys(r, "mount destination %s", m->destination);
	r = gi_mount_options(m->options, &flags, &prop, &data);
	if (r < 0)
		return r;
	if (m->share)
		r = mount_share(m, dest, flags, data);
	else if (m->has_data)
		r = mount_copied_file(m, idx, dest, files_dir, flags);
	else if (!strcmp(type, "tmpfs") && m->source && !strcmp(m->source, PROTO_POD_SHM_SOURCE) &&
	         gi_pod_shm_ready()) {
		/* The pod's /dev/shm, bound with the mount's flags (its size and
		 * mode are the tmpfs's). */
		r = make_target(dest, false);
		if (r < 0)
			return err_setsys(r, "create %s", dest);
		r = bind_mount(gi_pod_shm_dir, dest, flags & ~MS_REC, NULL);
	} else if ((flags & MS_BIND) || strcmp(type, "bind") == 0) {
		/* Without a shared filesystem, a bind source is a path in the
		 * guest: inside the container's rootfs first, then the guest's. */
		if (!m->source)
			return err_set(-EINVAL, "bind mount of %s has no source", m->destination);
		r = path_join_in(rootfs, m->source, &src);
		if (r < 0)
			return r;
		if (stat(src, &st) < 0) {
			free(src);
			src = strdup(m->source);
			if (!src)
				return -ENOMEM;
			if (stat(src, &st) < 0)
				return err_setsys(-errno, "bind source %s", m->source);
		}
		r = make_target(dest, !S_ISDIR(st.st_mode));
		if (r < 0)
			return err_setsys(r, "create %s", dest);
		r = bind_mount(src, dest, flags | MS_BIND, data);
	} else {
		r = mount_fs(m, type, dest, flags, data, userns);
	}
	if (r < 0)
		return r;
	if (prop && mount(NULL, dest, NULL, prop, NULL) < 0)
		return err_setsys(-errno, "set propagation of %s", m->destination);
	return 0;
}

static const char *const dev_links[][2] = {
    {"/proc/self/fd", "fd"},       {"/proc/self/fd/0", "stdin"}, {"/proc/self/fd/1", "stdout"},
    {"/proc/self/fd/2", "stderr"}, {"pts/ptmx", "ptmx"},
};

static bool spec_mounts(const struct proto_start *s, const char *dest)
{
	for (size_t i = 0; i < s->n_mounts; i++)
		if (s->mounts[i].destination && strcmp(s->mounts[i].destination, dest) == 0)
			return true;
	return false;
}

/* runc's default devices and /dev links, then linux.devices. Without a
 * /dev mount in the spec a tmpfs is mounted there, so a read-only root
 * disk still gets nodes. */
static int setup_dev(const struct proto_start *s, const char *rootfs)
{
	char path[PATH_MAX];
	int r;

	snprintf(path, sizeof(path), "%s/dev", rootfs);
	if (!spec_mounts(s, "/dev")) {
		if (mkdir_p(path, 0755) < 0 ||
		    mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_STRICTATIME, "mode=755,size=65536k") < 0)
			return err_setsys(-errno, "mount tmpfs on %s", path);
	}
	r = gi_devices_create(s, rootfs);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ARRAY_SIZE(dev_links); i++) {
		snprintf(path, sizeof(path), "%s/dev/%s", rootfs, dev_links[i][1]);
		if (symlink(dev_links[i][0], path) < 0 && errno != EEXIST)
			return err_setsys(-errno, "symlink %s", path);
	}
	snprintf(path, sizeof(path), "%s/dev/pts", rootfs);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/dev/shm", rootfs);
	mkdir(path, 01777);
	return 0;
}

int gi_rootfs_mounts(const struct proto_start *s, const char *rootfs, const char *files_dir)
{
	bool dev_done = false;
	int r;

	for (size_t i = 0; i < s->n_mounts; i++) {
		/* Device nodes go in as soon as /dev is mounted, before the
		 * mounts below it (/dev/pts, /dev/shm, /dev/mqueue). */
		if (!dev_done && s->mounts[i].destination && strncmp(s->mounts[i].destination, "/dev/", 5) == 0) {
			gi_mark(24);
			r = setup_dev(s, rootfs);
			gi_mark(25);
			if (r < 0)
				return r;
			dev_done = true;
		}
		r = mount_one(&s->mounts[i], i, rootfs, files_dir, s->user_ns);
		gi_mark(55 + (unsigned int)(i < 8 ? i : 8));
		if (r < 0)
			return r;
	}
	return dev_done ? 0 : setup_dev(s, rootfs);
}

int gi_rootfs_pivot(const char *rootfs)
{
	_cleanup_close_ int oldroot = -1, newroot = -1;

	oldroot = open("/", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	newroot = open(rootfs, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (oldroot < 0 || newroot < 0)
		return err_setsys(-errno, "open %s", rootfs);
	if (fchdir(newroot) < 0)
		return err_setsys(-errno, "chdir %s", rootfs);
	/* pivot_root(".", ".") stacks the old root on top of the new one,
	 * so no put_old directory is needed (runc does the same). */
	if (syscall(SYS_pivot_root, ".", ".") < 0) {
		if (errno != EINVAL)
			return err_setsys(-errno, "pivot_root %s", rootfs);
		/* The VM's root is the initramfs (the kernel's rootfs mount),
		 * which pivot_root cannot leave: move the container's root
		 * over it and chroot, as runc --no-pivot does. */
		if (mount(".", "/", NULL, MS_MOVE, NULL) < 0)
			return err_setsys(-errno, "move %s to /", rootfs);
		if (chroot(".") < 0)
			return err_setsys(-errno, "chroot %s", rootfs);
		return chdir("/") < 0 ? err_setsys(-errno, "chdir /") : 0;
	}
	if (fchdir(oldroot) < 0)
		return err_setsys(-errno, "fchdir old root");
	if (mount(NULL, ".", NULL, MS_SLAVE | MS_REC, NULL) < 0)
		return err_setsys(-errno, "make old root rslave");
	if (umount2(".", MNT_DETACH) < 0)
		return err_setsys(-errno, "detach old root");
	if (chdir("/") < 0)
		return err_setsys(-errno, "chdir /");
	return 0;
}

static int mask_path(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return errno == ENOENT ? 0 : err_setsys(-errno, "masked path %s", path);
	if (S_ISDIR(st.st_mode)) {
		if (mount("tmpfs", path, "tmpfs", MS_RDONLY, NULL) < 0)
			return err_setsys(-errno, "mask %s", path);
	} else if (mount("/dev/null", path, NULL, MS_BIND, NULL) < 0) {
		return err_setsys(-errno, "mask %s", path);
	}
	return 0;
}

/* Keep the flags the kernel locked on the original mount when remounting. */
static unsigned long locked_flags(const char *path)
{
	struct statvfs sv;
	unsigned long f = 0;

	if (statvfs(path, &sv) < 0)
		return 0;
	if (sv.f_flag & ST_NOSUID)
		f |= MS_NOSUID;
	if (sv.f_flag & ST_NODEV)
		f |= MS_NODEV;
	if (sv.f_flag & ST_NOEXEC)
		f |= MS_NOEXEC;
	return f;
}

static int readonly_path(const char *path)
{
	if (mount(path, path, NULL, MS_BIND | MS_REC, NULL) < 0)
		return errno == ENOENT ? 0 : err_setsys(-errno, "readonly path %s", path);
	if (mount(NULL, path, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | locked_flags(path), NULL) < 0)
		return err_setsys(-errno, "remount %s read-only", path);
	return 0;
}

int gi_rootfs_finalize(const struct proto_start *s)
{
	int r;

	for (char **p = s->masked_paths; p && *p; p++)
		if ((r = mask_path(*p)) < 0)
			return r;
	for (char **p = s->readonly_paths; p && *p; p++)
		if ((r = readonly_path(*p)) < 0)
			return r;
	if (s->root_readonly && mount(NULL, "/", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | locked_flags("/"), NULL) < 0)
		return err_setsys(-errno, "remount / read-only");
	return 0;
}

static unsigned long root_propagation(const struct proto_start *s)
{
	const struct spec_mount_option *o = spec_mount_option_find(s->rootfs_propagation);

	return o && o->propagation ? o->flag : MS_SLAVE | MS_REC;
}

int gi_rootfs_setup(const struct proto_start *s, const char *rootfs, const char *files_dir)
{
	int r;

	/* Nothing done here may propagate back to the guest's own tree. */
	if (mount(NULL, "/", NULL, root_propagation(s), NULL) < 0)
		return err_setsys(-errno, "set / propagation");
	if (mount(rootfs, rootfs, NULL, MS_BIND | MS_REC, NULL) < 0)
		return err_setsys(-errno, "bind %s", rootfs);
	if (mount(NULL, rootfs, NULL, MS_PRIVATE, NULL) < 0)
		return err_setsys(-errno, "make %s private", rootfs);
	gi_mark(50);
	r = gi_rootfs_mounts(s, rootfs, files_dir);
	gi_mark(51);
	if (r < 0)
		return r;
	r = gi_rootfs_pivot(rootfs);
	gi_mark(52);
	if (r < 0)
		return r;
	if (s->rootfs_propagation && mount(NULL, "/", NULL, root_propagation(s), NULL) < 0)
		return err_setsys(-errno, "set rootfs propagation");
	r = gi_set_names(s);
	if (r < 0)
		return r;
	r = gi_apply_sysctl(s);
	gi_mark(53);
	if (r < 0)
		return r;
	r = gi_rootfs_finalize(s);
	gi_mark(54);
	return r;
}
