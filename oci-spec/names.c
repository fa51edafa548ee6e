/* SPDX-License-Identifier: Apache-2.0 */
/* Name tables of the runtime-spec and small map/list helpers. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>

#include "common/cleanup.h"
#include "oci-spec/spec.h"
#include "common/rlimit.h"
#include "oci-spec/tables.h"

static const char *const namespace_names[OCI_NS__MAX] = {
    [OCI_NS_PID] = "pid", [OCI_NS_NETWORK] = "network", [OCI_NS_MOUNT] = "mount",   [OCI_NS_IPC] = "ipc",
    [OCI_NS_UTS] = "uts", [OCI_NS_USER] = "user",       [OCI_NS_CGROUP] = "cgroup", [OCI_NS_TIME] = "time",
};

enum oci_namespace_kind oci_namespace_kind_from_name(const char *name)
{
	for (int i = 0; name && i < OCI_NS__MAX; i++)
		if (strcmp(name, namespace_names[i]) == 0)
			return i;
	return OCI_NS_UNKNOWN;
}

const char *oci_namespace_kind_name(enum oci_namespace_kind kind)
{
	if (kind < 0 || kind >= OCI_NS__MAX)
		return NULL;
	return namespace_names[kind];
}

static const char *const hook_names[OCI_HOOK__MAX] = {
    [OCI_HOOK_PRESTART] = "prestart",
    [OCI_HOOK_CREATE_RUNTIME] = "createRuntime",
    [OCI_HOOK_CREATE_CONTAINER] = "createContainer",
    [OCI_HOOK_START_CONTAINER] = "startContainer",
    [OCI_HOOK_POSTSTART] = "poststart",
    [OCI_HOOK_POSTSTOP] = "poststop",
};

const char *oci_hook_kind_name(enum oci_hook_kind kind)
{
	if ((int)kind < 0 || kind >= OCI_HOOK__MAX)
		return NULL;
	return hook_names[kind];
}

int oci_rlimit_from_name(const char *name)
{
	return rlimit_from_name(name);
}

/* Go's strconv.Atoi: an optional sign, then decimal digits only. */
static bool go_atoi(const char *s, long long *ret)
{
	bool neg = *s == '-';
	unsigned long long v = 0;

	if (*s == '+' || *s == '-')
		s++;
	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (unsigned long long)LLONG_MAX / 10)
			return false;
		v = v * 10 + (unsigned long long)(*s - '0');
		if (v > (unsigned long long)LLONG_MAX + neg)
			return false;
	}
	*ret = neg ? (long long)(0 - v) : (long long)v;
	return true;
}

int oci_signal_from_name(const char *name)
{
	const char *s = name;
	long long n;

	if (!name)
		return -EINVAL;
	if (go_atoi(name, &n))
		return n >= 0 && n < _NSIG ? (int)n : -ERANGE;
	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	/* The names runc knows (golang.org/x/sys/unix): SIGHUP..SIGSYS by
	 * their main names, no SIGRTMIN+n, no aliases (SIGIOT, SIGCLD). */
	for (int i = 1; i < 32; i++) {
		const char *abbrev = sigabbrev_np(i);

		if (abbrev && strcasecmp(abbrev, s) == 0)
			return i;
	}
	return -EINVAL;
}

/* In number order: index == capability number. */
static const char *const capability_names[] = {
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_DAC_READ_SEARCH",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETPCAP",
    "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST",
    "CAP_NET_ADMIN",
    "CAP_NET_RAW",
    "CAP_IPC_LOCK",
    "CAP_IPC_OWNER",
    "CAP_SYS_MODULE",
    "CAP_SYS_RAWIO",
    "CAP_SYS_CHROOT",
    "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT",
    "CAP_SYS_ADMIN",
    "CAP_SYS_BOOT",
    "CAP_SYS_NICE",
    "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME",
    "CAP_SYS_TTY_CONFIG",
    "CAP_MKNOD",
    "CAP_LEASE",
    "CAP_AUDIT_WRITE",
    "CAP_AUDIT_CONTROL",
    "CAP_SETFCAP",
    "CAP_MAC_OVERRIDE",
    "CAP_MAC_ADMIN",
    "CAP_SYSLOG",
    "CAP_WAKE_ALARM",
    "CAP_BLOCK_SUSPEND",
    "CAP_AUDIT_READ",
    "CAP_PERFMON",
    "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE",
    NULL,
};

int oci_capability_from_name(const char *name)
{
	for (size_t i = 0; name && capability_names[i]; i++)
		if (strcmp(name, capability_names[i]) == 0)
			return (int)i;
	return -EINVAL;
}

const char *const *oci_capability_names(void)
{
	return capability_names;
}

static bool in_list(const char *const *list, const char *name)
{
	for (; name && *list; list++)
		if (strcmp(*list, name) == 0)
			return true;
	return false;
}

const char *const oci_seccomp_actions[] = {
    "SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO",  "SCMP_ACT_KILL",  "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD",
    "SCMP_ACT_LOG",   "SCMP_ACT_NOTIFY", "SCMP_ACT_TRACE", "SCMP_ACT_TRAP",         NULL,
};

const char *const oci_seccomp_operators[] = {
    "SCMP_CMP_EQ", "SCMP_CMP_GE",        "SCMP_CMP_GT", "SCMP_CMP_LE",
    "SCMP_CMP_LT", "SCMP_CMP_MASKED_EQ", "SCMP_CMP_NE", NULL,
};

const char *const oci_seccomp_archs[] = {
    "SCMP_ARCH_AARCH64",  "SCMP_ARCH_ARM",         "SCMP_ARCH_MIPS",
    "SCMP_ARCH_MIPS64",   "SCMP_ARCH_MIPS64N32",   "SCMP_ARCH_MIPSEL",
    "SCMP_ARCH_MIPSEL64", "SCMP_ARCH_MIPSEL64N32", "SCMP_ARCH_PPC",
    "SCMP_ARCH_PPC64",    "SCMP_ARCH_PPC64LE",     "SCMP_ARCH_RISCV64",
    "SCMP_ARCH_S390",     "SCMP_ARCH_S390X",       "SCMP_ARCH_X32",
    "SCMP_ARCH_X86",      "SCMP_ARCH_X86_64",      NULL,
};

const char *const oci_seccomp_flags[] = {
    "SECCOMP_FILTER_FLAG_TSYNC",
    "SECCOMP_FILTER_FLAG_LOG",
    "SECCOMP_FILTER_FLAG_SPEC_ALLOW",
    "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV",
    NULL,
};

bool oci_seccomp_action_known(const char *name)
{
	return in_list(oci_seccomp_actions, name);
}

bool oci_seccomp_operator_known(const char *name)
{
	return in_list(oci_seccomp_operators, name);
}

bool oci_seccomp_arch_known(const char *name)
{
	return in_list(oci_seccomp_archs, name);
}

bool oci_seccomp_flag_known(const char *name)
{
	return in_list(oci_seccomp_flags, name);
}

size_t oci_strv_length(char *const *v)
{
	size_t n = 0;

	while (v && v[n])
		n++;
	return n;
}

void oci_strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

const char *oci_map_get(const struct oci_map *m, const char *key)
{
	for (size_t i = 0; m && i < m->n; i++)
		if (strcmp(m->items[i].key, key) == 0)
			return m->items[i].value;
	return NULL;
}

int oci_map_set(struct oci_map *m, const char *key, const char *value)
{
	_cleanup_free_ char *v = strdup(value);
	char *k;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->items[i].key, key) == 0) {
			free(m->items[i].value);
			m->items[i].value = TAKE_PTR(v);
			return 0;
		}
	struct oci_kv *items = realloc(m->items, (m->n + 1) * sizeof(*items));
	if (!items)
		return -ENOMEM;
	m->items = items;
	k = strdup(key);
	if (!k)
		return -ENOMEM;
	items[m->n++] = (struct oci_kv){k, TAKE_PTR(v)};
	return 0;
}

void oci_map_clear(struct oci_map *m)
{
	for (size_t i = 0; m && i < m->n; i++) {
		free(m->items[i].key);
		free(m->items[i].value);
	}
	if (m) {
		free(m->items);
		m->items = NULL;
		m->n = 0;
	}
}
