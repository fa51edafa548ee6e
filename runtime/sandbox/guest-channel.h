/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host end of guest-init's channel (docs/guest-init.md). guest-init
 * connects over vsock to the host's ports: the control stream
 * (KVRUN_PROTO_CONTROL_PORT, length-prefixed messages of
 * common/protocol.h) and the container's stdio streams. The vsock device's
 * unix-socket backend turns a connection to port P into one to the
 * listener at "<base>_P", which this module owns: it listens, accepts
 * streams, says HELLO and sends requests, each wait bounded by a deadline,
 * by the VM's end and, while they are set, by a stop signal and by the
 * end of the creating process.
 * Messages from the guest that answer nothing (EXIT, OOM) go to on_note.
 * Used by the monitor (runtime/monitor/) and by template builds.
 */
#ifndef KVRUN_RUNTIME_SANDBOX_GUEST_CHANNEL_H
#define KVRUN_RUNTIME_SANDBOX_GUEST_CHANNEL_H

#include <stdbool.h>
#include <stdint.h>

#include <sys/types.h>

#include "common/protocol.h"

/* Host ports the container's stdio streams connect to. */
#define GUEST_PORT_STDIN 1025
#define GUEST_PORT_STDOUT 1026
#define GUEST_PORT_STDERR 1027

/* The creator's preserved fds (create --preserve-fds): 1028 + i. */
#define GUEST_PORT_EXTRA 1028

/* The host ports guest-init connects to, in the order it connects. */
enum { CHAN_CTL, CHAN_STDIN, CHAN_STDOUT, CHAN_STDERR, CHAN_NR };

/* How long a stream to a stdio port may take to send its token before the
 * next connection is looked at. */
#define GUEST_TOKEN_WAIT_MS (5 * 1000)

/* How long guest-init may take to answer a request. */
#define GUEST_REPLY_TIMEOUT_MS (120 * 1000)

/* A frame from guest-init that stops growing for this long is given up
 * on, and the control stream with it (while the VM runs: a paused guest
 * cannot send). */
#define GUEST_FRAME_STALL_MS (30 * 1000)

struct sandbox;

struct guest_channel {
	char *base; /* "<base>_<port>" is a port's listener */
	int base_dirfd; /* held while base goes through /proc/self/fd, or -1 */
	int listen_fds[CHAN_NR];
	int stream_fds[CHAN_NR]; /* accepted streams, or -1 */
	struct proto_reader reader; /* frames on stream_fds[CHAN_CTL], read without blocking */
	/* The preserved fds' ports, GUEST_PORT_EXTRA + i. */
	int extra_listen[PROTO_MAX_EXTRA_FDS], extra_stream[PROTO_MAX_EXTRA_FDS];
	unsigned int n_extra;
	struct sandbox *sb; /* the VM, once it exists: its end ends waits */
	int stop_fd; /* a signalfd whose SIGTERM/SIGINT/SIGHUP/SIGQUIT end waits, or -1 */
	int stop_signal; /* the signal that ended a wait, or 0 */
	/* A pipe's write end whose reader going away ends waits (-ECANCELED):
	 * the process that ran `create` and waits for its outcome; or -1. */
	int abandon_fd;
	uint64_t next_id;
	/* Sent with our HELLO: the streams of the container's init must open
	 * with it (guest_channel_accept() of a stdio port checks). */
	bool has_token;
	uint8_t token[PROTO_TOKEN_BYTES];
	/* The control stream ended (EOF or a reset read): guest-init's side
	 * of it is gone. */
	bool ctl_ended;
	/* A message from the guest that answers no request. */
	void (*on_note)(void *opaque, const struct proto_msg *msg);
	void *opaque;
};

/* Set up ch for a VM whose vsock sockets live in dir as "<dir>/<name>_P"
 * (a dir too long for sun_path goes through a descriptor held until
 * guest_channel_close()). No listener yet. */
int guest_channel_init(struct guest_channel *ch, const char *dir, const char *name);

/* Listen on the first nports ports (CHAN_CTL ... CHAN_NR). */
int guest_channel_listen(struct guest_channel *ch, unsigned int nports);

/* Make the listeners' sockets uid's and gid's, mode 0600: the only ones
 * besides root that may connect (the monitor's jail, whose vsock device
 * connects to them). */
int guest_channel_own(const struct guest_channel *ch, uid_t uid, gid_t gid);

/* Accept the stream of port i within timeout_ms into ch->stream_fds[i];
 * what names it in errors. Then the port's listener is closed (its socket
 * removed): no second stream, from guest-init or any other process in the
 * guest, reaches it. On a stdio port, after HELLO, only a stream that opens
 * with the HELLO's token is taken: one that sends other bytes, or nothing
 * within GUEST_TOKEN_WAIT_MS, is closed with a warning (a process in the
 * guest that connected first) and the next is waited for. */
int guest_channel_accept(struct guest_channel *ch, int i, int timeout_ms, const char *what);

/* guest-init's control stream: accept a stream of the control port and do
 * the HELLO exchange (guest_channel_hello()) within timeout_ms; only then
 * is the port's listener closed. A stream that ends before its HELLO is
 * one guest-init gave up on (Linux's connect() gives up after 2 s of the
 * guest's time and resets the stream our answer then opens; a restored
 * guest that faults its memory in on a loaded host can take that long):
 * it is closed and the next one taken. */
int guest_channel_open_control(struct guest_channel *ch, int timeout_ms, const char *what);

/* A new random token for a process's stdio streams. 0 or -errno. */
int guest_stream_token(uint8_t token[PROTO_TOKEN_BYTES]);

/* Read the first PROTO_TOKEN_BYTES bytes of stream fd within timeout_ms
 * and compare them with token (in constant time): 0 when equal, -EACCES
 * when not, -ETIMEDOUT, -ECONNRESET (closed before) or -errno. */
int guest_stream_check_token(int fd, const uint8_t *token, int timeout_ms);

/* Listen on the n ports of preserved fds too (at most PROTO_MAX_EXTRA_FDS). */
int guest_channel_listen_extra(struct guest_channel *ch, unsigned int n);

/* Accept preserved fd i's stream into ch->extra_stream[i] (after HELLO,
 * one that opens with the token), then close its listener. */
int guest_channel_accept_extra(struct guest_channel *ch, unsigned int i, int timeout_ms);

/* Whether a connection waits on port i's listener now. */
bool guest_channel_pending(const struct guest_channel *ch, int i);

/* Receive one message on the control stream, the whole frame within
 * timeout_ms (however guest-init trickles it). */
int guest_channel_recv(struct guest_channel *ch, int timeout_ms, struct proto_msg *ret);

/* For a loop that polls the control stream: read what it holds without
 * blocking. 1 and a message in *ret, 0 when a frame is still partial, or a
 * negative errno with err_set() (the stream is then unusable). */
int guest_channel_feed(struct guest_channel *ch, struct proto_msg *ret);

/* Whether a partial frame has had no byte for GUEST_FRAME_STALL_MS; a
 * paused guest (paused true) restarts the clock. */
bool guest_channel_stalled(struct guest_channel *ch, bool paused);

/* The poll() timeout until a partial frame would stall: -1 (none), or ms. */
int guest_channel_poll_ms(const struct guest_channel *ch);

/* guest-init's HELLO, checked for the protocol version, and ours back,
 * with a new token for the init's streams (ch->token). */
int guest_channel_hello(struct guest_channel *ch, int timeout_ms);

/* Send msg with a new id within timeout_ms (guest-init may have stopped
 * reading), not waiting for an answer. */
int guest_channel_send(struct guest_channel *ch, struct proto_msg *msg, int timeout_ms);

/* Send msg and wait up to timeout_ms for the answer with its id (ERROR with
 * err 0 counts as success; ERROR with an errno is that error with the
 * guest's message); *ret is the caller's to free. Messages in between go
 * to on_note; an EXIT of the container's init with START's id means the
 * container died in setup (-ECHILD). */
int guest_channel_request(struct guest_channel *ch, struct proto_msg *msg, int timeout_ms, struct proto_msg *ret);

/* Close the listeners and remove their sockets; streams stay open. */
void guest_channel_unlisten(struct guest_channel *ch);

/* Close everything; accepts a channel that was only zeroed by
 * guest_channel_init()'s failure. */
void guest_channel_close(struct guest_channel *ch);

/* How long the guest may take for what runs at its boot speed
 * ($KVRUN_BOOT_TIMEOUT seconds, default 600): booting, building the
 * container, starting a process in it. Under emulation on a loaded host
 * that can take minutes (the guest kernel checks a seccomp filter like
 * docker's against every syscall number when it is installed). */
int guest_boot_timeout_ms(void);

#endif
