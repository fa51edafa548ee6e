/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/host/host-probe.h"

static void at_root(const char *root, const char *path, char *buf, size_t size)
{
	snprintf(buf, size, "%s%s", root ? root : "", path);
}

/* Whether the space-separated list has word. */
static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; (p = strstr(p, word)); p += n) {
		bool start = p == list || p[-1] == ' ' || p[-1] == '\t' || p[-1] == ':';
		bool end = p[n] == 0 || p[n] == ' ' || p[n] == '\n' || p[n] == '\t';

		if (start && end)
			return true;
	}
	return false;
}

enum host_virt host_virt_probe(const char *root)
{
	_cleanup_fclose_ FILE *f = NULL;
	char path[4096], line[8192];

	at_root(root, "/proc/cpuinfo", path, sizeof(path));
	f = fopen(path, "re");
	if (!f)
		return HOST_VIRT_UNKNOWN;
	while (fgets(line, sizeof(line), f)) {
		bool virt, hv;

		if (strncmp(line, "flags", 5) != 0)
			continue;
		/* KVM without virtualisation extensions of its own is a
		 * paravirtual or emulating implementation. */
		virt = has_word(line, "vmx") || has_word(line, "svm");
		hv = has_word(line, "hypervisor");
		if (virt)
			return hv ? HOST_VIRT_NESTED : HOST_VIRT_HARDWARE;
		return hv ? HOST_VIRT_EMULATED : HOST_VIRT_NONE;
	}
	return HOST_VIRT_UNKNOWN;
}

const char *host_virt_name(enum host_virt v)
{
	switch (v) {
	case HOST_VIRT_HARDWARE:
		return "hardware";
	case HOST_VIRT_NESTED:
		return "nested";
	case HOST_VIRT_EMULATED:
		return "emulated";
	case HOST_VIRT_NONE:
		return "none";
	case HOST_VIRT_UNKNOWN:
		break;
	}
	return "unknown";
}

void host_kvm_probe(const char *root, struct host_kvm *ret)
{
	char path[4096];
	struct stat st;
	int fd;

	*ret = (struct host_kvm){0};
	at_root(root, "/dev/kvm", path, sizeof(path));
	if (stat(path, &st) < 0) {
		ret->error = errno;
		return;
	}
	ret->present = true;
	if (!S_ISCHR(st.st_mode)) {
		/* A stand-in under a test's root. */
		ret->usable = access(path, R_OK | W_OK) == 0;
		ret->error = ret->usable ? 0 : errno;
		return;
	}
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		ret->error = errno;
		return;
	}
	ret->usable = true;
	ret->api_version = ioctl(fd, KVM_GET_API_VERSION, 0);
	if (ret->api_version < 0)
		ret->api_version = 0;
	close(fd);
}

bool host_dev_present(const char *root, const char *dev)
{
	char path[4096];

	at_root(root, dev, path, sizeof(path));
	return access(path, F_OK) == 0;
}

/* The names of the v1 controller directories of dir, space separated. */
static void v1_controllers(const char *dir, char *out, size_t size)
{
	static const char *const known[] = {"cpu",     "cpuacct", "cpuset",  "memory",  "pids",      "blkio",
	                                    "devices", "freezer", "hugetlb", "net_cls", "perf_event"};
	char path[4200];
	size_t n = 0;

	out[0] = 0;
	for (size_t i = 0; i < ARRAY_SIZE(known); i++) {
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, known[i]);
		if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		n += (size_t)snprintf(out + n, n < size ? size - n : 0, "%s%s", n ? " " : "", known[i]);
		if (n >= size) {
			out[size - 1] = 0;
			return;
		}
	}
}

void host_cgroups_probe(const char *root, struct host_cgroups *ret)
{
	char dir[4000], path[4200];
	_cleanup_fclose_ FILE *f = NULL;

	*ret = (struct host_cgroups){0};
	at_root(root, "/run/systemd/system", path, sizeof(path));
	ret->systemd = access(path, F_OK) == 0;
	at_root(root, "/sys/fs/cgroup", dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/cgroup.controllers", dir);
	f = fopen(path, "re");
	if (f) {
		ret->layout = HOST_CGROUP_V2;
		if (fgets(ret->controllers, sizeof(ret->controllers), f))
			ret->controllers[strcspn(ret->controllers, "\n")] = 0;
		return;
	}
	v1_controllers(dir, ret->controllers, sizeof(ret->controllers));
	if (!ret->controllers[0])
		return;
	snprintf(path, sizeof(path), "%s/unified/cgroup.controllers", dir);
	ret->layout = access(path, F_OK) == 0 ? HOST_CGROUP_HYBRID : HOST_CGROUP_V1;
}

const char *host_cgroup_layout_name(enum host_cgroup_layout l)
{
	switch (l) {
	case HOST_CGROUP_V2:
		return "v2 (unified)";
	case HOST_CGROUP_HYBRID:
		return "hybrid (v1 controllers, cgroup2 at unified/)";
	case HOST_CGROUP_V1:
		return "v1";
	case HOST_CGROUP_NONE:
		break;
	}
	return "none mounted";
}
