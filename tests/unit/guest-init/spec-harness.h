/* SPDX-License-Identifier: Apache-2.0 */
/* The harness of the guest-init spec tests (spec-harness.c). */
#ifndef KVRUN_TESTS_GI_SPEC_HARNESS_H
#define KVRUN_TESTS_GI_SPEC_HARNESS_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "common/protocol.h"

extern char tmpdir[], rootfs[256], files_dir[256];
/* The cgroup run() places the container in (NULL: none). */
extern const char *run_cgroup_dir;
/* A pod member: the first container's init whose IPC and UTS namespaces
 * run()'s process joins (0: none), and whether it shares its pid
 * namespace too. */
extern pid_t run_pod_pid;
extern bool run_share_pidns;
/* Run in run()'s child, in its own mount namespace, before the spawn:
 * what PID 1 would have mounted (shares); NULL: nothing. */
extern int (*run_child_setup)(void);

struct result {
	int spawn_err, go_err;
	int status;
	char msg[1024];
	char out[16384];
};

char **strv(const char *const *v);
/* A file of the rootfs, relative to it. */
void write_text(const char *rel, const char *text);
int make_rootfs(void);
/* A START running `busybox sh -c script` in /work, PATH=/bin, FOO=bar. */
void base_spec(struct proto_start *s, const char *script);
void add_mount(struct proto_start *s, const char *dst, const char *type, const char *src, const char *const *opts);
/* The usual docker/podman mount list. */
void default_mounts(struct proto_start *s);
/* Run the spec in a forked child (its own mount namespace); when kill_on
 * is set, SIGKILL the process once its output contains it. */
void run(struct proto_start *s, const char *kill_on, struct result *res);
bool has_line(const char *out, const char *line);
int can_unshare(void);
/* The checks every spec test program makes (root, busybox, namespaces),
 * a rootfs, the tests, its removal. */
int harness_main(void);

#define has(res, line)                                                \
	do {                                                          \
		if (!ok(has_line((res)->out, line), "sees %s", line)) \
			printf("# output:\n%s\n", (res)->out);        \
	} while (0)

#endif
