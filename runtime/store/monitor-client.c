/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/cleanup.h"
#include "common/error.h"
#include "common/unix-socket.h"
#include "common/fileio.h"
#include "common/protocol.h"
#include "runtime/store/monitor-client.h"
#include "runtime/store/layout.h"

#define REPLY_MAX 4096

static int read_reply(int fd, int timeout_ms, char *buf, size_t size)
{
	int64_t deadline = clock_now_ms() + timeout_ms;
	size_t len = 0;

	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int64_t left = deadline - clock_now_ms();
		ssize_t n;

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&p, 1, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		n = read(fd, buf + len, size - 1 - len);
		if (n < 0 && errno != EINTR && errno != EAGAIN)
			return -errno;
		if (n == 0 || len + (size_t)(n > 0 ? n : 0) >= size - 1) {
			buf[len] = 0;
			return 0;
		}
		if (n > 0)
			len += (size_t)n;
	}
}

/* The request line in one sendmsg, with nfds descriptors (SCM_RIGHTS)
 * riding on its first byte. */
static int send_request(int fd, const char *line, const int *fds, size_t nfds)
{
	union {
		char buf[CMSG_SPACE(MONITOR_CALL_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = (void *)line, .iov_len = strlen(line)};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *cm;
	ssize_t n;

	if (nfds > MONITOR_CALL_MAX_FDS)
		return -EINVAL;
	if (nfds > 0) {
		memset(u.buf, 0, sizeof(u.buf));
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	}
	do
		n = sendmsg(fd, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	/* A short send leaves only bytes: the descriptors went with the first. */
	return write_all(fd, line + n, strlen(line) - (size_t)n);
}

int monitor_call(const char *dir, const char *request, int timeout_ms, char **ret_detail)
{
	return monitor_call_fds(dir, request, NULL, 0, timeout_ms, ret_detail);
}

/* A connection to the control socket of the container in dir. */
static int connect_control(const char *dir)
{
	_cleanup_free_ char *path = NULL, *what = NULL;

	if (asprintf(&path, "%s/%s", dir, MONITOR_CONTROL_SOCK) < 0 ||
	    asprintf(&what, "the container's monitor at %s", path) < 0)
		return -ENOMEM;
	return unix_connect(path, 0, what);
}

int monitor_call_fds(const char *dir, const char *request, const int *fds, size_t nfds, int timeout_ms,
                     char **ret_detail)
{
	_cleanup_free_ char *line = NULL;
	_cleanup_close_ int fd = -1;
	char buf[REPLY_MAX];
	char *nl;
	int r;

	if (asprintf(&line, "%s\n", request) < 0)
		return -ENOMEM;
	fd = connect_control(dir);
	if (fd < 0)
		return fd;
	r = send_request(fd, line, fds, nfds);
	if (r < 0)
		return err_setsys(r, "send to the container's monitor");
	r = read_reply(fd, timeout_ms, buf, sizeof(buf));
	if (r == -ETIMEDOUT)
		return err_set(r, "the container's monitor did not answer \"%s\" in time", request);
	if (r < 0)
		return err_setsys(r, "read from the container's monitor");
	nl = strchr(buf, '\n');
	if (nl)
		*nl = 0;
	if (strncmp(buf, "ok", 2) == 0 && (buf[2] == 0 || buf[2] == ' ')) {
		if (ret_detail) {
			*ret_detail = strdup(buf[2] ? buf + 3 : "");
			if (!*ret_detail)
				return -ENOMEM;
		}
		return 0;
	}
	if (strncmp(buf, "error ", 6) == 0)
		return err_set(-EIO, "%s", buf + 6);
	return err_set(-EIO, "the container's monitor went away while handling \"%s\"", request);
}

/* Send request and read the answer line byte by byte (what follows it
 * stays unread); the connection once the monitor said "ok". */
static int request_keep(const char *dir, const char *request, int timeout_ms)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *line = NULL;
	char buf[REPLY_MAX];
	size_t len = 0;
	int r;

	if (asprintf(&line, "%s\n", request) < 0)
		return -ENOMEM;
	fd = connect_control(dir);
	if (fd < 0)
		return fd;
	r = write_all(fd, line, strlen(line));
	if (r < 0)
		return err_setsys(r, "send to the container's monitor");
	while (len + 1 < sizeof(buf)) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, timeout_ms) <= 0)
			return err_set(-ETIMEDOUT, "the container's monitor did not answer \"%s\" in time", request);
		n = read(fd, buf + len, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return err_set(-EIO, "the container's monitor went away while handling \"%s\"", request);
		if (buf[len] == '\n')
			break;
		len++;
	}
	buf[len] = 0;
	if (strcmp(buf, "ok") == 0)
		return TAKE_FD(fd);
	if (strncmp(buf, "error ", 6) == 0)
		return err_set(-EIO, "%s", buf + 6);
	return err_set(-EIO, "unexpected answer from the container's monitor: %s", buf);
}

int monitor_subscribe(const char *dir, int timeout_ms)
{
	return request_keep(dir, "events", timeout_ms);
}

int monitor_subscribe_member(const char *dir, uint32_t container, int timeout_ms)
{
	char req[32];

	snprintf(req, sizeof(req), "events %u", container);
	return request_keep(dir, req, timeout_ms);
}

int monitor_procs(const char *dir, uint32_t container, int timeout_ms, struct proto_msg *ret)
{
	struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
	char req[32];
	_cleanup_close_ int fd = -1;
	int r;

	if (container)
		snprintf(req, sizeof(req), "procs %u", container);
	else
		snprintf(req, sizeof(req), "procs");
	fd = request_keep(dir, req, timeout_ms);

	if (fd < 0)
		return fd;
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	r = proto_recv(fd, ret);
	if (r >= 0 && ret->type != PROTO_MSG_PS) {
		proto_msg_free(ret);
		r = -EPROTO;
	}
	return r < 0 ? err_setsys(r, "reading the container's processes from its monitor") : 0;
}
