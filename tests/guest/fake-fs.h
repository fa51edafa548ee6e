/* SPDX-License-Identifier: Apache-2.0 */
/* fake-init's shared directories (fake-fs.c): the VM's virtio-fs devices
 * found by tag and mounted as Linux's driver does it, one FUSE session
 * per tag (INIT at the mount, DESTROY when its last mount goes), with a
 * read of one file of the share's root and a write of another. One
 * request at a time, polled. */
#ifndef KVRUN_TEST_GUEST_FAKE_FS_H
#define KVRUN_TEST_GUEST_FAKE_FS_H

#include "virtio.h"

struct ff_dev;

/* The device whose tag is tag (len bytes), brought up on first use, and a
 * new FUSE session on it (INIT). NULL when there is no such device, it
 * fails to come up, or INIT fails (the host has no directory there: the
 * INIT waits for one, and this gives up after a while). */
struct ff_dev *ff_mount(const char *tag, uint32_t len);
/* Whether f is the device of tag (len bytes). */
bool ff_is(const struct ff_dev *f, const char *tag, uint32_t len);
/* DESTROY: the session ends (the host may then free the slot). */
bool ff_umount(struct ff_dev *f);
/* Up to size bytes of the root's file name (len bytes) into buf; the
 * bytes read, or -1. */
int ff_read(struct ff_dev *f, const char *name, uint32_t len, void *buf, uint32_t size);
/* The root's file name (len bytes) made (or truncated) with data. */
bool ff_write(struct ff_dev *f, const char *name, uint32_t len, const void *data, uint32_t size);

#endif
