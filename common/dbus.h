/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A minimal D-Bus client over a unix stream socket: SASL EXTERNAL
 * authentication, method calls with their replies, and signals read on the
 * way (systemd's private socket sends its Manager signals to every peer;
 * on a bus they need a match rule). Blocking, one call at a time, no fd
 * passing. Messages are built with common/dbus-wire.h.
 */
#ifndef KVRUN_COMMON_DBUS_H
#define KVRUN_COMMON_DBUS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/dbus-wire.h"

struct dbus_conn;

/* Connect to the socket at path and authenticate as this process's uid;
 * with hello, say Hello to the bus daemon (not for a direct peer such as
 * /run/systemd/private). On success *ret is the caller's (dbus_close()).
 * Errors: -errno from connect (ENOENT, ECONNREFUSED, EACCES...), -EACCES
 * when the peer rejects us, -EBADMSG for a malformed answer, -ETIMEDOUT. */
int dbus_open(const char *path, bool hello, int timeout_ms, struct dbus_conn **ret);

/* The same on a connected stream socket fd, which is taken over (closed
 * on failure too). */
int dbus_open_fd(int fd, bool hello, int timeout_ms, struct dbus_conn **ret);

void dbus_close(struct dbus_conn *c);

/* The peer's unique name given by Hello, NULL on a direct connection. */
const char *dbus_unique_name(const struct dbus_conn *c);

/* A received message; m points into buf, which the holder frees with
 * dbus_incoming_free(). */
struct dbus_incoming {
	uint8_t *buf;
	struct dbus_msg m;
};

void dbus_incoming_free(struct dbus_incoming *in);

/* Start a method call in w (its serial is set when sent). */
void dbus_call_begin(struct dbus_writer *w, const char *destination, const char *path, const char *interface,
                     const char *member, const char *signature);

/* Finish the message in w, give it the next serial and send it. */
int dbus_send(struct dbus_conn *c, struct dbus_writer *w, uint32_t *ret_serial);

/* The next message, waiting at most timeout_ms (-ETIMEDOUT). A peer that
 * closes gives -ECONNRESET; a malformed message -EBADMSG (the connection
 * is then unusable: the stream has lost its framing). */
int dbus_recv(struct dbus_conn *c, int timeout_ms, struct dbus_incoming *ret);

/* Called for each signal that arrives while a call waits for its reply. */
typedef void (*dbus_signal_fn)(const struct dbus_msg *m, void *userdata);

/* Send the call in w and wait for its reply (at most timeout_ms in all).
 * A method return is stored in *ret (caller frees); an error reply
 * becomes an error message "<error name>: <its text>" and a negative
 * errno from dbus_error_errno(). Other messages go to on_signal (may be
 * NULL) when they are signals and are dropped otherwise. */
int dbus_call(struct dbus_conn *c, struct dbus_writer *w, int timeout_ms, dbus_signal_fn on_signal, void *userdata,
              struct dbus_incoming *ret);

/* The errno for a D-Bus error name: access denied -EACCES, unknown
 * unit/object/method -ENOENT, unit exists -EEXIST, invalid args -EINVAL,
 * timeouts -ETIMEDOUT, anything else -EIO. */
int dbus_error_errno(const char *name);

#endif
