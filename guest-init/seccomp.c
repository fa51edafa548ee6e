/* SPDX-License-Identifier: Apache-2.0 */
/* The spec's seccomp profile through libseccomp, with runc's semantics. */
#include <ctype.h>
#include <errno.h>
#include <seccomp.h>
#include <string.h>

#include "common/error.h"
#include "guest-init/guest-init.h"

static int parse_action(const char *name, bool has_errno, uint32_t errno_ret, uint32_t *ret)
{
	if (!name)
		return err_set(-EINVAL, "seccomp: missing action");
	if (strcmp(name, "SCMP_ACT_ALLOW") == 0)
		*ret = SCMP_ACT_ALLOW;
	else if (strcmp(name, "SCMP_ACT_ERRNO") == 0)
		*ret = SCMP_ACT_ERRNO(has_errno ? errno_ret : EPERM);
	else if (strcmp(name, "SCMP_ACT_KILL") == 0 || strcmp(name, "SCMP_ACT_KILL_THREAD") == 0)
		*ret = SCMP_ACT_KILL_THREAD;
	else if (strcmp(name, "SCMP_ACT_KILL_PROCESS") == 0)
		*ret = SCMP_ACT_KILL_PROCESS;
	else if (strcmp(name, "SCMP_ACT_TRAP") == 0)
		*ret = SCMP_ACT_TRAP;
	else if (strcmp(name, "SCMP_ACT_TRACE") == 0)
		*ret = SCMP_ACT_TRACE(has_errno ? errno_ret : EPERM);
	else if (strcmp(name, "SCMP_ACT_LOG") == 0)
		*ret = SCMP_ACT_LOG;
	else
		return err_set(-EINVAL, "seccomp: unsupported action %s", name);
	return 0;
}

static int parse_op(const char *name, enum scmp_compare *ret)
{
	static const struct {
		const char *name;
		enum scmp_compare op;
	} ops[] = {
	    {"SCMP_CMP_NE", SCMP_CMP_NE},
	    {"SCMP_CMP_LT", SCMP_CMP_LT},
	    {"SCMP_CMP_LE", SCMP_CMP_LE},
	    {"SCMP_CMP_EQ", SCMP_CMP_EQ},
	    {"SCMP_CMP_GE", SCMP_CMP_GE},
	    {"SCMP_CMP_GT", SCMP_CMP_GT},
	    {"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ},
	};

	for (size_t i = 0; name && i < ARRAY_SIZE(ops); i++)
		if (strcmp(name, ops[i].name) == 0) {
			*ret = ops[i].op;
			return 0;
		}
	return err_set(-EINVAL, "seccomp: unknown operator %s", name ? name : "");
}

/* "SCMP_ARCH_X86_64" -> libseccomp's token. */
static uint32_t parse_arch(const char *name)
{
	char low[32];
	size_t i;

	if (strncmp(name, "SCMP_ARCH_", 10) == 0)
		name += 10;
	for (i = 0; name[i] && i < sizeof(low) - 1; i++)
		low[i] = (char)tolower((unsigned char)name[i]);
	low[i] = '\0';
	return seccomp_arch_resolve_name(low);
}

static int add_rule(scmp_filter_ctx ctx, const struct proto_seccomp_rule *rule, uint32_t def)
{
	struct scmp_arg_cmp cmp[6];
	uint32_t action;
	bool same_index = false;
	int r;

	r = parse_action(rule->action, rule->has_errno_ret, rule->errno_ret, &action);
	if (r < 0)
		return r;
	if (action == def || rule->n_args > ARRAY_SIZE(cmp))
		return action == def ? 0 : err_set(-EINVAL, "seccomp: too many arguments");
	for (size_t i = 0; i < rule->n_args; i++) {
		const struct proto_seccomp_arg *a = &rule->args[i];

		if (a->index > 5)
			return err_set(-EINVAL, "seccomp: argument index %u", a->index);
		r = parse_op(a->op, &cmp[i].op);
		if (r < 0)
			return r;
		cmp[i].arg = a->index;
		cmp[i].datum_a = a->value;
		cmp[i].datum_b = a->value_two;
		for (size_t j = 0; j < i; j++)
			same_index |= rule->args[j].index == a->index;
	}
	for (char **n = rule->names; n && *n; n++) {
		int nr = seccomp_syscall_resolve_name(*n);

		if (nr == __NR_SCMP_ERROR)
			continue; /* unknown on this kernel/arch: runc skips it too */
		if (!same_index) {
			r = seccomp_rule_add_array(ctx, action, nr, (unsigned int)rule->n_args, cmp);
		} else {
			/* Conditions on one argument are alternatives: one rule each. */
			for (size_t i = 0; i < rule->n_args && r >= 0; i++)
				r = seccomp_rule_add_array(ctx, action, nr, 1, &cmp[i]);
		}
		if (r < 0 && r != -EEXIST)
			return err_setsys(r, "seccomp: rule for %s", *n);
	}
	return 0;
}

static int apply_flags(scmp_filter_ctx ctx, char *const *flags)
{
	for (char *const *f = flags; f && *f; f++) {
		int r = 0;

		if (strcmp(*f, "SECCOMP_FILTER_FLAG_LOG") == 0)
			r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_LOG, 1);
		else if (strcmp(*f, "SECCOMP_FILTER_FLAG_SPEC_ALLOW") == 0)
			r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_SSB, 1);
		else if (strcmp(*f, "SECCOMP_FILTER_FLAG_TSYNC") != 0)
			return err_set(-EINVAL, "seccomp: unsupported flag %s", *f);
		if (r < 0)
			return err_setsys(r, "seccomp: flag %s", *f);
	}
	return 0;
}

int gi_seccomp_load(const struct proto_seccomp *sc)
{
	scmp_filter_ctx ctx;
	uint32_t def;
	int r;

	if (!sc)
		return 0;
	r = parse_action(sc->default_action, sc->has_default_errno_ret, sc->default_errno_ret, &def);
	if (r < 0)
		return r;
	ctx = seccomp_init(def);
	if (!ctx)
		return err_set(-ENOMEM, "seccomp_init");
	/* no_new_privs is the spec's decision, not libseccomp's. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	for (char **a = sc->architectures; r >= 0 && a && *a; a++) {
		uint32_t arch = parse_arch(*a);

		if (!arch) {
			/* As runc: an architecture libseccomp does not know is an error. */
			r = err_set(-EINVAL, "seccomp: unknown architecture %s", *a);
			break;
		}
		r = seccomp_arch_add(ctx, arch);
		if (r == -EEXIST)
			r = 0;
		else if (r < 0)
			err_setsys(r, "seccomp: architecture %s", *a);
	}
	if (r >= 0)
		r = apply_flags(ctx, sc->flags);
	for (size_t i = 0; r >= 0 && i < sc->n_rules; i++)
		r = add_rule(ctx, &sc->rules[i], def);
	if (r >= 0) {
		r = seccomp_load(ctx);
		if (r < 0)
			err_setsys(r, "seccomp_load");
	}
	seccomp_release(ctx);
	return r < 0 ? r : 0;
}
