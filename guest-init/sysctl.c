/* SPDX-License-Identifier: Apache-2.0 */
/* Hostname, domainname and sysctl: the spec's per-container kernel settings. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "guest-init/guest-init.h"

int gi_set_names(const struct proto_start *s)
{
	if (s->hostname && sethostname(s->hostname, strlen(s->hostname)) < 0)
		return err_setsys(-errno, "sethostname %s", s->hostname);
	if (s->domainname && setdomainname(s->domainname, strlen(s->domainname)) < 0)
		return err_setsys(-errno, "setdomainname %s", s->domainname);
	return 0;
}

int gi_apply_sysctl(const struct proto_start *s)
{
	for (size_t i = 0; i < s->n_sysctl; i++) {
		const struct proto_keyval *kv = &s->sysctl[i];
		_cleanup_close_ int fd = -1;
		char path[PATH_MAX];
		int r;

		if (!kv->key || !kv->value || strstr(kv->key, ".."))
			return err_set(-EINVAL, "invalid sysctl %s", kv->key ? kv->key : "");
		if (snprintf(path, sizeof(path), "/proc/sys/%s", kv->key) >= (int)sizeof(path))
			return -ENAMETOOLONG;
		/* net.ipv4.ip_forward -> net/ipv4/ip_forward; a key may use
		 * slashes already (runc accepts both). */
		for (char *p = path + strlen("/proc/sys/"); *p; p++)
			if (*p == '.')
				*p = '/';
		fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			return err_setsys(-errno, "sysctl %s", kv->key);
		r = write_all(fd, kv->value, strlen(kv->value));
		if (r < 0)
			return err_setsys(r, "sysctl %s=%s", kv->key, kv->value);
	}
	return 0;
}
