/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which host directories a container's VM shares with virtio-fs, from its
 * spec: each bind mount of a directory or a regular file, and the root
 * filesystem when it is shared rather than a disk image.
 *
 * A share is one virtio-fs device (tag "kvrun-fs<i>", i its index) over
 * one host directory, opened here as an O_PATH descriptor that the
 * device's server is confined to:
 *   - a bind of a directory shares that directory (its real path, symlinks
 *     resolved as runc resolves a bind source);
 *   - a bind of a regular file shares the file's directory showing only
 *     that name (fs_server_opts.root_names): the file itself is live, its
 *     neighbours are out of reach. Files of one directory with the same
 *     read-only-ness are one share (docker's and podman's resolv.conf,
 *     hosts and hostname), as is a file whose directory is shared whole;
 *   - binds of one directory with the same read-only-ness are one share;
 *   - a read-only bind ("ro" or "rro" last among ro/rw) makes a read-only
 *     share: the server answers EROFS, whatever the guest mounts;
 *   - the root share (index 0), when there is one, is the bundle's rootfs
 *     directory; writable even with root.readonly (guest-init makes the
 *     mount points in it, then the mount read-only, as runc does);
 *   - every share keeps its locks where the caller says (vm_plan's
 *     fs_locks): on the host's files, or in the guest kernel.
 * Other mounts (tmpfs, proc, ...) stay in the guest, as does podman's shm
 * bind (a tmpfs of the same size: guest-spec.c).
 *
 * Refused, with an error naming the mount (mounts[i] and its destination):
 * a bind source that is not absolute, that does not exist, or that is
 * neither a directory nor a regular file (a socket, a device, a FIFO);
 * more shares than GUEST_SHARES_MAX.
 */
#ifndef KVRUN_RUNTIME_GUEST_SHARES_H
#define KVRUN_RUNTIME_GUEST_SHARES_H

#include <stdbool.h>
#include <stddef.h>

#include "oci-spec/spec.h"
#include "runtime/sandbox/sandbox.h"

#define GUEST_SHARES_MAX SANDBOX_MAX_SHARES
/* "kvrun-fs" and an index below GUEST_SHARES_MAX, NUL included. */
#define GUEST_SHARE_TAG_SIZE 16

struct guest_share {
	char *dir; /* the shared host directory (real path) */
	int dir_fd; /* O_PATH, opened when planned */
	char **names; /* NULL: the whole directory; else what it shows of its root */
	size_t n_names;
	bool read_only;
	bool files; /* only single files: little traffic, fewer workers */
	enum fs_locks locks; /* where the guest's locks on it are kept */
};

/* What a mount of the spec became. */
struct guest_share_mount {
	int share; /* index into shares, or -1: not shared (a guest mount) */
	char *name; /* the entry of the share's root bound there (one of its names), NULL: its root */
};

struct guest_shares {
	struct guest_share shares[GUEST_SHARES_MAX];
	unsigned int n;
	int root; /* the root filesystem's share (0), or -1 */
	struct guest_share_mount *mounts; /* one per spec mount */
	size_t n_mounts;
};

/* Whether m is a bind mount (type "bind", or option bind or rbind). */
bool guest_mount_is_bind(const struct oci_mount *m);

/* Whether m is podman's bind of its own shm tmpfs on /dev/shm, which the
 * guest replaces by a tmpfs: *ret_size its size in bytes (0: not such a
 * mount). */
bool guest_mount_is_shm(const struct oci_mount *m, unsigned long long *ret_size);

/* The shares of spec (rootfs: the bundle's rootfs directory to share as
 * the root, or NULL when the root is a disk image), with each directory
 * opened, each keeping its locks as locks says. *ret is filled (also
 * zeroed on failure, when err_set() names the mount) and is the
 * caller's: guest_shares_done(). */
int guest_shares_plan(const struct oci_spec *spec, const char *rootfs, enum fs_locks locks, struct guest_shares *ret);
void guest_shares_done(struct guest_shares *g);

/* Reach each share's directory through a private copy of its mount
 * instead (open_tree(2) OPEN_TREE_CLONE, recursive: a detached mount tree
 * no namespace shows), for a share that outlives its container: a pod's
 * app container's, which the sandbox's VM serves until the VM ends. What
 * the server keeps open then holds the copy, not the engine's mount, so
 * the engine can unmount the container's rootfs once it deleted the
 * container (containerd does so at once: a busy mount fails its
 * TaskExit handling, and the container never stops). A kernel or a
 * caller that cannot copy mounts (before Linux 5.2, no CAP_SYS_ADMIN, an
 * unbindable mount) keeps the directory as it was opened (logged at
 * debug level). Returns 0, or -errno with err_set() naming the
 * directory. */
int guest_shares_clone_mounts(struct guest_shares *g);

/* The tag of share i ("kvrun-fs<i>", sandbox_share_tag()). */
void guest_share_tag(unsigned int i, char tag[GUEST_SHARE_TAG_SIZE]);

/* The sandbox's view of g: out[i] for share i (tags in tags[i], which
 * must outlive out; proc_fd is /proc/self/fd opened by the caller, or
 * -1). Returns g->n. */
unsigned int guest_shares_to_sandbox(const struct guest_shares *g, int proc_fd, char tags[][GUEST_SHARE_TAG_SIZE],
                                     struct sandbox_share *out);

#endif
