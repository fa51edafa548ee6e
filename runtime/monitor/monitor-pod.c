/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A pod's app containers in its sandbox's VM (docs/runtime.md, "Pods").
 * The app container's host process (its member proxy, exec-proxy.h) asks
 * the sandbox's monitor on control.sock:
 *
 *   member <n> <share>... + n directory descriptors (SCM_RIGHTS), then the
 *   START frame
 *
 * Each share is "<r|w><f|d>[g]:<names>": read-only or writable, only files
 * (few requests) or a directory, "g" when the guest keeps its locks
 * (FS_LOCKS_GUEST; without it, the host), and "-" (the whole directory)
 * or the entries of its root it shows, hex-encoded and comma-separated. Share i
 * is named "kvrun-fs<i>" in the START (guest_share_tag()); the monitor
 * gives each a free slot of the VM and the START the slots' tags, sends it
 * as a member's (PROTO_START_F_MEMBER) and answers "ok <guest pid>" once
 * guest-init has it ready. The connection is then kept as an exec's is
 * (monitor_exec): the member's EXIT goes there as "exit <status>", and
 * when the proxy goes away its container's init is killed.
 *
 *   go <guest pid>: the member's process execs (runc start).
 *   pause <guest pid>, resume <guest pid>: its guest cgroup frozen or
 *   thawed (UPDATE's frozen); "pause" of the sandbox freezes its own.
 *   cpu <guest pid> <has quota> <quota> <period> <weight> <cpus|->: its
 *   CPU limits (UPDATE's cpu fields; quota 0 "max", period and weight 0
 *   unchanged), cpus within the VM's vCPUs.
 *
 * A slot is the share's until the app container has ended (its EXIT, or
 * its proxy gone) and the guest has unmounted it: guest-init unmounts a
 * member's root and shares at its end, and Linux sends DESTROY once the
 * tag's last mount is gone. Then (monitor_pod_release()) its server and
 * descriptors are closed and the slot takes the next app container's
 * directory. Until the guest has unmounted it, the slot stays busy: a
 * guest that never does keeps its own pod's slot, nothing else.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/protocol.h"
#include "runtime/monitor/monitor-int.h"
#include "runtime/sandbox/sandbox.h"

#define CLIENT_WAIT_MS 5000
/* How long an app container that needs slots waits for those of ended
 * ones that the guest is still unmounting (guest-init does it right after
 * their EXIT, having waited up to a second for their processes). */
#define SLOT_WAIT_MS 10000
/* Entries one share of files may show. */
#define GUEST_SHARE_MAX_NAMES 64

struct member_share {
	bool read_only, files;
	enum fs_locks locks;
	char **names; /* NULL: the whole directory */
	char tag[GUEST_SHARE_TAG_SIZE]; /* the slot's */
};

static void share_free(struct member_share *s)
{
	for (size_t i = 0; s->names && s->names[i]; i++)
		free(s->names[i]);
	free(s->names);
	s->names = NULL;
}

static int unhex(const char *p, size_t len, char **ret)
{
	char *s;

	if (len % 2 || len == 0 || len > 2 * 255)
		return -EINVAL;
	s = malloc(len / 2 + 1);
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < len / 2; i++) {
		unsigned v;

		if (sscanf(p + 2 * i, "%2x", &v) != 1 || v == 0 || v == '/') {
			free(s);
			return -EINVAL;
		}
		s[i] = (char)v;
	}
	s[len / 2] = 0;
	if (strcmp(s, ".") == 0 || strcmp(s, "..") == 0) {
		free(s);
		return -EINVAL;
	}
	*ret = s;
	return 0;
}

/* One "<r|w><f|d>[g]:<names>" word of length len. */
static int parse_share(const char *w, size_t len, struct member_share *ret)
{
	size_t n = 0, k = len >= 3 && w[2] == 'g' ? 3 : 2;
	const char *p, *end = w + len;

	if (len < k + 2 || (w[0] != 'r' && w[0] != 'w') || (w[1] != 'f' && w[1] != 'd') || w[k] != ':')
		return -EINVAL;
	ret->read_only = w[0] == 'r';
	ret->files = w[1] == 'f';
	ret->locks = k == 3 ? FS_LOCKS_GUEST : FS_LOCKS_HOST;
	p = w + k + 1;
	if (end - p == 1 && *p == '-')
		return 0;
	for (const char *q = p; q < end; q++)
		n += *q == ',';
	if (n + 1 > GUEST_SHARE_MAX_NAMES)
		return -E2BIG;
	ret->names = calloc(n + 2, sizeof(char *));
	if (!ret->names)
		return -ENOMEM;
	for (size_t i = 0; p < end; i++) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		size_t l = c ? (size_t)(c - p) : (size_t)(end - p);
		int r = unhex(p, l, &ret->names[i]);

		if (r < 0)
			return r;
		p += l + (c ? 1 : 0);
	}
	return 0;
}

static int parse_shares(const char *args, unsigned int nfds, struct member_share *shares, unsigned int *ret_n)
{
	unsigned int n;
	int off = 0, r;

	if (sscanf(args, "%u%n", &n, &off) != 1 || n > GUEST_SHARES_MAX)
		return err_set(-EINVAL, "member: a share count of at most %d expected", GUEST_SHARES_MAX);
	if (n != nfds)
		return err_set(-EINVAL, "member: %u shares, %u directory descriptors", n, nfds);
	args += off;
	for (unsigned int i = 0; i < n; i++) {
		size_t len;

		args += strspn(args, " ");
		len = strcspn(args, " ");
		r = parse_share(args, len, &shares[i]);
		*ret_n = i + 1;
		if (r < 0)
			return err_set(r, "member: share %u: \"%.*s\" is not <r|w><f|d>[g]:<names>", i, (int)len, args);
		args += len;
	}
	if (args[strspn(args, " ")])
		return err_set(-EINVAL, "member: more shares than the count %u", n);
	return 0;
}

/* A cpuset list ("0-1,3") of field within the VM's vCPUs, or refused
 * naming the CPUs the VM does not have. */
int monitor_pod_check_cpus(const struct monitor *m, const char *list, const char *field)
{
	unsigned int n = m->sb && m->sb->vm ? m->sb->vm->ncpus : 0;
	const char *p = list;

	while (*p) {
		unsigned long a, b;
		char *end;

		a = b = strtoul(p, &end, 10);
		if (end == p || *p == '-' || *p == '+' || *p == ' ')
			break;
		p = end;
		if (*p == '-') {
			b = strtoul(p + 1, &end, 10);
			if (end == p + 1 || p[1] == '-' || p[1] == '+' || p[1] == ' ' || b < a)
				break;
			p = end;
		}
		if (b >= n) {
			char cpus[48];

			if (a >= n)
				snprintf(cpus, sizeof(cpus), a == b ? "CPU %lu is" : "CPUs %lu-%lu are", a, b);
			else
				snprintf(cpus, sizeof(cpus), n == b ? "CPU %u is" : "CPUs %u-%lu are", n, b);
			return err_set(-EINVAL, "%s: %s not in the pod's VM, which has %u vCPU%s (%s%u)", field, cpus,
			               n, n == 1 ? "" : "s", n > 1 ? "0-" : "", n - 1);
		}
		if (*p == ',' && p[1])
			p++;
		else if (*p)
			break;
	}
	if (*p || !*list)
		return err_set(-EINVAL, "%s: \"%s\" is not a CPU list (such as 0-1,3)", field, list);
	return 0;
}

/* START's cpuset.cpus (the app container's linux.resources.cpu.cpus)
 * within the VM's vCPUs. */
static int check_start_cpus(const struct monitor *m, const struct proto_start *s)
{
	for (size_t i = 0; i < s->n_cgroup; i++)
		if (s->cgroup[i].file && !strcmp(s->cgroup[i].file, "cpuset.cpus") && s->cgroup[i].value) {
			int r = monitor_pod_check_cpus(m, s->cgroup[i].value,
			                               s->cgroup[i].field ? s->cgroup[i].field : "cpuset.cpus");

			if (r < 0)
				return r;
		}
	return 0;
}

static int replace_tag(char **tag, const struct member_share *shares, unsigned int n)
{
	char name[GUEST_SHARE_TAG_SIZE];

	if (!*tag)
		return 0;
	for (unsigned int i = 0; i < n; i++) {
		guest_share_tag(i, name);
		if (strcmp(*tag, name) == 0) {
			char *t = strdup(shares[i].tag);

			if (!t)
				return -ENOMEM;
			free(*tag);
			*tag = t;
			return 0;
		}
	}
	return err_set(-EINVAL, "member: the process names share %s, which it did not send", *tag);
}

/* The slots' tags in START: its root's and each mount's. */
static int retag(struct proto_start *s, const struct member_share *shares, unsigned int n)
{
	int r = 0;

	if (s->root_fstype && strcmp(s->root_fstype, "virtiofs") == 0)
		r = replace_tag(&s->root_device, shares, n);
	else
		r = err_set(-EINVAL, "member: an app container's root must be a shared directory");
	for (size_t i = 0; r >= 0 && i < s->n_mounts; i++)
		r = replace_tag(&s->mounts[i].share, shares, n);
	return r;
}

static struct monitor_exec *free_session(struct monitor *m)
{
	for (int i = 0; i < MONITOR_MAX_EXECS; i++)
		if (m->execs[i].fd < 0)
			return &m->execs[i];
	return NULL;
}

void monitor_pod_release(struct monitor *m)
{
	int fd = m->sb ? sandbox_shares_event_fd(m->sb) : -1;
	uint64_t events;

	/* Cleared first: an unmount from now on makes it readable again. */
	if (fd >= 0 && read(fd, &events, sizeof(events)) < 0)
		events = 0;
	for (unsigned int i = 0; m->sb && i < SANDBOX_MAX_SHARES; i++) {
		if (!(m->slots_ending & (1u << i)) || sandbox_share_release(m->sb, i) < 0)
			continue;
		m->slots_ending &= ~(1u << i);
		log_debug("pod: slot %u released: its app container ended and the guest unmounted it", i);
	}
}

void monitor_member_ended(struct monitor *m, struct monitor_exec *e)
{
	log_debug("pod: app container (guest pid %u) ended: its slots (0x%x) are freed once the guest unmounted them",
	          e->guest_pid, e->slots);
	m->slots_ending |= e->slots;
	e->slots = 0;
	monitor_pod_release(m);
}

/* Slots that ended app containers still hold: "kvrun-fs1 kvrun-fs4". */
static void ending_names(const struct monitor *m, char *buf, size_t size)
{
	size_t at = 0;

	buf[0] = '\0';
	for (unsigned int i = 0; i < SANDBOX_MAX_SHARES && at < size; i++)
		if (m->slots_ending & (1u << i))
			at += (size_t)snprintf(buf + at, size - at, "%skvrun-fs%u", at ? " " : "", i);
}

/* Enough free slots for need, waiting a little for those of ended app
 * containers that the guest is still unmounting. 0, or -ENOSPC saying
 * what holds them. */
static int wait_slots(struct monitor *m, unsigned int need)
{
	int fd = sandbox_shares_event_fd(m->sb);
	uint64_t until = vm_now_ns() + (uint64_t)SLOT_WAIT_MS * 1000000;
	unsigned int ending;
	char names[160];

	monitor_pod_release(m);
	while (sandbox_shares_free(m->sb) < need && m->slots_ending && fd >= 0) {
		uint64_t now = vm_now_ns();
		struct pollfd p = {.fd = fd, .events = POLLIN};

		if (now >= until)
			break;
		if (poll(&p, 1, (int)((until - now) / 1000000) + 1) < 0 && errno != EINTR)
			break;
		monitor_pod_release(m);
	}
	if (sandbox_shares_free(m->sb) >= need)
		return 0;
	ending = (unsigned int)__builtin_popcount(m->slots_ending);
	if (!ending)
		return err_set(-ENOSPC, "the pod's VM has %u free shared directory slots, the app container needs %u",
		               sandbox_shares_free(m->sb), need);
	ending_names(m, names, sizeof(names));
	log_warn("pod: slots %s of ended app containers are still mounted in the guest after %d s", names,
	         SLOT_WAIT_MS / 1000);
	return err_set(-ENOSPC,
	               "the pod's VM has %u free shared directory slots, the app container needs %u (%u more, %s, are "
	               "of ended app containers that the guest has not unmounted yet)",
	               sandbox_shares_free(m->sb), need, ending, names);
}

/* Slot of each share (sandbox_share_add()), in *ret_slots as they are
 * taken (also on failure). */
static int attach_shares(struct monitor *m, struct member_share *shares, unsigned int n, const int *fds,
                         uint32_t *ret_slots)
{
	for (unsigned int i = 0; i < n; i++) {
		char what[64];
		struct sandbox_share sh = {.dir = what,
		                           .read_only = shares[i].read_only,
		                           .locks = shares[i].locks,
		                           .dir_fd = fds[i],
		                           .proc_fd = m->proc_fd,
		                           .names = shares[i].names,
		                           .workers = shares[i].files ? 1 : 0};
		int r;

		snprintf(what, sizeof(what), "of an app container (its share %u)", i);
		r = sandbox_share_add(m->sb, &sh, shares[i].tag, sizeof(shares[i].tag));
		if (r < 0)
			return r;
		*ret_slots |= 1u << r;
		log_debug("pod: an app container's share %u is slot %s, locks on the %s", i, shares[i].tag,
		          fs_locks_name(shares[i].locks));
	}
	return 0;
}

int monitor_member(struct monitor *m, int fd, const char *args, const int *fds, unsigned int nfds, bool *keep,
                   char *detail, size_t size)
{
	struct member_share shares[GUEST_SHARES_MAX] = {0};
	struct proto_msg msg = {0}, ans = {0};
	struct monitor_exec *e = free_session(m);
	struct ucred cred = {0};
	socklen_t len = sizeof(cred);
	unsigned int n = 0;
	uint32_t slots = 0;
	int r;

	if (!monitor_is_pod_sandbox(m))
		return err_set(-EINVAL, "this container is not a pod's sandbox: its VM takes no app containers");
	if (m->exited)
		return err_set(-ESRCH, "the pod's sandbox is not running");
	if (m->paused)
		return err_set(-EBUSY, "the pod's sandbox is paused");
	if (!e)
		return err_set(-EAGAIN, "too many processes in the pod's VM (at most %d)", MONITOR_MAX_EXECS);
	r = parse_shares(args, nfds, shares, &n);
	if (r >= 0)
		r = wait_slots(m, n);
	if (r >= 0) {
		r = proto_recv_timeout(fd, CLIENT_WAIT_MS, &msg);
		if (r < 0)
			r = err_setsys(r, "member: reading the container's START");
		else if (msg.type != PROTO_MSG_START)
			r = err_set(-EINVAL, "member: expected START, got %s", proto_type_name(msg.type));
	}
	if (r >= 0)
		r = check_start_cpus(m, &msg.u.start);
	if (r >= 0)
		r = attach_shares(m, shares, n, fds, &slots);
	if (r >= 0)
		r = retag(&msg.u.start, shares, n);
	if (r >= 0) {
		msg.flags = (msg.flags & PROTO_START_F_SHARE_PID) | PROTO_START_F_MEMBER | PROTO_START_F_WAIT;
		r = guest_channel_request(&m->ch, &msg, guest_boot_timeout_ms(), &ans);
	}
	if (r >= 0) {
		getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len);
		*e = (struct monitor_exec){
		    .fd = fd, .id = msg.id, .guest_pid = ans.u.started.pid, .proxy_pid = cred.pid, .slots = slots};
		*keep = true;
		snprintf(detail, size, "%u", ans.u.started.pid);
		log_debug("pod: app container created, guest pid %u, host process %d", e->guest_pid, (int)e->proxy_pid);
	} else if (slots) {
		/* The guest may have mounted some (it unmounts them as it
		 * refuses the START): freed as any ended app container's, those
		 * it never mounted at once. The failure's message stays. */
		char why[1024];

		snprintf(why, sizeof(why), "%s", err_msg());
		m->slots_ending |= slots;
		monitor_pod_release(m);
		err_set(r, "%s", why);
	}
	for (unsigned int i = 0; i < GUEST_SHARES_MAX; i++)
		share_free(&shares[i]);
	proto_msg_free(&msg);
	proto_msg_free(&ans);
	return r;
}

int monitor_member_go(struct monitor *m, uint32_t pid, char *detail, size_t size)
{
	struct proto_msg msg = {.type = PROTO_MSG_GO, .u.started = {pid}}, ans = {0};
	int r;

	if (m->exited)
		return err_set(-ESRCH, "the pod's sandbox is not running");
	if (m->paused)
		return err_set(-EBUSY, "the pod's sandbox is paused");
	r = guest_channel_request(&m->ch, &msg, guest_boot_timeout_ms(), &ans);
	if (r >= 0)
		snprintf(detail, size, "%u", ans.u.started.pid);
	proto_msg_free(&ans);
	return r;
}

int monitor_pod_freeze(struct monitor *m, uint32_t pid, bool frozen)
{
	struct proto_msg msg = {.type = PROTO_MSG_UPDATE}, ans = {0};
	int r;

	if (m->exited)
		return err_set(-ESRCH, "container not running");
	if (m->paused)
		return err_set(-EBUSY, "the pod's VM is paused");
	msg.u.update = (struct proto_update){.container = pid, .has_frozen = true, .frozen = frozen};
	r = guest_channel_request(&m->ch, &msg, GUEST_REPLY_TIMEOUT_MS, &ans);
	proto_msg_free(&ans);
	if (r >= 0)
		log_debug("pod: %s (guest pid %u) %s", pid ? "app container" : "the sandbox's container", pid,
		          frozen ? "frozen" : "thawed");
	return r;
}

int monitor_pod_cpu(struct monitor *m, uint32_t pid, const struct proto_update *cpu)
{
	struct proto_msg msg = {.type = PROTO_MSG_UPDATE}, ans = {0};
	int r;

	if (m->exited)
		return err_set(-ESRCH, "container not running");
	if (m->paused)
		return err_set(-EBUSY, "the pod's VM is paused");
	if (!pid)
		return err_set(-EINVAL, "cpu: the guest pid of an app container expected");
	if (cpu->cpuset_cpus && (r = monitor_pod_check_cpus(m, cpu->cpuset_cpus, "cpuset-cpus")) < 0)
		return r;
	msg.u.update = *cpu;
	msg.u.update.container = pid;
	msg.u.update.cpuset_cpus = cpu->cpuset_cpus ? strdup(cpu->cpuset_cpus) : NULL;
	if (cpu->cpuset_cpus && !msg.u.update.cpuset_cpus)
		return -ENOMEM;
	r = guest_channel_request(&m->ch, &msg, GUEST_REPLY_TIMEOUT_MS, &ans);
	proto_msg_free(&msg);
	proto_msg_free(&ans);
	return r;
}
