/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/fileio.h"
#include "fake-peer.h"

static uint32_t next_serial = 1000;

static int read_all(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n <= 0)
			return -1;
		p += n, len -= (size_t)n;
	}
	return 0;
}

void fake_send(int fd, const struct dbus_msg *h, const struct dbus_writer *body)
{
	struct dbus_writer w = {0};
	struct dbus_msg hh = *h;

	hh.serial = next_serial++;
	dbus_msg_begin(&w, &hh);
	if (body && body->len) {
		dbus_w_align(&w, 8);
		for (size_t i = 0; i < body->len; i++)
			dbus_w_u8(&w, body->buf[i]);
	}
	if (dbus_msg_end(&w) == 0)
		(void)write_all(fd, w.buf, w.len);
	dbus_writer_free(&w);
}

void fake_reply(int fd, const struct dbus_msg *m, const char *sig, const struct dbus_writer *body)
{
	struct dbus_msg h = {.type = DBUS_METHOD_RETURN, .reply_serial = m->serial, .signature = sig};

	fake_send(fd, &h, body);
}

void fake_error(int fd, const struct dbus_msg *m, const char *name, const char *text)
{
	struct dbus_msg h = {.type = DBUS_ERROR, .reply_serial = m->serial, .error_name = name, .signature = "s"};
	struct dbus_writer b = {0};

	dbus_w_str(&b, text);
	fake_send(fd, &h, &b);
	dbus_writer_free(&b);
}

/* The SASL exchange; false when the client did not follow it. */
static bool auth(struct fake_peer *p, int fd)
{
	char c, line[256];
	size_t n = 0;

	if (read_all(fd, &c, 1) < 0 || c != 0)
		return false;
	for (int lines = 0; lines < 2; lines++) {
		n = 0;
		while (n + 1 < sizeof(line) && read_all(fd, &line[n], 1) == 0 && line[n] != '\n')
			n++;
		if (n == 0 || line[n - 1] != '\r')
			return false;
		line[n - 1] = 0;
		if (lines == 0) {
			snprintf(p->auth, sizeof(p->auth), "%s", line);
			if (p->reject_auth) {
				(void)write_all(fd, "REJECTED EXTERNAL\r\n", 19);
				return false;
			}
			(void)write_all(fd, "OK 0123456789abcdef0123456789abcdef\r\n", 37);
		} else {
			p->began = strcmp(line, "BEGIN") == 0;
		}
	}
	return p->began;
}

static void serve(struct fake_peer *p, int fd)
{
	p->connections++;
	if (!auth(p, fd))
		return;
	for (;;) {
		uint8_t hdr[DBUS_HEADER_FIXED], *buf;
		struct dbus_msg m;
		size_t size;

		if (read_all(fd, hdr, sizeof(hdr)) < 0)
			return;
		if (dbus_msg_size(hdr, &size) < 0 || !(buf = malloc(size))) {
			p->bad_messages++;
			return;
		}
		memcpy(buf, hdr, sizeof(hdr));
		if (read_all(fd, buf + sizeof(hdr), size - sizeof(hdr)) < 0 || dbus_msg_parse(buf, size, &m) < 0) {
			p->bad_messages++;
			free(buf);
			return;
		}
		if (m.type == DBUS_METHOD_CALL && p->ncalls < FAKE_MAX) {
			struct fake_call *c = &p->calls[p->ncalls++];

			snprintf(c->path, sizeof(c->path), "%s", m.path);
			snprintf(c->interface, sizeof(c->interface), "%s", m.interface ? m.interface : "");
			snprintf(c->member, sizeof(c->member), "%s", m.member);
			snprintf(c->destination, sizeof(c->destination), "%s", m.destination ? m.destination : "");
			snprintf(c->signature, sizeof(c->signature), "%s", m.signature ? m.signature : "");
		}
		if (p->close_on_call) {
			free(buf);
			return;
		}
		if (p->garbage) {
			static const uint8_t junk[16] = {'l', 2, 0, 1, 0xff, 0xff, 0xff, 0x7f, 1, 0, 0, 0, 0, 0, 0, 0};

			(void)write_all(fd, junk, sizeof(junk));
		} else if (!p->silent) {
			p->handler(p, fd, &m);
		}
		free(buf);
	}
}

static void *thread_main(void *arg)
{
	struct fake_peer *p = arg;

	if (p->listen_fd < 0) {
		serve(p, p->conn_fd);
		close(p->conn_fd);
		return NULL;
	}
	for (;;) {
		int fd = accept(p->listen_fd, NULL, NULL);

		if (fd < 0)
			return NULL;
		serve(p, fd);
		close(fd);
	}
}

int fake_peer_start_fd(struct fake_peer *p, int fd)
{
	p->listen_fd = -1;
	p->conn_fd = fd;
	return pthread_create(&p->thread, NULL, thread_main, p) == 0 ? 0 : -1;
}

int fake_peer_start_listen(struct fake_peer *p, const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	unlink(path);
	p->conn_fd = -1;
	p->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (p->listen_fd < 0 || bind(p->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(p->listen_fd, 4) < 0)
		return -1;
	return pthread_create(&p->thread, NULL, thread_main, p) == 0 ? 0 : -1;
}

void fake_peer_stop(struct fake_peer *p)
{
	if (p->listen_fd >= 0)
		shutdown(p->listen_fd, SHUT_RDWR);
	pthread_join(p->thread, NULL);
	if (p->listen_fd >= 0)
		close(p->listen_fd);
	p->listen_fd = -1;
}

const char *fake_prop(const struct fake_peer *p, const char *name)
{
	for (int i = 0; i < p->nprops; i++)
		if (strcmp(p->props[i].name, name) == 0)
			return p->props[i].value;
	return NULL;
}

/* ---- systemd's Manager -------------------------------------------------- */

#define SD_MANAGER "org.freedesktop.systemd1.Manager"

/* One variant's value as "<sig>:<text>"; false for a type the Manager
 * would not take in these properties. */
static bool variant_text(struct dbus_reader *r, char *out, size_t size)
{
	const char *sig, *s;
	uint64_t t;
	uint32_t u;
	uint8_t y;
	bool b;
	size_t end, n;

	if (dbus_r_sig(r, &sig) < 0)
		return false;
	n = (size_t)snprintf(out, size, "%s:", sig);
	if (strcmp(sig, "s") == 0 && dbus_r_str(r, &s) == 0)
		return snprintf(out + n, size - n, "%s", s) >= 0;
	if (strcmp(sig, "b") == 0 && dbus_r_bool(r, &b) == 0)
		return snprintf(out + n, size - n, "%d", b) >= 0;
	if (strcmp(sig, "t") == 0 && dbus_r_u64(r, &t) == 0)
		return snprintf(out + n, size - n, "%llu", (unsigned long long)t) >= 0;
	if ((strcmp(sig, "au") == 0 || strcmp(sig, "ay") == 0) && dbus_r_array(r, sig[1] == 'u' ? 4 : 1, &end) == 0) {
		n += (size_t)snprintf(out + n, size - n, "[");
		while (r->pos < end && n < size) {
			if (sig[1] == 'u' ? dbus_r_u32(r, &u) < 0 : dbus_r_u8(r, &y) < 0)
				return false;
			n += (size_t)snprintf(out + n, size - n, sig[1] == 'u' ? "%s%u" : "%s%02x",
			                      out[n - 1] == '[' ? "" : " ", sig[1] == 'u' ? u : y);
		}
		return r->pos == end && snprintf(out + n, size - n, "]") >= 0;
	}
	return false;
}

/* An a(sv) of properties into p->props. */
static bool decode_props(struct fake_peer *p, struct dbus_reader *r)
{
	const char *name;
	size_t end;

	if (dbus_r_array(r, 8, &end) < 0)
		return false;
	p->nprops = 0;
	while (r->pos < end) {
		struct fake_prop *pr = &p->props[p->nprops < FAKE_MAX ? p->nprops++ : FAKE_MAX - 1];

		if (dbus_r_align(r, 8) < 0 || dbus_r_str(r, &name) < 0 ||
		    !variant_text(r, pr->value, sizeof(pr->value)))
			return false;
		snprintf(pr->name, sizeof(pr->name), "%s", name);
	}
	return r->pos == end;
}

/* "sba(sv)" */
static bool decode_set(struct fake_peer *p, const struct dbus_msg *m)
{
	struct dbus_reader r = dbus_msg_body(m);
	const char *unit;

	if (!m->signature || strcmp(m->signature, "sba(sv)") || dbus_r_str(&r, &unit) < 0 ||
	    dbus_r_bool(&r, &p->set_runtime) < 0 || !decode_props(p, &r))
		return false;
	snprintf(p->set_unit, sizeof(p->set_unit), "%s", unit);
	return r.pos == r.len;
}

/* "ssa(sv)a(sa(sv))" */
static bool decode_start(struct fake_peer *p, const struct dbus_msg *m)
{
	struct dbus_reader r = dbus_msg_body(m);
	const char *unit, *mode;
	size_t end;

	if (!m->signature || strcmp(m->signature, "ssa(sv)a(sa(sv))") || dbus_r_str(&r, &unit) < 0 ||
	    dbus_r_str(&r, &mode) < 0 || !decode_props(p, &r))
		return false;
	snprintf(p->unit, sizeof(p->unit), "%s", unit);
	snprintf(p->mode, sizeof(p->mode), "%s", mode);
	if (dbus_r_array(&r, 8, &end) < 0)
		return false;
	p->naux = 0;
	while (r.pos < end) {
		const char *sig = "(sa(sv))";

		if (dbus_r_skip(&r, &sig) < 0)
			return false;
		p->naux++;
	}
	return r.pos == r.len;
}

static void job_removed(int fd, uint32_t id, const char *job, const char *unit, const char *result)
{
	struct dbus_msg h = {.type = DBUS_SIGNAL,
	                     .path = "/org/freedesktop/systemd1",
	                     .interface = SD_MANAGER,
	                     .member = "JobRemoved",
	                     .signature = "uoss"};
	struct dbus_writer b = {0};

	dbus_w_u32(&b, id);
	dbus_w_str(&b, job);
	dbus_w_str(&b, unit);
	dbus_w_str(&b, result);
	fake_send(fd, &h, &b);
	dbus_writer_free(&b);
}

/* Reply with a job path, and its JobRemoved (after an unrelated one, which
 * the client has to pass over). */
static void job(struct fake_peer *p, int fd, const struct dbus_msg *m, uint32_t id, const char *unit, const char *res)
{
	bool hang = p->start_job_hangs && strcmp(m->member, "StartTransientUnit") == 0;
	char path[64];
	struct dbus_writer b = {0};

	snprintf(path, sizeof(path), "/org/freedesktop/systemd1/job/%u", id);
	dbus_w_str(&b, path);
	job_removed(fd, id - 1, "/org/freedesktop/systemd1/job/1", "other.service", "failed");
	if (p->signal_first && !hang)
		job_removed(fd, id, path, unit, res);
	fake_reply(fd, m, "o", &b);
	if (!p->signal_first && !hang)
		job_removed(fd, id, path, unit, res);
	dbus_writer_free(&b);
}

static void manager_call(struct fake_peer *p, int fd, const struct dbus_msg *m)
{
	struct dbus_reader r = dbus_msg_body(m);
	const char *a, *b;

	if (strcmp(m->member, "Subscribe") == 0) {
		fake_reply(fd, m, "", NULL);
	} else if (strcmp(m->member, "StartTransientUnit") == 0) {
		p->nstarts++;
		if (!decode_start(p, m)) {
			p->bad_messages++;
			fake_error(fd, m, "org.freedesktop.DBus.Error.InvalidArgs", "cannot decode");
		} else if (p->start_errors > 0) {
			p->start_errors--;
			fake_error(fd, m, p->start_error, p->start_error_text);
		} else {
			job(p, fd, m, 7, p->unit, p->job_result ? p->job_result : "done");
		}
	} else if (strcmp(m->member, "StopUnit") == 0 && m->signature && strcmp(m->signature, "ss") == 0 &&
	           dbus_r_str(&r, &a) == 0 && dbus_r_str(&r, &b) == 0) {
		snprintf(p->stop_unit, sizeof(p->stop_unit), "%s", a);
		snprintf(p->stop_mode, sizeof(p->stop_mode), "%s", b);
		if (p->stop_missing) {
			fake_error(fd, m, "org.freedesktop.systemd1.NoSuchUnit", "Unit not loaded.");
			return;
		}
		if (p->rm_on_stop)
			(void)rm_rf(p->rm_on_stop);
		job(p, fd, m, 9, a, "done");
	} else if (strcmp(m->member, "SetUnitProperties") == 0) {
		if (decode_set(p, m))
			fake_reply(fd, m, "", NULL);
		else
			p->bad_messages++, fake_error(fd, m, "org.freedesktop.DBus.Error.InvalidArgs", "cannot decode");
	} else if (strcmp(m->member, "ResetFailedUnit") == 0 && m->signature && strcmp(m->signature, "s") == 0 &&
	           dbus_r_str(&r, &a) == 0) {
		snprintf(p->reset_unit, sizeof(p->reset_unit), "%s", a);
		fake_reply(fd, m, "", NULL);
	} else {
		fake_error(fd, m, "org.freedesktop.DBus.Error.UnknownMethod", "no such method");
	}
}

void fake_systemd(struct fake_peer *p, int fd, const struct dbus_msg *m)
{
	struct dbus_writer b = {0};

	if (m->interface && strcmp(m->interface, "org.freedesktop.DBus") == 0) {
		/* The bus daemon's part, for the system bus connection. */
		if (strcmp(m->member, "Hello") == 0) {
			dbus_w_str(&b, ":1.42");
			fake_reply(fd, m, "s", &b);
		} else {
			fake_reply(fd, m, "", NULL);
		}
	} else if (m->interface && strcmp(m->interface, "org.freedesktop.DBus.Properties") == 0 &&
	           strcmp(m->member, "Get") == 0) {
		dbus_w_sig(&b, "s");
		dbus_w_str(&b, p->version ? p->version : "252");
		fake_reply(fd, m, "v", &b);
	} else if (m->interface && strcmp(m->interface, SD_MANAGER) == 0 &&
	           strcmp(m->path, "/org/freedesktop/systemd1") == 0 && m->destination &&
	           strcmp(m->destination, "org.freedesktop.systemd1") == 0) {
		manager_call(p, fd, m);
	} else {
		fake_error(fd, m, "org.freedesktop.DBus.Error.UnknownMethod", "no such method");
	}
	dbus_writer_free(&b);
}
