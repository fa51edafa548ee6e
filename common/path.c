/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/path.h"

/* Drop the first clen bytes of what is left to walk. */
static void rest_skip(char *rest, const char *p, size_t clen)
{
	memmove(rest, p + clen, strlen(p + clen) + 1);
}

/* The component just added to out is a symlink to link: it is replaced by
 * the link's target, which is walked before the rest. */
static int follow(char *out, char *rest, const char *link, size_t ll)
{
	char buf[PATH_MAX];
	size_t rl = strlen(rest);

	*strrchr(out, '/') = '\0';
	if (link[0] == '/')
		out[0] = '\0';
	if (ll + 1 + rl >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, link, ll);
	buf[ll] = '/';
	memcpy(buf + ll + 1, rest, rl + 1);
	memcpy(rest, buf, ll + rl + 2);
	return 0;
}

int path_resolve_in(const char *root, const char *unsafe, char *out, size_t outlen)
{
	char rest[PATH_MAX], link[PATH_MAX], full[PATH_MAX];
	int links = 0, r;

	if (outlen == 0)
		return -ENAMETOOLONG;
	out[0] = '\0';
	if (snprintf(rest, sizeof(rest), "%s", unsafe) >= (int)sizeof(rest))
		return -ENAMETOOLONG;
	while (rest[0]) {
		char *p = rest, *slash;
		size_t clen, olen;
		ssize_t n;

		while (*p == '/')
			p++;
		slash = strchr(p, '/');
		clen = slash ? (size_t)(slash - p) : strlen(p);
		if (clen > NAME_MAX || strlen(out) + 1 + clen >= outlen)
			return -ENAMETOOLONG;
		if (clen == 0 || (clen == 1 && p[0] == '.')) {
			rest_skip(rest, p, clen);
			continue;
		}
		if (clen == 2 && p[0] == '.' && p[1] == '.') {
			char *last = strrchr(out, '/');

			if (last)
				*last = '\0';
			rest_skip(rest, p, clen);
			continue;
		}
		olen = strlen(out);
		out[olen] = '/';
		memcpy(out + olen + 1, p, clen);
		out[olen + 1 + clen] = '\0';
		rest_skip(rest, p, clen);
		if (snprintf(full, sizeof(full), "%s%s", root, out) >= (int)sizeof(full))
			return -ENAMETOOLONG;
		n = readlink(full, link, sizeof(link) - 1);
		if (n < 0)
			continue; /* not a symlink, or not there (yet) */
		link[n] = '\0';
		if (++links > 40)
			return -ELOOP;
		r = follow(out, rest, link, (size_t)n);
		if (r < 0)
			return r;
	}
	return 0;
}

int path_join_in(const char *root, const char *unsafe, char **ret)
{
	char rel[PATH_MAX];
	int r = path_resolve_in(root, unsafe, rel, sizeof(rel));

	if (r < 0)
		return r;
	if (strlen(root) + strlen(rel) + 2 > PATH_MAX)
		return -ENAMETOOLONG;
	if (asprintf(ret, "%s%s", root, rel[0] ? rel : "/") < 0)
		return -ENOMEM;
	return 0;
}
