/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The vsock side of bench/datapath-host.c: the host peer of the test
 * guest's vsock stream (listening where kvrun's device connects a guest's
 * stream to host port P, <uds>_P), and the host-direct figure: the same
 * stream between two host processes over a unix socket pair.
 *
 *   vsock-peer PATH MODE SIZE   accept one stream at PATH and sink it
 *       (MODE send: the guest sends), source SIZE-byte writes into it
 *       (recv), or echo it (rr); prints the bytes moved at its end
 *   unix MODE SIZE COUNT        send|recv COUNT bytes in SIZE writes, or
 *       COUNT round trips of SIZE bytes (rr), over a socketpair to a child
 *       playing the peer
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "datapath-host.h"

#define CHUNK 65536

/* What the peer does with the stream: 's' sink, 'o' source, 'e' echo. */
static uint64_t peer_serve(int fd, char role, size_t size)
{
	static char buf[CHUNK];
	uint64_t moved = 0;
	ssize_t n;

	if (size > sizeof(buf))
		size = sizeof(buf);
	for (;;) {
		if (role == 'o') {
			n = write(fd, buf, size);
		} else {
			n = read(fd, buf, sizeof(buf));
			if (n > 0 && role == 'e') {
				for (ssize_t w = 0; w < n;) {
					ssize_t k = write(fd, buf + w, (size_t)(n - w));

					if (k <= 0)
						return moved;
					w += k;
				}
			}
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return moved;
		moved += (uint64_t)n;
	}
}

static char role_of(const char *mode)
{
	return !strcmp(mode, "send") ? 's' : !strcmp(mode, "recv") ? 'o' : !strcmp(mode, "rr") ? 'e' : 0;
}

int dh_vsock_peer(int argc, char **argv)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char role;
	int l, c;
	uint64_t moved;

	if (argc != 5 || !(role = role_of(argv[3])) || strlen(argv[2]) >= sizeof(sa.sun_path))
		return 2;
	signal(SIGPIPE, SIG_IGN);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[2]);
	unlink(sa.sun_path);
	l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(l, 1) < 0)
		dh_die(argv[2], errno);
	printf("ready\n");
	fflush(stdout);
	c = accept(l, NULL, NULL);
	if (c < 0)
		dh_die("accept", errno);
	moved = peer_serve(c, role, dh_parse_size(argv[4]));
	printf("{\"bytes\": %llu}\n", (unsigned long long)moved);
	unlink(sa.sun_path);
	return 0;
}

/* The guest's side of the workload on fd: ops, bytes, ns. */
static void drive(int fd, char role, size_t size, uint64_t count)
{
	static char buf[CHUNK];
	uint64_t ops = 0, bytes = 0, t0 = dh_now_ns(), c0 = dh_cpu_ns();

	if (role == 's') {
		for (uint64_t left = count; left; ops++) {
			ssize_t n = write(fd, buf, left < size ? left : size);

			if (n <= 0)
				dh_die("write", errno);
			left -= (uint64_t)n;
			bytes += (uint64_t)n;
		}
	} else if (role == 'o') {
		while (bytes < count) {
			ssize_t n = read(fd, buf, sizeof(buf));

			if (n <= 0)
				dh_die("read", errno);
			bytes += (uint64_t)n;
			ops++;
		}
	} else {
		for (; ops < count; ops++) {
			if (write(fd, buf, size) != (ssize_t)size)
				dh_die("write", errno);
			for (size_t got = 0; got < size;) {
				ssize_t n = read(fd, buf, size - got);

				if (n <= 0)
					dh_die("read", errno);
				got += (size_t)n;
			}
			bytes += 2 * size;
		}
	}
	printf("{\"ops\": %llu, \"bytes\": %llu, \"ns\": %llu, \"cpu_ns\": %llu}\n", (unsigned long long)ops,
	       (unsigned long long)bytes, (unsigned long long)(dh_now_ns() - t0),
	       (unsigned long long)(dh_cpu_ns() - c0));
}

int dh_unix(int argc, char **argv)
{
	int sv[2], st;
	char role;
	size_t size;
	pid_t pid;

	if (argc != 5 || !(role = role_of(argv[2])))
		return 2;
	size = (size_t)dh_parse_size(argv[3]);
	if (!size || size > CHUNK)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		dh_die("socketpair", errno);
	pid = fork();
	if (pid < 0)
		dh_die("fork", errno);
	if (pid == 0) {
		close(sv[0]);
		peer_serve(sv[1], role, size);
		_exit(0);
	}
	close(sv[1]);
	drive(sv[0], role, size, dh_parse_size(argv[4]));
	shutdown(sv[0], SHUT_RDWR);
	close(sv[0]);
	waitpid(pid, &st, 0);
	return 0;
}
