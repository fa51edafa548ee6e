/* SPDX-License-Identifier: Apache-2.0 */
/* Creating a container: the checks shared by create, run and restore. */
#ifndef KVRUN_RUNTIME_CREATE_H
#define KVRUN_RUNTIME_CREATE_H

#include <stdbool.h>

#include "runtime/store/bundle.h"
#include "runtime/cli/cli.h"
#include "runtime/monitor/monitor.h"
#include "runtime/sandbox/vm-config.h"
#include "runtime/store/pod.h"

/* The flags of create, run and restore (each verb uses a subset). */
struct create_opts {
	const char *bundle;
	const char *console_socket;
	const char *pid_file;
	const char *pidfd_socket;
	bool no_pivot;
	bool no_new_keyring;
	bool no_subreaper;
	bool detach;
	bool keep;
	unsigned long long preserve_fds;
	const char *image_path; /* restore: the checkpoint directory */
};

/* The flag table entries these verbs share, with runc's help texts. */
// clang-format off
#define CREATE_FLAG_BUNDLE(o) {"bundle", "b", CLI_STRING, &(o).bundle, \
	"path to the root of the bundle directory, defaults to the current directory"}
#define CREATE_FLAG_CONSOLE_SOCKET(o) {"console-socket", NULL, CLI_STRING, &(o).console_socket, \
	"path to an AF_UNIX socket which will receive a file descriptor referencing the master end of " \
	"the console's pseudoterminal"}
#define CREATE_FLAG_PIDFD_SOCKET(o) {"pidfd-socket", NULL, CLI_STRING, &(o).pidfd_socket, \
	"path to an AF_UNIX socket which will receive a file descriptor referencing the init process"}
#define CREATE_FLAG_PID_FILE(o) {"pid-file", NULL, CLI_STRING, &(o).pid_file, \
	"specify the file to write the process id to"}
#define CREATE_FLAG_DETACH(o) {"detach", "d", CLI_BOOL, &(o).detach, "detach from the container's process"}
#define CREATE_FLAG_NO_SUBREAPER(o) {"no-subreaper", NULL, CLI_BOOL, &(o).no_subreaper, \
	"disable the use of the subreaper used to reap reparented processes"}
#define CREATE_FLAG_NO_PIVOT(o) {"no-pivot", NULL, CLI_BOOL, &(o).no_pivot, \
	"accepted for compatibility; the rootfs is always a VM disk"}
#define CREATE_FLAG_NO_NEW_KEYRING(o) {"no-new-keyring", NULL, CLI_BOOL, &(o).no_new_keyring, \
	"do not create a new session keyring for the container"}
#define CREATE_FLAG_PRESERVE_FDS(o) {"preserve-fds", NULL, CLI_UINT, &(o).preserve_fds, \
	"Pass N additional file descriptors to the container (stdio + $LISTEN_FDS + N in total) (default: 0)"}
// clang-format on

/* create/run --preserve-fds: the caller's fds 3 .. 3+n-1, each open and
 * something whose data a stream can carry (not a directory, an O_PATH
 * fd or a listening socket), with its direction (PROTO_EXTRA_FD_*) in
 * *ret. Socket activation ($LISTEN_FDS for this process) is refused:
 * listening sockets cannot be passed into the VM. */
int create_preserved_fds(unsigned long long n, struct preserved_fds *ret);

/* Check that id is valid and unused, load and validate the bundle, and check
 * the terminal / console-socket combination as runc does (detached is true
 * for create). On success *ret is owned by the caller. Nothing is written. */
int create_prepare(struct cli_context *ctx, const char *id, const struct create_opts *o, bool detached,
                   struct bundle **ret);

/* The pod the new container is of (runtime/store/pod.h), checked: an app
 * container whose sandbox does not exist under the root or is not up is
 * refused. Nothing is written. On success *ret is the caller's
 * (pod_ref_clear()). */
int create_check_pod(struct cli_context *ctx, const struct bundle *b, struct pod_ref *ret);

/* For a pod's sandbox, make the VM's plan fit the pod (containerd's
 * sandbox-memory and sandbox-cpu-* annotations): RAM at least the pod's
 * memory plus room for the guest's kernel and init (unless the sandbox
 * has a memory limit of its own, which its host cgroup holds the VM to),
 * vCPUs at least ceil(quota / period). -EINVAL naming a malformed
 * annotation. Other roles: nothing. */
int create_size_pod_vm(const struct bundle *b, const struct pod_ref *pod, struct vm_plan *plan);

/* Record p in the private map of a new container's state (STATE_KEY_POD_*),
 * so that its later verbs and teardown know its pod. */
int create_record_pod(struct oci_state *s, const struct pod_ref *p);

#endif
