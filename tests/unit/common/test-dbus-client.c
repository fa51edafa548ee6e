/* SPDX-License-Identifier: Apache-2.0 */
/* The D-Bus client against a fake peer on a socketpair: the SASL exchange
 * (EXTERNAL with the uid in hex), Hello, a call and its reply, an error
 * reply turned into the error message, signals passed on while waiting,
 * and a peer that rejects us, answers garbage, hangs up or never answers. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/dbus.h"
#include "common/error.h"
#include "common/fileio.h"
#include "fake-peer.h"
#include "tap.h"

/* A handler: Hello, "Echo" (returns its "s" argument after a signal),
 * "Deny" (AccessDenied). */
static void handler(struct fake_peer *p, int fd, const struct dbus_msg *m)
{
	struct dbus_writer b = {0};
	struct dbus_reader r = dbus_msg_body(m);
	const char *s;

	(void)p;
	if (strcmp(m->member, "Hello") == 0) {
		dbus_w_str(&b, ":1.42");
		fake_reply(fd, m, "s", &b);
	} else if (strcmp(m->member, "Echo") == 0 && m->signature && strcmp(m->signature, "s") == 0 &&
	           dbus_r_str(&r, &s) == 0) {
		struct dbus_msg sig = {
		    .type = DBUS_SIGNAL, .path = "/x", .interface = "x.Y", .member = "Ping", .signature = "s"};

		dbus_w_str(&b, "ping");
		fake_send(fd, &sig, &b);
		b.len = 0;
		dbus_w_str(&b, s);
		fake_reply(fd, m, "s", &b);
	} else if (strcmp(m->member, "Deny") == 0) {
		fake_error(fd, m, "org.freedesktop.DBus.Error.AccessDenied", "go away");
	} else {
		fake_error(fd, m, "org.freedesktop.DBus.Error.UnknownMethod", "what?");
	}
	dbus_writer_free(&b);
}

static int open_pair(struct fake_peer *p, bool hello, int timeout_ms, struct dbus_conn **c)
{
	int sv[2];

	p->handler = handler;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 || fake_peer_start_fd(p, sv[1]) < 0)
		return -1;
	return dbus_open_fd(sv[0], hello, timeout_ms, c);
}

static void on_signal(const struct dbus_msg *m, void *u)
{
	snprintf(u, 64, "%s.%s", m->interface, m->member);
}

TEST(auth_hello_call)
{
	struct fake_peer p = {0};
	struct dbus_conn *c = NULL;
	struct dbus_writer w = {0};
	struct dbus_incoming in = {0};
	struct dbus_reader r;
	char want[64], uid[16], seen[64] = "";
	const char *s = NULL;
	size_t n;

	is_int(open_pair(&p, true, 5000, &c), 0);
	snprintf(uid, sizeof(uid), "%u", (unsigned)geteuid());
	n = (size_t)snprintf(want, sizeof(want), "AUTH EXTERNAL ");
	for (char *q = uid; *q; q++)
		n += (size_t)snprintf(want + n, sizeof(want) - n, "%02x", *q);
	is_str(c ? dbus_unique_name(c) : NULL, ":1.42");
	dbus_call_begin(&w, "x.Dest", "/x", "x.Y", "Echo", "s");
	dbus_w_str(&w, "hello there");
	is_int(dbus_call(c, &w, 5000, on_signal, seen, &in), 0);
	r = dbus_msg_body(&in.m);
	ok(in.m.signature && strcmp(in.m.signature, "s") == 0 && dbus_r_str(&r, &s) == 0, "reply body");
	is_str(s, "hello there");
	is_str(seen, "x.Y.Ping");
	dbus_incoming_free(&in);
	dbus_close(c);
	fake_peer_stop(&p);
	is_str(p.auth, want);
	ok(p.began, "BEGIN after OK");
	is_int(p.ncalls, 2);
	is_str(p.calls[0].member, "Hello");
	is_str(p.calls[0].destination, "org.freedesktop.DBus");
	is_str(p.calls[1].member, "Echo");
	is_str(p.calls[1].destination, "x.Dest");
	is_str(p.calls[1].path, "/x");
	is_str(p.calls[1].interface, "x.Y");
	is_str(p.calls[1].signature, "s");
	is_int(p.bad_messages, 0);
	dbus_writer_free(&w);
}

TEST(error_reply)
{
	struct fake_peer p = {0};
	struct dbus_conn *c = NULL;
	struct dbus_writer w = {0};

	is_int(open_pair(&p, false, 5000, &c), 0);
	ok(c && dbus_unique_name(c) == NULL, "no Hello on a direct connection");
	dbus_call_begin(&w, NULL, "/x", "x.Y", "Deny", "");
	is_int(dbus_call(c, &w, 5000, NULL, NULL, NULL), -EACCES);
	is_str(err_msg(), "org.freedesktop.DBus.Error.AccessDenied: go away");
	/* The connection still works after an error reply. */
	dbus_call_begin(&w, NULL, "/x", "x.Y", "Nope", "");
	is_int(dbus_call(c, &w, 5000, NULL, NULL, NULL), -ENOENT);
	is_str(err_msg(), "org.freedesktop.DBus.Error.UnknownMethod: what?");
	dbus_close(c);
	fake_peer_stop(&p);
	is_int(p.ncalls, 2);
	dbus_writer_free(&w);
}

TEST(error_names)
{
	is_int(dbus_error_errno("org.freedesktop.systemd1.NoSuchUnit"), -ENOENT);
	is_int(dbus_error_errno("org.freedesktop.systemd1.UnitExists"), -EEXIST);
	is_int(dbus_error_errno("org.freedesktop.DBus.Error.InvalidArgs"), -EINVAL);
	is_int(dbus_error_errno("org.freedesktop.DBus.Error.AccessDenied"), -EACCES);
	is_int(dbus_error_errno("org.freedesktop.DBus.Error.NoReply"), -ETIMEDOUT);
	is_int(dbus_error_errno("com.example.Whatever"), -EIO);
}

TEST(auth_rejected)
{
	struct fake_peer p = {.reject_auth = true};
	struct dbus_conn *c = NULL;

	is_int(open_pair(&p, false, 5000, &c), -EACCES);
	ok(strstr(err_msg(), "REJECTED") != NULL, "the message quotes the answer: %s", err_msg());
	fake_peer_stop(&p);
	ok(strncmp(p.auth, "AUTH EXTERNAL ", 14) == 0, "it asked");
}

TEST(garbage_reply)
{
	struct fake_peer p = {.garbage = true};
	struct dbus_conn *c = NULL;
	struct dbus_writer w = {0};

	is_int(open_pair(&p, false, 5000, &c), 0);
	dbus_call_begin(&w, NULL, "/x", "x.Y", "Echo", "s");
	dbus_w_str(&w, "x");
	is_int(dbus_call(c, &w, 5000, NULL, NULL, NULL), -EBADMSG);
	ok(strstr(err_msg(), "malformed") != NULL, "says malformed: %s", err_msg());
	dbus_close(c);
	fake_peer_stop(&p);
	dbus_writer_free(&w);
}

TEST(peer_hangs_up)
{
	struct fake_peer p = {.close_on_call = true};
	struct dbus_conn *c = NULL;
	struct dbus_writer w = {0};

	is_int(open_pair(&p, false, 5000, &c), 0);
	dbus_call_begin(&w, NULL, "/x", "x.Y", "Echo", "s");
	dbus_w_str(&w, "x");
	is_int(dbus_call(c, &w, 5000, NULL, NULL, NULL), -ECONNRESET);
	dbus_close(c);
	fake_peer_stop(&p);
	dbus_writer_free(&w);
}

TEST(no_answer)
{
	struct fake_peer p = {.silent = true};
	struct dbus_conn *c = NULL;
	struct dbus_writer w = {0};

	is_int(open_pair(&p, false, 5000, &c), 0);
	dbus_call_begin(&w, NULL, "/x", "x.Y", "Echo", "s");
	dbus_w_str(&w, "x");
	is_int(dbus_call(c, &w, 100, NULL, NULL, NULL), -ETIMEDOUT);
	dbus_close(c);
	fake_peer_stop(&p);
	dbus_writer_free(&w);
}

TEST(no_socket)
{
	struct dbus_conn *c = NULL;

	is_int(dbus_open("/nonexistent/dbus.sock", false, 1000, &c), -ENOENT);
	ok(strstr(err_msg(), "/nonexistent/dbus.sock") != NULL, "names the socket: %s", err_msg());
}

/* A bus socket path longer than sun_path holds: reached through its
 * directory. The peer listens by a relative name from inside it. */
TEST(long_socket_path)
{
	char dir[] = "/tmp/kvrun-dbus-XXXXXX", sub[151], path[512], cwd[PATH_MAX];
	struct fake_peer p = {.handler = handler};
	struct dbus_conn *c = NULL;

	memset(sub, 'd', sizeof(sub) - 1);
	sub[sizeof(sub) - 1] = '\0';
	ok(mkdtemp(dir) != NULL && getcwd(cwd, sizeof(cwd)) != NULL, "mkdtemp, getcwd");
	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	is_int(mkdir(path, 0700), 0);
	is_int(chdir(path), 0);
	is_int(fake_peer_start_listen(&p, "bus"), 0);
	is_int(chdir(cwd), 0);
	strcat(path, "/bus");
	ok(strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path), "socket path of %zu bytes", strlen(path));
	is_int(dbus_open(path, true, 5000, &c), 0);
	is_str(c ? dbus_unique_name(c) : NULL, ":1.42");
	dbus_close(c);
	fake_peer_stop(&p);
	is_int(p.connections, 1);
	rm_rf(dir);
}

TAP_MAIN()
