/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Deadline-bounded framing (common/proto-stream.c) against fake peers on
 * socketpairs: frames trickled a byte at a time, frames back to back, bad
 * headers, EOF mid-frame, a peer that sends a header and then nothing, a
 * peer that does not read. The last test is a small serve loop of the
 * monitor's shape: it must keep answering other clients while a peer is
 * stalled mid-frame, and drop that peer, saying why, at the deadline.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/protocol.h"
#include "tap.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void pair(int sv[2])
{
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
}

static size_t frame(const struct proto_msg *m, uint8_t **ret)
{
	size_t len;

	if (proto_encode(m, ret, &len) < 0)
		abort();
	return len;
}

static int pending_bytes(int fd)
{
	int n = -1;

	ioctl(fd, FIONREAD, &n);
	return n;
}

TEST(byte_at_a_time)
{
	struct proto_msg in = {.type = PROTO_MSG_EXEC, .id = 77}, out;
	char *args[] = {(char *)"/bin/sh", (char *)"-c", (char *)"echo hi", NULL};
	struct proto_reader r;
	uint8_t *buf;
	size_t len;
	int sv[2], got = 0, early = 0;

	in.u.exec.args = args;
	len = frame(&in, &buf);
	pair(sv);
	proto_reader_init(&r);
	is_int(proto_reader_feed(&r, sv[1], &out), 0);
	ok(!proto_reader_partial(&r), "nothing read: no partial frame");
	is_int(proto_reader_timeout(&r, 1000), -1);
	for (size_t i = 0; i < len; i++) {
		int q;

		if (write(sv[0], buf + i, 1) != 1)
			abort();
		q = proto_reader_feed(&r, sv[1], &out);
		if (q == 1)
			got++;
		else if (q != 0 || !proto_reader_partial(&r))
			early++;
		if (q == 1 && i + 1 < len)
			early++;
	}
	is_int(got, 1);
	is_int(early, 0);
	ok(out.type == PROTO_MSG_EXEC && out.id == 77 && out.u.exec.args && !strcmp(out.u.exec.args[2], "echo hi"),
	   "the trickled EXEC decoded");
	ok(!proto_reader_partial(&r), "reader empty after the frame");
	proto_msg_free(&out);
	free(buf);
	close(sv[0]);
	close(sv[1]);
}

TEST(back_to_back_frames_stay_apart)
{
	struct proto_msg a = {.type = PROTO_MSG_GO, .id = 1}, out;
	struct proto_msg b = {.type = PROTO_MSG_EXIT, .id = 2, .u.exit = {5, 0, true}};
	struct proto_reader r;
	uint8_t *fa, *fb;
	size_t la = frame(&a, &fa), lb = frame(&b, &fb);
	int sv[2];

	pair(sv);
	proto_reader_init(&r);
	ok(write(sv[0], fa, la) == (ssize_t)la && write(sv[0], fb, lb) == (ssize_t)lb, "two frames written");
	is_int(proto_reader_feed(&r, sv[1], &out), 1);
	is_int(out.type, PROTO_MSG_GO);
	proto_msg_free(&out);
	/* Nothing of the second frame was read with the first. */
	is_int(pending_bytes(sv[1]), (int)lb);
	is_int(proto_reader_feed(&r, sv[1], &out), 1);
	ok(out.type == PROTO_MSG_EXIT && out.u.exit.pid == 5 && out.u.exit.init, "second frame");
	proto_msg_free(&out);
	is_int(proto_reader_feed(&r, sv[1], &out), 0);
	close(sv[0]);
	is_int(proto_reader_feed(&r, sv[1], &out), -ECONNRESET);
	free(fa);
	free(fb);
	close(sv[1]);
}

TEST(bad_headers_and_eof)
{
	uint8_t hdr[KVRUN_PROTO_HEADER_SIZE] = {0};
	struct proto_msg m = {.type = PROTO_MSG_STATS}, out;
	struct proto_reader r;
	uint8_t *buf;
	int sv[2];

	frame(&m, &buf);
	pair(sv);
	proto_reader_init(&r);
	ok(write(sv[0], hdr, sizeof(hdr)) == sizeof(hdr), "zero header written");
	is_int(proto_reader_feed(&r, sv[1], &out), -EBADMSG);
	ok(!proto_reader_partial(&r), "reset after a bad header");
	close(sv[0]);
	close(sv[1]);

	/* A body larger than the protocol allows is refused from the
	 * header, before anything is allocated for it. */
	pair(sv);
	memcpy(hdr, buf, sizeof(hdr));
	hdr[12] = hdr[13] = hdr[14] = hdr[15] = 0xff;
	ok(write(sv[0], hdr, sizeof(hdr)) == sizeof(hdr), "oversized header written");
	is_int(proto_reader_feed(&r, sv[1], &out), -EMSGSIZE);
	close(sv[0]);
	close(sv[1]);

	/* EOF in the middle of a frame. */
	pair(sv);
	memcpy(hdr, buf, sizeof(hdr));
	hdr[12] = 40;
	hdr[13] = hdr[14] = hdr[15] = 0;
	ok(write(sv[0], hdr, sizeof(hdr)) == sizeof(hdr) && write(sv[0], "abc", 3) == 3, "header and 3 bytes");
	is_int(proto_reader_feed(&r, sv[1], &out), 0);
	ok(proto_reader_partial(&r), "partial frame");
	close(sv[0]);
	is_int(proto_reader_feed(&r, sv[1], &out), -ECONNRESET);
	ok(!proto_reader_partial(&r), "reset at EOF");
	close(sv[1]);
	free(buf);
}

/* The stall clock: time since the partial frame last grew. */
TEST(stall_clock)
{
	struct proto_msg m = {.type = PROTO_MSG_STATS}, out;
	struct proto_reader r;
	uint8_t *buf;
	size_t len = frame(&m, &buf);
	int sv[2], left;

	pair(sv);
	proto_reader_init(&r);
	ok(write(sv[0], buf, 10) == 10, "10 bytes of a header");
	is_int(proto_reader_feed(&r, sv[1], &out), 0);
	left = proto_reader_timeout(&r, 200);
	ok(left > 100 && left <= 200, "timeout counts down from the stall limit (%d)", left);
	usleep(250 * 1000);
	is_int(proto_reader_timeout(&r, 200), 0);
	proto_reader_touch(&r);
	ok(proto_reader_timeout(&r, 200) > 100, "touch restarts the clock");
	ok(write(sv[0], buf + 10, len - 10) == (ssize_t)(len - 10), "rest of the frame");
	is_int(proto_reader_feed(&r, sv[1], &out), 1);
	is_int(proto_reader_timeout(&r, 200), -1);
	proto_msg_free(&out);
	proto_reader_reset(&r);
	free(buf);
	close(sv[0]);
	close(sv[1]);
}

TEST(recv_timeout)
{
	struct proto_msg m = {.type = PROTO_MSG_SIGNAL, .id = 3}, out;
	uint8_t *buf;
	size_t len;
	int sv[2], status;
	int64_t t0;
	pid_t pid;

	m.u.signal = (struct proto_signal){.pid = 1, .signo = 15};
	len = frame(&m, &buf);
	/* A header that promises a body, then silence. */
	pair(sv);
	ok(write(sv[0], buf, KVRUN_PROTO_HEADER_SIZE) == KVRUN_PROTO_HEADER_SIZE, "header alone");
	t0 = now_ms();
	is_int(proto_recv_timeout(sv[1], 300, &out), -ETIMEDOUT);
	ok(now_ms() - t0 >= 290 && now_ms() - t0 < 3000, "gave up at the deadline (%lld ms)",
	   (long long)(now_ms() - t0));
	close(sv[0]);
	close(sv[1]);

	/* The same frame trickled by a child within the deadline. */
	pair(sv);
	pid = fork();
	if (pid == 0) {
		for (size_t i = 0; i < len; i++) {
			if (write(sv[0], buf + i, 1) != 1)
				_exit(1);
			usleep(2000);
		}
		_exit(0);
	}
	is_int(proto_recv_timeout(sv[1], 5000, &out), 0);
	ok(out.type == PROTO_MSG_SIGNAL && out.u.signal.signo == 15, "trickled frame within the deadline");
	proto_msg_free(&out);
	waitpid(pid, &status, 0);
	close(sv[0]);
	close(sv[1]);
	free(buf);
}

TEST(send_timeout)
{
	struct proto_msg m = {.type = PROTO_MSG_ERROR}, out;
	static char big[1 << 20];
	int sv[2];
	int64_t t0;

	memset(big, 'x', sizeof(big) - 1);
	m.u.error.message = big;
	pair(sv);
	/* Nobody reads sv[1]: a 1 MiB frame cannot fit the socket buffers. */
	t0 = now_ms();
	is_int(proto_send_timeout(sv[0], &m, 300), -ETIMEDOUT);
	ok(now_ms() - t0 >= 290 && now_ms() - t0 < 3000, "gave up at the deadline");
	close(sv[0]);
	close(sv[1]);

	/* A reader on the other side takes it. */
	pair(sv);
	if (fork() == 0) {
		close(sv[0]);
		_exit(proto_recv_timeout(sv[1], 5000, &out) == 0 && strlen(out.u.error.message) == sizeof(big) - 1 ? 0
		                                                                                                   : 1);
	}
	close(sv[1]);
	is_int(proto_send_timeout(sv[0], &m, 5000), 0);
	{
		int status = -1;

		wait(&status);
		ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the peer read the whole frame");
	}
	close(sv[0]);
	/* A peer that is gone. */
	pair(sv);
	close(sv[1]);
	is_int(proto_send_timeout(sv[0], &(struct proto_msg){.type = PROTO_MSG_GO}, 1000), -EPIPE);
	close(sv[0]);
}

/*
 * A serve loop of the monitor's shape: a "guest" control stream fed into a
 * proto_reader, and a listener whose clients each get one answer. The
 * guest sends a header that promises a body, then nothing. Meanwhile two
 * clients connect and must be answered at once; at the stall deadline the
 * guest's stream is dropped with a reason.
 */
#define STALL_MS 400

struct loop_result {
	int answered; /* clients answered while the guest was stalled */
	int64_t dropped_after_ms; /* since the guest's header */
	char reason[128];
};

static void serve_client(int lfd, int *answered)
{
	int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	char b[8];

	if (c < 0)
		return;
	if (read(c, b, sizeof(b)) > 0 && write(c, "pong\n", 5) == 5)
		(*answered)++;
	close(c);
}

static void serve(int guest, int lfd, int64_t t0, struct loop_result *res)
{
	struct proto_reader r;

	proto_reader_init(&r);
	while (guest >= 0) {
		struct pollfd p[2] = {{.fd = guest, .events = POLLIN}, {.fd = lfd, .events = POLLIN}};
		struct proto_msg m;
		int q;

		if (poll(p, 2, proto_reader_timeout(&r, STALL_MS)) < 0)
			break;
		if (p[0].revents) {
			q = proto_reader_feed(&r, guest, &m);
			if (q > 0)
				proto_msg_free(&m);
			if (q < 0) {
				snprintf(res->reason, sizeof(res->reason), "stream error %d", q);
				break;
			}
		}
		if (p[1].revents)
			serve_client(lfd, &res->answered);
		if (proto_reader_timeout(&r, STALL_MS) == 0) {
			snprintf(res->reason, sizeof(res->reason), "stalled mid-frame for %d ms", STALL_MS);
			res->dropped_after_ms = now_ms() - t0;
			proto_reader_reset(&r);
			close(guest);
			guest = -1;
		}
	}
}

TEST(serve_loop_survives_a_stalled_peer)
{
	struct proto_msg m = {.type = PROTO_MSG_EXIT, .id = 9, .u.exit = {1, 0, true}};
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct loop_result res = {0};
	int g[2], lfd, status = -1;
	uint8_t *buf;
	size_t len = frame(&m, &buf);
	int64_t t0;
	pid_t pid;

	pair(g);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/kvrun-test-proto-stream-%d", (int)getpid());
	unlink(sa.sun_path);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ok(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(lfd, 4) == 0, "listen");
	/* The clients: a child connects twice, 100 and 200 ms after the
	 * guest's header, and checks each answer. */
	pid = fork();
	if (pid == 0) {
		int answers = 0;

		for (int i = 0; i < 2; i++) {
			int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
			struct pollfd pf = {.fd = fd, .events = POLLIN};
			char b[8] = "";

			usleep(100 * 1000);
			if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && write(fd, "ping\n", 5) == 5 &&
			    poll(&pf, 1, 1000) == 1 && read(fd, b, sizeof(b)) == 5 && !memcmp(b, "pong\n", 5))
				answers++;
			close(fd);
		}
		_exit(answers == 2 ? 0 : 1);
	}
	/* The guest: a header promising a body, two bytes of it, then nothing. */
	ok(len > KVRUN_PROTO_HEADER_SIZE + 2, "EXIT has a body");
	ok(write(g[0], buf, KVRUN_PROTO_HEADER_SIZE + 2) == KVRUN_PROTO_HEADER_SIZE + 2, "guest sent a header");
	t0 = now_ms();
	serve(g[1], lfd, t0, &res);
	waitpid(pid, &status, 0);
	unlink(sa.sun_path);
	is_int(res.answered, 2);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "both clients got their answer in time");
	ok(strstr(res.reason, "stalled mid-frame") != NULL, "the stalled peer was dropped: %s", res.reason);
	ok(res.dropped_after_ms >= STALL_MS - 10 && res.dropped_after_ms < STALL_MS + 2000,
	   "dropped at the deadline (%lld ms)", (long long)res.dropped_after_ms);
	close(g[0]);
	close(lfd);
	free(buf);
}

TAP_MAIN()
