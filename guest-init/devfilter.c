/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The container's device cgroup filter: cgroup v2 has no devices.allow
 * file, so, as runc and crun do, a BPF_PROG_TYPE_CGROUP_DEVICE program is
 * attached to the container's cgroup. START carries the rules already
 * reduced (runtime/monitor/device-rules.c): a default and exceptions that
 * all say the opposite, so the program is one test per exception.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "guest-init/guest-init.h"

/* Enough for thousands of rules; the kernel takes up to a million. */
#define MAX_INSNS 65536

struct prog {
	struct bpf_insn *insn;
	size_t n, cap;
};

static void emit(struct prog *p, uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
	if (p->n < p->cap)
		p->insn[p->n] = (struct bpf_insn){.code = code, .dst_reg = dst, .src_reg = src, .off = off, .imm = imm};
	p->n++;
}

/* Instructions one rule takes, so that its jumps can skip to the next. */
static size_t rule_len(const struct proto_device_rule *r)
{
	const uint32_t all = PROTO_DEV_ACC_READ | PROTO_DEV_ACC_WRITE | PROTO_DEV_ACC_MKNOD;

	return 1 + ((r->access & all) != all ? 3 : 0) + r->has_major + r->has_minor + 2;
}

/* r2 = type, r3 = access, r4 = major, r5 = minor (bpf_cgroup_dev_ctx). */
static void emit_rule(struct prog *p, const struct proto_device_rule *r, bool allow)
{
	const uint32_t all = PROTO_DEV_ACC_READ | PROTO_DEV_ACC_WRITE | PROTO_DEV_ACC_MKNOD;
	size_t end = p->n + rule_len(r);
	int32_t type = r->type == 'b' ? BPF_DEVCG_DEV_BLOCK : BPF_DEVCG_DEV_CHAR;

#define SKIP ((int16_t)(end - p->n - 1))
	emit(p, BPF_JMP | BPF_JNE | BPF_K, BPF_REG_2, 0, SKIP, type);
	if ((r->access & all) != all) {
		/* Every access asked for must be in the rule's. */
		emit(p, BPF_ALU | BPF_MOV | BPF_X, BPF_REG_1, BPF_REG_3, 0, 0);
		emit(p, BPF_ALU | BPF_AND | BPF_K, BPF_REG_1, 0, 0, (int32_t)(r->access & all));
		emit(p, BPF_JMP | BPF_JNE | BPF_X, BPF_REG_1, BPF_REG_3, SKIP, 0);
	}
	if (r->has_major)
		emit(p, BPF_JMP | BPF_JNE | BPF_K, BPF_REG_4, 0, SKIP, (int32_t)r->major);
	if (r->has_minor)
		emit(p, BPF_JMP | BPF_JNE | BPF_K, BPF_REG_5, 0, SKIP, (int32_t)r->minor);
#undef SKIP
	emit(p, BPF_ALU | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, allow);
	emit(p, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
}

int gi_devfilter_build(const struct proto_start *s, struct bpf_insn **ret, size_t *ret_n)
{
	struct prog p = {0};
	size_t need = 6 + 2; /* the loads, the default's mov and exit */

	for (size_t i = 0; i < s->n_device_rules; i++) {
		const struct proto_device_rule *r = &s->device_rules[i];

		if ((r->type != 'c' && r->type != 'b') || r->major > INT32_MAX || r->minor > INT32_MAX)
			return err_set(-EINVAL, "device rule %zu: bad type or number", i);
		need += rule_len(r);
		if (need > MAX_INSNS)
			return err_set(-E2BIG, "too many device rules (%zu)", s->n_device_rules);
	}
	p.insn = calloc(need, sizeof(*p.insn));
	if (!p.insn)
		return -ENOMEM;
	p.cap = need;
	emit(&p, BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_1, 0, 0);
	emit(&p, BPF_ALU | BPF_AND | BPF_K, BPF_REG_2, 0, 0, 0xffff);
	emit(&p, BPF_LDX | BPF_MEM | BPF_W, BPF_REG_3, BPF_REG_1, 0, 0);
	emit(&p, BPF_ALU | BPF_RSH | BPF_K, BPF_REG_3, 0, 0, 16);
	emit(&p, BPF_LDX | BPF_MEM | BPF_W, BPF_REG_4, BPF_REG_1, 4, 0);
	emit(&p, BPF_LDX | BPF_MEM | BPF_W, BPF_REG_5, BPF_REG_1, 8, 0);
	for (size_t i = 0; i < s->n_device_rules; i++)
		emit_rule(&p, &s->device_rules[i], !s->device_default_allow);
	emit(&p, BPF_ALU | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, s->device_default_allow);
	emit(&p, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	if (p.n != need) {
		free(p.insn);
		return err_set(-EFAULT, "device filter: %zu instructions made, %zu planned", p.n, need);
	}
	*ret = p.insn;
	*ret_n = p.n;
	return 0;
}

static int bpf(int cmd, union bpf_attr *attr)
{
	return (int)syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

static int prog_load(const struct bpf_insn *insn, size_t n)
{
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
	attr.insns = (uint64_t)(uintptr_t)insn;
	attr.insn_cnt = (uint32_t)n;
	attr.license = (uint64_t)(uintptr_t) "Apache";
	return bpf(BPF_PROG_LOAD, &attr);
}

/* The default filter's program, loaded ahead (gi_devfilter_preload). */
static struct {
	struct bpf_insn *insn;
	size_t n;
	int fd;
} preloaded = {.fd = -1};

void gi_devfilter_preload(void)
{
	struct proto_start s = {.device_filter = true,
	                        .device_rules = (struct proto_device_rule *)proto_default_device_rules,
	                        .n_device_rules = proto_n_default_device_rules};
	struct bpf_insn *insn;
	size_t n;
	int fd;

	if (preloaded.fd >= 0 || gi_devfilter_build(&s, &insn, &n) < 0)
		return;
	fd = prog_load(insn, n);
	if (fd < 0) {
		free(insn); /* loaded at START as any other, which says why */
		return;
	}
	preloaded.insn = insn;
	preloaded.n = n;
	preloaded.fd = fd;
}

int gi_devfilter_attach(const char *cgroup_dir, const struct proto_start *s)
{
	_cleanup_free_ struct bpf_insn *insn = NULL;
	_cleanup_close_ int cg = -1, loaded = -1;
	union bpf_attr attr;
	size_t n;
	int r, prog;

	if (!s->device_filter)
		return 0;
	r = gi_devfilter_build(s, &insn, &n);
	if (r < 0)
		return r;
	cg = open(cgroup_dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (cg < 0)
		return err_setsys(-errno, "open %s", cgroup_dir);
	/* The same program as the one loaded ahead: attached as it is (a
	 * program may be attached to many cgroups), its verification done. */
	if (preloaded.fd >= 0 && n == preloaded.n && !memcmp(insn, preloaded.insn, n * sizeof(*insn))) {
		prog = preloaded.fd;
	} else {
		prog = loaded = prog_load(insn, n);
		if (prog < 0)
			return err_setsys(-errno, "linux.resources.devices: load the device cgroup program");
	}
	gi_mark(6);
	memset(&attr, 0, sizeof(attr));
	attr.target_fd = (uint32_t)cg;
	attr.attach_bpf_fd = (uint32_t)prog;
	attr.attach_type = BPF_CGROUP_DEVICE;
	attr.attach_flags = BPF_F_ALLOW_MULTI;
	if (bpf(BPF_PROG_ATTACH, &attr) < 0)
		return err_setsys(-errno, "linux.resources.devices: attach the device cgroup program to %s",
		                  cgroup_dir);
	return 0;
}
