/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Device nodes in the container's /dev: runc's defaults, then
 * linux.devices. A node is made with mknod, or, in a user namespace
 * (where mknod is not allowed), bind-mounted from the guest's devtmpfs as
 * runc binds the host's. A character or block device the guest kernel
 * does not have (a host's /dev/kvm, a host disk) cannot work in the VM
 * and is refused by name; sysfs (/sys/dev/<kind>/<major>:<minor>) says
 * what the kernel has.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "common/path.h"
#include "guest-init/guest-init.h"

const char *gi_sysfs_dev = "/sys/dev";

static const struct proto_device default_nodes[] = {
    {(char *)"/dev/null", 'c', 1, 3, 0666, 0, 0},    {(char *)"/dev/zero", 'c', 1, 5, 0666, 0, 0},
    {(char *)"/dev/full", 'c', 1, 7, 0666, 0, 0},    {(char *)"/dev/random", 'c', 1, 8, 0666, 0, 0},
    {(char *)"/dev/urandom", 'c', 1, 9, 0666, 0, 0}, {(char *)"/dev/tty", 'c', 5, 0, 0666, 0, 0},
};

int gi_device_guest_node(uint32_t type, uint32_t major, uint32_t minor, char *out, size_t outlen)
{
	_cleanup_free_ char *uevent = NULL;
	char path[PATH_MAX];
	const char *name;
	int r;

	snprintf(path, sizeof(path), "%s/%s/%u:%u/uevent", gi_sysfs_dev, type == 'b' ? "block" : "char", major, minor);
	r = read_file_all(path, 4096, &uevent, NULL);
	if (r < 0)
		return r == -ENOENT ? -ENODEV : r;
	name = strstr(uevent, "DEVNAME=");
	if (!name || (name != uevent && name[-1] != '\n'))
		return -ENODEV;
	name += 8;
	snprintf(out, outlen, "/dev/%.*s", (int)strcspn(name, "\n"), name);
	return 0;
}

/* A bind mount needs something to mount on: an empty file. */
static int bind_node(const struct proto_device *d, const char *dest)
{
	char src[PATH_MAX];
	int fd, r;

	r = gi_device_guest_node(d->type, d->major, d->minor, src, sizeof(src));
	if (r < 0)
		return r;
	fd = open(dest, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0000);
	if (fd < 0 && errno != EEXIST)
		return -errno;
	if (fd >= 0)
		close(fd);
	return mount(src, dest, NULL, MS_BIND, NULL) < 0 ? -errno : 0;
}

static int make_node(const struct proto_device *d, const char *dest)
{
	mode_t kind = d->type == 'b' ? S_IFBLK : d->type == 'p' ? S_IFIFO : S_IFCHR;
	dev_t dev = d->type == 'p' ? 0 : makedev(d->major, d->minor);

	/* A fresh /dev has nothing in the way: the unlink only when needed.
	 * The umask is 0 here (gi_devices_create), so the mode is the
	 * spec's as made. */
	if (mknod(dest, kind | (d->mode & 07777), dev) < 0) {
		if (errno != EEXIST || unlink(dest) < 0 || mknod(dest, kind | (d->mode & 07777), dev) < 0)
			return -errno;
	}
	if (chown(dest, d->uid, d->gid) < 0)
		return -errno;
	return 0;
}

/* check: whether to ask sysfs that the VM's kernel has the device (the
 * default nodes' drivers, mem and tty, are always built in). */
static int create_one(const struct proto_device *d, const char *rootfs, bool bind, bool check, const char *what)
{
	_cleanup_free_ char *dest = NULL, *parent = NULL;
	char node[PATH_MAX];
	char *slash;
	int r;

	if (!d->path || d->path[0] != '/')
		return err_set(-EINVAL, "%s: the path must be absolute", what);
	if (d->type != 'c' && d->type != 'u' && d->type != 'b' && d->type != 'p')
		return err_set(-EINVAL, "%s (%s): unknown device type", what, d->path);
	if (check && d->type != 'p' && gi_device_guest_node(d->type, d->major, d->minor, node, sizeof(node)) == -ENODEV)
		return err_set(-ENODEV, "%s (%s, %c %u:%u): the VM's kernel has no such device", what, d->path,
		               d->type == 'b' ? 'b' : 'c', d->major, d->minor);
	r = path_join_in(rootfs, d->path, &dest);
	if (r < 0)
		return err_setsys(r, "%s (%s)", what, d->path);
	parent = strdup(dest);
	if (!parent)
		return -ENOMEM;
	slash = strrchr(parent, '/');
	if (slash && slash != parent) {
		*slash = '\0';
		if ((r = mkdir_p(parent, 0755)) < 0)
			return err_setsys(r, "%s (%s): create its directory", what, d->path);
	}
	/* A FIFO needs no privilege: made in a user namespace too. */
	r = bind && d->type != 'p' ? bind_node(d, dest) : make_node(d, dest);
	if (r < 0)
		return err_setsys(r, "%s (%s): %s", what, d->path, bind ? "bind the VM's device" : "mknod");
	return 0;
}

static int devices_create(const struct proto_start *s, const char *rootfs)
{
	char what[64];
	int r;

	for (size_t i = 0; i < ARRAY_SIZE(default_nodes); i++) {
		bool replaced = false;

		/* A spec device of the same path takes the default's place. */
		for (size_t j = 0; j < s->n_devices && !replaced; j++)
			replaced = s->devices[j].path && strcmp(s->devices[j].path, default_nodes[i].path) == 0;
		if (!replaced && (r = create_one(&default_nodes[i], rootfs, s->user_ns, false, "default device")) < 0)
			return r;
	}
	for (size_t i = 0; i < s->n_devices; i++) {
		snprintf(what, sizeof(what), "linux.devices[%zu]", i);
		if ((r = create_one(&s->devices[i], rootfs, s->user_ns, true, what)) < 0)
			return r;
	}
	return 0;
}

int gi_devices_create(const struct proto_start *s, const char *rootfs)
{
	/* mknod honours the umask: 0 while the nodes are made, so that each
	 * gets the spec's mode without a chmod. */
	mode_t old = umask(0);
	int r = devices_create(s, rootfs);

	umask(old);
	return r;
}
