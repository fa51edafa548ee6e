/* SPDX-License-Identifier: Apache-2.0 */
/* The device cgroup rules and nodes of a container, as runc computes them. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/error.h"
#include "runtime/monitor/device-rules.h"

#define ANY (-1)
#define RWM (PROTO_DEV_ACC_READ | PROTO_DEV_ACC_WRITE | PROTO_DEV_ACC_MKNOD)

struct rule {
	char type; /* 'a', 'c' or 'b' */
	int64_t major, minor; /* ANY: all */
	uint32_t access;
	bool allow;
};

/* runc's specconv.AllowedDevices, appended after the spec's rules. */
static const struct rule default_rules[] = {
    {'c', ANY, ANY, PROTO_DEV_ACC_MKNOD, true},
    {'b', ANY, ANY, PROTO_DEV_ACC_MKNOD, true},
    {'c', 1, 3, RWM, true},
    /* null */ {'c', 1, 8, RWM, true}, /* random */
    {'c', 1, 7, RWM, true},
    /* full */ {'c', 5, 0, RWM, true}, /* tty */
    {'c', 1, 5, RWM, true},
    /* zero */ {'c', 1, 9, RWM, true}, /* urandom */
    {'c', 136, ANY, RWM, true},
    /* ptys */ {'c', 5, 2, RWM, true}, /* ptmx */
    {'c', 10, 200, RWM, true}, /* net/tun */
};

/* The v1 controller's state: a default and its exceptions (at most one
 * per rule applied: cap is the number of rules). */
struct emulator {
	bool default_allow;
	struct rule *ex;
	size_t n, cap;
	const char *what; /* names the rule being applied, for errors */
};

static struct rule *find(struct emulator *e, char type, int64_t major, int64_t minor)
{
	for (size_t i = 0; i < e->n; i++)
		if (e->ex[i].type == type && e->ex[i].major == major && e->ex[i].minor == minor)
			return &e->ex[i];
	return NULL;
}

static int add_exception(struct emulator *e, const struct rule *r)
{
	struct rule *x = find(e, r->type, r->major, r->minor);

	if (x) {
		x->access |= r->access;
		return 0;
	}
	if (e->n >= e->cap)
		return -ENOMEM;
	e->ex[e->n] = *r;
	e->ex[e->n++].allow = !e->default_allow;
	return 0;
}

static void access_text(uint32_t a, char out[4])
{
	size_t n = 0;

	if (a & PROTO_DEV_ACC_READ)
		out[n++] = 'r';
	if (a & PROTO_DEV_ACC_WRITE)
		out[n++] = 'w';
	if (a & PROTO_DEV_ACC_MKNOD)
		out[n++] = 'm';
	out[n] = 0;
}

static void num_text(int64_t v, char out[24])
{
	if (v == ANY)
		snprintf(out, 24, "*");
	else
		snprintf(out, 24, "%" PRId64, v);
}

/* Removing access from an exception cannot take it out of a wider
 * (wildcard) exception: the v1 controller cannot express the hole. */
static int rm_exception(struct emulator *e, const struct rule *r)
{
	const int64_t partial[3][2] = {{ANY, r->minor}, {r->major, ANY}, {ANY, ANY}};
	struct rule *x;

	for (size_t i = 0; i < 3; i++) {
		if (partial[i][0] == r->major && partial[i][1] == r->minor)
			continue;
		x = find(e, r->type, partial[i][0], partial[i][1]);
		if (x && (x->access & r->access)) {
			char a[4], b[4], ma[24], mi[24], wa[24], wi[24];

			access_text(r->access, a), access_text(x->access, b);
			num_text(r->major, ma), num_text(r->minor, mi), num_text(x->major, wa), num_text(x->minor, wi);
			return err_set(-EINVAL,
			               "%s: %c %s:%s %s cannot be taken out of the wider rule %c %s:%s %s (the devices "
			               "controller cannot punch a hole in a wildcard rule)",
			               e->what, r->type, ma, mi, a, x->type, wa, wi, b);
		}
	}
	x = find(e, r->type, r->major, r->minor);
	if (x) {
		x->access &= ~r->access;
		if (!x->access)
			*x = e->ex[--e->n];
	}
	return 0;
}

static int emulate(struct emulator *e, const struct rule *r)
{
	if (r->type == 'a') {
		e->default_allow = r->allow;
		e->n = 0;
		return 0;
	}
	/* An allow adds to the exceptions of a deny-all default and removes
	 * from those of an allow-all one; a deny the other way round. */
	if (r->allow != e->default_allow)
		return add_exception(e, r);
	return rm_exception(e, r);
}

static int parse_access(const char *s, size_t idx, uint32_t *ret)
{
	uint32_t a = 0;

	if (!s || !*s)
		return err_set(-EINVAL, "linux.resources.devices[%zu].access: must not be empty", idx);
	for (; *s; s++)
		a |= *s == 'r' ? PROTO_DEV_ACC_READ : *s == 'w' ? PROTO_DEV_ACC_WRITE : PROTO_DEV_ACC_MKNOD;
	*ret = a;
	return 0;
}

static int spec_rule(const struct oci_device_cgroup *d, size_t idx, struct rule *ret)
{
	*ret = (struct rule){.type = d->type && *d->type ? d->type[0] : 'a', .allow = d->allow};
	ret->major = d->has_major ? d->major : ANY;
	ret->minor = d->has_minor ? d->minor : ANY;
	if ((d->has_major && (d->major < 0 || d->major > UINT32_MAX)) ||
	    (d->has_minor && (d->minor < 0 || d->minor > UINT32_MAX)))
		return err_set(-EINVAL, "linux.resources.devices[%zu]: device number out of range", idx);
	return parse_access(d->access, idx, &ret->access);
}

static int cmp_rule(const void *a, const void *b)
{
	const struct rule *x = a, *y = b;

	if (x->major != y->major)
		return x->major < y->major ? -1 : 1;
	if (x->minor != y->minor)
		return x->minor < y->minor ? -1 : 1;
	return x->type - y->type;
}

static int emit(struct emulator *e, struct proto_start *s)
{
	s->device_filter = true;
	s->device_default_allow = e->default_allow;
	if (!e->n)
		return 0;
	qsort(e->ex, e->n, sizeof(*e->ex), cmp_rule);
	s->device_rules = calloc(e->n, sizeof(*s->device_rules));
	if (!s->device_rules)
		return -ENOMEM;
	for (size_t i = 0; i < e->n; i++)
		s->device_rules[i] = (struct proto_device_rule){
		    .type = (uint32_t)e->ex[i].type,
		    .has_major = e->ex[i].major != ANY,
		    .has_minor = e->ex[i].minor != ANY,
		    .major = e->ex[i].major == ANY ? 0 : (uint32_t)e->ex[i].major,
		    .minor = e->ex[i].minor == ANY ? 0 : (uint32_t)e->ex[i].minor,
		    .access = e->ex[i].access,
		};
	s->n_device_rules = e->n;
	return 0;
}

int device_rules_from_oci(const struct oci_linux_resources *res, struct proto_start *s)
{
	size_t n = res ? res->n_devices : 0;
	/* Deny-all to start with, as runc's emulator does. */
	struct emulator e = {.default_allow = false, .cap = n + ARRAY_SIZE(default_rules)};
	char what[64];
	struct rule r;
	int ret = 0;

	e.ex = calloc(e.cap, sizeof(*e.ex));
	if (!e.ex)
		return -ENOMEM;
	e.what = what;
	for (size_t i = 0; i < n && ret >= 0; i++) {
		snprintf(what, sizeof(what), "linux.resources.devices[%zu]", i);
		ret = spec_rule(&res->devices[i], i, &r);
		if (ret >= 0)
			ret = emulate(&e, &r);
	}
	e.what = "runc's default device rules, after linux.resources.devices";
	for (size_t i = 0; i < ARRAY_SIZE(default_rules) && ret >= 0; i++)
		ret = emulate(&e, &default_rules[i]);
	if (ret >= 0)
		ret = emit(&e, s);
	free(e.ex);
	return ret;
}

static int device_node(const struct oci_linux_device *d, size_t i, struct proto_device *ret)
{
	/* The kernel's dev_t: 12 bits of major, 20 of minor. */
	if (strcmp(d->type, "p") != 0 && (d->major < 0 || d->major > 4095 || d->minor < 0 || d->minor > 0xfffff))
		return err_set(-EINVAL,
		               "linux.devices[%zu] (%s): device number %" PRId64 ":%" PRId64 " is out of range", i,
		               d->path, d->major, d->minor);
	ret->path = strdup(d->path);
	if (!ret->path)
		return -ENOMEM;
	ret->type = (uint32_t)d->type[0];
	ret->major = (uint32_t)d->major;
	ret->minor = (uint32_t)d->minor;
	ret->mode = d->has_file_mode ? d->file_mode & 07777 : 0666;
	ret->uid = d->has_uid ? d->uid : 0;
	ret->gid = d->has_gid ? d->gid : 0;
	return 0;
}

int device_nodes_from_oci(const struct oci_linux *l, struct proto_start *s)
{
	int r;

	if (!l || !l->n_devices)
		return 0;
	s->devices = calloc(l->n_devices, sizeof(*s->devices));
	if (!s->devices)
		return -ENOMEM;
	s->n_devices = l->n_devices;
	for (size_t i = 0; i < l->n_devices; i++)
		if ((r = device_node(&l->devices[i], i, &s->devices[i])) < 0)
			return r;
	return 0;
}
