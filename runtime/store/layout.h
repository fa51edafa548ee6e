/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The names of what a container's state directory (<root>/<id>, see
 * state.h) and a checkpoint's image directory hold, shared by the CLI, the
 * monitor and the monitor's clients.
 */
#ifndef KVRUN_RUNTIME_STORE_LAYOUT_H
#define KVRUN_RUNTIME_STORE_LAYOUT_H

/* File names inside <root>/<id>. */
#define MONITOR_CONTROL_SOCK "control.sock"
#define MONITOR_VSOCK_SOCK "vsock"
#define MONITOR_DISK "rootfs.img"
/* Beside it when the disk is a copy-on-write overlay: a symlink to the
 * base image in the root disk cache (rootfs-cache.h). */
#define MONITOR_DISK_BASE "rootfs.base"
#define MONITOR_CONSOLE "console.log"
/* File names inside a checkpoint's image directory. */
#define MONITOR_CHECKPOINT_VM "vm.snap"
#define MONITOR_CHECKPOINT_DISK "rootfs.img"
#define MONITOR_CHECKPOINT_CONFIG "config.json"
#define MONITOR_CHECKPOINT_MARK "kvrun-checkpoint"

/* Key of the private state map: the network namespace the VM serves
 * (recorded before anything is done in it, so that any delete can undo). */
#define STATE_KEY_NETNS "netns"
/* Key of the private state map: the host cgroup the monitor is in. */
#define STATE_KEY_CGROUP "cgroup-path"
/* ... its base when it is relative (runtime/host/cgroup.h: the creator's
 * /proc/self/cgroup, for a container without linux.cgroupsPath) ... */
#define STATE_KEY_CGROUP_BASE "cgroup-base"
/* ... and the systemd unit that holds it (--systemd-cgroup, systemd up). */
#define STATE_KEY_CGROUP_UNIT "cgroup-unit"
/* ... and the uid (and gid) of the monitor's jail, which its exec proxies
 * share (runtime/host/jail.h); absent when the monitor is not jailed. */
#define STATE_KEY_JAIL_UID "jail-uid"
/* Keys of the private state map: the container's role in a pod
 * ("sandbox" or "container", runtime/store/pod.h) and its pod's sandbox
 * (the container id of the sandbox, for an app container). */
#define STATE_KEY_POD_ROLE "pod-role"
#define STATE_KEY_POD_SANDBOX "pod-sandbox"
/* An app container created in its sandbox's VM: its init's guest pid,
 * which the sandbox's monitor knows it by (GO, SIGNAL, EXEC). */
#define STATE_KEY_POD_MEMBER_PID "pod-member-pid"

#endif
