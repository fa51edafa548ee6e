/* SPDX-License-Identifier: Apache-2.0 */
/* The example bundle config of `spec`: the same document runc writes, so
 * that tools and scripts written against `runc spec` work unchanged. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "oci-spec/defaults.h"
#include "oci-spec/gojson.h"
#include "oci-spec/jparse.h"

/* Member order matters: it is the order runc's Go structs print in. The
 * ociVersion is the one runc's spec prints (the runtime-spec version its
 * example was written for), not the newest version kvrun reads. */
/* clang-format off */
static const char example[] =
	"{\"ociVersion\":\"1.0.2-dev\","
	"\"process\":{\"terminal\":true,\"user\":{\"uid\":0,\"gid\":0},\"args\":[\"sh\"],"
	"\"env\":[\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\",\"TERM=xterm\"],"
	"\"cwd\":\"/\","
	"\"capabilities\":{"
	"\"bounding\":[\"CAP_AUDIT_WRITE\",\"CAP_KILL\",\"CAP_NET_BIND_SERVICE\"],"
	"\"effective\":[\"CAP_AUDIT_WRITE\",\"CAP_KILL\",\"CAP_NET_BIND_SERVICE\"],"
	"\"permitted\":[\"CAP_AUDIT_WRITE\",\"CAP_KILL\",\"CAP_NET_BIND_SERVICE\"],"
	"\"ambient\":[\"CAP_AUDIT_WRITE\",\"CAP_KILL\",\"CAP_NET_BIND_SERVICE\"]},"
	"\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":1024,\"soft\":1024}],"
	"\"noNewPrivileges\":true},"
	"\"root\":{\"path\":\"rootfs\",\"readonly\":true},"
	"\"hostname\":\"runc\","
	"\"mounts\":["
	"{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":\"proc\"},"
	"{\"destination\":\"/dev\",\"type\":\"tmpfs\",\"source\":\"tmpfs\","
	" \"options\":[\"nosuid\",\"strictatime\",\"mode=755\",\"size=65536k\"]},"
	"{\"destination\":\"/dev/pts\",\"type\":\"devpts\",\"source\":\"devpts\","
	" \"options\":[\"nosuid\",\"noexec\",\"newinstance\",\"ptmxmode=0666\",\"mode=0620\",\"gid=5\"]},"
	"{\"destination\":\"/dev/shm\",\"type\":\"tmpfs\",\"source\":\"shm\","
	" \"options\":[\"nosuid\",\"noexec\",\"nodev\",\"mode=1777\",\"size=65536k\"]},"
	"{\"destination\":\"/dev/mqueue\",\"type\":\"mqueue\",\"source\":\"mqueue\","
	" \"options\":[\"nosuid\",\"noexec\",\"nodev\"]},"
	"{\"destination\":\"/sys\",\"type\":\"sysfs\",\"source\":\"sysfs\","
	" \"options\":[\"nosuid\",\"noexec\",\"nodev\",\"ro\"]},"
	"{\"destination\":\"/sys/fs/cgroup\",\"type\":\"cgroup\",\"source\":\"cgroup\","
	" \"options\":[\"nosuid\",\"noexec\",\"nodev\",\"relatime\",\"ro\"]}],"
	"\"linux\":{"
	"\"resources\":{\"devices\":[{\"allow\":false,\"access\":\"rwm\"}]},"
	"\"namespaces\":["
	"{\"type\":\"pid\"},{\"type\":\"network\"},{\"type\":\"ipc\"},{\"type\":\"uts\"},{\"type\":\"mount\"}],"
	"\"maskedPaths\":["
	"\"/proc/acpi\",\"/proc/asound\",\"/proc/kcore\",\"/proc/keys\",\"/proc/latency_stats\","
	"\"/proc/timer_list\",\"/proc/timer_stats\",\"/proc/sched_debug\",\"/sys/firmware\",\"/proc/scsi\"],"
	"\"readonlyPaths\":[\"/proc/bus\",\"/proc/fs\",\"/proc/irq\",\"/proc/sys\",\"/proc/sysrq-trigger\"]}}";
/* clang-format on */

static json_t *id_mapping(unsigned id)
{
	return json_pack("[{s:i,s:I,s:i}]", "containerID", 0, "hostID", (json_int_t)id, "size", 1);
}

static bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Drop uid=/gid= options: the caller's ids may not map inside. */
static int strip_id_options(json_t *mount)
{
	json_t *opts = json_object_get(mount, "options"), *o;
	size_t i;

	if (!opts)
		return 0;
	for (i = json_array_size(opts); i-- > 0;) {
		o = json_array_get(opts, i);
		if (has_prefix(json_string_value(o), "uid=") || has_prefix(json_string_value(o), "gid="))
			json_array_remove(opts, i);
	}
	return 0;
}

/* What runc's ToRootless() does: no network namespace, a user namespace
 * mapping root to the caller, /sys as a read-only rbind, no cgroup limits. */
static int make_rootless(json_t *spec)
{
	json_t *lx = json_object_get(spec, "linux");
	json_t *nss = json_object_get(lx, "namespaces"), *mounts = json_object_get(spec, "mounts"), *m;
	_cleanup_json_ json_t *linux_new = json_object();
	const char *key;
	json_t *v;
	size_t i;
	int r = 0;

	for (i = json_array_size(nss); i-- > 0;) {
		const char *t = json_string_value(json_object_get(json_array_get(nss, i), "type"));
		if (strcmp(t, "network") == 0 || strcmp(t, "user") == 0)
			json_array_remove(nss, i);
	}
	jappend(nss, json_pack("{s:s}", "type", "user"), &r);
	json_array_foreach(mounts, i, m)
	{
		if (strcmp(json_string_value(json_object_get(m, "destination")), "/sys") == 0)
			json_array_set_new(mounts, i,
			                   json_pack("{s:s,s:s,s:s,s:[sssss]}", "destination", "/sys", "type", "none",
			                             "source", "/sys", "options", "rbind", "nosuid", "noexec", "nodev",
			                             "ro"));
		else
			strip_id_options(m);
	}
	/* Rebuild "linux" so the mappings come first, as Go prints them. */
	jset(linux_new, "uidMappings", id_mapping(geteuid()), &r);
	jset(linux_new, "gidMappings", id_mapping(getegid()), &r);
	json_object_foreach(lx, key, v) if (strcmp(key, "resources") != 0) jset(linux_new, key, json_incref(v), &r);
	if (r >= 0 && json_object_set(spec, "linux", linux_new) < 0)
		r = -ENOMEM;
	return r;
}

int oci_spec_default_json(bool rootless, char **ret)
{
	_cleanup_json_ json_t *spec = json_loads(example, 0, NULL);
	int r;

	if (!spec)
		return -ENOMEM;
	if (rootless) {
		r = make_rootless(spec);
		if (r < 0)
			return r;
	}
	return gojson_dump(spec, "\t", ret);
}
