/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fake D-Bus peer for the tests: a thread that serves connections (one
 * end of a socketpair, or a listening unix socket, one connection after
 * another), checks the SASL exchange and hands every message to a
 * handler. fake_systemd() is a handler that plays systemd's Manager:
 * it decodes StartTransientUnit/StopUnit completely and records what it
 * got for the test to check afterwards (the thread asserts nothing
 * itself: the TAP output stays in the test's order).
 */
#ifndef KVRUN_TESTS_DBUS_FAKE_PEER_H
#define KVRUN_TESTS_DBUS_FAKE_PEER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/dbus-wire.h"

#define FAKE_MAX 48

struct fake_call {
	char path[128], interface[128], member[64], destination[64], signature[64];
};

struct fake_prop {
	char name[64], value[256]; /* value as "<sig>:<text>", e.g. "t:100", "au:[42]" */
};

struct fake_peer;
typedef void (*fake_handler)(struct fake_peer *p, int fd, const struct dbus_msg *m);

struct fake_peer {
	fake_handler handler;
	int listen_fd, conn_fd;
	pthread_t thread;
	/* behaviour */
	bool reject_auth; /* answer REJECTED */
	bool garbage; /* answer every call with a malformed message */
	bool silent; /* read calls, answer none */
	bool close_on_call; /* hang up when a call arrives */
	const char *version; /* Manager.Version ("252.30-1~deb12u2") */
	const char *job_result; /* JobRemoved result of start jobs, default "done" */
	const char *start_error, *start_error_text; /* error for the first starts */
	int start_errors; /* how many starts fail with it */
	bool signal_first; /* JobRemoved before the method return */
	bool start_job_hangs; /* no JobRemoved for a start job */
	bool stop_missing; /* StopUnit answers NoSuchUnit */
	const char *rm_on_stop; /* a directory removed when StopUnit comes */
	/* what it saw */
	char auth[256];
	bool began;
	int connections;
	struct fake_call calls[FAKE_MAX];
	int ncalls;
	char unit[128], mode[32];
	struct fake_prop props[FAKE_MAX];
	int nprops, naux, nstarts;
	char stop_unit[128], stop_mode[32];
	char reset_unit[128];
	char set_unit[128]; /* SetUnitProperties (its properties in props) */
	bool set_runtime;
	int bad_messages; /* what it could not parse */
};

/* Serve fd (one end of a socketpair; closed at the end) in a thread. */
int fake_peer_start_fd(struct fake_peer *p, int fd);
/* Listen on the unix socket path, serving connections one at a time. */
int fake_peer_start_listen(struct fake_peer *p, const char *path);
/* Stop listening (if so) and wait for the thread. */
void fake_peer_stop(struct fake_peer *p);

/* Send a message with header h and the body in body (a writer holding
 * only the body, from offset 0; NULL for none). */
void fake_send(int fd, const struct dbus_msg *h, const struct dbus_writer *body);
/* A method return to m with signature sig and that body. */
void fake_reply(int fd, const struct dbus_msg *m, const char *sig, const struct dbus_writer *body);
void fake_error(int fd, const struct dbus_msg *m, const char *name, const char *text);

/* The handler that plays systemd's Manager (and the bus daemon's Hello
 * and AddMatch). */
void fake_systemd(struct fake_peer *p, int fd, const struct dbus_msg *m);

/* The recorded property called name, or NULL. */
const char *fake_prop(const struct fake_peer *p, const char *name);

#endif
