/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A container's VM as the monitor builds it: guest RAM and vCPUs, the
 * platform devices, the root disk (virtio-blk) and the host-guest channel
 * (virtio-vsock with unix-socket backends), booted with kvrun-init.
 */
#ifndef KVRUN_RUNTIME_SANDBOX_H
#define KVRUN_RUNTIME_SANDBOX_H

#include <stdbool.h>

#include "runtime/vm-config.h"
#include "vmm/irq.h"
#include "vmm/vm.h"

/* The guest's vsock CID (any value >= 3: each VM has its own device). */
#define SANDBOX_GUEST_CID 3
#define SANDBOX_NR_VIRTIO 2

struct sandbox_opts {
	const struct vm_plan *plan;
	const char *disk; /* root disk image */
	bool disk_read_only;
	const char *vsock_path; /* host side: guest port P reaches <vsock_path>_P */
	const char *console_path; /* guest console log, NULL: off */
};

struct sandbox {
	struct vm *vm;
	struct platform *platform;
	struct serial *serial;
	struct virtio_blk *blk;
	struct virtio_vsock *vsock;
	struct irq_line lines[SANDBOX_NR_VIRTIO];
	int notify_fds[SANDBOX_NR_VIRTIO];
	int console_fd;
};

/* Build the VM and boot it (vCPUs running on return). On failure
 * everything built is freed and err_msg() says what failed. */
int sandbox_start(const struct sandbox_opts *o, struct sandbox **ret);

/* The VM's done eventfd: readable once the VM ended. */
int sandbox_done_fd(const struct sandbox *s);

/* End the VM (if still running), wait for it and free everything. The
 * result, if ret is not NULL, says how it ended. Accepts NULL. */
void sandbox_free(struct sandbox *s, struct vm_result *ret);

#endif
