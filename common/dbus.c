/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/cleanup.h"
#include "common/dbus.h"
#include "common/error.h"
#include "common/unix-socket.h"

#define AUTH_LINE_MAX 512

struct dbus_conn {
	int fd;
	uint32_t serial;
	char *unique_name;
};

static int send_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n, len -= (size_t)n;
	}
	return 0;
}

/* Exactly len bytes before the deadline. */
static int recv_all(int fd, void *buf, size_t len, int64_t deadline)
{
	uint8_t *p = buf;

	while (len) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		int64_t left = deadline - clock_now_ms();
		ssize_t n;
		int q;

		if (left <= 0)
			return -ETIMEDOUT;
		q = poll(&pfd, 1, (int)(left > 60000 ? 60000 : left));
		if (q < 0 && errno != EINTR)
			return -errno;
		if (q <= 0)
			continue;
		n = recv(fd, p, len, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ECONNRESET;
		p += n, len -= (size_t)n;
	}
	return 0;
}

/* One "\r\n"-terminated line of the authentication exchange (without it). */
static int auth_line(int fd, char *buf, size_t size, int64_t deadline)
{
	size_t n = 0;

	for (;;) {
		int q;

		if (n + 1 >= size)
			return -EBADMSG;
		q = recv_all(fd, buf + n, 1, deadline);
		if (q < 0)
			return q;
		if (buf[n] == 0)
			return -EBADMSG;
		if (n && buf[n - 1] == '\r' && buf[n] == '\n') {
			buf[n - 1] = 0;
			return 0;
		}
		n++;
	}
}

/* SASL EXTERNAL with our uid in hex-encoded ASCII, as every D-Bus peer
 * expects on a unix socket (the peer checks it against SO_PEERCRED). */
static int authenticate(int fd, int64_t deadline)
{
	char uid[16], line[AUTH_LINE_MAX] = "\0AUTH EXTERNAL ";
	size_t n = 15;
	int q;

	snprintf(uid, sizeof(uid), "%u", (unsigned)geteuid());
	for (const char *p = uid; *p; p++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%02x", (unsigned char)*p);
	n += (size_t)snprintf(line + n, sizeof(line) - n, "\r\n");
	q = send_all(fd, line, n);
	if (q < 0)
		return err_setsys(q, "D-Bus authentication");
	q = auth_line(fd, line, sizeof(line), deadline);
	if (q < 0)
		return err_setsys(q, "D-Bus authentication: reading the answer");
	if (strncmp(line, "OK ", 3) != 0)
		return err_set(strncmp(line, "REJECTED", 8) == 0 ? -EACCES : -EBADMSG,
		               "D-Bus authentication as uid %s refused: %.200s", uid, line);
	q = send_all(fd, "BEGIN\r\n", 7);
	return q < 0 ? err_setsys(q, "D-Bus authentication") : 0;
}

static int hello(struct dbus_conn *c, int timeout_ms)
{
	_cleanup_(dbus_writer_free) struct dbus_writer w = {0};
	struct dbus_incoming in = {0};
	struct dbus_reader r;
	const char *name;
	int q;

	dbus_call_begin(&w, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "Hello", "");
	q = dbus_call(c, &w, timeout_ms, NULL, NULL, &in);
	if (q < 0)
		return err_prefix(q, "D-Bus Hello");
	r = dbus_msg_body(&in.m);
	q = in.m.signature && strcmp(in.m.signature, "s") == 0 ? dbus_r_str(&r, &name) : -EBADMSG;
	if (q >= 0 && !(c->unique_name = strdup(name)))
		q = -ENOMEM;
	dbus_incoming_free(&in);
	return q < 0 ? err_set(q, "D-Bus Hello: malformed reply") : 0;
}

int dbus_open_fd(int fd, bool say_hello, int timeout_ms, struct dbus_conn **ret)
{
	struct dbus_conn *c;
	int q;

	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->fd = fd;
	q = authenticate(fd, clock_now_ms() + timeout_ms);
	if (q >= 0 && say_hello)
		q = hello(c, timeout_ms);
	if (q < 0) {
		dbus_close(c);
		return q;
	}
	*ret = c;
	return 0;
}

int dbus_open(const char *path, bool say_hello, int timeout_ms, struct dbus_conn **ret)
{
	int fd = unix_connect(path, 0, NULL);

	if (fd < 0)
		return fd;
	return dbus_open_fd(fd, say_hello, timeout_ms, ret);
}

void dbus_close(struct dbus_conn *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	free(c->unique_name);
	free(c);
}

const char *dbus_unique_name(const struct dbus_conn *c)
{
	return c->unique_name;
}

void dbus_incoming_free(struct dbus_incoming *in)
{
	free(in->buf);
	*in = (struct dbus_incoming){0};
}

void dbus_call_begin(struct dbus_writer *w, const char *destination, const char *path, const char *interface,
                     const char *member, const char *signature)
{
	struct dbus_msg h = {
	    .type = DBUS_METHOD_CALL,
	    .serial = 1, /* patched by dbus_send */
	    .destination = destination,
	    .path = path,
	    .interface = interface,
	    .member = member,
	    .signature = signature,
	};

	dbus_msg_begin(w, &h);
}

int dbus_send(struct dbus_conn *c, struct dbus_writer *w, uint32_t *ret_serial)
{
	uint32_t serial;
	int q = dbus_msg_end(w);

	if (q < 0)
		return q;
	if (++c->serial == 0)
		c->serial = 1;
	serial = c->serial;
	for (int i = 0; i < 4; i++)
		w->buf[8 + i] = (uint8_t)(serial >> (8 * i));
	q = send_all(c->fd, w->buf, w->len);
	if (q < 0)
		return err_setsys(q, "D-Bus send");
	if (ret_serial)
		*ret_serial = serial;
	return 0;
}

int dbus_recv(struct dbus_conn *c, int timeout_ms, struct dbus_incoming *ret)
{
	int64_t deadline = clock_now_ms() + timeout_ms;
	uint8_t hdr[DBUS_HEADER_FIXED];
	_cleanup_free_ uint8_t *buf = NULL;
	struct dbus_msg m;
	size_t size;
	int q;

	q = recv_all(c->fd, hdr, sizeof(hdr), deadline);
	if (q < 0)
		return err_setsys(q, "D-Bus receive");
	if (dbus_msg_size(hdr, &size) < 0)
		return err_set(-EBADMSG, "D-Bus receive: malformed message header");
	buf = malloc(size);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, hdr, sizeof(hdr));
	q = recv_all(c->fd, buf + sizeof(hdr), size - sizeof(hdr), deadline);
	if (q < 0)
		return err_setsys(q, "D-Bus receive");
	if (dbus_msg_parse(buf, size, &m) < 0)
		return err_set(-EBADMSG, "D-Bus receive: malformed message");
	ret->m = m;
	ret->buf = TAKE_PTR(buf);
	return 0;
}

int dbus_error_errno(const char *name)
{
	static const struct {
		const char *suffix;
		int err;
	} map[] = {
	    {".AccessDenied", -EACCES},   {".NoSuchUnit", -ENOENT},
	    {".UnknownObject", -ENOENT},  {".UnknownMethod", -ENOENT},
	    {".ServiceUnknown", -ENOENT}, {".UnitExists", -EEXIST},
	    {".InvalidArgs", -EINVAL},    {".Timeout", -ETIMEDOUT},
	    {".NoReply", -ETIMEDOUT},     {".InteractiveAuthorizationRequired", -EACCES},
	};
	size_t n = strlen(name);

	for (size_t i = 0; i < ARRAY_SIZE(map); i++) {
		size_t k = strlen(map[i].suffix);

		if (n >= k && strcmp(name + n - k, map[i].suffix) == 0)
			return map[i].err;
	}
	return -EIO;
}

/* An error reply as "<name>: <text>", the text being its first string. */
static int error_reply(const struct dbus_msg *m)
{
	struct dbus_reader r = dbus_msg_body(m);
	const char *text = NULL;

	if (m->signature && m->signature[0] == 's' && dbus_r_str(&r, &text) < 0)
		text = NULL;
	return err_set(dbus_error_errno(m->error_name), "%s%s%.400s", m->error_name, text ? ": " : "",
	               text ? text : "");
}

int dbus_call(struct dbus_conn *c, struct dbus_writer *w, int timeout_ms, dbus_signal_fn on_signal, void *userdata,
              struct dbus_incoming *ret)
{
	int64_t deadline = clock_now_ms() + timeout_ms;
	uint32_t serial;
	int q;

	q = dbus_send(c, w, &serial);
	if (q < 0)
		return q;
	for (;;) {
		struct dbus_incoming in = {0};
		int64_t left = deadline - clock_now_ms();

		if (left <= 0)
			return err_set(-ETIMEDOUT, "D-Bus call: no reply in %d ms", timeout_ms);
		q = dbus_recv(c, (int)left, &in);
		if (q < 0)
			return q;
		if ((in.m.type == DBUS_METHOD_RETURN || in.m.type == DBUS_ERROR) && in.m.reply_serial == serial) {
			if (in.m.type == DBUS_ERROR) {
				q = error_reply(&in.m);
				dbus_incoming_free(&in);
				return q;
			}
			if (ret)
				*ret = in;
			else
				dbus_incoming_free(&in);
			return 0;
		}
		if (in.m.type == DBUS_SIGNAL && on_signal)
			on_signal(&in.m, userdata);
		dbus_incoming_free(&in);
	}
}
