/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PID 1's control loop: serve START/GO/EXEC/SIGNAL/RESIZE/STATS from the
 * host on the control stream, relay stdio, reap children and report EXIT.
 * The VM's first container, and a pod's members beside it.
 * The transport is injected so the loop also runs over unix sockets.
 */
#ifndef KVRUN_GUEST_INIT_SERVER_H
#define KVRUN_GUEST_INIT_SERVER_H

#include <stdint.h>

#include "common/net-config.h"
#include "common/protocol.h"

struct gi_server {
	int ctl; /* control stream, after the HELLO exchange */
	/* Open a stream to host port `port`; returns an fd or a negative errno. */
	int (*connect_port)(uint32_t port, void *opaque);
	void *opaque;
	const char *rootfs_dir; /* where the root disk is mounted */
	const char *files_dir; /* staging for copied-in files */
	const char *cgroup_dir; /* NULL: no cgroup, no stats */
	/* Where pod members' roots and staged files go: <dir>/<n>/rootfs and
	 * <dir>/<n>/files, n counting members from 1 (their cgroups are
	 * <cgroup_dir>-<n>); NULL: members are refused. */
	const char *members_dir;
	/* Where the pod's /dev/shm is mounted (PROTO_POD_SHM_SOURCE: the
	 * sandbox's START makes it, members bind it); NULL: each container
	 * has a tmpfs of its own. */
	const char *pod_shm_dir;
	/* Mount START's root (root_device, root_fstype) at target; NULL:
	 * gi_mount_root_disk(). Tests on the host, where virtio-fs cannot be
	 * mounted, bind a directory. */
	int (*mount_root)(const struct proto_start *s, const char *target);
	/* Configure the VM's network (the container shares the VM's network
	 * namespace) from START's net record, before the container's process
	 * is created; not called for a record without interfaces (loopback
	 * only: up since boot); NULL: leave the network alone (tests on the
	 * host). */
	int (*net_apply)(const struct net_config *cfg);
	/* NETWORK (a restored checkpoint): configure the interfaces again,
	 * removing the addresses and routes they had (NULL: refused). */
	int (*net_reapply)(const struct net_config *cfg);
	/* Seconds to wait for the host to close the control stream after the
	 * last EXIT, so that nothing in flight is lost at power-off. */
	int linger_s;
	/* The control stream broke before the container's init ended: the
	 * VM was restored (from a template, or a checkpoint), and the vsock
	 * device reset every stream. Connect again and do the HELLO exchange;
	 * returns the new control fd or a negative errno. After START the
	 * init's stdio streams are then opened again on START's ports and
	 * exec'd processes are killed (their host side is gone). NULL: a
	 * broken stream ends the loop (and kills the init). */
	int (*reconnect)(void *opaque);
	/* START carries per-instance identity (wall-clock time, random
	 * seed): apply it before anything else (NULL: ignore it). */
	int (*apply_identity)(const struct proto_start *s);
	/* The token of the host's last HELLO (gi_hello() fills it): written
	 * first on each stream of the init's stdio opened while that control
	 * stream lasts. An exec'd process's streams open with its EXEC's. */
	bool has_host_token;
	uint8_t host_token[PROTO_TOKEN_BYTES];
};

/* Do the HELLO exchange on ctl: send ours, expect the host's with a
 * version range that includes KVRUN_PROTO_VERSION. The host's token (if it
 * sent one) goes to srv->host_token; srv may be NULL. */
int gi_hello(int ctl, struct gi_server *srv);

/* Run until the first container's init has exited and been reported (or
 * the host went away), and every other process (exec'd, a pod member's)
 * after it. Returns that init's wait status (>= 0) or a negative errno.
 * Must be the only reaper: it waits for any child. */
int gi_serve(struct gi_server *srv);

#endif
