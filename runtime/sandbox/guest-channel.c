/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/error.h"
#include "common/log.h"
#include "common/unix-socket.h"
#include "runtime/sandbox/guest-channel.h"
#include "runtime/sandbox/sandbox.h"

/* Under CPU emulation a Linux guest needs about two minutes to boot. */
#define BOOT_TIMEOUT_S_DEFAULT 600

static const uint32_t ports[CHAN_NR] = {KVRUN_PROTO_CONTROL_PORT, GUEST_PORT_STDIN, GUEST_PORT_STDOUT,
                                        GUEST_PORT_STDERR};

int guest_boot_timeout_ms(void)
{
	const char *s = getenv("KVRUN_BOOT_TIMEOUT");
	long v = s ? strtol(s, NULL, 10) : 0;

	return (int)((v > 0 && v < 86400 ? v : BOOT_TIMEOUT_S_DEFAULT) * 1000);
}

int guest_channel_init(struct guest_channel *ch, const char *dir, const char *name)
{
	*ch = (struct guest_channel){.base_dirfd = -1, .stop_fd = -1, .abandon_fd = -1};
	for (int i = 0; i < CHAN_NR; i++)
		ch->listen_fds[i] = ch->stream_fds[i] = -1;
	for (int i = 0; i < PROTO_MAX_EXTRA_FDS; i++)
		ch->extra_listen[i] = ch->extra_stream[i] = -1;
	/* The vsock device connects to "<base>_<port>" for each port: when
	 * dir makes that too long for sun_path, the base goes through a
	 * descriptor of the directory that we hold. */
	if (strlen(dir) + strlen(name) + sizeof("/_4294967295") <= sizeof(((struct sockaddr_un *)0)->sun_path))
		return asprintf(&ch->base, "%s/%s", dir, name) < 0 ? -ENOMEM : 0;
	ch->base_dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (ch->base_dirfd < 0)
		return err_setsys(-errno, "open %s", dir);
	return asprintf(&ch->base, "/proc/self/fd/%d/%s", ch->base_dirfd, name) < 0 ? -ENOMEM : 0;
}

static void port_path(const struct guest_channel *ch, int i, char *buf, size_t size)
{
	snprintf(buf, size, "%s_%u", ch->base, ports[i]);
}

/* The socket of preserved fd i's port. */
static void extra_path(const struct guest_channel *ch, unsigned int i, char *buf, size_t size)
{
	snprintf(buf, size, "%s_%u", ch->base, GUEST_PORT_EXTRA + i);
}

int guest_channel_listen(struct guest_channel *ch, unsigned int nports)
{
	char path[256];

	for (unsigned int i = 0; i < nports && i < CHAN_NR; i++) {
		port_path(ch, (int)i, path, sizeof(path));
		ch->listen_fds[i] = unix_listen(path, 16);
		if (ch->listen_fds[i] < 0)
			return ch->listen_fds[i];
	}
	return 0;
}

int guest_channel_listen_extra(struct guest_channel *ch, unsigned int n)
{
	char path[256];

	if (n > PROTO_MAX_EXTRA_FDS)
		return err_set(-E2BIG, "%u preserved fds: at most %d", n, PROTO_MAX_EXTRA_FDS);
	for (unsigned int i = 0; i < n; i++) {
		extra_path(ch, i, path, sizeof(path));
		ch->extra_listen[i] = unix_listen(path, 1);
		if (ch->extra_listen[i] < 0)
			return ch->extra_listen[i];
		ch->n_extra = i + 1;
	}
	return 0;
}

int guest_channel_own(const struct guest_channel *ch, uid_t uid, gid_t gid)
{
	char path[256];

	for (int i = 0; i < CHAN_NR; i++) {
		if (ch->listen_fds[i] < 0)
			continue;
		port_path(ch, i, path, sizeof(path));
		if (chown(path, uid, gid) < 0 || chmod(path, 0600) < 0)
			return err_setsys(-errno, "hand %s to uid %u", path, (unsigned)uid);
	}
	for (unsigned int i = 0; i < ch->n_extra; i++) {
		if (ch->extra_listen[i] < 0)
			continue;
		extra_path(ch, i, path, sizeof(path));
		if (chown(path, uid, gid) < 0 || chmod(path, 0600) < 0)
			return err_setsys(-errno, "hand %s to uid %u", path, (unsigned)uid);
	}
	return 0;
}

/* A signal that asks us to end, read from stop_fd: 0 when none came. */
static int stop_signal(struct guest_channel *ch)
{
	struct signalfd_siginfo si;

	while (read(ch->stop_fd, &si, sizeof(si)) == sizeof(si))
		if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT || si.ssi_signo == SIGHUP ||
		    si.ssi_signo == SIGQUIT)
			return (int)si.ssi_signo;
	return 0;
}

/* Wait until fd is readable, or the VM ended, or deadline_ms (timeout_ms
 * after the wait began, for the message) passed, or a stop signal came, or
 * the reader of abandon_fd went away. */
static int wait_readable(struct guest_channel *ch, int fd, int64_t deadline_ms, int timeout_ms, const char *what)
{
	struct pollfd p[4] = {{.fd = fd, .events = POLLIN},
	                      {.fd = ch->sb ? sandbox_done_fd(ch->sb) : -1, .events = POLLIN},
	                      {.fd = ch->stop_fd, .events = POLLIN},
	                      {.fd = ch->abandon_fd, .events = 0}};

	for (;;) {
		int left = clock_left_ms(deadline_ms), n;

		if (left <= 0)
			return err_set(-ETIMEDOUT, "timed out after %d s waiting for %s", timeout_ms / 1000, what);
		n = poll(p, 4, left);
		if (n < 0 && errno != EINTR)
			return err_setsys(-errno, "poll");
		if (n > 0 && p[0].revents)
			return 0;
		if (n > 0 && p[1].revents) {
			struct vm_result res = ch->sb->vm->result;

			return err_set(-ECONNRESET, "the VM ended (%s%s%s) while waiting for %s",
			               vm_exit_reason_name(res.reason), res.detail[0] ? ": " : "", res.detail, what);
		}
		if (n > 0 && p[2].revents && (ch->stop_signal = stop_signal(ch)))
			return err_set(-EINTR, "stopped by %s while waiting for %s", strsignal(ch->stop_signal), what);
		if (n > 0 && p[3].revents)
			return err_set(-ECANCELED, "the process that ran create went away while waiting for %s", what);
	}
}

static int random_bytes(uint8_t *buf, size_t len)
{
	size_t n = 0;

	while (n < len) {
		ssize_t k = getrandom(buf + n, len - n, 0);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		n += (size_t)k;
	}
	return 0;
}

int guest_stream_token(uint8_t token[PROTO_TOKEN_BYTES])
{
	int r = random_bytes(token, PROTO_TOKEN_BYTES);

	return r < 0 ? err_setsys(r, "getrandom") : 0;
}

int guest_stream_check_token(int fd, const uint8_t *token, int timeout_ms)
{
	int64_t deadline = clock_now_ms() + timeout_ms;
	uint8_t got[PROTO_TOKEN_BYTES], diff = 0;
	size_t n = 0;

	while (n < sizeof(got)) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int left = clock_left_ms(deadline), k;
		ssize_t len;

		if (left <= 0)
			return -ETIMEDOUT;
		k = poll(&p, 1, left);
		if (k < 0 && errno != EINTR)
			return -errno;
		if (k <= 0)
			continue;
		len = read(fd, got + n, sizeof(got) - n);
		if (len < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (len <= 0)
			return -ECONNRESET;
		n += (size_t)len;
	}
	for (size_t j = 0; j < sizeof(got); j++)
		diff |= (uint8_t)(got[j] ^ token[j]);
	return diff ? -EACCES : 0;
}

/* Close the listener of port i: each port takes one stream, so that no
 * process in the guest can reach the host through it afterwards. */
static void unlisten_port(struct guest_channel *ch, int i)
{
	char path[256];

	if (ch->listen_fds[i] < 0)
		return;
	close(ch->listen_fds[i]);
	ch->listen_fds[i] = -1;
	port_path(ch, i, path, sizeof(path));
	unlink(path);
}

static void unlisten_extra(struct guest_channel *ch, unsigned int i)
{
	char path[256];

	if (ch->extra_listen[i] < 0)
		return;
	close(ch->extra_listen[i]);
	ch->extra_listen[i] = -1;
	extra_path(ch, i, path, sizeof(path));
	unlink(path);
}

/* The next stream of port i (after HELLO, of a stdio port: one that opens
 * with its token) into ch->stream_fds[i]; the listener stays. */
static int accept_stream(struct guest_channel *ch, int i, int64_t deadline, int timeout_ms, const char *what)
{
	for (;;) {
		int r, fd;

		r = wait_readable(ch, ch->listen_fds[i], deadline, timeout_ms, what);
		if (r < 0)
			return r;
		fd = accept4(ch->listen_fds[i], NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			return err_setsys(-errno, "accept %s", what);
		/* guest-init's streams of the container's init open with the
		 * token of our HELLO; the control stream is guest-init's own
		 * (no container process exists before it connects). */
		r = 0;
		if (i != CHAN_CTL && ch->has_token) {
			int wait_ms = clock_left_ms(deadline);

			r = guest_stream_check_token(fd, ch->token,
			                             wait_ms < GUEST_TOKEN_WAIT_MS ? wait_ms : GUEST_TOKEN_WAIT_MS);
		}
		if (r == 0) {
			ch->stream_fds[i] = fd;
			return 0;
		}
		close(fd);
		log_warn("a stream to vsock port %u did not open with guest-init's token (%s): closed", ports[i],
		         strerror(-r));
	}
}

int guest_channel_accept(struct guest_channel *ch, int i, int timeout_ms, const char *what)
{
	int r = accept_stream(ch, i, clock_now_ms() + timeout_ms, timeout_ms, what);

	if (r >= 0)
		unlisten_port(ch, i);
	return r;
}

int guest_channel_open_control(struct guest_channel *ch, int timeout_ms, const char *what)
{
	int64_t deadline = clock_now_ms() + timeout_ms;

	for (;;) {
		int r = accept_stream(ch, CHAN_CTL, deadline, timeout_ms, what);

		if (r >= 0)
			r = guest_channel_hello(ch, GUEST_REPLY_TIMEOUT_MS);
		if (r >= 0) {
			unlisten_port(ch, CHAN_CTL);
			return 0;
		}
		if (!ch->ctl_ended)
			return r;
		/* A stream that ended before its HELLO: guest-init gave up on
		 * it and connects again (docs/guest-init.md). */
		log_debug("a control stream ended before its HELLO (%s): waiting for the next one", err_msg());
		err_clear();
		close(ch->stream_fds[CHAN_CTL]);
		ch->stream_fds[CHAN_CTL] = -1;
		ch->ctl_ended = false;
		proto_reader_reset(&ch->reader);
	}
}

int guest_channel_accept_extra(struct guest_channel *ch, unsigned int i, int timeout_ms)
{
	int r, fd;

	if (i >= ch->n_extra)
		return -EINVAL;
	r = wait_readable(ch, ch->extra_listen[i], clock_now_ms() + timeout_ms, timeout_ms, "a preserved fd's stream");
	if (r < 0)
		return r;
	fd = accept4(ch->extra_listen[i], NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return err_setsys(-errno, "accept preserved fd %u's stream", 3 + i);
	/* Opened by guest-init with the HELLO's token, as the stdio streams. */
	if (ch->has_token && (r = guest_stream_check_token(fd, ch->token, GUEST_TOKEN_WAIT_MS)) < 0) {
		close(fd);
		return err_setsys(r, "preserved fd %u's stream did not open with guest-init's token", 3 + i);
	}
	ch->extra_stream[i] = fd;
	unlisten_extra(ch, i);
	return 0;
}

bool guest_channel_pending(const struct guest_channel *ch, int i)
{
	struct pollfd p = {.fd = ch->listen_fds[i], .events = POLLIN};

	return ch->listen_fds[i] >= 0 && poll(&p, 1, 0) > 0;
}

int guest_channel_feed(struct guest_channel *ch, struct proto_msg *ret)
{
	int r = proto_reader_feed(&ch->reader, ch->stream_fds[CHAN_CTL], ret);

	if (r == -ECONNRESET) {
		ch->ctl_ended = true;
		return err_set(r, "guest-init closed the control stream");
	}
	return r < 0 ? err_setsys(r, "reading from guest-init") : r;
}

/* The whole frame by deadline_ms (a loop may have read part of it). */
static int recv_until(struct guest_channel *ch, int64_t deadline_ms, int timeout_ms, struct proto_msg *ret)
{
	for (;;) {
		int r = wait_readable(ch, ch->stream_fds[CHAN_CTL], deadline_ms, timeout_ms, "guest-init");

		if (r == -ETIMEDOUT && proto_reader_partial(&ch->reader))
			return err_set(r, "timed out after %d s waiting for guest-init (in the middle of a frame)",
			               timeout_ms / 1000);
		if (r < 0)
			return r;
		r = guest_channel_feed(ch, ret);
		if (r != 0)
			return r < 0 ? r : 0;
	}
}

bool guest_channel_stalled(struct guest_channel *ch, bool paused)
{
	if (paused)
		proto_reader_touch(&ch->reader);
	return proto_reader_timeout(&ch->reader, GUEST_FRAME_STALL_MS) == 0;
}

int guest_channel_poll_ms(const struct guest_channel *ch)
{
	return proto_reader_timeout(&ch->reader, GUEST_FRAME_STALL_MS);
}

int guest_channel_recv(struct guest_channel *ch, int timeout_ms, struct proto_msg *ret)
{
	return recv_until(ch, clock_now_ms() + timeout_ms, timeout_ms, ret);
}

int guest_channel_hello(struct guest_channel *ch, int timeout_ms)
{
	struct proto_msg msg = {0};
	int r;

	r = guest_channel_recv(ch, timeout_ms, &msg);
	if (r < 0)
		return r;
	if (msg.type != PROTO_MSG_HELLO || msg.u.hello.version_min > KVRUN_PROTO_VERSION ||
	    msg.u.hello.version_max < KVRUN_PROTO_VERSION) {
		proto_msg_free(&msg);
		return err_set(-EPROTONOSUPPORT, "guest-init does not speak protocol version %d", KVRUN_PROTO_VERSION);
	}
	log_debug("guest says hello: %s", msg.u.hello.agent ? msg.u.hello.agent : "?");
	proto_msg_free(&msg);
	/* A new token with each HELLO: a restored guest opens its init's
	 * streams again with the one of this channel. */
	r = guest_stream_token(ch->token);
	if (r < 0)
		return r;
	ch->has_token = true;
	msg = (struct proto_msg){.type = PROTO_MSG_HELLO};
	msg.u.hello = (struct proto_hello){KVRUN_PROTO_VERSION, KVRUN_PROTO_VERSION, (char *)"kvrun", true};
	memcpy(msg.u.hello.token, ch->token, sizeof(ch->token));
	r = proto_send_timeout(ch->stream_fds[CHAN_CTL], &msg, timeout_ms);
	return r < 0 ? err_setsys(r, "sending HELLO") : 0;
}

int guest_channel_send(struct guest_channel *ch, struct proto_msg *msg, int timeout_ms)
{
	int r;

	msg->id = ++ch->next_id;
	r = proto_send_timeout(ch->stream_fds[CHAN_CTL], msg, timeout_ms);
	return r < 0 ? err_setsys(r, "sending %s to guest-init", proto_type_name(msg->type)) : 0;
}

/* The answer a to request msg: 1 when it is one (moved to *ret), 0 when
 * not, or the error it carries. */
static int answer(const struct proto_msg *msg, struct proto_msg *a, struct proto_msg *ret)
{
	int r;

	if (a->id == msg->id && a->type != PROTO_MSG_EXIT) {
		if (a->type == PROTO_MSG_ERROR && a->u.error.err) {
			r = err_set(-(int)a->u.error.err, "%s",
			            a->u.error.message ? a->u.error.message : "guest error");
			proto_msg_free(a);
			return r;
		}
		*ret = *a;
		return 1;
	}
	/* An EXIT of the init for START means the container died in setup. */
	if (a->type == PROTO_MSG_EXIT && a->id == msg->id && msg->type == PROTO_MSG_START) {
		proto_msg_free(a);
		return err_set(-ECHILD, "the container process exited during setup");
	}
	proto_msg_free(a);
	return 0;
}

int guest_channel_request(struct guest_channel *ch, struct proto_msg *msg, int timeout_ms, struct proto_msg *ret)
{
	int64_t deadline = clock_now_ms() + timeout_ms;
	int r;

	r = guest_channel_send(ch, msg, timeout_ms);
	while (r >= 0) {
		struct proto_msg a = {0};

		r = recv_until(ch, deadline, timeout_ms, &a);
		if (r < 0)
			return r;
		if (ch->on_note)
			ch->on_note(ch->opaque, &a);
		r = answer(msg, &a, ret);
		if (r > 0)
			return 0;
	}
	return r;
}

void guest_channel_unlisten(struct guest_channel *ch)
{
	for (int i = 0; i < CHAN_NR; i++)
		unlisten_port(ch, i);
	for (unsigned int i = 0; i < ch->n_extra; i++)
		unlisten_extra(ch, i);
}

void guest_channel_close(struct guest_channel *ch)
{
	guest_channel_unlisten(ch);
	for (int i = 0; i < CHAN_NR; i++)
		if (ch->stream_fds[i] >= 0) {
			close(ch->stream_fds[i]);
			ch->stream_fds[i] = -1;
		}
	for (int i = 0; i < CHAN_NR; i++)
		unlisten_port(ch, i);
	for (unsigned int i = 0; i < ch->n_extra; i++)
		unlisten_extra(ch, i);
	if (ch->base_dirfd >= 0)
		close(ch->base_dirfd);
	ch->base_dirfd = -1;
	free(ch->base);
	ch->base = NULL;
}
