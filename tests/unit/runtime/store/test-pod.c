/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdbool.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fileio.h"
#include "runtime/store/layout.h"
#include "runtime/store/pod.h"
#include "runtime/store/state.h"
#include "tap.h"

/* Annotation sets as the engines send them (keys and values as seen in
 * the config.json each one writes; values shortened). */
static const char *const cd16_sandbox[] = {"io.kubernetes.cri.container-type",
                                           "sandbox",
                                           "io.kubernetes.cri.sandbox-id",
                                           "5e1f0a",
                                           "io.kubernetes.cri.sandbox-name",
                                           "web",
                                           "io.kubernetes.cri.sandbox-namespace",
                                           "default",
                                           "io.kubernetes.cri.sandbox-log-directory",
                                           "/var/log/pods/default_web_1",
                                           NULL};
static const char *const cd17_sandbox[] = {"io.kubernetes.cri.container-type",
                                           "sandbox",
                                           "io.kubernetes.cri.sandbox-id",
                                           "5e1f0a",
                                           "io.kubernetes.cri.sandbox-cpu-period",
                                           "100000",
                                           "io.kubernetes.cri.sandbox-cpu-quota",
                                           "50000",
                                           "io.kubernetes.cri.sandbox-cpu-shares",
                                           "512",
                                           "io.kubernetes.cri.sandbox-memory",
                                           "268435456",
                                           "io.kubernetes.cri.sandbox-name",
                                           "web",
                                           "io.kubernetes.cri.sandbox-namespace",
                                           "default",
                                           NULL};
static const char *const cd2_sandbox[] = {"io.kubernetes.cri.container-type",
                                          "sandbox",
                                          "io.kubernetes.cri.sandbox-id",
                                          "5e1f0a",
                                          "io.kubernetes.cri.sandbox-uid",
                                          "0b7c",
                                          "io.kubernetes.cri.sandbox-name",
                                          "web",
                                          "io.kubernetes.cri.sandbox-namespace",
                                          "default",
                                          NULL};
static const char *const cd_container[] = {"io.kubernetes.cri.container-type",
                                           "container",
                                           "io.kubernetes.cri.sandbox-id",
                                           "5e1f0a",
                                           "io.kubernetes.cri.container-name",
                                           "httpd",
                                           "io.kubernetes.cri.image-name",
                                           "busybox:latest",
                                           "io.kubernetes.cri.sandbox-name",
                                           "web",
                                           "io.kubernetes.cri.sandbox-uid",
                                           "0b7c",
                                           NULL};
static const char *const crio_sandbox[] = {"io.kubernetes.cri-o.ContainerType",
                                           "sandbox",
                                           "io.kubernetes.cri-o.SandboxID",
                                           "77aa",
                                           "io.kubernetes.cri-o.Name",
                                           "k8s_POD_web_default",
                                           "io.kubernetes.cri-o.HostNetwork",
                                           "false",
                                           NULL};
static const char *const crio_container[] = {"io.kubernetes.cri-o.ContainerType",
                                             "container",
                                             "io.kubernetes.cri-o.SandboxID",
                                             "77aa",
                                             "io.kubernetes.cri-o.ContainerName",
                                             "k8s_httpd_web",
                                             "io.kubernetes.pod.name",
                                             "web",
                                             NULL};
/* Both engines' keys, agreeing. */
static const char *const crio_both[] = {"io.kubernetes.cri-o.ContainerType",
                                        "container",
                                        "io.kubernetes.cri-o.SandboxID",
                                        "77aa",
                                        "io.kubernetes.cri.container-type",
                                        "container",
                                        "io.kubernetes.cri.sandbox-id",
                                        "77aa",
                                        NULL};
/* podman's containers carry CRI-O's names; its pods are found by path. */
static const char *const libpod[] = {"io.container.manager",
                                     "libpod",
                                     "io.kubernetes.cri-o.ContainerType",
                                     "container",
                                     "io.kubernetes.cri-o.SandboxID",
                                     "e0c1",
                                     NULL};
static const char *const plain[] = {"org.opencontainers.image.title", "x", "io.kubernetes.cri.sandbox-id", "5e1f0a",
                                    NULL};

/* podman 4.3's pod: the infra container (no CRI-O type, podman's default
 * infra command) and its app containers' (CRI-O's type and sandbox id). */
static const char *const libpod_infra[] = {"io.container.manager",
                                           "libpod",
                                           "io.kubernetes.cri-o.Created",
                                           "2026-12-02T11:09:51.545956133Z",
                                           "io.kubernetes.cri-o.TTY",
                                           "false",
                                           "io.podman.annotations.autoremove",
                                           "FALSE",
                                           "io.podman.annotations.init",
                                           "FALSE",
                                           "org.opencontainers.image.stopSignal",
                                           "15",
                                           NULL};

static void fill(struct oci_map *m, const char *const *kv)
{
	oci_map_clear(m);
	for (size_t i = 0; kv[i]; i += 2)
		if (oci_map_set(m, kv[i], kv[i + 1]) < 0)
			abort();
}

TEST(annotations_recognised)
{
	static const struct {
		const char *name;
		const char *const *kv;
		enum pod_role role;
		const char *sandbox, *source;
	} table[] = {
	    {"containerd 1.6 sandbox", cd16_sandbox, POD_ROLE_SANDBOX, "5e1f0a", "annotation " POD_ANN_CRI_SANDBOX},
	    {"containerd 1.7 sandbox", cd17_sandbox, POD_ROLE_SANDBOX, "5e1f0a", "annotation " POD_ANN_CRI_SANDBOX},
	    {"containerd 2.x sandbox", cd2_sandbox, POD_ROLE_SANDBOX, "5e1f0a", "annotation " POD_ANN_CRI_SANDBOX},
	    {"containerd container", cd_container, POD_ROLE_CONTAINER, "5e1f0a", "annotation " POD_ANN_CRI_SANDBOX},
	    {"CRI-O sandbox", crio_sandbox, POD_ROLE_SANDBOX, "77aa", "annotation " POD_ANN_CRIO_SANDBOX},
	    {"CRI-O container", crio_container, POD_ROLE_CONTAINER, "77aa", "annotation " POD_ANN_CRIO_SANDBOX},
	    {"both engines' keys", crio_both, POD_ROLE_CONTAINER, "77aa", "annotation " POD_ANN_CRI_SANDBOX},
	    {"a sandbox id alone", plain, POD_ROLE_NONE, NULL, NULL},
	    {"podman's copy of CRI-O's keys", libpod, POD_ROLE_NONE, NULL, NULL},
	};
	struct oci_map m = {0};

	for (size_t i = 0; i < ARRAY_SIZE(table); i++) {
		struct pod_ref p = {0};

		fill(&m, table[i].kv);
		ok(pod_from_annotations(&m, &p) == 0, "%s: recognised", table[i].name);
		ok(p.role == table[i].role, "%s: role %d", table[i].name, (int)p.role);
		is_str(p.sandbox_id, table[i].sandbox);
		is_str(p.source, table[i].source);
		pod_ref_clear(&p);
	}
	oci_map_clear(&m);
}

TEST(annotations_refused)
{
	static const struct {
		const char *name;
		const char *kv[9];
		const char *msg;
	} table[] = {
	    {"unknown type",
	     {POD_ANN_CRI_TYPE, "pause", POD_ANN_CRI_SANDBOX, "a", NULL},
	     "annotation io.kubernetes.cri.container-type: \"pause\" is neither \"sandbox\" nor \"container\""},
	    {"container without sandbox",
	     {POD_ANN_CRIO_TYPE, "container", NULL},
	     "annotation io.kubernetes.cri-o.ContainerType is \"container\" but io.kubernetes.cri-o.SandboxID is "
	     "missing: which pod is it of?"},
	    {"sandbox id not an id",
	     {POD_ANN_CRI_TYPE, "container", POD_ANN_CRI_SANDBOX, "../etc", NULL},
	     "annotation io.kubernetes.cri.sandbox-id: \"../etc\" is not a valid container id"},
	    {"engines disagree",
	     {POD_ANN_CRI_TYPE, "container", POD_ANN_CRI_SANDBOX, "a", POD_ANN_CRIO_TYPE, "container",
	      POD_ANN_CRIO_SANDBOX, "b", NULL},
	     "annotations io.kubernetes.cri.container-type/io.kubernetes.cri.sandbox-id and "
	     "io.kubernetes.cri-o.ContainerType/io.kubernetes.cri-o.SandboxID name different pods or roles"},
	};
	struct oci_map m = {0};

	for (size_t i = 0; i < ARRAY_SIZE(table); i++) {
		struct pod_ref p = {0};

		err_clear();
		fill(&m, table[i].kv);
		ok(pod_from_annotations(&m, &p) == -EINVAL, "%s: refused", table[i].name);
		is_str(err_msg(), table[i].msg);
		ok(p.role == POD_ROLE_NONE && !p.sandbox_id, "%s: nothing returned", table[i].name);
	}
	oci_map_clear(&m);
}

TEST(podman_infra)
{
	static const struct {
		const char *name;
		const char *const *kv;
		const char *args[4];
		bool infra;
	} table[] = {
	    {"podman's infra container", libpod_infra, {"/catatonit", "-P", NULL}, true},
	    {"an ordinary podman container", libpod_infra, {"httpd", "-f", "-p", NULL}, false},
	    {"a podman container running catatonit as its init", libpod_infra, {"/catatonit", "--", "sh", NULL}, false},
	    {"catatonit -P with more arguments", libpod_infra, {"/catatonit", "-P", "-v", NULL}, false},
	    {"catatonit without -P", libpod_infra, {"/catatonit", NULL}, false},
	    {"catatonit -P elsewhere", libpod_infra, {"/usr/bin/catatonit", "-P", NULL}, false},
	    {"an app container of a podman pod running catatonit -P", libpod, {"/catatonit", "-P", NULL}, false},
	    {"catatonit -P not made by podman", plain, {"/catatonit", "-P", NULL}, false},
	    {"catatonit -P under CRI-O", crio_container, {"/catatonit", "-P", NULL}, false},
	};
	struct oci_process proc = {0};
	struct oci_spec spec = {.process = &proc};

	for (size_t i = 0; i < ARRAY_SIZE(table); i++) {
		struct pod_ref p = {0};

		fill(&spec.annotations, table[i].kv);
		proc.args = (char **)table[i].args;
		ok(pod_is_podman_infra(&spec) == table[i].infra, "%s: %s", table[i].name,
		   table[i].infra ? "the pod's sandbox" : "not a sandbox");
		/* No namespace paths: nothing to look up under a root. */
		is_int(pod_classify("/nonexistent", &spec, &p), 0);
		if (table[i].infra) {
			is_int(p.role, POD_ROLE_SANDBOX);
			ok(!p.sandbox_id && p.source && strstr(p.source, "podman's infra container"), "%s: source %s",
			   table[i].name, p.source ? p.source : "(none)");
		} else
			ok(p.role != POD_ROLE_SANDBOX, "%s: classified as no sandbox (%d)", table[i].name, (int)p.role);
		pod_ref_clear(&p);
	}
	/* No process at all. */
	fill(&spec.annotations, libpod_infra);
	spec.process = NULL;
	ok(!pod_is_podman_infra(&spec), "a podman spec without a process: not a sandbox");
	oci_map_clear(&spec.annotations);
}

TEST(pod_size)
{
	static const struct {
		const char *kv[7];
		int r;
		uint64_t memory, quota, period;
		const char *msg;
	} table[] = {
	    {{NULL}, 0, 0, 0, 0, NULL},
	    {{POD_ANN_CRI_MEMORY, "268435456", POD_ANN_CRI_CPU_QUOTA, "150000", POD_ANN_CRI_CPU_PERIOD, "100000", NULL},
	     0,
	     268435456,
	     150000,
	     100000,
	     NULL},
	    /* containerd's "no quota" */
	    {{POD_ANN_CRI_MEMORY, "0", POD_ANN_CRI_CPU_QUOTA, "-1", NULL}, 0, 0, 0, 0, NULL},
	    {{POD_ANN_CRI_MEMORY, "1G", NULL},
	     -EINVAL,
	     0,
	     0,
	     0,
	     "annotation io.kubernetes.cri.sandbox-memory: \"1G\" is not a number"},
	    {{POD_ANN_CRI_MEMORY, "-5", NULL},
	     -EINVAL,
	     0,
	     0,
	     0,
	     "annotation io.kubernetes.cri.sandbox-memory: \"-5\" is not a number"},
	    {{POD_ANN_CRI_CPU_QUOTA, "", NULL},
	     -EINVAL,
	     0,
	     0,
	     0,
	     "annotation io.kubernetes.cri.sandbox-cpu-quota: \"\" is not a number or -1"},
	    {{POD_ANN_CRI_CPU_PERIOD, "99999999999999999999999", NULL},
	     -EINVAL,
	     0,
	     0,
	     0,
	     "annotation io.kubernetes.cri.sandbox-cpu-period: \"99999999999999999999999\" is not a number"},
	};
	struct oci_map m = {0};

	for (size_t i = 0; i < ARRAY_SIZE(table); i++) {
		struct pod_size z = {.memory = 7};

		err_clear();
		fill(&m, table[i].kv);
		is_int(pod_size_from_annotations(&m, &z), table[i].r);
		if (table[i].r == 0)
			ok(z.memory == table[i].memory && z.cpu_quota == table[i].quota &&
			       z.cpu_period == table[i].period,
			   "size #%zu: memory %llu, quota %llu, period %llu", i, (unsigned long long)z.memory,
			   (unsigned long long)z.cpu_quota, (unsigned long long)z.cpu_period);
		else {
			is_str(err_msg(), table[i].msg);
			is_int(z.memory, 7);
		}
	}
	oci_map_clear(&m);
}

/* A process in a network namespace of its own, standing for a monitor. */
static pid_t spawn_monitor(void)
{
	int p[2];
	char c = 0;
	pid_t pid;

	if (pipe(p) < 0)
		return -errno;
	pid = fork();
	if (pid == 0) {
		c = unshare(CLONE_NEWNET) == 0 ? 'y' : 'n';
		if (write(p[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	if (pid < 0 || read(p[0], &c, 1) != 1 || c != 'y') {
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		pid = -EPERM;
	}
	close(p[0]);
	return pid;
}

static char root[64];

static int add_container(const char *id, pid_t pid, const char *netns)
{
	_cleanup_container_ struct container *c = NULL;
	struct oci_state *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	r = container_state_init(s, id, "/bundle", "/bundle/rootfs");
	if (r >= 0 && netns)
		r = oci_map_set(&s->private_data, STATE_KEY_NETNS, netns);
	if (r < 0) {
		oci_state_free(s);
		return r;
	}
	r = container_create(root, s, &c);
	if (r >= 0 && pid > 0)
		r = container_set_status(c, OCI_STATUS_CREATED, pid);
	return r;
}

/* Which container pod_sandbox_from_ns() finds for /proc/<pid>/ns/<type>,
 * or with task, the same file by another path: /proc/<pid>/task/<pid>/... */
static char *find(const char *type, int pid, bool task)
{
	const char *oci = strcmp(type, "net") ? type : "network";
	struct oci_namespace ns = {.type = (char *)oci, .kind = oci_namespace_kind_from_name(oci)};
	char path[128], *id = NULL;
	int r;

	if (task)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/ns/%s", pid, pid, type);
	else
		snprintf(path, sizeof(path), "/proc/%d/ns/%s", pid, type);
	ns.path = path;
	r = pod_sandbox_from_ns(root, &ns, &id);
	if (r < 0)
		return strdup("error");
	return r ? id : strdup("none");
}

static void check_find(const char *type, int pid, bool task, const char *want)
{
	char *got = find(type, pid, task);

	if (!ok(!strcmp(got, want), "%s namespace of %d%s: %s", type, pid, task ? " (task path)" : "", want))
		printf("#   got %s\n", got);
	free(got);
}

static void skip(const char *what, const char *why)
{
	printf("ok %d - %s: %s # SKIP %s\n", ++tap_count, tap_current, what, why);
}

TEST(namespace_paths)
{
	pid_t a, b;
	char a_net[64];

	strcpy(root, "/tmp/kvrun-pod-XXXXXX");
	if (!mkdtemp(root)) {
		skip("namespace paths", "cannot create a temporary directory");
		return;
	}
	a = spawn_monitor();
	b = a > 0 ? spawn_monitor() : -1;
	if (a < 0 || b < 0) {
		if (a > 0) {
			kill(a, SIGKILL);
			waitpid(a, NULL, 0);
		}
		rm_rf(root);
		skip("namespace paths", "needs CAP_SYS_ADMIN for network namespaces of the stand-in monitors");
		return;
	}
	/* "sb": monitor a. "a-cni": monitor b, serving the namespace of a
	 * by its recorded path (a CNI netns bind mount would be the same). */
	snprintf(a_net, sizeof(a_net), "/proc/%d/ns/net", (int)a);
	is_int(add_container("sb", a, NULL), 0);
	is_int(add_container("a-cni", b, a_net), 0);
	is_int(add_container("making", 0, NULL), 0);

	check_find("net", b, false, "a-cni");
	check_find("net", b, true, "a-cni");
	check_find("ipc", a, false, "sb");
	check_find("uts", a, false, "sb");
	/* The monitor shares the host's IPC namespace: only its pid counts. */
	check_find("ipc", 1, false, "none");
	check_find("ipc", a, true, "none");
	check_find("net", (int)getpid(), false, "none");
	check_find("net", 1, false, "none");
	/* a's namespace: recorded by a-cni, which sorts first. */
	check_find("net", a, true, "a-cni");

	kill(b, SIGKILL);
	waitpid(b, NULL, 0);
	/* a-cni is stopped now; a's own monitor still serves it. */
	check_find("net", a, true, "sb");
	kill(a, SIGKILL);
	waitpid(a, NULL, 0);
	check_find("ipc", a, false, "none");
	rm_rf(root);
}

TEST(classify_and_check)
{
	struct oci_namespace nss[2] = {{.type = "ipc", .kind = OCI_NS_IPC},
	                               {.type = "network", .kind = OCI_NS_NETWORK}};
	struct oci_linux lin = {.namespaces = nss, .n_namespaces = 2};
	struct oci_spec spec = {.linux_spec = &lin};
	struct pod_ref p = {0};
	char ipc[64];
	pid_t a;

	strcpy(root, "/tmp/kvrun-pod-XXXXXX");
	if (!mkdtemp(root)) {
		skip("classify", "cannot create a temporary directory");
		return;
	}
	/* No annotation, no path: not in a pod. */
	is_int(pod_classify(root, &spec, &p), 0);
	is_int(p.role, POD_ROLE_NONE);

	/* Annotations first; the sandbox they name must be up. */
	fill(&spec.annotations, cd_container);
	is_int(pod_classify(root, &spec, &p), 0);
	is_int(p.role, POD_ROLE_CONTAINER);
	err_clear();
	is_int(pod_check_sandbox(root, &p), -ENOENT);
	ok(strstr(err_msg(), "pod sandbox 5e1f0a (from annotation io.kubernetes.cri.sandbox-id) does not exist"),
	   "missing sandbox named: %s", err_msg());
	pod_ref_clear(&p);
	/* CRI-O may run a pod without a sandbox container. */
	fill(&spec.annotations, crio_container);
	is_int(pod_classify(root, &spec, &p), 0);
	ok(p.role == POD_ROLE_CONTAINER && p.sandbox_optional, "CRI-O: the sandbox may be missing");
	is_int(pod_check_sandbox(root, &p), 0);
	pod_ref_clear(&p);
	fill(&spec.annotations, cd_container);

	a = spawn_monitor();
	if (a < 0) {
		oci_map_clear(&spec.annotations);
		rm_rf(root);
		skip("classify by path", "needs CAP_SYS_ADMIN for a network namespace");
		return;
	}
	is_int(add_container("5e1f0a", a, NULL), 0);
	is_int(pod_classify(root, &spec, &p), 0);
	is_int(pod_check_sandbox(root, &p), 1);
	pod_ref_clear(&p);

	/* Without annotations, the IPC namespace of the sandbox's monitor. */
	oci_map_clear(&spec.annotations);
	snprintf(ipc, sizeof(ipc), "/proc/%d/ns/ipc", (int)a);
	nss[0].path = ipc;
	is_int(pod_classify(root, &spec, &p), 0);
	is_int(p.role, POD_ROLE_CONTAINER);
	is_str(p.sandbox_id, "5e1f0a");
	is_int(pod_check_sandbox(root, &p), 1);

	kill(a, SIGKILL);
	waitpid(a, NULL, 0);
	err_clear();
	is_int(pod_check_sandbox(root, &p), -ESRCH);
	ok(strstr(err_msg(), "is stopped: a container cannot join a pod whose VM is not up"), "stopped sandbox: %s",
	   err_msg());
	pod_ref_clear(&p);
	rm_rf(root);
}

TAP_MAIN()
