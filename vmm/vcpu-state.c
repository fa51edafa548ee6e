/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One vCPU's state for snapshots: general and special registers, FPU/SSE/AVX
 * (XSAVE), XCR0, MSRs, the in-kernel LAPIC, pending events, debug registers
 * and the MP state. The section is a fixed part followed by the XSAVE area
 * and the MSR entries, so its length is checked exactly on load.
 */
#include <errno.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "common/error.h"
#include "common/log.h"
#include "vmm/snapshot-int.h"
#include "vmm/vcpu.h"
#include "vmm/vm.h"

#define VCPU_STATE_MAX_MSRS 4096

struct vcpu_state_fixed {
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	struct kvm_xcrs xcrs;
	struct kvm_lapic_state lapic;
	struct kvm_vcpu_events events;
	struct kvm_debugregs debugregs;
	struct kvm_mp_state mp;
	struct kvm_fpu fpu; /* used when xsave_size is 0 */
	uint32_t xsave_size;
	uint32_t nmsrs;
};

uint32_t vcpu_state_xsave_size(int kvm_fd)
{
	int n = ioctl(kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_XSAVE2);

	if (n >= (int)sizeof(struct kvm_xsave))
		return (uint32_t)n;
	if (ioctl(kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_XSAVE) > 0)
		return sizeof(struct kvm_xsave);
	return 0;
}

static int msr_index_list(int kvm_fd, struct kvm_msr_list **ret)
{
	struct kvm_msr_list probe = {.nmsrs = 0}, *l;

	/* The first call fails with E2BIG and says how many there are. */
	if (ioctl(kvm_fd, KVM_GET_MSR_INDEX_LIST, &probe) < 0 && errno != E2BIG)
		return err_setsys(-errno, "KVM_GET_MSR_INDEX_LIST");
	if (probe.nmsrs > VCPU_STATE_MAX_MSRS)
		return err_set(-E2BIG, "KVM lists %u MSRs", probe.nmsrs);
	l = calloc(1, sizeof(*l) + probe.nmsrs * sizeof(l->indices[0]));
	if (!l)
		return -ENOMEM;
	l->nmsrs = probe.nmsrs;
	if (ioctl(kvm_fd, KVM_GET_MSR_INDEX_LIST, l) < 0) {
		free(l);
		return err_setsys(-errno, "KVM_GET_MSR_INDEX_LIST");
	}
	*ret = l;
	return 0;
}

static struct kvm_msrs *msrs_alloc(uint32_t n)
{
	struct kvm_msrs *m = calloc(1, sizeof(*m) + n * sizeof(m->entries[0]));

	if (m)
		m->nmsrs = n;
	return m;
}

/* KVM_GET_MSRS stops at the first MSR it cannot read: drop that one and go
 * on from there, so the list keeps exactly the readable ones. */
static int msrs_filter(int vcpu_fd, const struct kvm_msr_list *l, struct vcpu_state_caps *c)
{
	_cleanup_free_ struct kvm_msrs *m = msrs_alloc(l->nmsrs);
	uint32_t kept = 0, next = 0;

	c->msrs = calloc(l->nmsrs ? l->nmsrs : 1, sizeof(uint32_t));
	if (!m || !c->msrs)
		return -ENOMEM;
	while (next < l->nmsrs) {
		int n;

		m->nmsrs = l->nmsrs - next;
		for (uint32_t i = 0; i < m->nmsrs; i++)
			m->entries[i].index = l->indices[next + i];
		n = ioctl(vcpu_fd, KVM_GET_MSRS, m);
		if (n < 0)
			return err_setsys(-errno, "KVM_GET_MSRS");
		for (int i = 0; i < n; i++)
			c->msrs[kept++] = l->indices[next + i];
		if ((uint32_t)n < m->nmsrs)
			log_debug("snapshot: MSR 0x%x is listed but not readable", l->indices[next + n]);
		next += (uint32_t)n + 1;
	}
	c->nmsrs = kept;
	return 0;
}

int vcpu_state_caps_probe(struct vm *vm, struct vcpu_state_caps *ret)
{
	_cleanup_free_ struct kvm_msr_list *l = NULL;
	struct vcpu_state_caps c = {0};
	int r;

	c.xsave_size = vcpu_state_xsave_size(vm->kvm_fd);
	c.xcrs = ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_XCRS) > 0;
	c.debugregs = ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_DEBUGREGS) > 0;
	r = msr_index_list(vm->kvm_fd, &l);
	if (r >= 0)
		r = msrs_filter(vm->vcpus[0]->fd, l, &c);
	if (r < 0) {
		vcpu_state_caps_free(&c);
		return r;
	}
	*ret = c;
	return 0;
}

void vcpu_state_caps_free(struct vcpu_state_caps *c)
{
	free(c->msrs);
	c->msrs = NULL;
	c->nmsrs = 0;
}

static int vcpu_get_fixed(struct vcpu *v, const struct vcpu_state_caps *caps, struct vcpu_state_fixed *f)
{
	if (ioctl(v->fd, KVM_GET_REGS, &f->regs) < 0)
		return err_setsys(-errno, "KVM_GET_REGS");
	if (ioctl(v->fd, KVM_GET_SREGS, &f->sregs) < 0)
		return err_setsys(-errno, "KVM_GET_SREGS");
	if (caps->xcrs && ioctl(v->fd, KVM_GET_XCRS, &f->xcrs) < 0)
		return err_setsys(-errno, "KVM_GET_XCRS");
	if (ioctl(v->fd, KVM_GET_LAPIC, &f->lapic) < 0)
		return err_setsys(-errno, "KVM_GET_LAPIC");
	if (ioctl(v->fd, KVM_GET_VCPU_EVENTS, &f->events) < 0)
		return err_setsys(-errno, "KVM_GET_VCPU_EVENTS");
	if (caps->debugregs && ioctl(v->fd, KVM_GET_DEBUGREGS, &f->debugregs) < 0)
		return err_setsys(-errno, "KVM_GET_DEBUGREGS");
	if (ioctl(v->fd, KVM_GET_MP_STATE, &f->mp) < 0)
		return err_setsys(-errno, "KVM_GET_MP_STATE");
	if (!caps->xsave_size && ioctl(v->fd, KVM_GET_FPU, &f->fpu) < 0)
		return err_setsys(-errno, "KVM_GET_FPU");
	f->xsave_size = caps->xsave_size;
	f->nmsrs = caps->nmsrs;
	return 0;
}

static int vcpu_get_xsave(struct vcpu *v, uint32_t size, struct snap_buf *out)
{
	_cleanup_free_ struct kvm_xsave *x = NULL;
	unsigned long req = size > sizeof(*x) ? KVM_GET_XSAVE2 : KVM_GET_XSAVE;

	if (!size)
		return 0;
	x = calloc(1, size);
	if (!x)
		return -ENOMEM;
	if (ioctl(v->fd, req, x) < 0)
		return err_setsys(-errno, "KVM_GET_XSAVE");
	return snap_buf_put(out, x, size);
}

static int vcpu_get_msrs(struct vcpu *v, const struct vcpu_state_caps *caps, struct snap_buf *out)
{
	_cleanup_free_ struct kvm_msrs *m = msrs_alloc(caps->nmsrs);
	int n;

	if (!m)
		return -ENOMEM;
	for (uint32_t i = 0; i < caps->nmsrs; i++)
		m->entries[i].index = caps->msrs[i];
	n = ioctl(v->fd, KVM_GET_MSRS, m);
	if (n < 0)
		return err_setsys(-errno, "KVM_GET_MSRS");
	if ((uint32_t)n != caps->nmsrs)
		return err_set(-EIO, "KVM_GET_MSRS read %d of %u MSRs (stopped at 0x%x)", n, caps->nmsrs,
		               caps->msrs[n]);
	return snap_buf_put(out, m->entries, caps->nmsrs * sizeof(m->entries[0]));
}

int vcpu_state_save(struct vcpu *v, const struct vcpu_state_caps *caps, struct snap_buf *out)
{
	struct vcpu_state_fixed f;
	int r;

	memset(&f, 0, sizeof(f));
	r = vcpu_get_fixed(v, caps, &f);
	if (r >= 0)
		r = snap_buf_put(out, &f, sizeof(f));
	if (r >= 0)
		r = vcpu_get_xsave(v, caps->xsave_size, out);
	if (r >= 0)
		r = vcpu_get_msrs(v, caps, out);
	if (r < 0)
		return err_prefix(r, "vCPU %u", v->id);
	return 0;
}

static int vcpu_set_msrs_saved(struct vcpu *v, const void *entries, uint32_t n)
{
	_cleanup_free_ struct kvm_msrs *m = msrs_alloc(n);
	int done;

	if (!m)
		return -ENOMEM;
	memcpy(m->entries, entries, n * sizeof(m->entries[0]));
	done = ioctl(v->fd, KVM_SET_MSRS, m);
	if (done < 0)
		return err_setsys(-errno, "KVM_SET_MSRS");
	if ((uint32_t)done != n)
		return err_set(-EIO, "KVM refused MSR 0x%x (value 0x%llx)", m->entries[done].index,
		               (unsigned long long)m->entries[done].data);
	return 0;
}

/* Firecracker's order, proven with Linux guests: MP state and registers
 * first; the LAPIC before the MSRs (the TSC deadline MSR is ignored unless
 * the LAPIC timer is in deadline mode); pending events last. */
static int vcpu_set_all(struct vcpu *v, struct vcpu_state_fixed *f, const void *xsave, const void *msrs)
{
	unsigned long xsave_req = KVM_SET_XSAVE;

	if (ioctl(v->fd, KVM_SET_MP_STATE, &f->mp) < 0)
		return err_setsys(-errno, "KVM_SET_MP_STATE");
	if (ioctl(v->fd, KVM_SET_REGS, &f->regs) < 0)
		return err_setsys(-errno, "KVM_SET_REGS");
	if (ioctl(v->fd, KVM_SET_SREGS, &f->sregs) < 0)
		return err_setsys(-errno, "KVM_SET_SREGS");
	if (f->xsave_size && ioctl(v->fd, xsave_req, xsave) < 0)
		return err_setsys(-errno, "KVM_SET_XSAVE");
	if (!f->xsave_size && ioctl(v->fd, KVM_SET_FPU, &f->fpu) < 0)
		return err_setsys(-errno, "KVM_SET_FPU");
	if (f->xcrs.nr_xcrs && ioctl(v->fd, KVM_SET_XCRS, &f->xcrs) < 0)
		return err_setsys(-errno, "KVM_SET_XCRS");
	if (ioctl(v->vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_DEBUGREGS) > 0 &&
	    ioctl(v->fd, KVM_SET_DEBUGREGS, &f->debugregs) < 0)
		return err_setsys(-errno, "KVM_SET_DEBUGREGS");
	if (ioctl(v->fd, KVM_SET_LAPIC, &f->lapic) < 0)
		return err_setsys(-errno, "KVM_SET_LAPIC");
	int r = vcpu_set_msrs_saved(v, msrs, f->nmsrs);
	if (r < 0)
		return r;
	f->events.flags |= KVM_VCPUEVENT_VALID_NMI_PENDING | KVM_VCPUEVENT_VALID_SIPI_VECTOR;
	if (ioctl(v->fd, KVM_SET_VCPU_EVENTS, &f->events) < 0)
		return err_setsys(-errno, "KVM_SET_VCPU_EVENTS");
	return 0;
}

int vcpu_state_load(struct vcpu *v, uint32_t xsave_size, const void *data, size_t len)
{
	struct snap_reader rd = {.p = data, .len = len};
	struct vcpu_state_fixed f;
	const uint8_t *xsave, *msrs;
	int r;

	if (snap_get(&rd, &f, sizeof(f)) < 0)
		return err_set(-EBADMSG, "vCPU %u: state section too short", v->id);
	if (f.xsave_size != xsave_size || f.nmsrs > VCPU_STATE_MAX_MSRS ||
	    len != sizeof(f) + f.xsave_size + (size_t)f.nmsrs * sizeof(struct kvm_msr_entry))
		return err_set(-EBADMSG, "vCPU %u: state section has a bad layout", v->id);
	xsave = rd.p + rd.off;
	msrs = xsave + f.xsave_size;
	/* KVM_SET_XSAVE reads 4096 bytes, or the KVM_CAP_XSAVE2 size, from an
	 * aligned struct kvm_xsave: copy it out of the section. */
	_cleanup_free_ void *x = NULL;
	if (f.xsave_size) {
		x = malloc(f.xsave_size);
		if (!x)
			return -ENOMEM;
		memcpy(x, xsave, f.xsave_size);
	}
	_cleanup_free_ void *m = malloc(f.nmsrs ? f.nmsrs * sizeof(struct kvm_msr_entry) : 1);
	if (!m)
		return -ENOMEM;
	memcpy(m, msrs, f.nmsrs * sizeof(struct kvm_msr_entry));
	r = vcpu_set_all(v, &f, x, m);
	if (r < 0)
		return err_prefix(r, "vCPU %u", v->id);
	return 0;
}
