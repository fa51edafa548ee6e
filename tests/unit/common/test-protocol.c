/* SPDX-License-Identifier: Apache-2.0 */
/* Wire protocol: round trips of every message, framing limits, and
 * truncated/corrupted frames at every offset. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "common/cleanup.h"
#include "common/protocol.h"
#include "tap.h"

static char *xs(const char *s)
{
	return strdup(s);
}

static char **xv(int n, ...)
{
	char **v = calloc((size_t)n + 1, sizeof(char *));
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		v[i] = strdup(va_arg(ap, const char *));
	va_end(ap);
	return v;
}

static void fill_process(struct proto_process *p)
{
	p->args = xv(3, "/bin/sh", "-c", "echo hi");
	p->env = xv(2, "PATH=/usr/bin:/bin", "TERM=xterm");
	p->cwd = xs("/work");
	p->uid = 1000;
	p->gid = 1001;
	p->n_additional_gids = 3;
	p->additional_gids = calloc(3, sizeof(uint32_t));
	p->additional_gids[0] = 5;
	p->additional_gids[1] = 6;
	p->additional_gids[2] = 0xffffffffu;
	p->has_umask = true;
	p->umask = 027;
	p->terminal = true;
	p->rows = 24;
	p->cols = 80;
	p->has_caps = true;
	p->cap_bounding = 0x00000000a80425fbull;
	p->cap_effective = 0xa80425fb;
	p->cap_permitted = 1ull << 40;
	p->cap_ambient = 0;
	p->n_rlimits = 2;
	p->rlimits = calloc(2, sizeof(*p->rlimits));
	p->rlimits[0] = (struct proto_rlimit){xs("RLIMIT_NOFILE"), 1024, 4096};
	p->rlimits[1] = (struct proto_rlimit){xs("RLIMIT_CORE"), 0, UINT64_MAX};
	p->no_new_privileges = true;
	p->has_oom_score_adj = true;
	p->oom_score_adj = -500;
	p->stdin_port = 2001;
	p->stdout_port = 2002;
	p->stderr_port = 2003;
}

static void fill_start(struct proto_start *s)
{
	fill_process(&s->process);
	s->hostname = xs("box");
	s->domainname = xs("example.org");
	s->n_mounts = 3;
	s->mounts = calloc(3, sizeof(*s->mounts));
	s->mounts[0].destination = xs("/proc");
	s->mounts[0].type = xs("proc");
	s->mounts[0].source = xs("proc");
	s->mounts[0].options = xv(3, "nosuid", "noexec", "nodev");
	s->mounts[1].destination = xs("/etc/resolv.conf");
	s->mounts[1].type = xs("bind");
	s->mounts[1].options = xv(2, "rbind", "ro");
	s->mounts[1].has_data = true;
	s->mounts[1].data = (uint8_t *)xs("nameserver 10.0.0.1\n");
	s->mounts[1].data_len = 20;
	s->mounts[1].data_mode = 0644;
	s->mounts[2].destination = xs("/data");
	s->mounts[2].type = xs("bind");
	s->mounts[2].source = xs("/srv/volume");
	s->mounts[2].options = xv(1, "rbind");
	s->mounts[2].share = xs("kvrun-fs1");
	s->mounts[2].share_path = xs("volume");
	s->masked_paths = xv(2, "/proc/kcore", "/sys/firmware");
	s->readonly_paths = xv(1, "/proc/sys");
	s->n_sysctl = 1;
	s->sysctl = calloc(1, sizeof(*s->sysctl));
	s->sysctl[0] = (struct proto_keyval){xs("net.ipv4.ip_forward"), xs("1")};
	s->seccomp = calloc(1, sizeof(*s->seccomp));
	s->seccomp->default_action = xs("SCMP_ACT_ALLOW");
	s->seccomp->has_default_errno_ret = true;
	s->seccomp->default_errno_ret = 1;
	s->seccomp->architectures = xv(2, "SCMP_ARCH_X86_64", "SCMP_ARCH_X86");
	s->seccomp->flags = xv(1, "SECCOMP_FILTER_FLAG_LOG");
	s->seccomp->n_rules = 1;
	s->seccomp->rules = calloc(1, sizeof(*s->seccomp->rules));
	s->seccomp->rules[0].names = xv(2, "mkdir", "mkdirat");
	s->seccomp->rules[0].action = xs("SCMP_ACT_ERRNO");
	s->seccomp->rules[0].has_errno_ret = true;
	s->seccomp->rules[0].errno_ret = EPERM;
	s->seccomp->rules[0].n_args = 1;
	s->seccomp->rules[0].args = calloc(1, sizeof(struct proto_seccomp_arg));
	s->seccomp->rules[0].args[0] = (struct proto_seccomp_arg){1, 0x7, 0x3, xs("SCMP_CMP_MASKED_EQ")};
	s->root_readonly = true;
	s->rootfs_propagation = xs("rslave");
	s->root_device = xs("/dev/vda");
	s->root_fstype = xs("ext4");
	s->n_create_container_hooks = 1;
	s->create_container_hooks = calloc(1, sizeof(struct proto_hook));
	s->create_container_hooks[0].path = xs("/bin/hook");
	s->create_container_hooks[0].args = xv(2, "hook", "create");
	s->create_container_hooks[0].has_timeout = true;
	s->create_container_hooks[0].timeout = 5;
	s->state_json = xs("{\"ociVersion\":\"1.2.0\"}");
}

static int roundtrip(const struct proto_msg *in, struct proto_msg *out, uint8_t **ret_buf, size_t *ret_len)
{
	int r = proto_encode(in, ret_buf, ret_len);

	if (r < 0)
		return r;
	return proto_decode(*ret_buf, *ret_len, out);
}

static void check_process(const struct proto_process *a, const struct proto_process *b)
{
	is_str(b->args[0], a->args[0]);
	is_str(b->args[2], a->args[2]);
	ok(b->args[3] == NULL, "args NULL-terminated");
	is_str(b->env[1], a->env[1]);
	is_str(b->cwd, a->cwd);
	is_int(b->uid, a->uid);
	is_int(b->gid, a->gid);
	is_int(b->n_additional_gids, 3);
	is_int(b->additional_gids[2], 0xffffffffu);
	ok(b->has_umask && b->umask == 027, "umask");
	ok(b->terminal && b->rows == 24 && b->cols == 80, "terminal size");
	ok(b->has_caps && b->cap_bounding == a->cap_bounding && b->cap_permitted == (1ull << 40), "caps");
	is_int(b->n_rlimits, 2);
	is_str(b->rlimits[1].type, "RLIMIT_CORE");
	ok(b->rlimits[1].hard == UINT64_MAX && b->rlimits[0].soft == 1024, "rlimit values");
	ok(b->no_new_privileges, "no_new_privileges");
	ok(b->has_oom_score_adj && b->oom_score_adj == -500, "oom_score_adj negative");
	ok(b->stdin_port == 2001 && b->stdout_port == 2002 && b->stderr_port == 2003, "stdio ports");
	ok(b->user == NULL, "absent string stays NULL");
}

TEST(start_roundtrip)
{
	struct proto_msg in = {.type = PROTO_MSG_START, .flags = PROTO_START_F_WAIT, .id = 77}, out;
	struct proto_start *s = &out.u.start;
	uint8_t *buf = NULL;
	size_t len = 0;

	fill_start(&in.u.start);
	is_int(roundtrip(&in, &out, &buf, &len), 0);
	is_int(out.type, PROTO_MSG_START);
	is_int(out.flags, PROTO_START_F_WAIT);
	is_int(out.id, 77);
	check_process(&in.u.start.process, &s->process);
	is_str(s->hostname, "box");
	is_str(s->domainname, "example.org");
	is_int(s->n_mounts, 3);
	is_str(s->mounts[0].options[2], "nodev");
	ok(!s->mounts[0].has_data, "mount 0 has no data");
	ok(s->mounts[1].has_data && s->mounts[1].data_len == 20, "copied file data");
	ok(memcmp(s->mounts[1].data, "nameserver 10.0.0.1\n", 20) == 0, "copied file bytes");
	is_int(s->mounts[1].data_mode, 0644);
	ok(!s->mounts[1].share && !s->mounts[1].share_path, "a copied file is no share");
	is_str(s->mounts[2].share, "kvrun-fs1");
	is_str(s->mounts[2].share_path, "volume");
	ok(!s->mounts[2].has_data, "a share carries no data");
	is_str(s->masked_paths[1], "/sys/firmware");
	is_str(s->readonly_paths[0], "/proc/sys");
	is_str(s->sysctl[0].value, "1");
	ok(s->seccomp != NULL, "seccomp present");
	is_str(s->seccomp->architectures[1], "SCMP_ARCH_X86");
	is_str(s->seccomp->flags[0], "SECCOMP_FILTER_FLAG_LOG");
	is_str(s->seccomp->rules[0].names[1], "mkdirat");
	is_int(s->seccomp->rules[0].errno_ret, EPERM);
	is_int(s->seccomp->rules[0].args[0].value_two, 3);
	is_str(s->seccomp->rules[0].args[0].op, "SCMP_CMP_MASKED_EQ");
	ok(s->root_readonly, "root readonly");
	is_str(s->rootfs_propagation, "rslave");
	is_str(s->root_device, "/dev/vda");
	is_str(s->root_fstype, "ext4");
	ok(s->root_path == NULL, "root_path absent");
	is_str(s->create_container_hooks[0].args[1], "create");
	is_int(s->create_container_hooks[0].timeout, 5);
	is_int(s->n_start_container_hooks, 0);
	is_str(s->state_json, "{\"ociVersion\":\"1.2.0\"}");
	ok(!s->has_realtime && !s->has_seed, "no identity unless given");
	proto_msg_free(&out);
	proto_msg_free(&in);
	free(buf);
}

TEST(start_identity_roundtrip)
{
	struct proto_msg in = {.type = PROTO_MSG_START, .id = 5}, out;
	uint8_t *buf = NULL;
	size_t len = 0;

	fill_start(&in.u.start);
	in.u.start.has_realtime = true;
	in.u.start.realtime_ns = 1764470000123456789ULL;
	in.u.start.has_seed = true;
	for (int i = 0; i < PROTO_SEED_BYTES; i++)
		in.u.start.seed[i] = (uint8_t)(i * 7 + 1);
	is_int(roundtrip(&in, &out, &buf, &len), 0);
	ok(out.u.start.has_realtime && out.u.start.realtime_ns == 1764470000123456789ULL, "wall-clock time");
	ok(out.u.start.has_seed && memcmp(out.u.start.seed, in.u.start.seed, PROTO_SEED_BYTES) == 0, "seed bytes");
	proto_msg_free(&out);
	proto_msg_free(&in);
	free(buf);
}

/* Pods: a member's START flags, and the member each request addresses. */
TEST(pod_member_fields_roundtrip)
{
	struct proto_msg in = {.type = PROTO_MSG_START, .id = 9, .flags = PROTO_START_F_WAIT | PROTO_START_F_MEMBER},
			 out;
	uint8_t *buf = NULL;
	size_t len = 0;

	fill_start(&in.u.start);
	is_int(roundtrip(&in, &out, &buf, &len), 0);
	is_int(out.flags, PROTO_START_F_WAIT | PROTO_START_F_MEMBER);
	proto_msg_free(&out);
	proto_msg_free(&in);
	free(buf);

	in = (struct proto_msg){.type = PROTO_MSG_EXEC, .id = 10};
	fill_process(&in.u.exec);
	in.u.exec.container = 77;
	is_int(roundtrip(&in, &out, &buf, &len), 0);
	is_int(out.u.exec.container, 77);
	proto_msg_free(&out);
	proto_msg_free(&in);
	free(buf);

	in = (struct proto_msg){.type = PROTO_MSG_STATS, .id = 11, .u.stats = {.container = 78}};
	is_int(roundtrip(&in, &out, &buf, &len), 0);
	is_int(out.u.stats.container, 78);
	free(buf);
	in =
	    (struct proto_msg){.type = PROTO_MSG_UPDATE, .id = 12, .u.update = {.container = 79, .has_pids_max = true}};
	is_int(roundtrip(&in, &out, &buf, &len), 0);
	ok(out.u.update.container == 79 && out.u.update.has_pids_max, "UPDATE of a member");
	free(buf);
	in = (struct proto_msg){.type = PROTO_MSG_PS, .id = 13, .u.ps = {.container = 80}};
	is_int(roundtrip(&in, &out, &buf, &len), 0);
	is_int(out.u.ps.container, 80);
	proto_msg_free(&out);
	free(buf);
	/* A GO without a body (an older host) starts the first container. */
	in = (struct proto_msg){.type = PROTO_MSG_GO, .id = 14};
	is_int(roundtrip(&in, &out, &buf, &len), 0);
	is_int(out.u.started.pid, 0);
	free(buf);
}

TEST(small_messages_roundtrip)
{
	struct proto_msg in, out;
	uint8_t *buf;
	size_t len;

	in = (struct proto_msg){.type = PROTO_MSG_HELLO, .id = 1};
	in.u.hello = (struct proto_hello){1, 3, xs("kvrun-init test")};
	is_int(roundtrip(&in, &out, &buf, &len), 0);
	ok(out.u.hello.version_min == 1 && out.u.hello.version_max == 3, "hello versions");
	is_str(out.u.hello.agent, "kvrun-init test");
	proto_msg_free(&out);
	proto_msg_free(&in);
	free(buf);

	in = (struct proto_msg){.type = PROTO_MSG_EXEC, .id = 9};
	fill_process(&in.u.exec);
	is_int(roundtrip(&in, &out, &buf, &len), 0);
	check_process(&in.u.exec, &out.u.exec);
	proto_msg_free(&out);
	proto_msg_free(&in);
	free(buf);

	in = (struct proto_msg){.type = PROTO_MSG_SIGNAL, .u.signal = {42, 15, true}};
	is_int(roundtrip(&in, &out, &buf, &len), 0);
	ok(out.u.signal.pid == 42 && out.u.signal.signo == 15 && out.u.signal.all, "signal");
	free(buf);

	in = (struct proto_msg){.type = PROTO_MSG_RESIZE, .u.resize = {0, 50, 132}};
	is_int(roundtrip(&in, &out, &buf, &len), 0);
	ok(out.u.resize.rows == 50 && out.u.resize.cols == 132, "resize");
	free(buf);

	in = (struct proto_msg){.type = PROTO_MSG_UPDATE, .u.update = {true, 5, true, 1ULL << 33}};
	is_int(roundtrip(&in, &out, &buf, &len), 0);
	ok(out.u.update.has_pids_max && out.u.update.pids_max == 5 && out.u.update.has_memory_max &&
	       out.u.update.memory_max == 1ULL << 33,
	   "update: both limits");
	free(buf);

	in = (struct proto_msg){.type = PROTO_MSG_UPDATE, .u.update = {.has_pids_max = true, .pids_max = 0}};
	is_int(roundtrip(&in, &out, &buf, &len), 0);
	ok(out.u.update.has_pids_max && out.u.update.pids_max == 0 && !out.u.update.has_memory_max,
	   "update: pids max only, memory untouched");
	free(buf);

	in = (struct proto_msg){.type = PROTO_MSG_EXIT, .u.exit = {7, 42 << 8, true}};
	is_int(roundtrip(&in, &out, &buf, &len), 0);
	ok(out.u.exit.pid == 7 && out.u.exit.status == 42 << 8 && out.u.exit.init, "exit");
	free(buf);

	in = (struct proto_msg){.type = PROTO_MSG_STATS, .id = 5, .u.stats = {1, 2, 3, 4, 5, 6, 7}};
	is_int(roundtrip(&in, &out, &buf, &len), 0);
	ok(out.id == 5 && out.u.stats.cpu_usage_usec == 1 && out.u.stats.pids_current == 7, "stats");
	free(buf);

	in = (struct proto_msg){.type = PROTO_MSG_OOM, .u.oom = {3, 4}};
	is_int(roundtrip(&in, &out, &buf, &len), 0);
	ok(out.type == PROTO_MSG_OOM && out.u.oom.oom_kill == 3 && out.u.oom.oom == 4, "oom: both counters");
	is_str(proto_type_name(PROTO_MSG_OOM), "OOM");
	free(buf);

	in = (struct proto_msg){.type = PROTO_MSG_ERROR, .id = 3};
	in.u.error = (struct proto_error){ENOENT, xs("exec: \"/nope\": stat /nope: no such file or directory")};
	is_int(roundtrip(&in, &out, &buf, &len), 0);
	is_int(out.u.error.err, ENOENT);
	is_str(out.u.error.message, in.u.error.message);
	proto_msg_free(&out);
	proto_msg_free(&in);
	free(buf);

	static const uint16_t simple[] = {PROTO_MSG_READY, PROTO_MSG_STARTED, PROTO_MSG_GO};
	for (size_t i = 0; i < ARRAY_SIZE(simple); i++) {
		in = (struct proto_msg){.type = simple[i], .id = 100 + i, .u.started = {1234}};
		is_int(roundtrip(&in, &out, &buf, &len), 0);
		ok(out.type == simple[i] && out.id == 100 + i, "%s round trip", proto_type_name(simple[i]));
		/* GO names a pod member's init (0: the VM's container). */
		is_int(out.u.started.pid, 1234);
		free(buf);
	}
}

TEST(limits_and_framing)
{
	struct proto_msg in = {.type = PROTO_MSG_ERROR}, out;
	struct proto_header h;
	uint8_t *buf;
	size_t len;
	char *big = malloc(KVRUN_PROTO_MAX_BODY + 1);

	memset(big, 'a', KVRUN_PROTO_MAX_BODY);
	big[KVRUN_PROTO_MAX_BODY] = '\0';
	in.u.error.message = big;
	is_int(proto_encode(&in, &buf, &len), -EMSGSIZE);
	free(big);

	in = (struct proto_msg){.type = 999};
	is_int(proto_encode(&in, &buf, &len), -EINVAL);

	in = (struct proto_msg){.type = PROTO_MSG_SIGNAL, .id = 0x1122334455667788ull, .u.signal = {1, 9, false}};
	is_int(proto_encode(&in, &buf, &len), 0);
	is_int(proto_header_parse(buf, 10, &h), -EAGAIN);
	is_int(proto_header_parse(buf, len, &h), 0);
	ok(h.id == 0x1122334455667788ull && h.length == len - KVRUN_PROTO_HEADER_SIZE, "header fields");
	/* An oversized length is refused from the header alone. */
	buf[12] = 0xff, buf[13] = 0xff, buf[14] = 0xff, buf[15] = 0x7f;
	is_int(proto_header_parse(buf, len, &h), -EMSGSIZE);
	is_int(proto_decode(buf, len, &out), -EMSGSIZE);
	buf[4] = 2;
	is_int(proto_header_parse(buf, len, &h), -EPROTONOSUPPORT);
	buf[0] ^= 1;
	is_int(proto_decode(buf, len, &out), -EBADMSG);
	free(buf);
}

TEST(unknown_tags_skipped)
{
	struct proto_msg in = {.type = PROTO_MSG_SIGNAL, .u.signal = {5, 2, false}}, out;
	uint8_t *buf, *nb;
	size_t len;
	static const uint8_t extra[] = {0x99, 0x00, 3, 0, 0, 0, 'x', 'y', 'z'};

	is_int(proto_encode(&in, &buf, &len), 0);
	/* Append a TLV with tag 0x99 that this version does not know. */
	nb = malloc(len + sizeof(extra));
	memcpy(nb, buf, len);
	memcpy(nb + len, extra, sizeof(extra));
	nb[12] = (uint8_t)(len + sizeof(extra) - KVRUN_PROTO_HEADER_SIZE);
	is_int(proto_decode(nb, len + sizeof(extra), &out), 0);
	ok(out.u.signal.pid == 5 && out.u.signal.signo == 2, "known fields kept");
	free(nb);
	free(buf);
}

/* The "linux" parts: devices, the device filter, cgroup values, user
 * namespace maps, cgroup namespace, personality; and the process's I/O
 * priority, scheduler and preserved fds. */
static void fill_linux(struct proto_start *s)
{
	s->n_devices = 1;
	s->devices = calloc(1, sizeof(*s->devices));
	s->devices[0] = (struct proto_device){xs("/dev/fuse"), 'c', 10, 229, 0600, 1, 2};
	s->device_filter = true;
	s->device_default_allow = false;
	s->n_device_rules = 2;
	s->device_rules = calloc(2, sizeof(*s->device_rules));
	s->device_rules[0] = (struct proto_device_rule){'c', true, true, 10, 229, 7};
	s->device_rules[1] = (struct proto_device_rule){'b', false, false, 0, 0, PROTO_DEV_ACC_MKNOD};
	s->n_cgroup = 2;
	s->cgroup = calloc(2, sizeof(*s->cgroup));
	s->cgroup[0] = (struct proto_cgroup_set){xs("pids.max"), xs("64"), xs("linux.resources.pids.limit"), false};
	s->cgroup[1] =
	    (struct proto_cgroup_set){xs("memory.swap.max"), xs("0"), xs("linux.resources.memory.swap"), true};
	s->user_ns = true;
	s->n_uid_mappings = s->n_gid_mappings = 1;
	s->uid_mappings = calloc(1, sizeof(*s->uid_mappings));
	s->gid_mappings = calloc(1, sizeof(*s->gid_mappings));
	s->uid_mappings[0] = (struct proto_id_map){0, 100000, 65536};
	s->gid_mappings[0] = (struct proto_id_map){0, 200000, 1000};
	s->cgroup_ns = true;
	s->has_personality = true;
	s->personality = 8;
	s->process.has_ioprio = true;
	s->process.ioprio = 3 << 13;
	s->process.sched = calloc(1, sizeof(*s->process.sched));
	*s->process.sched = (struct proto_sched){6, -3, 9, 0x41, 1000, 2000, 3000};
	s->process.n_extra_fds = 2;
	s->process.extra_fds = calloc(2, sizeof(*s->process.extra_fds));
	s->process.extra_fds[0] = (struct proto_extra_fd){1028, PROTO_EXTRA_FD_READ};
	s->process.extra_fds[1] = (struct proto_extra_fd){1029, PROTO_EXTRA_FD_READ | PROTO_EXTRA_FD_WRITE};
}

TEST(start_linux_roundtrip)
{
	struct proto_msg in = {.type = PROTO_MSG_START, .id = 6}, out;
	const struct proto_start *o = &out.u.start;
	uint8_t *buf = NULL;
	size_t len = 0;

	fill_start(&in.u.start);
	fill_linux(&in.u.start);
	is_int(roundtrip(&in, &out, &buf, &len), 0);
	ok(o->n_devices == 1 && !strcmp(o->devices[0].path, "/dev/fuse") &&
	       !memcmp(&o->devices[0].type, &in.u.start.devices[0].type, 6 * sizeof(uint32_t)),
	   "devices");
	ok(o->device_filter && !o->device_default_allow && o->n_device_rules == 2 && o->device_rules[0].type == 'c' &&
	       o->device_rules[0].has_major && o->device_rules[0].has_minor && o->device_rules[0].major == 10 &&
	       o->device_rules[0].minor == 229 && o->device_rules[0].access == 7 && o->device_rules[1].type == 'b' &&
	       !o->device_rules[1].has_major && !o->device_rules[1].has_minor &&
	       o->device_rules[1].access == PROTO_DEV_ACC_MKNOD,
	   "device rules");
	ok(o->n_cgroup == 2 && !strcmp(o->cgroup[0].file, "pids.max") && !strcmp(o->cgroup[0].value, "64") &&
	       !strcmp(o->cgroup[1].field, "linux.resources.memory.swap") && !o->cgroup[0].optional &&
	       o->cgroup[1].optional,
	   "cgroup values");
	ok(o->user_ns && o->n_uid_mappings == 1 && o->uid_mappings[0].host_id == 100000 && o->n_gid_mappings == 1 &&
	       o->gid_mappings[0].size == 1000,
	   "user namespace maps");
	ok(o->cgroup_ns && o->has_personality && o->personality == 8, "cgroup namespace, personality");
	ok(o->process.has_ioprio && o->process.ioprio == 3 << 13 && o->process.sched &&
	       !memcmp(o->process.sched, in.u.start.process.sched, sizeof(*o->process.sched)),
	   "I/O priority and scheduler");
	ok(o->process.n_extra_fds == 2 && o->process.extra_fds[1].port == 1029 &&
	       o->process.extra_fds[1].mode == (PROTO_EXTRA_FD_READ | PROTO_EXTRA_FD_WRITE),
	   "preserved fds");
	proto_msg_free(&out);
	proto_msg_free(&in);
	free(buf);
}

TEST(fuzz_truncate_and_corrupt)
{
	struct proto_msg in = {.type = PROTO_MSG_START, .id = 1}, out;
	uint8_t *buf, *copy;
	size_t len, bad_trunc = 0, decoded = 0, errors = 0, other = 0;

	fill_start(&in.u.start);
	fill_linux(&in.u.start);
	is_int(proto_encode(&in, &buf, &len), 0);
	copy = malloc(len);
	/* Every proper prefix is an error (the header length no longer matches). */
	for (size_t cut = 0; cut < len; cut++) {
		uint8_t *t = malloc(cut ? cut : 1);

		memcpy(t, buf, cut);
		if (proto_decode(t, cut, &out) != -EBADMSG)
			bad_trunc++;
		free(t);
	}
	is_int(bad_trunc, 0);
	/* A body cut short with the header's length fixed up: still an error or a
	 * clean decode, never a crash (ASan checks the reads). */
	for (size_t cut = KVRUN_PROTO_HEADER_SIZE; cut < len; cut++) {
		memcpy(copy, buf, cut);
		copy[12] = (uint8_t)(cut - KVRUN_PROTO_HEADER_SIZE);
		copy[13] = (uint8_t)((cut - KVRUN_PROTO_HEADER_SIZE) >> 8);
		copy[14] = copy[15] = 0;
		int r = proto_decode(copy, cut, &out);

		if (r == 0)
			proto_msg_free(&out);
		else if (r == -EBADMSG)
			errors++;
		else
			other++;
	}
	/* Flip each byte to a few values. */
	static const uint8_t pats[] = {0x00, 0xff, 0x80, 0x01, 0x7f};
	for (size_t i = 0; i < len; i++)
		for (size_t k = 0; k < ARRAY_SIZE(pats); k++) {
			memcpy(copy, buf, len);
			copy[i] = buf[i] == pats[k] ? (uint8_t)~pats[k] : pats[k];
			int r = proto_decode(copy, len, &out);

			if (r == 0) {
				decoded++;
				proto_msg_free(&out);
			} else if (r == -EBADMSG || r == -EMSGSIZE || r == -EPROTONOSUPPORT) {
				errors++;
			} else {
				other++;
			}
		}
	ok(errors > 0, "corruptions detected (%zu errors, %zu still decodable)", errors, decoded);
	is_int(other, 0);
	/* Pseudo-random garbage of every length up to 512 bytes behind a valid header. */
	uint32_t seed = 12345;
	for (size_t n = 0; n < 512; n++) {
		uint8_t g[KVRUN_PROTO_HEADER_SIZE + 512];

		memcpy(g, buf, KVRUN_PROTO_HEADER_SIZE);
		g[12] = (uint8_t)n, g[13] = (uint8_t)(n >> 8), g[14] = g[15] = 0;
		for (size_t i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			g[KVRUN_PROTO_HEADER_SIZE + i] = (uint8_t)(seed >> 16);
		}
		int r = proto_decode(g, KVRUN_PROTO_HEADER_SIZE + n, &out);

		if (r == 0)
			proto_msg_free(&out);
		else if (r != -EBADMSG && r != -EMSGSIZE)
			other++;
	}
	is_int(other, 0);
	free(copy);
	free(buf);
	proto_msg_free(&in);
}

/* ---- the network record of START ---- */

static size_t net_bad_counts;

/* A decoded (possibly partial) record never claims more than it holds. */
static void ok_quiet_net(const struct proto_msg *m)
{
	const struct net_config *c = m->u.start.net;

	if (!c)
		return;
	if (c->nr_ifaces > NET_CONFIG_MAX_IFACES)
		net_bad_counts++;
	for (unsigned int i = 0; i < c->nr_ifaces && i < NET_CONFIG_MAX_IFACES; i++)
		if (c->ifaces[i].nr_addrs > NET_CONFIG_MAX_ADDRS || c->ifaces[i].nr_routes > NET_CONFIG_MAX_ROUTES ||
		    c->ifaces[i].name[NET_CONFIG_IFNAMSIZ - 1])
			net_bad_counts++;
}

static struct net_config *sample_net(void)
{
	struct net_config *c = calloc(1, sizeof(*c));

	c->nr_ifaces = 2;
	for (unsigned int i = 0; i < 2; i++) {
		struct net_config_iface *f = &c->ifaces[i];

		snprintf(f->name, sizeof(f->name), i ? "net1-longname15" : "eth0");
		memcpy(f->mac, (uint8_t[]){0x02, 0x42, 0xac, 0x11, 0x00, (uint8_t)(2 + i)}, 6);
		f->mtu = i ? 9000 : 1500;
		if (i) /* restored from a template: the device's MAC differs */
			memcpy(f->dev_mac, (uint8_t[]){0x02, 0x6b, 0x76, 0x74, 0x00, 0x01}, 6);
		f->nr_addrs = 2;
		f->addrs[0] = (struct net_config_addr){.family = 2, .prefixlen = 24, .addr = {10, 213, 77, (uint8_t)i}};
		f->addrs[1] = (struct net_config_addr){.family = 10, .prefixlen = 64, .addr = {0xfd, 0, [15] = 2}};
		f->nr_routes = i ? NET_CONFIG_MAX_ROUTES : 1;
		for (unsigned int r = 0; r < f->nr_routes; r++)
			f->routes[r] = (struct net_config_route){.family = 2,
			                                         .dst_len = (uint8_t)(r % 33),
			                                         .dst = {10, (uint8_t)r},
			                                         .gw = {10, 213, 77, 1},
			                                         .has_gw = (uint8_t)(r & 1),
			                                         .scope = r & 1 ? 0 : 253,
			                                         .metric = 100 + r};
	}
	return c;
}

TEST(start_net_roundtrip)
{
	struct proto_msg in = {.type = PROTO_MSG_START, .id = 3}, out;
	uint8_t *buf;
	size_t len;

	fill_start(&in.u.start);
	in.u.start.net = sample_net();
	is_int(proto_encode(&in, &buf, &len), 0);
	is_int(proto_decode(buf, len, &out), 0);
	ok(out.u.start.net != NULL, "net record decoded");
	ok(out.u.start.net && memcmp(out.u.start.net, in.u.start.net, sizeof(struct net_config)) == 0,
	   "interfaces, addresses and routes survive the round trip");
	is_str(out.u.start.hostname, in.u.start.hostname);
	proto_msg_free(&out);
	free(buf);
	/* Without interfaces: no record, loopback only. */
	free(in.u.start.net);
	in.u.start.net = NULL;
	is_int(proto_encode(&in, &buf, &len), 0);
	is_int(proto_decode(buf, len, &out), 0);
	ok(out.u.start.net == NULL, "no net record: NULL");
	proto_msg_free(&out);
	free(buf);
	proto_msg_free(&in);
}

TEST(network_roundtrip)
{
	struct proto_msg in = {.type = PROTO_MSG_NETWORK, .id = 9}, out;
	uint8_t *buf;
	size_t len;

	in.u.network.net = sample_net();
	in.u.network.has_realtime = true;
	in.u.network.realtime_ns = 1700000000123456789ULL;
	is_int(proto_encode(&in, &buf, &len), 0);
	is_int(proto_decode(buf, len, &out), 0);
	is_int(out.type, PROTO_MSG_NETWORK);
	is_str(proto_type_name(PROTO_MSG_NETWORK), "NETWORK");
	ok(out.u.network.net && memcmp(out.u.network.net, in.u.network.net, sizeof(struct net_config)) == 0,
	   "network: interfaces (with dev_mac), addresses and routes survive the round trip");
	ok(out.u.network.has_realtime && out.u.network.realtime_ns == in.u.network.realtime_ns,
	   "network: the host's time");
	proto_msg_free(&out);
	free(buf);
	/* Truncated anywhere: refused, never a partial configuration. */
	is_int(proto_encode(&in, &buf, &len), 0);
	for (size_t cut = KVRUN_PROTO_HEADER_SIZE; cut < len; cut += 7)
		if (proto_decode(buf, cut, &out) == 0) {
			ok(0, "network: truncated at %zu decoded", cut);
			proto_msg_free(&out);
			break;
		}
	free(buf);
	proto_msg_free(&in);
}

/* Hand-made TLVs, to write what the encoder never would. */
static size_t tlv(uint8_t *p, uint16_t tag, const void *v, uint32_t len)
{
	p[0] = (uint8_t)tag, p[1] = (uint8_t)(tag >> 8);
	for (int i = 0; i < 4; i++)
		p[2 + i] = (uint8_t)(len >> (8 * i));
	memcpy(p + 6, v, len);
	return 6 + len;
}

/* A START frame whose body is one net record holding one iface record. */
static int decode_iface(const uint8_t *iface, size_t iface_len)
{
	static uint8_t frame[KVRUN_PROTO_HEADER_SIZE + 8192];
	struct proto_msg m = {.type = PROTO_MSG_START}, out;
	uint8_t rec[8192], *hdr;
	size_t hlen, rlen, blen;
	int r;

	rlen = tlv(rec, 1, iface, (uint32_t)iface_len);
	is_int(proto_encode(&m, &hdr, &hlen), 0);
	memcpy(frame, hdr, KVRUN_PROTO_HEADER_SIZE);
	free(hdr);
	blen = tlv(frame + KVRUN_PROTO_HEADER_SIZE, 17, rec, (uint32_t)rlen);
	for (int i = 0; i < 4; i++)
		frame[12 + i] = (uint8_t)(blen >> (8 * i));
	r = proto_decode(frame, KVRUN_PROTO_HEADER_SIZE + blen, &out);
	if (r == 0)
		proto_msg_free(&out);
	return r;
}

TEST(start_net_limits)
{
	uint8_t f[4096], addr[64], a[18] = {0};
	size_t n = 0, alen = 0;

	alen += tlv(addr + alen, 1, (uint8_t[]){2}, 1);
	alen += tlv(addr + alen, 3, a, 16);
	n = tlv(f, 1, "eth0", 4);
	is_int(decode_iface(f, n), 0);
	for (unsigned int i = 0; i < NET_CONFIG_MAX_ADDRS; i++)
		n += tlv(f + n, 4, addr, (uint32_t)alen);
	is_int(decode_iface(f, n), 0);
	n += tlv(f + n, 4, addr, (uint32_t)alen);
	is_int(decode_iface(f, n), -EBADMSG);
	n = tlv(f, 1, "0123456789abcdef", 16);
	is_int(decode_iface(f, n), -EBADMSG);
	n = tlv(f, 1, "et\0h", 4);
	is_int(decode_iface(f, n), -EBADMSG);
	n = tlv(f, 2, "\x02\x42\xac\x11\x00", 5);
	is_int(decode_iface(f, n), -EBADMSG);
	n = tlv(f, 3, "\x01\x02", 2);
	is_int(decode_iface(f, n), -EBADMSG);
	/* In an address: an unknown tag is skipped, a u8 of 2 bytes is not. */
	n = tlv(f, 4, (uint8_t[]){9, 0, 1, 0, 0, 0, 2}, 7);
	is_int(decode_iface(f, n), 0);
	n = tlv(f, 4, (uint8_t[]){2, 0, 2, 0, 0, 0, 2, 0}, 8);
	is_int(decode_iface(f, n), -EBADMSG);
	n = tlv(f, 4, (uint8_t[]){3, 0, 4, 0, 0, 0, 10, 0, 0, 1}, 10);
	is_int(decode_iface(f, n), -EBADMSG);
}

TEST(start_net_truncate)
{
	struct proto_msg in = {.type = PROTO_MSG_START, .id = 1}, out;
	size_t len, decoded = 0, errors = 0, other = 0;
	uint8_t *buf, *copy;

	in.u.start.net = sample_net();
	is_int(proto_encode(&in, &buf, &len), 0);
	copy = malloc(len);
	for (size_t cut = KVRUN_PROTO_HEADER_SIZE; cut < len; cut++) {
		size_t body = cut - KVRUN_PROTO_HEADER_SIZE;
		int r;

		memcpy(copy, buf, cut);
		for (int i = 0; i < 4; i++)
			copy[12 + i] = (uint8_t)(body >> (8 * i));
		r = proto_decode(copy, cut, &out);
		if (r == 0) {
			decoded++;
			ok_quiet_net(&out);
			proto_msg_free(&out);
		} else if (r == -EBADMSG) {
			errors++;
		} else {
			other++;
		}
	}
	is_int(net_bad_counts, 0);
	ok(errors > 0, "cut net records are errors (%zu errors, %zu decodable prefixes)", errors, decoded);
	is_int(other, 0);
	free(copy);
	free(buf);
	proto_msg_free(&in);
}

TEST(stream_send_recv)
{
	struct proto_msg in = {.type = PROTO_MSG_EXIT, .id = 4, .u.exit = {9, 0x8b, false}}, out;
	int sv[2];

	is_int(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	is_int(proto_send(sv[0], &in), 0);
	is_int(proto_recv(sv[1], &out), 0);
	ok(out.type == PROTO_MSG_EXIT && out.u.exit.pid == 9 && out.u.exit.status == 0x8b, "exit over a socket");
	close(sv[0]);
	is_int(proto_recv(sv[1], &out), -ECONNRESET);
	close(sv[1]);
}

TAP_MAIN()
