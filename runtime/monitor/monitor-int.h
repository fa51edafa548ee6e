/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The monitor's internals, shared by monitor.c (bring-up, main loop, the
 * end), monitor-serve.c (requests on control.sock, exec sessions),
 * monitor-checkpoint.c and terminal.c. Talking to guest-init goes through
 * the guest channel (runtime/sandbox/guest-channel.h), whose notes (EXIT,
 * OOM) monitor.c handles.
 */
#ifndef KVRUN_RUNTIME_MONITOR_INT_H
#define KVRUN_RUNTIME_MONITOR_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <termios.h>

#include "common/protocol.h"
#include "runtime/monitor/create-guard.h"
#include "runtime/host/cgroup.h"
#include "runtime/monitor/guest-shares.h"
#include "runtime/monitor/monitor.h"
#include "runtime/sandbox/guest-channel.h"

/* A frame from guest-init that stops growing for this long is given up
 * on, and the guest's control stream with it (while the VM runs: a paused
 * guest cannot send). */
#define GUEST_FRAME_STALL_MS (30 * 1000)

/* Exec proxies connected at a time (each holds one control connection). */
#define MONITOR_MAX_EXECS 64

/* Request threads of each free shared directory slot of a pod's jailed
 * VM, started with the VM (an app container's share gets them). */
#define MONITOR_POD_SLOT_WORKERS 2

/* `kvrun events` connections at a time. */
#define MONITOR_MAX_SUBS 8

/* One `kvrun exec` process in the guest, owned by a proxy whose control
 * connection stays open until the process's EXIT is passed on. */
struct monitor_exec {
	int fd; /* -1: slot free */
	uint64_t id; /* the EXEC's id: its EXIT carries it */
	uint32_t guest_pid;
	pid_t proxy_pid; /* SO_PEERCRED of the connection */
	/* A pod's app container: the shared directory slots its directories
	 * have (bit i: the sandbox's share i), freed after its end. */
	uint32_t slots;
	uint64_t oom_kill; /* an app container's OOM kills so far */
};

struct vm_stats;

struct monitor {
	struct monitor_args *a;
	struct sandbox *sb;
	struct vm_stats *vm_stats; /* opened by the first "vmstats" request */
	struct guest_channel ch;
	struct jail *jail; /* NULL when $KVRUN_JAIL=0 */
	const char *dir; /* the state directory as the monitor sees it (JAIL_STATE_DIR when jailed) */
	char *snapshot; /* the template's or the checkpoint's vm.snap, or NULL: a cold boot */
	char *disk_base; /* the root disk's base image (its symlink resolved), or NULL */
	char *state_dir; /* the state directory's absolute path, for the jail */
	int console_fd; /* the guest console log, or -1 */
	char *control_path;
	struct cgroup_place cgroup; /* the host cgroup we are in (path NULL: none) */
	int control_fd; /* listener of control.sock */
	int signal_fd;
	bool exited; /* EXIT of the container's init received */
	bool paused; /* vCPUs stopped by a pause request */
	/* The VM goes before the relays at the end: a checkpointed VM is
	 * paused for good, one that did not confirm a SIGKILL is not heard. */
	bool vm_first;
	uint32_t exit_status;
	struct relay *relays[CHAN_NR];
	struct relay *fd_relays[PROTO_MAX_EXTRA_FDS]; /* preserved fds: from the guest */
	struct netns_setup own_net; /* new_netns: what the hooks left in ours */
	struct proto_msg start; /* the START, built before the jail (it reads host files) */
	struct monitor_exec execs[MONITOR_MAX_EXECS];
	int tty_fd; /* host end of the container's terminal, or -1 */
	bool tty_raw; /* tty_fd is our stdin, made raw: tty_saved restores it */
	struct termios tty_saved;
	unsigned rows, cols; /* last size passed on */
	int subs[MONITOR_MAX_SUBS]; /* `kvrun events` connections, or -1 */
	/* Whose events each hears: 0 the container's, else the guest pid of
	 * a pod's app container ("events <guest pid>"). */
	uint32_t sub_pid[MONITOR_MAX_SUBS];
	uint64_t oom_kill; /* OOM kills in the container so far */
	struct create_guard guard; /* until create's outcome is known */
	/* The host directories the VM shares (bind mounts, a shared root),
	 * opened before the jail, and /proc/self/fd for their servers. */
	struct guest_shares shares;
	int proc_fd;
	bool pod_sandbox; /* a pod's sandbox: its VM takes the pod's app containers */
	/* Slots of app containers that ended, until the guest has unmounted
	 * them (monitor_pod_release()). */
	uint32_t slots_ending;
};

/* ---- monitor-fds.c: the creator's preserved fds ---- */

/* Give START's process the preserved fds' ports and directions. */
int monitor_fds_start(struct monitor *m, struct proto_process *p);
/* Accept their streams and start the relays (after READY). */
int monitor_fds_accept(struct monitor *m);
/* Wait for the relays out of the guest (the VM has ended). */
void monitor_fds_join(struct monitor *m);

/* monitor-jail.c: the files the VM is made of, found (and the console log
 * opened) while the host is still visible: the host directories it shares
 * (m->shares, each opened, and m->proc_fd), the snapshot to restore (a
 * checkpoint's, or a template's, which has only so many slots for
 * shares), the root disk's base image. */
int monitor_vm_files(struct monitor *m);

/* monitor-jail.c: the jail (runtime/host/jail.h) in three steps: its
 * namespaces and root (m->dir becomes JAIL_STATE_DIR), once the host's part
 * of create is done; its build filter, once the sockets are made
 * (monitor_open_sockets()); its uid and serving filter, once the VM is
 * built, before its vCPUs start. With $KVRUN_JAIL=0 they do nothing. */
int monitor_jail_mount(struct monitor *m);
int monitor_jail_begin(struct monitor *m);
int monitor_jail_finish(struct monitor *m);

/* monitor-jail.c: whether the container is a pod's sandbox, whose VM
 * takes the pod's app containers (monitor-pod.c). */
bool monitor_is_pod_sandbox(const struct monitor *m);

/* monitor-pod.c: "member <n> <share>..." with n directory descriptors,
 * then a START frame on fd: a pod's app container created in the VM,
 * *keep and "ok <guest pid>" in detail on success (the connection is then
 * the member's, as an exec's is). */
int monitor_member(struct monitor *m, int fd, const char *args, const int *fds, unsigned int nfds, bool *keep,
                   char *detail, size_t size);
/* monitor-pod.c: "go <guest pid>": the app container's process execs. */
int monitor_member_go(struct monitor *m, uint32_t pid, char *detail, size_t size);
/* monitor-pod.c: "pause <guest pid>" / "resume <guest pid>" (pid 0, or
 * "pause" of a pod's sandbox: its own container): the container's guest
 * cgroup frozen or thawed, as runc's pause freezes one container's
 * cgroup; the VM's vCPUs and the pod's other containers run on. */
int monitor_pod_freeze(struct monitor *m, uint32_t pid, bool frozen);
/* monitor-pod.c: "cpu ...": an app container's CPU limits (cpu's
 * has_cpu_* and cpuset_cpus) in its guest cgroup. */
int monitor_pod_cpu(struct monitor *m, uint32_t pid, const struct proto_update *cpu);
/* monitor-pod.c: list (field's cpuset, "0-1,3") within the VM's vCPUs. */
int monitor_pod_check_cpus(const struct monitor *m, const char *list, const char *field);

/* monitor-pod.c: the session of an app container ended (its EXIT passed
 * on, or its member proxy gone): its slots are freed once the guest has
 * unmounted them. */
void monitor_member_ended(struct monitor *m, struct monitor_exec *e);

/* monitor-pod.c: free the slots of ended app containers that the guest
 * has unmounted; clears sandbox_shares_event_fd(), which the main loop
 * polls while some are left. */
void monitor_pod_release(struct monitor *m);

/* monitor-jail.c: the guest channel's listeners and control.sock in
 * m->dir, reachable by the jail's uid. */
int monitor_open_sockets(struct monitor *m);

/* OOM from the guest: each new kill goes to the events subscribers. */
void monitor_oom(struct monitor *m, const struct proto_oom *oom);

/* A subscriber's connection became readable or hung up: drop it. */
void monitor_sub_gone(struct monitor *m, int i);

/* Accept and answer one client of control.sock. */
void monitor_serve_client(struct monitor *m);

/* Resize the pty of the container's process (pid 0) or an exec'd one. */
int monitor_resize(struct monitor *m, uint32_t pid, unsigned rows, unsigned cols);

/* Signal the container's process (pid 0) or an exec'd one. */
int monitor_signal(struct monitor *m, uint32_t pid, int signo, bool all);

/* An exec proxy's connection became readable or hung up: the proxy went
 * away, so its process in the guest is killed. */
void monitor_exec_gone(struct monitor *m, struct monitor_exec *e);

/* EXIT of an exec'd process: tell its proxy and forget it. */
void monitor_exec_exited(struct monitor *m, uint64_t id, uint32_t status);

/* Pass a new size of our terminal on to the guest's pty
 * (looked at when idle: no SIGWINCH reaches a monitor in its own session;
 * not while paused). */
void monitor_follow_size(struct monitor *m);

/* Block the signals the monitor forwards (and SIGWINCH) and return a
 * signalfd for them. */
int monitor_watch_signals(void);

/* Signals sent to the monitor go to the container's process, as runc's
 * foreground forwarding does. */
void monitor_forward_signals(struct monitor *m);

/* terminal.c: the host end of the container's terminal, when it has one:
 * a new pty whose master goes to the console socket, or our own stdin
 * made raw (before the guest's stream exists; done once). */
int monitor_terminal_host_side(struct monitor *m);

/* terminal.c: the host end, then the guest's pty stream relayed to it. */
int monitor_terminal_setup(struct monitor *m);

/* terminal.c: the size the guest's pty of process p starts with. */
void monitor_terminal_start_size(struct monitor *m, struct proto_process *p);

/* monitor-checkpoint.c: "checkpoint <leave 0|1> <dir>" with two fds: save
 * the VM into snap_fd and its root disk into disk_fd (empty regular files
 * the client created in dir, which is only named in messages; the caller
 * closes them); unless leave_running, the container then ends as if
 * killed (SIGKILL). */
int monitor_checkpoint(struct monitor *m, bool leave_running, const char *dir, int snap_fd, int disk_fd);

/* A monitor restoring a checkpoint: after HELLO, take the streams
 * guest-init opens again for the running process and relay them. */
int monitor_resume_restored(struct monitor *m);

#endif
