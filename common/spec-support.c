/* SPDX-License-Identifier: Apache-2.0 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "common/cleanup.h"
#include "common/spec-support.h"

#ifndef MS_LAZYTIME
#define MS_LAZYTIME (1 << 25)
#endif
#ifndef MS_NOSYMFOLLOW
#define MS_NOSYMFOLLOW 256
#endif

const struct spec_mount_option spec_mount_options[] = {
    {"defaults", 0, false, false},
    {"ro", MS_RDONLY, false, false},
    {"rw", MS_RDONLY, true, false},
    {"nosuid", MS_NOSUID, false, false},
    {"suid", MS_NOSUID, true, false},
    {"nodev", MS_NODEV, false, false},
    {"dev", MS_NODEV, true, false},
    {"noexec", MS_NOEXEC, false, false},
    {"exec", MS_NOEXEC, true, false},
    {"sync", MS_SYNCHRONOUS, false, false},
    {"async", MS_SYNCHRONOUS, true, false},
    {"dirsync", MS_DIRSYNC, false, false},
    {"remount", MS_REMOUNT, false, false},
    {"mand", MS_MANDLOCK, false, false},
    {"nomand", MS_MANDLOCK, true, false},
    {"noatime", MS_NOATIME, false, false},
    {"atime", MS_NOATIME, true, false},
    {"nodiratime", MS_NODIRATIME, false, false},
    {"diratime", MS_NODIRATIME, true, false},
    {"relatime", MS_RELATIME, false, false},
    {"norelatime", MS_RELATIME, true, false},
    {"strictatime", MS_STRICTATIME, false, false},
    {"nostrictatime", MS_STRICTATIME, true, false},
    {"lazytime", MS_LAZYTIME, false, false},
    {"nolazytime", MS_LAZYTIME, true, false},
    {"iversion", MS_I_VERSION, false, false},
    {"noiversion", MS_I_VERSION, true, false},
    {"acl", MS_POSIXACL, false, false},
    {"noacl", MS_POSIXACL, true, false},
    {"silent", MS_SILENT, false, false},
    {"loud", MS_SILENT, true, false},
    {"nosymfollow", MS_NOSYMFOLLOW, false, false},
    {"symfollow", MS_NOSYMFOLLOW, true, false},
    {"bind", MS_BIND, false, false},
    {"rbind", MS_BIND | MS_REC, false, false},
    {"private", MS_PRIVATE, false, true},
    {"rprivate", MS_PRIVATE | MS_REC, false, true},
    {"shared", MS_SHARED, false, true},
    {"rshared", MS_SHARED | MS_REC, false, true},
    {"slave", MS_SLAVE, false, true},
    {"rslave", MS_SLAVE | MS_REC, false, true},
    {"unbindable", MS_UNBINDABLE, false, true},
    {"runbindable", MS_UNBINDABLE | MS_REC, false, true},
};
const size_t spec_mount_options_count = ARRAY_SIZE(spec_mount_options);

const struct spec_mount_option *spec_mount_option_find(const char *name)
{
	for (size_t i = 0; name && i < ARRAY_SIZE(spec_mount_options); i++)
		if (strcmp(spec_mount_options[i].name, name) == 0)
			return &spec_mount_options[i];
	return NULL;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

const char *const *spec_mount_option_names(void)
{
	static const char *names[ARRAY_SIZE(spec_mount_options) + 1];

	if (!names[0]) {
		for (size_t i = 0; i < ARRAY_SIZE(spec_mount_options); i++)
			names[i] = spec_mount_options[i].name;
		qsort(names, ARRAY_SIZE(spec_mount_options), sizeof(names[0]), cmp_str);
	}
	return names;
}

/* network is the VM's own; user (linux.uidMappings) and cgroup only when
 * the config asks for them. */
const struct spec_namespace spec_namespaces[] = {
    {"cgroup", CLONE_NEWCGROUP}, {"ipc", CLONE_NEWIPC},   {"mount", CLONE_NEWNS}, {"network", 0},
    {"pid", CLONE_NEWPID},       {"user", CLONE_NEWUSER}, {"uts", CLONE_NEWUTS},
};
const size_t spec_namespaces_count = ARRAY_SIZE(spec_namespaces);

const char *const *spec_namespace_names(void)
{
	static const char *names[ARRAY_SIZE(spec_namespaces) + 1];

	for (size_t i = 0; i < ARRAY_SIZE(spec_namespaces); i++)
		names[i] = spec_namespaces[i].name;
	return names;
}

/* SCMP_ACT_NOTIFY needs a listener outside the container: none here. */
const char *const spec_seccomp_actions[] = {
    "SCMP_ACT_ALLOW",        "SCMP_ACT_ERRNO",       "SCMP_ACT_KILL",
    "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD", "SCMP_ACT_LOG",
    "SCMP_ACT_TRACE",        "SCMP_ACT_TRAP",        NULL,
};

const char *const spec_seccomp_operators[] = {
    "SCMP_CMP_EQ", "SCMP_CMP_GE",        "SCMP_CMP_GT", "SCMP_CMP_LE",
    "SCMP_CMP_LT", "SCMP_CMP_MASKED_EQ", "SCMP_CMP_NE", NULL,
};

/* The guest is x86-64: a filter holds architectures of its byte order
 * only (libseccomp refuses the others, as runc's does with EDOM). */
const char *const spec_seccomp_archs[] = {
    "SCMP_ARCH_AARCH64",
    "SCMP_ARCH_ARM",
    "SCMP_ARCH_MIPSEL",
    "SCMP_ARCH_MIPSEL64",
    "SCMP_ARCH_MIPSEL64N32",
    "SCMP_ARCH_PPC64LE",
    "SCMP_ARCH_RISCV64",
    "SCMP_ARCH_X32",
    "SCMP_ARCH_X86",
    "SCMP_ARCH_X86_64",
    NULL,
};

const char *const spec_seccomp_flags[] = {
    "SECCOMP_FILTER_FLAG_TSYNC",
    "SECCOMP_FILTER_FLAG_LOG",
    "SECCOMP_FILTER_FLAG_SPEC_ALLOW",
    NULL,
};
