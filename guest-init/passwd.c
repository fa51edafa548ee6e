/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Users and groups from the container's /etc/passwd and /etc/group, parsed
 * here as runc does: guest-init is static, and NSS must not load modules
 * from (or look outside) the container.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "guest-init/guest-init.h"

/* Split a line into at most n ':'-separated fields in place. */
static size_t split_fields(char *line, char **f, size_t n)
{
	size_t i = 0;

	line[strcspn(line, "\n")] = '\0';
	while (i < n) {
		f[i++] = line;
		line = strchr(line, ':');
		if (!line)
			break;
		*line++ = '\0';
	}
	return i;
}

static bool parse_id(const char *s, uint32_t *ret)
{
	char *end;
	unsigned long v;

	if (!*s || *s == '-' || *s == '+')
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > UINT32_MAX)
		return false;
	*ret = (uint32_t)v;
	return true;
}

/* Find a passwd entry by name (name != NULL) or by uid. */
static int passwd_find(const char *path, const char *name, uid_t uid, struct gi_user *u)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		char *fl[7];
		uint32_t id, gid;

		if (split_fields(line, fl, 7) < 7 || !parse_id(fl[2], &id) || !parse_id(fl[3], &gid))
			continue;
		if (name ? strcmp(fl[0], name) != 0 : id != uid)
			continue;
		u->uid = id;
		u->gid = gid;
		u->name = strdup(fl[0]);
		u->home = strdup(fl[5][0] ? fl[5] : "/");
		return u->name && u->home ? 0 : -ENOMEM;
	}
	return -ENOENT;
}

/* Resolve a group name; with name NULL collect the groups user is a member of. */
static int group_scan(const char *path, const char *name, gid_t *ret_gid, const char *user, struct gi_user *u)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		char *fl[4], *save = NULL;
		uint32_t gid;

		if (split_fields(line, fl, 4) < 4 || !parse_id(fl[2], &gid))
			continue;
		if (name) {
			if (strcmp(fl[0], name) == 0) {
				*ret_gid = gid;
				return 0;
			}
			continue;
		}
		for (char *m = strtok_r(fl[3], ",", &save); m; m = strtok_r(NULL, ",", &save)) {
			gid_t *ng;

			if (strcmp(m, user) != 0)
				continue;
			if (u->n_sgids >= NGROUPS_MAX)
				return -E2BIG;
			ng = realloc(u->sgids, (u->n_sgids + 1) * sizeof(gid_t));
			if (!ng)
				return -ENOMEM;
			u->sgids = ng;
			u->sgids[u->n_sgids++] = gid;
		}
	}
	return name ? -ENOENT : 0;
}

int gi_user_resolve(const struct proto_process *p, const char *passwd_path, const char *group_path, struct gi_user *ret)
{
	struct gi_user u = {.uid = p->uid, .gid = p->gid};
	_cleanup_free_ char *spec = p->user ? strdup(p->user) : NULL;
	char *grp = NULL;
	uint32_t id;
	int r = 0;

	if (p->user && !spec)
		return -ENOMEM;
	if (spec) {
		grp = strchr(spec, ':');
		if (grp)
			*grp++ = '\0';
		if (parse_id(spec, &id)) {
			u.uid = id;
			u.gid = 0;
			r = passwd_find(passwd_path, NULL, id, &u);
		} else {
			r = passwd_find(passwd_path, spec, 0, &u);
			if (r < 0) {
				gi_user_free(&u);
				return err_set(-ENOENT, "unable to find user %s: no matching entries in passwd file",
				               spec);
			}
		}
		if (grp && parse_id(grp, &id)) {
			u.gid = id;
		} else if (grp && group_scan(group_path, grp, &u.gid, NULL, NULL) < 0) {
			gi_user_free(&u);
			return err_set(-ENOENT, "unable to find group %s: no matching entries in group file", grp);
		}
	} else {
		r = passwd_find(passwd_path, NULL, p->uid, &u);
		/* The spec's numbers win over the file's primary group. */
		u.uid = p->uid;
		u.gid = p->gid;
	}
	if (r == -ENOMEM) {
		gi_user_free(&u);
		return r;
	}
	if (!u.home)
		u.home = strdup("/");
	if (u.name) {
		r = group_scan(group_path, NULL, NULL, u.name, &u);
		if (r < 0 && r != -ENOENT) {
			gi_user_free(&u);
			return r;
		}
	}
	if (!u.home) {
		gi_user_free(&u);
		return -ENOMEM;
	}
	*ret = u;
	return 0;
}

void gi_user_free(struct gi_user *u)
{
	free(u->name);
	free(u->home);
	free(u->sgids);
	u->name = u->home = NULL;
	u->sgids = NULL;
	u->n_sgids = 0;
}
