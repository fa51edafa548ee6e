/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PID 1's control loop driven the way the VM monitor drives it, over unix
 * sockets instead of vsock: HELLO, START (wait) -> READY, GO -> STARTED,
 * stdio streams, EXEC, STATS, SIGNAL errors, EXIT with the wait status;
 * a pod: members beside the first container.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <linux/magic.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fileio.h"
#include "common/error.h"
#include "common/protocol.h"
#include "guest-init/guest-init.h"
#include "guest-init/server.h"
#include "tap.h"

static char tmpdir[] = "/tmp/kvrun-gisrv-XXXXXX";
static char rootfs[256];

static void port_path(uint32_t port, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/port_%u", tmpdir, port);
}

/* Firecracker's convention: guest port P reaches the host socket <path>_P. */
static int unix_connect(uint32_t port, void *opaque)
{
	struct sockaddr_un sa;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	port_path(port, &sa);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

static int listen_port(uint32_t port)
{
	struct sockaddr_un sa;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	port_path(port, &sa);
	unlink(sa.sun_path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4) < 0)
		return -errno;
	return fd;
}

static char *read_all(int fd)
{
	static char buf[4096];
	size_t len = 0;
	ssize_t n;

	while (len < sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	return buf;
}

static char **strv(const char *const *v)
{
	size_t n = 0;
	char **r;

	while (v[n])
		n++;
	r = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; i < n; i++)
		r[i] = strdup(v[i]);
	return r;
}

static int expect(int ctl, uint16_t type, struct proto_msg *m)
{
	int r = proto_recv(ctl, m);

	if (r < 0) {
		ok(0, "receive %s: %d", proto_type_name(type), r);
		return r;
	}
	if (!ok(m->type == type, "got %s, want %s", proto_type_name(m->type), proto_type_name(type))) {
		if (m->type == PROTO_MSG_ERROR)
			printf("# error %u: %s\n", m->u.error.err, m->u.error.message ? m->u.error.message : "");
		proto_msg_free(m);
		return -EBADMSG;
	}
	return 0;
}

/* The network hook the guest loop runs for START (NULL: none). */
static int (*net_hook)(const struct net_config *cfg);
/* Reconnect and identity hooks (NULL: none). */
static int (*reconnect_hook)(void *opaque);
static int (*identity_hook)(const struct proto_start *s);
/* The hook for NETWORK (NULL: none). */
static int (*reapply_hook)(const struct net_config *cfg);
/* Pods: where members go, how a root is mounted, the cgroup (NULL: none). */
static const char *members_dir, *pod_shm_dir;
static int (*mount_root_hook)(const struct proto_start *s, const char *target);
static const char *cgroup_dir;

static pid_t start_guest(int ctl, int host_end)
{
	pid_t pid = fork();

	if (pid == 0) {
		/* ctl is our end; the host's end must not stay open here. */
		struct gi_server srv = {.ctl = ctl,
		                        .connect_port = unix_connect,
		                        .rootfs_dir = rootfs,
		                        .files_dir = "/tmp",
		                        .linger_s = 5,
		                        .net_apply = net_hook,
		                        .reconnect = reconnect_hook,
		                        .apply_identity = identity_hook,
		                        .net_reapply = reapply_hook,
		                        .members_dir = members_dir,
		                        .pod_shm_dir = pod_shm_dir,
		                        .mount_root = mount_root_hook,
		                        .cgroup_dir = cgroup_dir};
		int r;

		alarm(60);
		close(host_end);
		if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			_exit(90);
		r = gi_hello(ctl, &srv);
		if (r >= 0)
			r = gi_serve(&srv);
		/* Hand the init's wait status back through our own exit code. */
		_exit(r < 0 ? 91 : WIFEXITED(r) ? WEXITSTATUS(r) : 92);
	}
	return pid;
}

static void send_msg(int ctl, struct proto_msg *m)
{
	is_int(proto_send(ctl, m), 0);
}

TEST(control_flow)
{
	int sv[2], l_in, l_out, l_err, l_xout, s_in, s_out, s_err, s_xout, st;
	struct proto_msg m = {0};
	uint32_t init_pid;
	pid_t guest;

	is_int(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	l_in = listen_port(5001);
	l_out = listen_port(5002);
	l_err = listen_port(5003);
	l_xout = listen_port(5004);
	ok(l_in >= 0 && l_out >= 0 && l_err >= 0 && l_xout >= 0, "listening on stdio ports");
	guest = start_guest(sv[1], sv[0]);
	close(sv[1]);

	if (expect(sv[0], PROTO_MSG_HELLO, &m) == 0) {
		is_int(m.u.hello.version_max, KVRUN_PROTO_VERSION);
		ok(m.u.hello.agent && strncmp(m.u.hello.agent, "kvrun-init", 10) == 0, "agent %s", m.u.hello.agent);
		proto_msg_free(&m);
	}
	m = (struct proto_msg){.type = PROTO_MSG_HELLO, .u.hello = {1, 1, NULL}};
	send_msg(sv[0], &m);

	/* START, created but not run: the process waits for GO. */
	m = (struct proto_msg){.type = PROTO_MSG_START, .flags = PROTO_START_F_WAIT, .id = 10};
	m.u.start.process.args = strv((const char *const[]){
	    "/bin/busybox", "sh", "-c", "read line; echo got=$line; echo to-stderr >&2; exit 7", NULL});
	m.u.start.process.env = strv((const char *const[]){"PATH=/bin", NULL});
	m.u.start.process.stdin_port = 5001;
	m.u.start.process.stdout_port = 5002;
	m.u.start.process.stderr_port = 5003;
	m.u.start.hostname = strdup("srvbox");
	send_msg(sv[0], &m);
	proto_start_free(&m.u.start);
	s_in = accept4(l_in, NULL, NULL, SOCK_CLOEXEC);
	s_out = accept4(l_out, NULL, NULL, SOCK_CLOEXEC);
	s_err = accept4(l_err, NULL, NULL, SOCK_CLOEXEC);
	ok(s_in >= 0 && s_out >= 0 && s_err >= 0, "guest opened three stdio streams");
	if (expect(sv[0], PROTO_MSG_READY, &m) == 0) {
		is_int(m.id, 10);
		ok(m.u.started.pid > 0, "READY carries the pid");
	}
	init_pid = m.u.started.pid;
	m = (struct proto_msg){.type = PROTO_MSG_GO, .id = 11};
	send_msg(sv[0], &m);
	if (expect(sv[0], PROTO_MSG_STARTED, &m) == 0) {
		is_int(m.id, 11);
		is_int(m.u.started.pid, init_pid);
	}

	/* EXEC into the running container, with a stdout stream of its own. */
	m = (struct proto_msg){.type = PROTO_MSG_EXEC, .id = 20};
	m.u.exec.args =
	    strv((const char *const[]){"/bin/busybox", "sh", "-c", "echo exec-sees=$(hostname); exit 3", NULL});
	m.u.exec.env = strv((const char *const[]){"PATH=/bin", NULL});
	m.u.exec.stdout_port = 5004;
	send_msg(sv[0], &m);
	proto_process_free(&m.u.exec);
	s_xout = accept4(l_xout, NULL, NULL, SOCK_CLOEXEC);
	if (expect(sv[0], PROTO_MSG_STARTED, &m) == 0)
		is_int(m.id, 20);
	ok(strcmp(read_all(s_xout), "exec-sees=srvbox\n") == 0, "exec stdout");
	if (expect(sv[0], PROTO_MSG_EXIT, &m) == 0) {
		is_int(m.id, 20);
		ok(!m.u.exit.init && WIFEXITED(m.u.exit.status) && WEXITSTATUS(m.u.exit.status) == 3, "exec exit 3");
	}

	/* EXEC of a missing binary: ERROR in runc's words, then its EXIT. */
	m = (struct proto_msg){.type = PROTO_MSG_EXEC, .id = 21};
	m.u.exec.args = strv((const char *const[]){"/nope", NULL});
	send_msg(sv[0], &m);
	proto_process_free(&m.u.exec);
	if (expect(sv[0], PROTO_MSG_ERROR, &m) == 0) {
		is_int(m.u.error.err, ENOENT);
		is_str(m.u.error.message, "exec: \"/nope\": stat /nope: no such file or directory");
		proto_msg_free(&m);
	}
	if (expect(sv[0], PROTO_MSG_EXIT, &m) == 0)
		is_int(WEXITSTATUS(m.u.exit.status), 127);

	m = (struct proto_msg){.type = PROTO_MSG_STATS, .id = 30};
	send_msg(sv[0], &m);
	if (expect(sv[0], PROTO_MSG_STATS, &m) == 0)
		ok(m.id == 30 && m.u.stats.memory_total > 0, "stats answer");

	/* This server has no container cgroup: UPDATE says so, by id. */
	m = (struct proto_msg){.type = PROTO_MSG_UPDATE, .id = 32, .u.update = {.has_pids_max = true, .pids_max = 5}};
	send_msg(sv[0], &m);
	if (expect(sv[0], PROTO_MSG_ERROR, &m) == 0) {
		ok(m.id == 32 && m.u.error.err == ENOTSUP, "UPDATE without a cgroup: ENOTSUP");
		proto_msg_free(&m);
	}

	m = (struct proto_msg){.type = PROTO_MSG_SIGNAL, .id = 31, .u.signal = {999999, 15, false}};
	send_msg(sv[0], &m);
	if (expect(sv[0], PROTO_MSG_ERROR, &m) == 0) {
		is_int(m.u.error.err, ESRCH);
		proto_msg_free(&m);
	}

	/* stdin reaches the init, then EOF; outputs drain before EXIT. */
	is_int(write_all(s_in, "hello\n", 6), 0);
	shutdown(s_in, SHUT_WR);
	ok(strcmp(read_all(s_out), "got=hello\n") == 0, "init stdout saw stdin");
	ok(strcmp(read_all(s_err), "to-stderr\n") == 0, "init stderr");
	if (expect(sv[0], PROTO_MSG_EXIT, &m) == 0) {
		ok(m.u.exit.init && m.u.exit.pid == init_pid, "EXIT of the init");
		is_int(m.u.exit.status, 7 << 8);
	}
	close(sv[0]);
	waitpid(guest, &st, 0);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 7, "guest loop ends with the init's status (0x%x)", st);
	close(s_in);
	close(s_out);
	close(s_err);
	close(s_xout);
}

/* create --preserve-fds: each preserved fd is a stream the process holds
 * at 3, 4, ..., closed in the direction its host fd does not go. */
static const char *read_until(int fd, char *buf, size_t cap, size_t *len, const char *needle);

TEST(preserved_fds)
{
	int sv[2], l_r, l_w, l_rw, l_out, s_r, s_w, s_rw, s_out, st;
	char buf[256];
	size_t len = 0;
	struct proto_msg m = {0};
	pid_t guest;

	is_int(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	l_r = listen_port(5201);
	l_w = listen_port(5202);
	l_rw = listen_port(5203);
	l_out = listen_port(5204);
	guest = start_guest(sv[1], sv[0]);
	close(sv[1]);
	if (expect(sv[0], PROTO_MSG_HELLO, &m) == 0)
		proto_msg_free(&m);
	m = (struct proto_msg){.type = PROTO_MSG_HELLO, .u.hello = {1, 1, NULL}};
	send_msg(sv[0], &m);
	m = (struct proto_msg){.type = PROTO_MSG_START, .id = 40};
	m.u.start.process.args = strv((const char *const[]){
	    "/bin/busybox", "sh", "-c",
	    "read a <&3; echo got=$a >&4; read b <&4 || echo fd4=eof; read c <&5; echo both-$c >&5; echo done", NULL});
	m.u.start.process.env = strv((const char *const[]){"PATH=/bin", NULL});
	m.u.start.process.stdout_port = 5204;
	m.u.start.process.n_extra_fds = 3;
	m.u.start.process.extra_fds = calloc(3, sizeof(struct proto_extra_fd));
	m.u.start.process.extra_fds[0] = (struct proto_extra_fd){5201, PROTO_EXTRA_FD_READ};
	m.u.start.process.extra_fds[1] = (struct proto_extra_fd){5202, PROTO_EXTRA_FD_WRITE};
	m.u.start.process.extra_fds[2] = (struct proto_extra_fd){5203, PROTO_EXTRA_FD_READ | PROTO_EXTRA_FD_WRITE};
	send_msg(sv[0], &m);
	proto_start_free(&m.u.start);
	s_out = accept4(l_out, NULL, NULL, SOCK_CLOEXEC);
	s_r = accept4(l_r, NULL, NULL, SOCK_CLOEXEC);
	s_w = accept4(l_w, NULL, NULL, SOCK_CLOEXEC);
	s_rw = accept4(l_rw, NULL, NULL, SOCK_CLOEXEC);
	ok(s_out >= 0 && s_r >= 0 && s_w >= 0 && s_rw >= 0, "guest opened the stdout and three preserved streams");
	if (expect(sv[0], PROTO_MSG_STARTED, &m) == 0)
		is_int(m.id, 40);
	is_int(write_all(s_r, "one\n", 4), 0);
	shutdown(s_r, SHUT_WR);
	ok(read_until(s_w, buf, sizeof(buf), &len, "got=one\n") != NULL, "fd 3 read the host's data, fd 4 wrote back");
	is_int(write_all(s_rw, "ping\n", 5), 0);
	shutdown(s_rw, SHUT_WR);
	{
		const char *o = read_all(s_rw);

		ok(strcmp(o, "both-ping\n") == 0, "fd 5 both ways: %s", o);
	}
	ok(strcmp(read_all(s_out), "fd4=eof\ndone\n") == 0, "fd 4 gives nothing to read");
	ok(strcmp(read_all(s_w), "") == 0, "fd 4 ends with the process");
	if (expect(sv[0], PROTO_MSG_EXIT, &m) == 0)
		ok(m.u.exit.init && WIFEXITED(m.u.exit.status) && WEXITSTATUS(m.u.exit.status) == 0, "exit 0");
	close(sv[0]);
	waitpid(guest, &st, 0);
	close(s_r);
	close(s_w);
	close(s_rw);
	close(s_out);
}

/* The hook reports what it was given on this pipe; "fail0" fails it. */
static int net_pipe = -1;

static int record_net(const struct net_config *cfg)
{
	char line[128];
	int n;

	if (!cfg)
		n = snprintf(line, sizeof(line), "none\n");
	else
		n = snprintf(line, sizeof(line), "%u %s %u %u\n", cfg->nr_ifaces, cfg->ifaces[0].name,
		             cfg->ifaces[0].mtu, cfg->ifaces[0].nr_addrs);
	(void)!write(net_pipe, line, (size_t)n);
	if (cfg && strcmp(cfg->ifaces[0].name, "fail0") == 0)
		return err_set(-ENODEV, "no link with MAC 02:00:00:00:00:01");
	return 0;
}

/* A guest whose network hook writes what it got to a pipe (*rec, read
 * end), past HELLO both ways on *ctl; its pid. */
static pid_t net_guest(int *ctl, int *rec)
{
	int sv[2], p[2];
	struct proto_msg m = {0};
	pid_t guest;

	is_int(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	is_int(pipe2(p, O_CLOEXEC), 0);
	net_pipe = p[1];
	net_hook = record_net;
	guest = start_guest(sv[1], sv[0]);
	net_hook = NULL;
	close(sv[1]);
	close(p[1]);
	if (expect(sv[0], PROTO_MSG_HELLO, &m) == 0)
		proto_msg_free(&m);
	m = (struct proto_msg){.type = PROTO_MSG_HELLO, .u.hello = {1, 1, NULL}};
	send_msg(sv[0], &m);
	*ctl = sv[0];
	*rec = p[0];
	return guest;
}

/* START: the network is configured before the process exists, with the
 * record START carried; a failure fails START, and the init "exits". */
static void net_start(const char *name, bool want_ok)
{
	int sv[2], p[2], st;
	struct proto_msg m = {0};
	char buf[128] = "";
	pid_t guest;
	ssize_t n;

	guest = net_guest(&sv[0], &p[0]);
	m = (struct proto_msg){.type = PROTO_MSG_START, .flags = PROTO_START_F_WAIT, .id = 40};
	m.u.start.process.args = strv((const char *const[]){"/bin/busybox", "true", NULL});
	m.u.start.net = calloc(1, sizeof(*m.u.start.net));
	m.u.start.net->nr_ifaces = 1;
	snprintf(m.u.start.net->ifaces[0].name, NET_CONFIG_IFNAMSIZ, "%s", name);
	m.u.start.net->ifaces[0].mtu = 9000;
	m.u.start.net->ifaces[0].nr_addrs = 2;
	send_msg(sv[0], &m);
	proto_start_free(&m.u.start);
	n = read(p[0], buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = 0;
	buf[strcspn(buf, "\n")] = 0;
	char want[64];
	snprintf(want, sizeof(want), "1 %s 9000 2", name);
	is_str(buf, want);
	if (want_ok) {
		if (expect(sv[0], PROTO_MSG_READY, &m) == 0)
			is_int(m.id, 40);
	} else if (expect(sv[0], PROTO_MSG_ERROR, &m) == 0) {
		is_int(m.u.error.err, ENODEV);
		ok(m.u.error.message && strstr(m.u.error.message, "network setup") &&
		       strstr(m.u.error.message, "no link with MAC"),
		   "the error says the network setup failed: %s", m.u.error.message);
		proto_msg_free(&m);
		if (expect(sv[0], PROTO_MSG_EXIT, &m) == 0)
			ok(m.u.exit.init, "then the init's EXIT");
	}
	close(sv[0]);
	close(p[0]);
	waitpid(guest, &st, 0);
}

static const char *read_until(int fd, char *buf, size_t cap, size_t *len, const char *needle);

/* As guest-init does after a restore: the control port again, HELLO. */
static int test_reconnect(void *opaque)
{
	int fd = unix_connect(KVRUN_PROTO_CONTROL_PORT, NULL);

	if (fd < 0)
		return fd;
	if (gi_hello(fd, opaque) < 0) {
		close(fd);
		return -EPROTO;
	}
	return fd;
}

static int record_identity(const struct proto_start *s)
{
	char path[300];
	FILE *f;

	snprintf(path, sizeof(path), "%s/identity", tmpdir);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "%d %llu %d %u", s->has_realtime, (unsigned long long)s->realtime_ns, s->has_seed, s->seed[63]);
	fclose(f);
	return 0;
}

static void hello_host(int ctl)
{
	struct proto_msg m = {0};

	if (expect(ctl, PROTO_MSG_HELLO, &m) == 0)
		proto_msg_free(&m);
	m = (struct proto_msg){.type = PROTO_MSG_HELLO, .u.hello = {1, 1, NULL}};
	send_msg(ctl, &m);
}

/* The control stream breaks while guest-init waits for START (a restored
 * template's vsock reset): it connects again, says HELLO, takes START
 * (with the instance's identity) from the new host. Twice, as a restore
 * of a restore would. */
TEST(reconnect_before_start)
{
	int sv[2], l_ctl, c1, c2, st;
	struct proto_msg m = {0};
	char path[300], buf[128] = "";
	pid_t guest;
	FILE *f;

	is_int(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	l_ctl = listen_port(KVRUN_PROTO_CONTROL_PORT);
	ok(l_ctl >= 0, "listening on the control port");
	reconnect_hook = test_reconnect;
	identity_hook = record_identity;
	guest = start_guest(sv[1], sv[0]);
	reconnect_hook = NULL;
	identity_hook = NULL;
	close(sv[1]);
	hello_host(sv[0]);
	close(sv[0]); /* the reset */
	c1 = accept4(l_ctl, NULL, NULL, SOCK_CLOEXEC);
	ok(c1 >= 0, "guest connected again");
	hello_host(c1);
	shutdown(c1, SHUT_RDWR);
	close(c1);
	c2 = accept4(l_ctl, NULL, NULL, SOCK_CLOEXEC);
	ok(c2 >= 0, "and again");
	hello_host(c2);
	m = (struct proto_msg){.type = PROTO_MSG_START, .id = 50};
	m.u.start.process.args = strv((const char *const[]){"/bin/busybox", "sh", "-c", "exit 5", NULL});
	m.u.start.has_realtime = true;
	m.u.start.realtime_ns = 1764470000000000001ULL;
	m.u.start.has_seed = true;
	m.u.start.seed[63] = 0xab;
	send_msg(c2, &m);
	proto_start_free(&m.u.start);
	if (expect(c2, PROTO_MSG_STARTED, &m) == 0)
		is_int(m.id, 50);
	if (expect(c2, PROTO_MSG_EXIT, &m) == 0)
		ok(m.u.exit.init && WEXITSTATUS(m.u.exit.status) == 5, "the init ran and exited 5");
	close(c2);
	waitpid(guest, &st, 0);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 5, "guest loop ends with the init's status");
	snprintf(path, sizeof(path), "%s/identity", tmpdir);
	f = fopen(path, "r");
	if (f) {
		(void)!fgets(buf, sizeof(buf), f);
		fclose(f);
	}
	is_str(buf, "1 1764470000000000001 1 171");
	close(l_ctl);
}

/* After START (a restored checkpoint): the control stream and the init's
 * stdout break; guest-init connects both again and the process goes on. */
TEST(reconnect_after_start)
{
	int sv[2], l_ctl, l_out, s1, s2, c1, st;
	struct proto_msg m = {0};
	char path[300], buf[256] = "";
	size_t len = 0;
	pid_t guest;

	is_int(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	l_ctl = listen_port(KVRUN_PROTO_CONTROL_PORT);
	l_out = listen_port(5101);
	reconnect_hook = test_reconnect;
	guest = start_guest(sv[1], sv[0]);
	reconnect_hook = NULL;
	close(sv[1]);
	hello_host(sv[0]);
	m = (struct proto_msg){.type = PROTO_MSG_START, .id = 60};
	m.u.start.process.args = strv((const char *const[]){
	    "/bin/busybox", "sh", "-c",
	    "echo first; while [ ! -e /go ]; do /bin/busybox sleep 0.05; done; echo second; exit 4", NULL});
	m.u.start.process.stdout_port = 5101;
	send_msg(sv[0], &m);
	proto_start_free(&m.u.start);
	s1 = accept4(l_out, NULL, NULL, SOCK_CLOEXEC);
	if (expect(sv[0], PROTO_MSG_STARTED, &m) == 0)
		is_int(m.id, 60);
	ok(strcmp(read_until(s1, buf, sizeof(buf), &len, "first\n"), "first\n") == 0, "init printed first");
	close(s1);
	close(sv[0]); /* the restore's reset */
	c1 = accept4(l_ctl, NULL, NULL, SOCK_CLOEXEC);
	ok(c1 >= 0, "guest connected its control stream again");
	hello_host(c1);
	s2 = accept4(l_out, NULL, NULL, SOCK_CLOEXEC);
	ok(s2 >= 0, "and the init's stdout");
	snprintf(path, sizeof(path), "%s/go", rootfs);
	close(open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
	buf[0] = 0;
	len = 0;
	ok(strcmp(read_until(s2, buf, sizeof(buf), &len, "second\n"), "second\n") == 0,
	   "its output continues on the new stream");
	if (expect(c1, PROTO_MSG_EXIT, &m) == 0)
		ok(m.u.exit.init && WEXITSTATUS(m.u.exit.status) == 4, "the init went on and exited 4");
	close(c1);
	waitpid(guest, &st, 0);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 4, "guest loop ends with the init's status");
	unlink(path);
	close(s2);
	close(l_ctl);
	close(l_out);
}

/* Without a reconnect hook a broken stream before START ends the loop. */
TEST(no_reconnect_ends_loop)
{
	int sv[2], st;
	pid_t guest;

	is_int(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	guest = start_guest(sv[1], sv[0]);
	close(sv[1]);
	hello_host(sv[0]);
	close(sv[0]);
	waitpid(guest, &st, 0);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "loop ended (0x%x)", st);
}

/* START whose record has no interfaces (loopback only, up since
 * boot): the network hook is not run, READY comes as usual. */
static void net_start_loopback(bool record)
{
	int sv[2], p[2], st;
	struct proto_msg m = {0};
	char buf[128] = "";
	pid_t guest;
	ssize_t n;

	guest = net_guest(&sv[0], &p[0]);
	m = (struct proto_msg){.type = PROTO_MSG_START, .flags = PROTO_START_F_WAIT, .id = 41};
	m.u.start.process.args = strv((const char *const[]){"/bin/busybox", "true", NULL});
	if (record)
		m.u.start.net = calloc(1, sizeof(*m.u.start.net));
	send_msg(sv[0], &m);
	proto_start_free(&m.u.start);
	if (expect(sv[0], PROTO_MSG_READY, &m) == 0)
		is_int(m.id, 41);
	close(sv[0]);
	waitpid(guest, &st, 0);
	n = read(p[0], buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = 0;
	ok(n == 0, "%s: the network hook was not run (%s)", record ? "no interfaces" : "no record", buf);
	close(p[0]);
}

TEST(start_configures_network)
{
	net_start("eth0", true);
	net_start("fail0", false);
	net_start_loopback(true);
	net_start_loopback(false);
}

static void send_network(int ctl, uint64_t id, const char *name)
{
	struct proto_msg m = {.type = PROTO_MSG_NETWORK, .id = id};

	m.u.network.net = calloc(1, sizeof(*m.u.network.net));
	m.u.network.net->nr_ifaces = 1;
	snprintf(m.u.network.net->ifaces[0].name, NET_CONFIG_IFNAMSIZ, "%s", name);
	m.u.network.net->ifaces[0].mtu = 1300;
	m.u.network.net->ifaces[0].nr_addrs = 1;
	m.u.network.has_realtime = true;
	m.u.network.realtime_ns = 1764470000000000002ULL;
	send_msg(ctl, &m);
	proto_msg_free(&m);
}

/* NETWORK (a restored checkpoint): the clock, then the interfaces again
 * through the reapply hook; answered by ERROR 0, or by the hook's error. */
TEST(network_after_restore)
{
	int sv[2], p[2], st;
	struct proto_msg m = {0};
	char path[300], buf[128] = "";
	pid_t guest;
	ssize_t n;
	FILE *f;

	is_int(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	is_int(pipe2(p, O_CLOEXEC), 0);
	net_pipe = p[1];
	reapply_hook = record_net;
	identity_hook = record_identity;
	guest = start_guest(sv[1], sv[0]);
	reapply_hook = NULL;
	identity_hook = NULL;
	close(sv[1]);
	close(p[1]);
	hello_host(sv[0]);
	send_network(sv[0], 70, "eth9");
	if (expect(sv[0], PROTO_MSG_ERROR, &m) == 0) {
		ok(m.id == 70 && m.u.error.err == 0, "NETWORK done: ERROR 0 with its id (%u)", m.u.error.err);
		proto_msg_free(&m);
	}
	n = read(p[0], buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = 0;
	is_str(buf, "1 eth9 1300 1\n");
	snprintf(path, sizeof(path), "%s/identity", tmpdir);
	buf[0] = 0;
	f = fopen(path, "r");
	if (f) {
		(void)!fgets(buf, sizeof(buf), f);
		fclose(f);
	}
	is_str(buf, "1 1764470000000000002 0 0");
	send_network(sv[0], 71, "fail0");
	if (expect(sv[0], PROTO_MSG_ERROR, &m) == 0) {
		ok(m.id == 71 && m.u.error.err == ENODEV && m.u.error.message &&
		       strstr(m.u.error.message, "no link with MAC"),
		   "a failed NETWORK: the hook's error (%s)", m.u.error.message);
		proto_msg_free(&m);
	}
	close(sv[0]);
	close(p[0]);
	waitpid(guest, &st, 0);
	ok(WIFEXITED(st), "guest loop ended");
}

/* Read from fd until needle shows up (or EOF); returns the buffer. */
static const char *read_until(int fd, char *buf, size_t cap, size_t *len, const char *needle)
{
	ssize_t n;

	while (!strstr(buf, needle) && *len < cap - 1 && (n = read(fd, buf + *len, cap - 1 - *len)) > 0) {
		*len += (size_t)n;
		buf[*len] = '\0';
	}
	return buf;
}

static void add_mount(struct proto_start *s, const char *dst, const char *type, const char *const *opts)
{
	s->mounts = realloc(s->mounts, (s->n_mounts + 1) * sizeof(*s->mounts));
	memset(&s->mounts[s->n_mounts], 0, sizeof(*s->mounts));
	s->mounts[s->n_mounts].destination = strdup(dst);
	s->mounts[s->n_mounts].type = strdup(type);
	s->mounts[s->n_mounts].source = strdup(type);
	s->mounts[s->n_mounts++].options = strv(opts);
}

TEST(terminal_flow)
{
	int sv[2], l_tty, s_tty, st;
	struct proto_msg m = {0};
	char buf[4096] = "";
	size_t len = 0;
	pid_t guest;

	is_int(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	l_tty = listen_port(5011);
	guest = start_guest(sv[1], sv[0]);
	close(sv[1]);
	if (expect(sv[0], PROTO_MSG_HELLO, &m) == 0)
		proto_msg_free(&m);
	m = (struct proto_msg){.type = PROTO_MSG_HELLO, .u.hello = {1, 1, NULL}};
	send_msg(sv[0], &m);
	/* Before START there is no pty to size: refused, not kept for later
	 * (the size the pty starts with comes in START). */
	m = (struct proto_msg){.type = PROTO_MSG_RESIZE, .id = 9, .u.resize = {0, 50, 60}};
	send_msg(sv[0], &m);
	if (expect(sv[0], PROTO_MSG_ERROR, &m) == 0) {
		is_int(m.u.error.err, ENOTTY);
		proto_msg_free(&m);
	}

	m = (struct proto_msg){.type = PROTO_MSG_START, .id = 1};
	m.u.start.process.args = strv((const char *const[]){
	    "/bin/busybox", "sh", "-c",
	    "echo size=$(stty size); echo tty=$(tty); read x; echo size=$(stty size); exit 5", NULL});
	m.u.start.process.env = strv((const char *const[]){"PATH=/bin", NULL});
	m.u.start.process.terminal = true;
	m.u.start.process.rows = 30;
	m.u.start.process.cols = 100;
	m.u.start.process.stdin_port = 5011;
	add_mount(&m.u.start, "/proc", "proc", (const char *const[]){NULL});
	add_mount(&m.u.start, "/dev", "tmpfs", (const char *const[]){"mode=755", NULL});
	add_mount(&m.u.start, "/dev/pts", "devpts", (const char *const[]){"newinstance", "ptmxmode=0666", NULL});
	send_msg(sv[0], &m);
	proto_start_free(&m.u.start);
	s_tty = accept4(l_tty, NULL, NULL, SOCK_CLOEXEC);
	ok(s_tty >= 0, "guest opened the pty stream");
	if (expect(sv[0], PROTO_MSG_STARTED, &m) == 0)
		ok(m.u.started.pid > 0, "started");
	read_until(s_tty, buf, sizeof(buf), &len, "tty=");
	read_until(s_tty, buf, sizeof(buf), &len, "\n");
	ok(strstr(buf, "size=30 100") != NULL, "initial terminal size");
	ok(strstr(buf, "tty=/dev/pts/0") != NULL, "a pty of the container's devpts");

	m = (struct proto_msg){.type = PROTO_MSG_RESIZE, .id = 2, .u.resize = {0, 40, 120}};
	send_msg(sv[0], &m);
	if (expect(sv[0], PROTO_MSG_ERROR, &m) == 0) {
		is_int(m.u.error.err, 0);
		proto_msg_free(&m);
	}
	is_int(write_all(s_tty, "go\n", 3), 0);
	read_until(s_tty, buf, sizeof(buf), &len, "\x01never");
	if (!ok(strstr(buf, "size=40 120") != NULL, "size after RESIZE"))
		printf("# output: %s\n", buf);
	if (expect(sv[0], PROTO_MSG_EXIT, &m) == 0)
		is_int(m.u.exit.status, 5 << 8);
	close(sv[0]);
	waitpid(guest, &st, 0);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 5, "guest loop returns 5");
	close(s_tty);
	close(l_tty);
}

/* ---- Pods ---- */

/* virtio-fs cannot be mounted here: a member's root tag names a directory
 * of the test's, bound at the member's root. */
static int bind_root(const struct proto_start *s, const char *target)
{
	char src[300];

	snprintf(src, sizeof(src), "%s/%s", tmpdir, s->root_device);
	if (mkdir_p(target, 0755) < 0 || mount(src, target, NULL, MS_BIND, NULL) < 0)
		return err_setsys(-errno, "bind %s on %s", src, target);
	return 0;
}

/* A member's START running `sh -c script` on the root tag "mroot". */
static void member_msg(struct proto_msg *m, uint64_t id, uint32_t flags, const char *script)
{
	*m = (struct proto_msg){.type = PROTO_MSG_START, .flags = PROTO_START_F_MEMBER | flags, .id = id};
	m->u.start.process.args = strv((const char *const[]){"/bin/busybox", "sh", "-c", script, NULL});
	m->u.start.process.env = strv((const char *const[]){"PATH=/bin", NULL});
	m->u.start.root_device = strdup("mroot");
	m->u.start.root_fstype = strdup("virtiofs");
	add_mount(&m->u.start, "/proc", "proc", (const char *const[]){NULL});
}

/* ERROR naming what (with err), then the EXIT of the START id. */
static void expect_refused(int ctl, uint64_t id, int err, const char *what)
{
	struct proto_msg m = {0};

	if (expect(ctl, PROTO_MSG_ERROR, &m) == 0) {
		ok(m.id == id && m.u.error.err == (uint32_t)err && m.u.error.message && strstr(m.u.error.message, what),
		   "refused: %s (%u)", m.u.error.message, m.u.error.err);
		proto_msg_free(&m);
	}
	if (expect(ctl, PROTO_MSG_EXIT, &m) == 0)
		ok(m.id == id && !m.u.exit.init, "then the EXIT of START %llu, not the init's",
		   (unsigned long long)m.id);
}

static void refuse_member(int ctl, uint64_t id, int err, const char *what, void (*spoil)(struct proto_start *))
{
	struct proto_msg m;

	member_msg(&m, id, PROTO_START_F_WAIT, "exit 0");
	if (spoil)
		spoil(&m.u.start);
	send_msg(ctl, &m);
	proto_msg_free(&m);
	expect_refused(ctl, id, err, what);
}

static void with_hostname(struct proto_start *s)
{
	s->hostname = strdup("other");
}

static void with_net(struct proto_start *s)
{
	s->net = calloc(1, sizeof(*s->net));
}

static void with_user_ns(struct proto_start *s)
{
	s->user_ns = true;
}

static void with_disk_root(struct proto_start *s)
{
	free(s->root_fstype);
	s->root_fstype = strdup("ext4");
}

/* /proc/PID/ns/NAME, as readlink gives it ("uts:[4026531838]"). */
static const char *ns_of(pid_t pid, const char *name)
{
	static char link[4][64];
	static int turn;
	char path[64], *buf = link[turn++ % 4];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, name);
	n = readlink(path, buf, sizeof(link[0]) - 1);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static bool has_kv(const char *out, const char *key, const char *value)
{
	char line[160];

	snprintf(line, sizeof(line), "%s=%s\n", key, value);
	return strstr(out, line) != NULL;
}

/* A throwaway cgroup for the pod (members get siblings), or NULL. */
static const char *pod_cgroup(char *buf, size_t size)
{
	static const char *const roots[] = {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"};
	struct statfs sf;

	for (size_t i = 0; i < ARRAY_SIZE(roots); i++)
		if (statfs(roots[i], &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC) {
			snprintf(buf, size, "%s/kvrun-pod-%d", roots[i], (int)getpid());
			return mkdir(buf, 0755) == 0 ? buf : NULL;
		}
	return NULL;
}

/* prefix, sep, n: a member's directory ('/') or cgroup ('-'). */
static bool gone(const char *prefix, char sep, int n)
{
	char path[400];

	snprintf(path, sizeof(path), "%s%c%d", prefix, sep, n);
	return access(path, F_OK) < 0 && errno == ENOENT;
}

static const char member_script[] =
    "echo uts=$(readlink /proc/self/ns/uts)\n"
    "echo ipc=$(readlink /proc/self/ns/ipc)\n"
    "echo mnt=$(readlink /proc/self/ns/mnt)\n"
    "echo pid=$(readlink /proc/self/ns/pid)\n"
    "echo host=$(hostname)\n"
    "echo me=$$\n"
    "for i in 1 2 3 4 5 6 7 8 9 10; do test -e /dev/shm/note && break; busybox sleep 0.1; done\n"
    "echo shm=$(cat /dev/shm/note 2>&1)\n"
    "echo marker=$(cat /marker)\n"
    "exec busybox sleep 1000\n";

/* The first container, created and started; returns its init's pid. */
/* The pod's /dev/shm (PROTO_POD_SHM_SOURCE), as the host gives it. */
static void add_pod_shm(struct proto_start *s)
{
	add_mount(s, "/dev/shm", "tmpfs", (const char *const[]){"nosuid", "nodev", "mode=1777", "size=1m", NULL});
	free(s->mounts[s->n_mounts - 1].source);
	s->mounts[s->n_mounts - 1].source = strdup(PROTO_POD_SHM_SOURCE);
}

static uint32_t pod_first(int ctl, int l_in, int *s_in)
{
	struct proto_msg m = {.type = PROTO_MSG_START, .flags = PROTO_START_F_WAIT, .id = 101};
	uint32_t pid = 0;

	/* It writes into the pod's /dev/shm, which the member reads. */
	m.u.start.process.args =
	    strv((const char *const[]){"/bin/busybox", "sh", "-c", "echo first > /dev/shm/note; read x; exit 0", NULL});
	add_pod_shm(&m.u.start);
	m.u.start.process.stdin_port = 5301;
	m.u.start.hostname = strdup("podbox");
	send_msg(ctl, &m);
	proto_msg_free(&m);
	*s_in = accept4(l_in, NULL, NULL, SOCK_CLOEXEC);
	if (expect(ctl, PROTO_MSG_READY, &m) == 0)
		pid = m.u.started.pid;
	m = (struct proto_msg){.type = PROTO_MSG_GO, .id = 102};
	send_msg(ctl, &m);
	if (expect(ctl, PROTO_MSG_STARTED, &m) == 0)
		ok(m.id == 102 && m.u.started.pid == pid, "GO 0 starts the first container");
	return pid;
}

/* A member with a pid namespace of its own, created and started by its
 * pid; what it sees on out. Returns its init's pid. */
static uint32_t pod_member(int ctl, int l_out, int *s_out, char *out, size_t size)
{
	struct proto_msg m;
	uint32_t pid = 0;
	size_t len = 0;

	member_msg(&m, 120, PROTO_START_F_WAIT, member_script);
	add_pod_shm(&m.u.start);
	m.u.start.process.stdout_port = 5302;
	send_msg(ctl, &m);
	proto_msg_free(&m);
	*s_out = accept4(l_out, NULL, NULL, SOCK_CLOEXEC);
	if (expect(ctl, PROTO_MSG_READY, &m) == 0) {
		ok(m.id == 120 && m.u.started.pid > 0, "READY of the member with its init's pid");
		pid = m.u.started.pid;
	}
	m = (struct proto_msg){.type = PROTO_MSG_GO, .id = 121, .u.started = {pid}};
	send_msg(ctl, &m);
	if (expect(ctl, PROTO_MSG_STARTED, &m) == 0)
		ok(m.id == 121 && m.u.started.pid == pid, "GO with its pid starts the member");
	out[0] = '\0';
	read_until(*s_out, out, size, &len, "marker=");
	read_until(*s_out, out, size, &len, "marker=member\n");
	return pid;
}

/* EXEC into the member: its mount and pid namespaces, its root. */
static void pod_exec_member(int ctl, int l_xout, uint32_t member)
{
	struct proto_msg m = {.type = PROTO_MSG_EXEC, .id = 130};
	char want[200];
	const char *out;
	int s;

	m.u.exec.args = strv((const char *const[]){
	    "/bin/busybox", "sh", "-c",
	    "echo $(readlink /proc/self/ns/mnt) $(readlink /proc/self/ns/pid) $(cat /marker)", NULL});
	m.u.exec.env = strv((const char *const[]){"PATH=/bin", NULL});
	m.u.exec.stdout_port = 5303;
	m.u.exec.container = member;
	send_msg(ctl, &m);
	proto_process_free(&m.u.exec);
	s = accept4(l_xout, NULL, NULL, SOCK_CLOEXEC);
	if (expect(ctl, PROTO_MSG_STARTED, &m) == 0)
		is_int(m.id, 130);
	out = read_all(s);
	snprintf(want, sizeof(want), "%s %s member\n", ns_of((pid_t)member, "mnt"), ns_of((pid_t)member, "pid"));
	ok(strcmp(out, want) == 0, "EXEC in the member: its namespaces and root (%s)", out);
	if (expect(ctl, PROTO_MSG_EXIT, &m) == 0)
		ok(m.id == 130 && !m.u.exit.init && WEXITSTATUS(m.u.exit.status) == 0, "its EXIT");
	close(s);
	m = (struct proto_msg){.type = PROTO_MSG_EXEC, .id = 131};
	m.u.exec.args = strv((const char *const[]){"/bin/busybox", "true", NULL});
	m.u.exec.container = 999999;
	send_msg(ctl, &m);
	proto_process_free(&m.u.exec);
	if (expect(ctl, PROTO_MSG_ERROR, &m) == 0) {
		ok(m.id == 131 && m.u.error.err == ESRCH, "EXEC into no member: ESRCH");
		proto_msg_free(&m);
	}
}

/* STATS and PS of the member; of an unknown one, ESRCH. */
static void pod_requests(int ctl, uint32_t member)
{
	struct proto_msg m = {.type = PROTO_MSG_STATS, .id = 132, .u.stats = {.container = member}};

	send_msg(ctl, &m);
	if (expect(ctl, PROTO_MSG_STATS, &m) == 0)
		ok(m.id == 132 && m.u.stats.memory_total > 0, "STATS of the member");
	m = (struct proto_msg){.type = PROTO_MSG_STATS, .id = 133, .u.stats = {.container = 999999}};
	send_msg(ctl, &m);
	if (expect(ctl, PROTO_MSG_ERROR, &m) == 0) {
		ok(m.id == 133 && m.u.error.err == ESRCH, "STATS of no member: ESRCH");
		proto_msg_free(&m);
	}
	m = (struct proto_msg){.type = PROTO_MSG_PS, .id = 134, .u.ps = {.container = member}};
	send_msg(ctl, &m);
	if (expect(ctl, PROTO_MSG_PS, &m) == 0) {
		ok(m.u.ps.n_procs == 1 && m.u.ps.procs[0].pid == 1, "PS of the member: its init, pid 1 there (%zu)",
		   m.u.ps.n_procs);
		proto_msg_free(&m);
	}
}

/* pause/resume of a member: UPDATE's frozen on its cgroup (with none:
 * ENOTSUP); no EXEC into it while frozen. */
static void pod_freeze(int ctl, uint32_t member, const char *cg)
{
	struct proto_msg m = {
	    .type = PROTO_MSG_UPDATE, .id = 135, .u.update = {.container = member, .has_frozen = true, .frozen = 1}};

	send_msg(ctl, &m);
	if (expect(ctl, PROTO_MSG_ERROR, &m) == 0) {
		ok(m.id == 135 && m.u.error.err == (cg ? 0u : ENOTSUP), "UPDATE frozen of the member: %u %s",
		   m.u.error.err, m.u.error.message ? m.u.error.message : "");
		proto_msg_free(&m);
	}
	if (!cg)
		return;
	m = (struct proto_msg){.type = PROTO_MSG_EXEC, .id = 136};
	m.u.exec.args = strv((const char *const[]){"/bin/busybox", "true", NULL});
	m.u.exec.container = member;
	send_msg(ctl, &m);
	proto_process_free(&m.u.exec);
	if (expect(ctl, PROTO_MSG_ERROR, &m) == 0) {
		ok(m.id == 136 && m.u.error.err == EBUSY && strstr(m.u.error.message, "paused"),
		   "EXEC into the frozen member refused: %s", m.u.error.message);
		proto_msg_free(&m);
	}
	m = (struct proto_msg){
	    .type = PROTO_MSG_UPDATE, .id = 137, .u.update = {.container = member, .has_frozen = true, .frozen = 0}};
	send_msg(ctl, &m);
	if (expect(ctl, PROTO_MSG_ERROR, &m) == 0) {
		ok(m.id == 137 && m.u.error.err == 0, "UPDATE thawed the member: %u", m.u.error.err);
		proto_msg_free(&m);
	}
}

/* EXEC into the first container: it still runs, with its hostname. */
static void pod_exec_first(int ctl, int l_xout, uint64_t id)
{
	struct proto_msg m = {.type = PROTO_MSG_EXEC, .id = id};
	int s;

	m.u.exec.args = strv((const char *const[]){"/bin/busybox", "hostname", NULL});
	m.u.exec.stdout_port = 5304;
	send_msg(ctl, &m);
	proto_process_free(&m.u.exec);
	s = accept4(l_xout, NULL, NULL, SOCK_CLOEXEC);
	if (expect(ctl, PROTO_MSG_STARTED, &m) == 0)
		is_int(m.id, id);
	is_str(read_all(s), "podbox\n");
	if (expect(ctl, PROTO_MSG_EXIT, &m) == 0)
		ok(m.id == id && !m.u.exit.init, "the first container serves on");
	close(s);
}

/* A member in the first's pid namespace, without WAIT: started at once.
 * Its init leaves a process behind when it exits (stdin at EOF). */
static void pod_shared_pid(int ctl, const int l[6], uint32_t first, const char *cg)
{
	struct proto_msg m;
	char out[512] = "";
	size_t len = 0;
	int s_in, s_out;

	member_msg(&m, 150, PROTO_START_F_SHARE_PID,
	           "echo pid=$(readlink /proc/self/ns/pid); busybox sleep 1000 & echo bg; read x; exit 0");
	m.u.start.process.stdin_port = 5305;
	m.u.start.process.stdout_port = 5306;
	m.u.start.hostname = strdup(""); /* a config's "": the pod's name stays */
	send_msg(ctl, &m);
	proto_msg_free(&m);
	s_in = accept4(l[4], NULL, NULL, SOCK_CLOEXEC);
	s_out = accept4(l[5], NULL, NULL, SOCK_CLOEXEC);
	if (expect(ctl, PROTO_MSG_STARTED, &m) == 0)
		ok(m.id == 150 && m.u.started.pid > 0, "without WAIT a member starts at once");
	read_until(s_out, out, sizeof(out), &len, "bg\n");
	ok(has_kv(out, "pid", ns_of((pid_t)first, "pid")), "shared: the first's pid namespace (%s)", out);
	close(s_in);
	if (expect(ctl, PROTO_MSG_EXIT, &m) == 0)
		ok(m.id == 150 && !m.u.exit.init && m.u.exit.status == 0, "its init's EXIT, not the VM's (0x%x)",
		   m.u.exit.status);
	close(s_out);
	pod_exec_first(ctl, l[3], 151); /* its cleanup is done before; "podbox" still */
	ok(gone(members_dir, '/', 2), "its directory removed");
	if (cg)
		ok(gone(cg, '-', 2), "its cgroup removed: what it left was killed");
}

/* A pod in one guest loop: refusals, a member of its own pid namespace,
 * one sharing the first's, one still running when the first ends; with
 * the members' cgroups when cg is set. */
static void pod_scenario(const char *cg)
{
	int sv[2], l[6], s_in, s_out, st;
	char out[1024], dir[300], cmd[1200], shm[300];
	struct proto_msg m = {0};
	uint32_t first, member;
	pid_t guest;

	snprintf(cmd, sizeof(cmd),
	         "mkdir -p %s/mroot/bin %s/mroot/proc && cp /bin/busybox %s/mroot/bin/ && "
	         "echo member > %s/mroot/marker",
	         tmpdir, tmpdir, tmpdir, tmpdir);
	is_int(system(cmd), 0);
	snprintf(dir, sizeof(dir), "%s/members", tmpdir);
	for (int i = 0; i < 6; i++)
		l[i] = listen_port(5301 + (uint32_t)i);
	is_int(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	members_dir = dir;
	mount_root_hook = bind_root;
	cgroup_dir = cg;
	snprintf(shm, sizeof(shm), "%s/pod-shm", tmpdir);
	pod_shm_dir = shm;
	guest = start_guest(sv[1], sv[0]);
	pod_shm_dir = NULL;
	members_dir = NULL;
	mount_root_hook = NULL;
	cgroup_dir = NULL;
	close(sv[1]);
	hello_host(sv[0]);
	members_dir = dir;

	refuse_member(sv[0], 100, ESRCH, "first container is not running", NULL);
	first = pod_first(sv[0], l[0], &s_in);
	refuse_member(sv[0], 110, EINVAL, "hostname", with_hostname);
	refuse_member(sv[0], 111, EINVAL, "net", with_net);
	refuse_member(sv[0], 112, EINVAL, "user_ns", with_user_ns);
	refuse_member(sv[0], 113, EINVAL, "root_fstype", with_disk_root);

	member = pod_member(sv[0], l[1], &s_out, out, sizeof(out));
	ok(member > 0 && member != first, "the member's init is a process of its own");
	ok(has_kv(out, "uts", ns_of((pid_t)first, "uts")), "the first's UTS namespace");
	ok(has_kv(out, "ipc", ns_of((pid_t)first, "ipc")), "the first's IPC namespace");
	ok(!has_kv(out, "mnt", ns_of((pid_t)first, "mnt")) && strstr(out, "mnt=mnt:["), "a mount namespace of its own");
	ok(!has_kv(out, "pid", ns_of((pid_t)first, "pid")) && has_kv(out, "me", "1"), "a pid namespace of its own");
	ok(has_kv(out, "host", "podbox") && has_kv(out, "marker", "member"), "the pod's hostname, its own root");
	ok(has_kv(out, "shm", "first"), "the pod's /dev/shm: the first container's note");
	if (!ok(strstr(out, "marker=member"), "the member's output"))
		printf("# %s\n", out);
	if (cg) {
		char path[64], *text = NULL;

		snprintf(path, sizeof(path), "/proc/%u/cgroup", member);
		read_file_all(path, 4096, &text, NULL);
		ok(text && strstr(text, "-1\n"), "in a cgroup of its own: %s", text ? text : "");
		free(text);
	}
	pod_exec_member(sv[0], l[2], member);
	pod_requests(sv[0], member);
	pod_freeze(sv[0], member, cg);

	m = (struct proto_msg){.type = PROTO_MSG_SIGNAL, .id = 140, .u.signal = {member, SIGKILL, true}};
	send_msg(sv[0], &m);
	if (expect(sv[0], PROTO_MSG_ERROR, &m) == 0) {
		ok(m.id == 140 && m.u.error.err == 0, "SIGNAL of the member's init, all");
		proto_msg_free(&m);
	}
	if (expect(sv[0], PROTO_MSG_EXIT, &m) == 0)
		ok(m.id == 120 && !m.u.exit.init && m.u.exit.pid == member && WIFSIGNALED(m.u.exit.status) &&
		       WTERMSIG(m.u.exit.status) == SIGKILL,
		   "EXIT of the member: its START's id, not the init's");
	close(s_out);
	pod_exec_first(sv[0], l[3], 141);
	ok(gone(dir, '/', 1), "the member's root unmounted and its directory removed");
	if (cg)
		ok(gone(cg, '-', 1), "its cgroup removed");

	pod_shared_pid(sv[0], l, first, cg);

	/* A member still running when the first container ends goes too. */
	member_msg(&m, 160, 0, "exec busybox sleep 1000");
	send_msg(sv[0], &m);
	proto_msg_free(&m);
	if (expect(sv[0], PROTO_MSG_STARTED, &m) == 0)
		is_int(m.id, 160);
	close(s_in);
	if (expect(sv[0], PROTO_MSG_EXIT, &m) == 0)
		ok(m.id == 101 && m.u.exit.init && m.u.exit.status == 0, "the first container's EXIT, the init's");
	if (expect(sv[0], PROTO_MSG_EXIT, &m) == 0)
		ok(m.id == 160 && !m.u.exit.init && WIFSIGNALED(m.u.exit.status), "then the member's: killed");
	close(sv[0]);
	waitpid(guest, &st, 0);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "guest loop ends with the first's status (0x%x)", st);
	members_dir = NULL;
	for (int i = 0; i < 6; i++)
		close(l[i]);
	snprintf(cmd, sizeof(cmd), "rm -rf %s/mroot %s", tmpdir, dir);
	is_int(system(cmd), 0);
}

TEST(pod_members)
{
	char buf[256];
	const char *cg = pod_cgroup(buf, sizeof(buf));

	if (!cg)
		printf("# no cgroup2 here: the pod runs without cgroups only\n");
	pod_scenario(cg);
	if (cg)
		rmdir(cg);
}

/* Without cgroups, a member in the first's pid namespace is told by its
 * mount namespace. */
TEST(pod_members_without_cgroup)
{
	pod_scenario(NULL);
}

struct tap_test tap_tests[TAP_MAX_TESTS];
int tap_nr_tests, tap_count, tap_failed;
const char *tap_current = "";

int main(void)
{
	char cmd[1200];
	pid_t pid;
	int st;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0)
		tap_skip_all("needs root for namespaces and mounts");
	if (access("/bin/busybox", X_OK) != 0)
		tap_skip_all("needs /bin/busybox (busybox-static)");
	pid = fork();
	if (pid == 0)
		_exit(unshare(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWPID) == 0 ? 0 : 1);
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		tap_skip_all("unshare of mount/uts/ipc/pid namespaces not permitted");
	if (!mkdtemp(tmpdir))
		tap_skip_all("mkdtemp failed");
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", tmpdir);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/bin %s/proc %s/dev && cp /bin/busybox %s/bin/", rootfs, rootfs, rootfs,
	         rootfs);
	if (system(cmd) != 0)
		tap_skip_all("cannot build the busybox rootfs");
	alarm(120);
	for (int i = 0; i < tap_nr_tests; i++) {
		tap_current = tap_tests[i].name;
		tap_tests[i].fn();
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", tmpdir);
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}
