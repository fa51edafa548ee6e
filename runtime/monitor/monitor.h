/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The VM monitor: one host process per container that owns its VM. It
 * boots the guest up to guest-init's HELLO, has the container created in
 * the guest (START, READY), records pid and state, tells `create` (through
 * ready_fd) and then serves start/kill requests on <dir>/control.sock
 * until the container's process exits. Its own exit status mirrors that
 * process's wait status, so whoever reaps the monitor sees the container's.
 *
 * Control socket protocol (monitor-client.h): one request line per
 * connection ("start", "kill <signo> <all 0|1>", "ping"), answered by one
 * line, "ok[ <detail>]" or "error <message>".
 */
#ifndef KVRUN_RUNTIME_MONITOR_H
#define KVRUN_RUNTIME_MONITOR_H

#include <stdbool.h>
#include <stdint.h>

#include "common/protocol.h"
#include "runtime/store/bundle.h"
#include "runtime/store/layout.h"
#include "runtime/host/netns.h"
#include "runtime/store/state.h"
#include "runtime/sandbox/vm-config.h"

/* The creator's fds 3.. that the container's process gets (create
 * --preserve-fds): each relayed as a stream in the direction its host fd
 * was opened for (PROTO_EXTRA_FD_*). The monitor inherits the fds. */
struct preserved_fds {
	unsigned int n;
	uint32_t mode[PROTO_MAX_EXTRA_FDS];
};

struct monitor_args {
	struct container *c; /* locked; the monitor saves the created state, then unlocks */
	const struct bundle *b;
	const struct vm_plan *plan;
	const char *pid_file; /* absolute, or NULL */
	const char *console_path; /* guest console log, or NULL */
	int ready_fd; /* "ok\n" or "error <message>\n" is written here once */
	const char *console_socket; /* absolute, or NULL: receives the pty master */
	bool systemd_cgroup; /* linux.cgroupsPath is "slice:prefix:name" */
	struct netns_setup *net; /* interfaces and TAP fds (netns.h), or NULL */
	const char *netns_path; /* the namespace net serves (the jail joins it), or NULL */
	const char *restore_dir; /* a checkpoint to resume instead of creating, or NULL */
	/* The spec asks for a new network namespace (no path): the monitor
	 * makes one of its own before the hooks run, since engines (docker's
	 * prestart hook) put the container's interfaces into the namespace of
	 * the state's pid; it serves what is there once the hooks are done.
	 * net is then NULL. */
	bool new_netns;
	unsigned int queue_pairs; /* TAP fds per interface, for new_netns */
	uint64_t t_start_ns; /* when the command began (CLOCK_MONOTONIC), for the log */
	uint64_t disk_us; /* what preparing the root disk took */
	const struct preserved_fds *preserved; /* or NULL: none */
};

/* Run the monitor in this (freshly forked) process. Never returns: exits
 * with the container process's status, or 255 (after reporting on
 * ready_fd or in the log) when the VM could not be brought up or died. */
_Noreturn void monitor_main(struct monitor_args *a);

/* Exit with wait status status: the same exit code, or death by the same
 * signal (default action restored, core dumps off). */
_Noreturn void monitor_exit_like(uint32_t status);

#endif
