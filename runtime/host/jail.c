/* SPDX-License-Identifier: Apache-2.0 */
/* The jail's steps (jail.h); the mount namespace is jail-mount.c's, the
 * seccomp filters jail-seccomp.c's. */
#include <errno.h>
#include <grp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/error.h"
#include "runtime/host/jail-int.h"

/* The lowest base: below it are the system's users and groups. */
#define UID_BASE_MIN 65536ul
#define UID_MAX_SIGNED 0x7ffffffful

bool jail_enabled(void)
{
	const char *s = getenv("KVRUN_JAIL");

	return !s || (strcmp(s, "0") != 0 && strcmp(s, "off") != 0);
}

bool jail_log_only(void)
{
	const char *s = getenv("KVRUN_JAIL");

	return s && !strcmp(s, "log");
}

int jail_uid_base_check(unsigned long base, const char *what)
{
	if (base < UID_BASE_MIN || base > UID_MAX_SIGNED - JAIL_UID_RANGE + 1)
		return err_set(-EINVAL, "%s: %lu leaves no room for %u jail uids between %lu and %lu", what, base,
		               JAIL_UID_RANGE, UID_BASE_MIN, UID_MAX_SIGNED);
	return 0;
}

int jail_uid_base(unsigned long *ret)
{
	const char *s = getenv("KVRUN_JAIL_UID_BASE");
	unsigned long v = JAIL_UID_BASE_DEFAULT;
	char *end;

	if (s && *s) {
		errno = 0;
		v = strtoul(s, &end, 0);
		if (errno || *end)
			return err_set(-EINVAL, "$KVRUN_JAIL_UID_BASE: '%s' is not a number", s);
	}
	*ret = v;
	return jail_uid_base_check(v, "$KVRUN_JAIL_UID_BASE");
}

void jail_ids_for(unsigned long base, pid_t pid, uid_t *ret_uid, gid_t *ret_gid)
{
	*ret_uid = (uid_t)(base + ((unsigned long)pid & (JAIL_UID_RANGE - 1)));
	*ret_gid = (gid_t)*ret_uid;
}

int jail_config_bind(struct jail_config *c, const char *path, bool writable)
{
	if (!path)
		return 0;
	if (c->nbinds == JAIL_MAX_BINDS)
		return err_set(-ENOSPC, "jail: more than %d paths", JAIL_MAX_BINDS);
	c->binds[c->nbinds++] = (struct jail_bind){.path = path, .writable = writable};
	return 0;
}

int jail_own_path(const char *path, uid_t uid, gid_t gid)
{
	if (chown(path, uid, gid) < 0 || chmod(path, 0600) < 0)
		return err_setsys(-errno, "jail: hand %s to uid %u", path, (unsigned)uid);
	return 0;
}

/* This thread's permitted and effective sets made of the capabilities in
 * mask (1 << CAP_*), nothing inheritable. */
static int set_caps(uint64_t mask)
{
	cap_t caps = cap_init();
	int r = 0;

	if (!caps)
		return err_setsys(-errno, "cap_init");
	for (cap_value_t c = 0; c <= CAP_LAST_CAP && c < 64; c++)
		if ((mask & (1ULL << c)) && (cap_set_flag(caps, CAP_PERMITTED, 1, &c, CAP_SET) < 0 ||
		                             cap_set_flag(caps, CAP_EFFECTIVE, 1, &c, CAP_SET) < 0)) {
			r = err_setsys(-errno, "jail: capability %d", (int)c);
			break;
		}
	if (r >= 0 && cap_set_proc(caps) < 0)
		r = err_setsys(-errno, "jail: drop capabilities");
	cap_free(caps);
	return r;
}

/* Of every capability, only those to take the jail's ids are left (and,
 * for a file server, the server's: its threads take them from the thread
 * that builds the VM); the bounding set and the ambient set go. For this
 * thread, and the threads it makes from now on. */
static int keep_setid_caps(const struct jail *j)
{
	uint64_t keep = (1ULL << CAP_SETUID) | (1ULL << CAP_SETGID);

	if (j->file_server)
		keep |= JAIL_FS_CAPS;
	for (int c = 0; c <= CAP_LAST_CAP; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return err_setsys(-errno, "jail: drop capability %d from the bounding set", c);
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return err_setsys(-errno, "jail: clear the ambient capabilities");
	return set_caps(keep);
}

/* This thread's permitted and effective sets made of the capabilities in
 * mask, by capset(2) alone (libcap would ask capget first, which no
 * filter allows). */
static int set_own_caps(uint64_t mask)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = {{0}};

	for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
		d[i].permitted = d[i].effective = (uint32_t)(mask >> (32 * i));
	if (syscall(SYS_capset, &h, d) < 0)
		return -errno;
	return 0;
}

/* The ids on every thread (the C library passes them to each): leaving
 * uid 0 for good clears every capability left. */
static int drop_ids(const struct jail *j)
{
	uid_t ru, eu, su;

	if (setgroups(0, NULL) < 0)
		return err_setsys(-errno, "jail: drop the supplementary groups");
	if (setresgid(j->gid, j->gid, j->gid) < 0)
		return err_setsys(-errno, "jail: gid %u", (unsigned)j->gid);
	if (setresuid(j->uid, j->uid, j->uid) < 0)
		return err_setsys(-errno, "jail: uid %u", (unsigned)j->uid);
	if (getresuid(&ru, &eu, &su) < 0 || ru != j->uid || eu != j->uid || su != j->uid)
		return err_set(-EPERM, "jail: still uid %u", (unsigned)eu);
	/* Changing the ids resets it to the fs.suid_dumpable sysctl. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return err_setsys(-errno, "jail: PR_SET_DUMPABLE");
	return 0;
}

int jail_begin(struct jail *j)
{
	int r;

	if (j->begun)
		return -EALREADY;
	/* While CAP_SYS_ADMIN is still there. */
	if (j->seal_state_dir && mount(NULL, JAIL_STATE_DIR, NULL,
	                               MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return err_setsys(-errno, "jail: seal %s", JAIL_STATE_DIR);
	/* No core, no ptrace by the same uid, root-owned /proc entries. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return err_setsys(-errno, "jail: PR_SET_DUMPABLE");
	r = keep_setid_caps(j);
	if (r < 0)
		return r;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return err_setsys(-errno, "jail: no_new_privs");
	for (int f = 0; f < JAIL_NR_FILTERS; f++)
		if (f != JAIL_FILTER_VCPU || j->profile == JAIL_MONITOR) {
			r = jail_filter_compile(j, (enum jail_filter)f);
			if (r < 0)
				return r;
		}
	r = jail_filter_load(j, JAIL_FILTER_BUILD, true);
	if (r < 0)
		return err_setsys(r, "jail: load the build filter");
	j->begun = true;
	return 0;
}

int jail_finish(struct jail *j)
{
	int r;

	if (!j->begun || j->finished)
		return -EINVAL;
	/* Every thread leaves uid 0, and with it every capability: all but a
	 * file server's threads, which have the jail's ids already and keep
	 * theirs (jail_fs_thread()). */
	r = drop_ids(j);
	if (r >= 0) {
		r = jail_filter_load(j, JAIL_FILTER_SERVE, true);
		if (r < 0)
			r = err_setsys(r, "jail: load the serving filter");
	}
	if (r >= 0)
		j->finished = true;
	return r;
}

int jail_fs_thread(void *opaque)
{
	struct jail *j = opaque;

	if (!j->file_server || !j->begun || j->finished)
		return -EINVAL;
	/* Raw calls: the C library would change the ids of every thread.
	 * PR_SET_KEEPCAPS keeps the permitted set through the change, which
	 * clears the effective set; capset then makes both the server's. */
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0 || syscall(SYS_setgroups, 0, NULL) < 0 ||
	    syscall(SYS_setresgid, j->gid, j->gid, j->gid) < 0 || syscall(SYS_setresuid, j->uid, j->uid, j->uid) < 0)
		return -errno;
	/* The change reset it, for the whole process, to fs.suid_dumpable. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return -errno;
	return set_own_caps(JAIL_FS_CAPS);
}

int jail_vcpu_thread(void *opaque)
{
	struct jail *j = opaque;

	return j->filters[JAIL_FILTER_VCPU].filter ? jail_filter_load(j, JAIL_FILTER_VCPU, false) : -EINVAL;
}

uid_t jail_uid(const struct jail *j)
{
	return j->uid;
}

void jail_free(struct jail *j)
{
	if (!j)
		return;
	for (int f = 0; f < JAIL_NR_FILTERS; f++)
		free(j->filters[f].filter);
	free(j);
}
