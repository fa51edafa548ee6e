/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio-fs (virtio 1.2, 5.11): one host directory shared with the guest,
 * which mounts it with `mount -t virtiofs TAG /dir`. FUSE requests come on
 * the request queues (and FORGETs on the high-priority queue) and are run
 * by a pool of worker threads with the FUSE server of fuse-server.h; the
 * notify path only wakes a worker. No DAX window (no shared memory
 * region): file data always travels in the requests.
 *
 * Runtime use (the attach sequence of docs/virtio.md):
 *   struct virtio_fs_opts o;
 *   virtio_fs_opts_default(&o);
 *   o.tag = "vol0";
 *   o.server.root = "/var/lib/volumes/vol0";     (and o.server.read_only...)
 *   virtio_fs_new(&vm_mem, &o, &fs);
 *   bus_register(mmio_bus, addr, VIRTIO_MMIO_SIZE, &virtio_mmio_bus_ops, virtio_fs_mmio(fs));
 *   virtio_mmio_set_irq(virtio_fs_mmio(fs), &line);
 *   virtio_mmio_add_notify_fd(virtio_fs_mmio(fs), loop, ioeventfd, VIRTIO_MMIO_ALL_QUEUES);
 *   kernel command line: virtio_mmio.device=4K@0x<addr>:<gsi>
 *   in the guest: mount -t virtiofs vol0 /mnt
 *
 * Host descriptors: the server's bounds (o.server.max_inode_fds,
 * max_handles, as many lock descriptors as handles) plus a few; the
 * process's RLIMIT_NOFILE must leave room for them.
 */
#ifndef KVRUN_VIRTIO_FS_FS_H
#define KVRUN_VIRTIO_FS_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "virtio/fs/fuse-server.h"
#include "virtio/mmio.h"
#include "vmm/snapshot.h"

#define VIRTIO_FS_TAG_MAX 36
#define VIRTIO_FS_MAX_REQUEST_QUEUES (VIRTIO_MMIO_MAX_QUEUES - 1)
#define VIRTIO_FS_MAX_WORKERS 64
/* QueueNumMax of every queue. Linux sends at most queue size - 4 pages
 * in one request, so a chain stays within VIRTQ_MAX_SEGS. */
#define VIRTIO_FS_QUEUE_SIZE 128
/* The name of each worker thread (/proc/PID/task/TID/comm). */
#define VIRTIO_FS_WORKER_NAME "fs-worker"

struct virtio_fs_opts {
	const char *tag; /* the mount tag: 1 to 36 bytes */
	struct fs_server_opts server; /* the shared directory and its bounds */
	uint32_t request_queues; /* 1 to VIRTIO_FS_MAX_REQUEST_QUEUES */
	uint32_t workers; /* threads running requests, 1 to VIRTIO_FS_MAX_WORKERS */
};

/* Defaults: fs_server_opts_default(), 1 request queue, 4 workers; tag and
 * server.root unset. */
void virtio_fs_opts_default(struct virtio_fs_opts *o);

struct virtio_fs;

/* Open the shared directory and start the workers. Guest memory is
 * borrowed and must outlive the device. Returns 0 and the device (owned by
 * the caller), or -errno with err_set() context naming the tag. */
int virtio_fs_new(const struct guest_mem *mem, const struct virtio_fs_opts *opts, struct virtio_fs **ret);

/* A device with its tag and queues but no shared directory yet (opts'
 * server and workers are not used): a template's slot. The driver can set
 * it up and read its tag; requests wait until virtio_fs_attach() (a driver
 * sends none before it mounts the tag). */
int virtio_fs_new_detached(const struct guest_mem *mem, const struct virtio_fs_opts *opts, struct virtio_fs **ret);

/* Give a detached device its shared directory (server) and workers (1 to
 * VIRTIO_FS_MAX_WORKERS), e.g. after the VM was restored from a
 * template, or after virtio_fs_detach(). Each worker has run
 * server->thread_init when this returns. -EBUSY when it has one; errors
 * name the tag and directory. */
int virtio_fs_attach(struct virtio_fs *fs, const struct fs_server_opts *server, uint32_t workers);

/* Start workers (1 to VIRTIO_FS_MAX_WORKERS) of a detached device now,
 * each running thread_init (may be NULL) first, so that a later
 * virtio_fs_attach() (whose workers argument is then not used) needs no
 * new thread: for a process whose later threads could not be given what
 * a worker needs (a jail's capabilities, jail_fs_thread()). They wait
 * for the attach. -EBUSY when the device has a server or workers. */
int virtio_fs_prestart(struct virtio_fs *fs, uint32_t workers, int (*thread_init)(void *opaque), void *opaque);

/* Take the shared directory away from the device once the guest is done
 * with it, so that virtio_fs_attach() can give the slot another: 0 when
 * the guest has it unmounted (never mounted: no INIT answered, or DESTROY
 * after the last INIT; Linux sends DESTROY when the last mount of the tag
 * goes, and INIT again at the next mount) and no request runs any more;
 * the server and every descriptor it held are closed then, and 0 also
 * when the device had no directory. -EBUSY, with a message naming the
 * tag and the directory, while the guest has it mounted (nothing
 * changes). Requests are held while it waits for those in flight (a lock
 * waiting for its owner gives up, EINTR); those that come after it wait
 * for the next attach, as on a device never attached (an INIT of a guest
 * that mounts the tag again is answered by the next directory's server,
 * once it is attached). Prestarted workers stay, ready for the next
 * attach; others are stopped. */
int virtio_fs_detach(struct virtio_fs *fs);

/* Call fn(opaque) each time the guest unmounts the shared directory
 * (DESTROY answered, or a reset of the device, ending a mount): from a
 * worker or the resetting thread, with the device's lock held, so fn
 * must not call into the device (an eventfd write: the runtime then
 * tries virtio_fs_detach()). NULL: none. */
void virtio_fs_set_unmount_notify(struct virtio_fs *fs, void (*fn)(void *opaque), void *opaque);

/* Whether the device serves a shared directory. */
bool virtio_fs_attached(struct virtio_fs *fs);

/* The device's tag. */
const char *virtio_fs_tag(const struct virtio_fs *fs);

/* The device's transport: what the runtime registers on the MMIO bus. */
struct virtio_mmio *virtio_fs_mmio(struct virtio_fs *fs);

/* The file server behind the device (its statistics, for tests). */
struct fs_server *virtio_fs_server(struct virtio_fs *fs);

/* Stop (true) or resume (false) taking requests: when pausing returns,
 * no request runs. */
void virtio_fs_pause(struct virtio_fs *fs, bool paused);

/* struct snapshot_dev functions (opaque: the struct virtio_fs). Only a
 * detached device is saved and loaded (its tag, queue count and
 * transport): the guest's view of a shared directory (inodes it looked
 * up, open files, locks) lives in this process's descriptors, so saving
 * an attached device fails with -EOPNOTSUPP and a message naming the tag
 * and the directory, and a load into one is refused. */
int virtio_fs_state_save(void *opaque, struct snap_buf *out);
int virtio_fs_state_load(void *opaque, const void *data, size_t len);

/* Stop the workers, close the shared directory, free. The MMIO range must
 * already be unregistered (or the vCPUs stopped). Accepts NULL. */
void virtio_fs_free(struct virtio_fs *fs);

#endif
