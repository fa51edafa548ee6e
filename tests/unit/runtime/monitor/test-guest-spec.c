/* SPDX-License-Identifier: Apache-2.0 */
/* A bundle's spec turned into what the VM needs: which mounts become
 * virtio-fs shares (grouping, read-only-ness, the names a share shows, a
 * shared root), the refusals, and the START message guest-init applies. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/fileio.h"
#include "runtime/monitor/device-rules.h"
#include "runtime/monitor/guest-linux.h"
#include "runtime/monitor/guest-shares.h"
#include "runtime/monitor/guest-spec.h"
#include "tap.h"

static char tmp[] = "/tmp/kvrun-guest-spec-XXXXXX";

static struct oci_spec *spec_from(const char *json)
{
	struct oci_spec *s = NULL;
	int r = oci_spec_parse(json, strlen(json), "config.json", &s);

	ok(r == 0, "spec parses: %s", r < 0 ? err_msg() : "");
	return s;
}

/* A spec with a process and these mounts (JSON objects, comma-joined). */
static struct oci_spec *spec_mounts(const char *mounts, bool ro_root)
{
	char json[8192];

	snprintf(json, sizeof(json),
	         "{\"ociVersion\": \"1.2.0\", \"root\": {\"path\": \"rootfs\", \"readonly\": %s}, \"process\": "
	         "{\"args\": [\"/x\"], \"cwd\": \"/\"}, \"mounts\": [%s]}",
	         ro_root ? "true" : "false", mounts);
	return spec_from(json);
}

static const char *p(const char *rel)
{
	static char buf[16][256];
	static int n;

	n = (n + 1) % 16;
	snprintf(buf[n], sizeof(buf[n]), "%s/%s", tmp, rel);
	return buf[n];
}

static int count_fds(void)
{
	_cleanup_closedir_ DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (d && readdir(d))
		n++;
	return n;
}

/* Whether fd is the directory at path. */
static bool same_dir(int fd, const char *path)
{
	struct stat a, b;

	return fd >= 0 && fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino &&
	       S_ISDIR(a.st_mode);
}

static bool names_are(char **names, const char *a, const char *b)
{
	return names && names[0] && !strcmp(names[0], a) &&
	       (b ? names[1] && !strcmp(names[1], b) && !names[2] : !names[1]);
}

TEST(setup)
{
	ok(mkdtemp(tmp) != NULL, "a scratch directory");
	is_int(mkdir_p(p("ctr"), 0755), 0);
	is_int(mkdir_p(p("vol"), 0755), 0);
	is_int(mkdir_p(p("rootfs"), 0755), 0);
	is_int(write_file_atomic(p("ctr/hosts"), "127.0.0.1 x\n", 12, 0644), 0);
	is_int(write_file_atomic(p("ctr/resolv.conf"), "nameserver 1.1.1.1\n", 19, 0644), 0);
	is_int(write_file_atomic(p("ctr/hostname"), "h\n", 2, 0644), 0);
	is_int(write_file_atomic(p("vol/f"), "f", 1, 0644), 0);
	is_int(symlink(p("vol"), p("link")), 0);
}

/* The kinds of mounts a docker container has: its files, a volume twice,
 * read-only binds, a file inside a shared volume, a symlinked source,
 * tmpfs. */
TEST(which_mounts_are_shares)
{
	char m[4096];
	struct guest_shares g;
	struct oci_spec *s;

	snprintf(m, sizeof(m),
	         "{\"destination\": \"/proc\", \"type\": \"proc\", \"source\": \"proc\"},"
	         "{\"destination\": \"/etc/hosts\", \"type\": \"bind\", \"source\": \"%s\", \"options\": [\"rbind\"]},"
	         "{\"destination\": \"/etc/resolv.conf\", \"source\": \"%s\", \"options\": [\"bind\", \"rprivate\"]},"
	         "{\"destination\": \"/data\", \"type\": \"bind\", \"source\": \"%s\", \"options\": [\"rbind\"]},"
	         "{\"destination\": \"/again\", \"type\": \"bind\", \"source\": \"%s/\", \"options\": [\"rbind\"]},"
	         "{\"destination\": \"/ro\", \"type\": \"bind\", \"source\": \"%s\", \"options\": [\"rbind\", \"ro\"]},"
	         "{\"destination\": \"/etc/hostname\", \"type\": \"bind\", \"source\": \"%s\", \"options\": "
	         "[\"rbind\", \"rro\"]},"
	         "{\"destination\": \"/in-vol\", \"type\": \"bind\", \"source\": \"%s\", \"options\": [\"bind\"]},"
	         "{\"destination\": \"/tmp\", \"type\": \"tmpfs\", \"source\": \"tmpfs\", \"options\": [\"nosuid\"]},"
	         "{\"destination\": \"/via-link\", \"type\": \"bind\", \"source\": \"%s\", \"options\": [\"rbind\", "
	         "\"ro\", \"rw\"]}",
	         p("ctr/hosts"), p("ctr/resolv.conf"), p("vol"), p("vol"), p("vol"), p("ctr/hostname"), p("vol/f"),
	         p("link"));
	s = spec_mounts(m, false);
	is_int(guest_shares_plan(s, NULL, FS_LOCKS_HOST, &g), 0);
	is_int(g.n, 4);
	is_int(g.root, -1);
	/* Share 0: the container's files, only those names of its directory. */
	ok(same_dir(g.shares[0].dir_fd, p("ctr")) && !g.shares[0].read_only && g.shares[0].files,
	   "the files of one directory are one share, opened");
	ok(names_are(g.shares[0].names, "hosts", "resolv.conf"), "it shows hosts and resolv.conf only");
	/* Share 1: the volume, whole, for both binds, the file in it and
	 * the symlinked source (its last ro is undone by rw). */
	ok(same_dir(g.shares[1].dir_fd, p("vol")) && !g.shares[1].names && !g.shares[1].read_only && !g.shares[1].files,
	   "a directory is shared whole");
	ok(same_dir(g.shares[2].dir_fd, p("vol")) && g.shares[2].read_only && !g.shares[2].names,
	   "a read-only bind of it is a read-only share of its own");
	ok(same_dir(g.shares[3].dir_fd, p("ctr")) && g.shares[3].read_only &&
	       names_are(g.shares[3].names, "hostname", NULL),
	   "a read-only file (rro) is a read-only share of its directory");
	is_int(g.n_mounts, 10);
	is_int(g.mounts[0].share, -1);
	ok(g.mounts[1].share == 0 && !strcmp(g.mounts[1].name, "hosts"), "hosts: share 0, entry hosts");
	ok(g.mounts[2].share == 0 && !strcmp(g.mounts[2].name, "resolv.conf"), "resolv.conf: share 0");
	ok(g.mounts[3].share == 1 && !g.mounts[3].name, "the volume: share 1, its root");
	ok(g.mounts[4].share == 1 && !g.mounts[4].name, "the volume again (trailing slash): share 1");
	ok(g.mounts[5].share == 2, "read-only: share 2");
	ok(g.mounts[6].share == 3 && !strcmp(g.mounts[6].name, "hostname"), "hostname: share 3");
	ok(g.mounts[7].share == 1 && !strcmp(g.mounts[7].name, "f"), "a file of a volume shared whole: that share");
	is_int(g.mounts[8].share, -1);
	ok(g.mounts[9].share == 1 && !g.mounts[9].name, "a symlinked source resolves to the volume");

	/* The START message: tags and entries, options as given, no data. */
	struct proto_start st;
	is_int(guest_spec_from_oci(s, NULL, &g, &st), 0);
	is_str(st.root_device, "/dev/vda");
	is_str(st.root_fstype, "ext4");
	ok(!st.mounts[0].share, "proc is mounted in the guest");
	ok(st.mounts[1].share && !strcmp(st.mounts[1].share, "kvrun-fs0") && !strcmp(st.mounts[1].share_path, "hosts"),
	   "hosts: kvrun-fs0/hosts");
	ok(!st.mounts[1].has_data, "nothing is copied");
	is_str(st.mounts[1].source, p("ctr/hosts"));
	is_str(st.mounts[1].options[0], "rbind");
	ok(!strcmp(st.mounts[3].share, "kvrun-fs1") && !st.mounts[3].share_path, "the volume: kvrun-fs1, its root");
	ok(!strcmp(st.mounts[5].share, "kvrun-fs2") && !strcmp(st.mounts[5].options[1], "ro"), "ro: kvrun-fs2, ro");
	ok(!strcmp(st.mounts[7].share, "kvrun-fs1") && !strcmp(st.mounts[7].share_path, "f"), "kvrun-fs1/f");
	ok(!st.mounts[8].share && !strcmp(st.mounts[8].type, "tmpfs"), "tmpfs stays in the guest");
	proto_start_free(&st);

	/* What the VM builder gets. */
	struct sandbox_share sh[GUEST_SHARES_MAX];
	char tags[GUEST_SHARES_MAX][GUEST_SHARE_TAG_SIZE];
	is_int(guest_shares_to_sandbox(&g, 42, tags, sh), 4);
	is_str(sh[3].tag, "kvrun-fs3");
	ok(sh[3].dir_fd == g.shares[3].dir_fd && sh[3].proc_fd == 42 && sh[3].read_only &&
	       sh[3].names == g.shares[3].names,
	   "share 3: its descriptor, /proc/self/fd, read-only, its names");
	ok(sh[0].locks == FS_LOCKS_HOST && sh[3].locks == FS_LOCKS_HOST, "host locks as asked");
	ok(sh[0].workers < sh[1].workers, "a share of files has fewer workers (%u) than a volume (%u)", sh[0].workers,
	   sh[1].workers);

	/* The root disk's mount points: a file for a file, else a directory. */
	struct rootfs_mount_point *pts;
	size_t n;
	is_int(guest_spec_mount_points(s, &pts, &n), 0);
	ok(!pts[0].file && pts[1].file && !pts[3].file && pts[7].file && !pts[9].file,
	   "file binds are file points, directory binds directories");
	free(pts);
	guest_shares_done(&g);
	oci_spec_free(s);
}

/* A shared root is share 0 (kvrun-fs0). */
TEST(shared_root)
{
	char m[1024];
	struct guest_shares g;
	struct proto_start st;
	struct oci_spec *s;

	snprintf(m, sizeof(m),
	         "{\"destination\": \"/data\", \"type\": \"bind\", \"source\": \"%s\", \"options\": [\"rbind\"]}",
	         p("vol"));
	s = spec_mounts(m, true);
	is_int(guest_shares_plan(s, p("rootfs"), FS_LOCKS_GUEST, &g), 0);
	is_int(g.n, 2);
	is_int(g.root, 0);
	ok(g.shares[0].locks == FS_LOCKS_GUEST && g.shares[1].locks == FS_LOCKS_GUEST,
	   "guest locks: every share, the root's too");
	ok(same_dir(g.shares[0].dir_fd, p("rootfs")) && !g.shares[0].read_only && !g.shares[0].names,
	   "the rootfs directory, whole, writable (guest-init makes the mount points, then the mount read-only)");
	is_int(g.mounts[0].share, 1);
	is_int(guest_spec_from_oci(s, NULL, &g, &st), 0);
	is_str(st.root_device, "kvrun-fs0");
	is_str(st.root_fstype, "virtiofs");
	ok(st.root_readonly, "read-only root");
	is_str(st.mounts[0].share, "kvrun-fs1");
	proto_start_free(&st);
	struct sandbox_share sh[GUEST_SHARES_MAX];
	char tags[GUEST_SHARES_MAX][GUEST_SHARE_TAG_SIZE];
	is_int(guest_shares_to_sandbox(&g, -1, tags, sh), 2);
	ok(sh[0].locks == FS_LOCKS_GUEST && sh[1].locks == FS_LOCKS_GUEST, "the VM builder gets the lock mode");
	guest_shares_done(&g);
	/* A bind of the rootfs directory itself is not the root's share. */
	oci_spec_free(s);
	snprintf(m, sizeof(m),
	         "{\"destination\": \"/r\", \"type\": \"bind\", \"source\": \"%s\", \"options\": [\"rbind\", \"ro\"]}",
	         p("rootfs"));
	s = spec_mounts(m, true);
	is_int(guest_shares_plan(s, p("rootfs"), FS_LOCKS_HOST, &g), 0);
	ok(g.n == 2 && g.mounts[0].share == 1, "a bind is its own share, even of the root's directory");
	guest_shares_done(&g);
	oci_spec_free(s);
}

/* A bad source: an error naming the mount, and nothing left open. */
static void refused(const char *what, const char *source, int err, const char *words)
{
	char m[1024];
	struct guest_shares g;
	struct oci_spec *s;
	int fds = count_fds();

	snprintf(m, sizeof(m),
	         "{\"destination\": \"/ok\", \"type\": \"bind\", \"source\": \"%s\", \"options\": [\"rbind\"]},"
	         "{\"destination\": \"/bad\", \"type\": \"bind\", \"source\": \"%s\", \"options\": [\"rbind\"]}",
	         p("vol"), source);
	s = spec_mounts(m, false);
	err_clear();
	is_int(guest_shares_plan(s, NULL, FS_LOCKS_HOST, &g), err);
	ok(strstr(err_msg(), "mounts[1] (/bad)") && strstr(err_msg(), words), "%s: %s", what, err_msg());
	ok(g.n == 0 && !g.mounts, "%s: nothing planned", what);
	is_int(count_fds(), fds);
	is_int(guest_spec_check(s, NULL), err);
	oci_spec_free(s);
}

TEST(refusals)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", p("sock"));
	ok(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "a socket");
	is_int(mkfifo(p("fifo"), 0600), 0);
	refused("relative", "relative/path", -EINVAL, "must be an absolute host path");
	refused("missing", p("nope"), -ENOENT, "No such file or directory");
	refused("socket", p("sock"), -EINVAL, "is a socket");
	refused("device", "/dev/null", -EINVAL, "is a character device");
	refused("FIFO", p("fifo"), -EINVAL, "is a FIFO");
	close(fd);
}

TEST(too_many)
{
	char m[8192] = "";
	struct guest_shares g;
	struct oci_spec *s;
	size_t n = 0;

	for (int i = 0; i <= GUEST_SHARES_MAX; i++) {
		char d[32];

		snprintf(d, sizeof(d), "many/%d", i);
		mkdir_p(p(d), 0755);
		n += (size_t)snprintf(
		    m + n, sizeof(m) - n,
		    "%s{\"destination\": \"/m%d\", \"type\": \"bind\", \"source\": \"%s\", \"options\": "
		    "[\"rbind\"]}",
		    i ? "," : "", i, p(d));
	}
	s = spec_mounts(m, false);
	is_int(guest_shares_plan(s, NULL, FS_LOCKS_HOST, &g), -ENOSPC);
	ok(strstr(err_msg(), "mounts[16] (/m16)") && strstr(err_msg(), "more than 16"), "named: %s", err_msg());
	oci_spec_free(s);
}

/* Without a plan, a bind mount has no share: refused, not copied. */
TEST(bind_without_share)
{
	char m[512];
	struct proto_start st;
	struct oci_spec *s;

	snprintf(m, sizeof(m), "{\"destination\": \"/etc/hosts\", \"type\": \"bind\", \"source\": \"%s\"}",
	         p("ctr/hosts"));
	s = spec_mounts(m, false);
	is_int(guest_spec_from_oci(s, NULL, NULL, &st), -EINVAL);
	ok(strstr(err_msg(), "mounts[0] (/etc/hosts)") != NULL, "named: %s", err_msg());
	oci_spec_free(s);
}

TEST(process_and_names)
{
	char json[1200];
	struct proto_start st;
	struct oci_spec *s;

	snprintf(
	    json, sizeof(json),
	    "{\"ociVersion\": \"1.2.0\", \"root\": {\"path\": \"rootfs\", \"readonly\": true}, \"hostname\": \"h\","
	    "\"process\": {\"args\": [\"/bin/sh\", \"-c\", \"x\"], \"env\": [\"A=1\"], \"cwd\": \"/w\","
	    "\"user\": {\"uid\": 5, \"gid\": 6, \"additionalGids\": [7]}, \"capabilities\": {\"bounding\": "
	    "[\"CAP_CHOWN\", \"CAP_KILL\", \"CAP_NOPE\"]}, \"rlimits\": [{\"type\": \"RLIMIT_NOFILE\", \"hard\": "
	    "10, \"soft\": 9}]},"
	    "\"mounts\": [{\"destination\": \"/proc\", \"type\": \"proc\", \"source\": \"proc\"}],"
	    "\"linux\": {\"maskedPaths\": [\"/proc/kcore\"], \"sysctl\": {\"net.ipv4.ip_forward\": \"1\"}}}");
	s = spec_from(json);
	is_int(guest_spec_from_oci(s, NULL, NULL, &st), 0);
	is_str(st.process.args[2], "x");
	is_str(st.process.env[0], "A=1");
	is_str(st.process.cwd, "/w");
	is_int(st.process.uid, 5);
	is_int(st.process.additional_gids[0], 7);
	ok(st.process.has_caps && st.process.cap_bounding == ((1ULL << 0) | (1ULL << 5)), "capability mask");
	ok(st.process.rlimits[0].soft == 9, "rlimit");
	ok(st.process.stdin_port == GUEST_PORT_STDIN && st.process.stderr_port == GUEST_PORT_STDERR, "stdio ports");
	ok(st.root_readonly, "read-only root");
	is_str(st.root_device, "/dev/vda");
	is_str(st.hostname, "h");
	is_str(st.masked_paths[0], "/proc/kcore");
	is_str(st.sysctl[0].value, "1");
	proto_start_free(&st);
	oci_spec_free(s);
}

/* podman binds its own shm tmpfs on /dev/shm: the guest gets a tmpfs of
 * the same size. The same directory elsewhere is a volume. */
TEST(shm_bind)
{
	char shm[] = "/dev/shm/kvrun-guest-spec-XXXXXX", m[600];
	struct guest_shares g;
	struct proto_start st;
	struct oci_spec *s;
	struct statfs sf;

	if (!mkdtemp(shm) || statfs(shm, &sf) < 0 || sf.f_type != TMPFS_MAGIC) {
		ok(1, "# SKIP /dev/shm is not a tmpfs here");
		return;
	}
	snprintf(m, sizeof(m),
	         "{\"destination\": \"/dev/shm\", \"type\": \"bind\", \"source\": \"%s\", \"options\": [\"bind\", "
	         "\"rprivate\", \"nosuid\", \"noexec\", \"nodev\"]}",
	         shm);
	s = spec_mounts(m, false);
	is_int(guest_shares_plan(s, NULL, FS_LOCKS_HOST, &g), 0);
	ok(g.n == 0 && g.mounts[0].share == -1, "not a share");
	is_int(guest_spec_from_oci(s, NULL, &g, &st), 0);
	is_str(st.mounts[0].type, "tmpfs");
	ok(!st.mounts[0].has_data && !st.mounts[0].share, "nothing copied or shared");
	is_str(st.mounts[0].options[0], "nosuid");
	is_str(st.mounts[0].options[3], "mode=1777");
	ok(strncmp(st.mounts[0].options[4], "size=", 5) == 0 &&
	       strtoull(st.mounts[0].options[4] + 5, NULL, 10) == (unsigned long long)sf.f_blocks * sf.f_bsize,
	   "the host tmpfs's size: %s", st.mounts[0].options[4]);
	proto_start_free(&st);
	guest_shares_done(&g);
	oci_spec_free(s);

	snprintf(m, sizeof(m),
	         "{\"destination\": \"/data\", \"type\": \"bind\", \"source\": \"%s\", \"options\": [\"bind\"]}", shm);
	s = spec_mounts(m, false);
	is_int(guest_shares_plan(s, NULL, FS_LOCKS_HOST, &g), 0);
	ok(g.n == 1 && g.mounts[0].share == 0, "elsewhere: a shared directory");
	guest_shares_done(&g);
	oci_spec_free(s);
	rmdir(shm);
}

/* The container's processes get no AF_VSOCK sockets unless the annotation
 * io.kvrun.vsock says "allow"; any other value than allow or deny is
 * refused before anything is built. */
/* A pod's app container: its CPU limits into its guest cgroup, as runc's
 * cgroup v2 manager writes them (cpu.max, cpu.weight from shares). */
TEST(member_cpu_sets)
{
	struct oci_cpu c = {.has_quota = true,
	                    .quota = 20000,
	                    .has_period = true,
	                    .period = 100000,
	                    .has_shares = true,
	                    .shares = 1024,
	                    .cpus = (char *)"0-1"};
	struct proto_start st = {0};

	is_int(guest_cpu_weight(0), 0);
	is_int(guest_cpu_weight(2), 1);
	is_int(guest_cpu_weight(1024), 39);
	is_int(guest_cpu_weight(262144), 10000);
	is_int(guest_linux_cpu_sets(&c, &st), 0);
	is_int(st.n_cgroup, 3);
	if (st.n_cgroup == 3) {
		is_str(st.cgroup[0].file, "cpu.max");
		is_str(st.cgroup[0].value, "20000 100000");
		is_str(st.cgroup[1].file, "cpu.weight");
		is_str(st.cgroup[1].value, "39");
		is_str(st.cgroup[2].file, "cpuset.cpus");
		is_str(st.cgroup[2].value, "0-1");
		is_str(st.cgroup[2].field, "linux.resources.cpu.cpus");
	}
	proto_start_free(&st);
	st = (struct proto_start){0};
	c = (struct oci_cpu){.has_quota = true, .quota = -1};
	is_int(guest_linux_cpu_sets(&c, &st), 0);
	is_int(st.n_cgroup, 1);
	if (st.n_cgroup == 1)
		is_str(st.cgroup[0].value, "max");
	proto_start_free(&st);
	st = (struct proto_start){0};
	c = (struct oci_cpu){.has_period = true, .period = 50000};
	is_int(guest_linux_cpu_sets(&c, &st), 0);
	if (st.n_cgroup == 1)
		is_str(st.cgroup[0].value, "max 50000");
	proto_start_free(&st);
	st = (struct proto_start){0};
	c = (struct oci_cpu){.has_shares = true, .shares = 1};
	is_int(guest_linux_cpu_sets(&c, &st), -EINVAL);
	is_str(err_msg(), "linux.resources.cpu.shares: 1 is out of range (2 to 262144)");
	proto_start_free(&st);
}

/* A pod's /dev/shm: the tmpfs for a bind of the host's shm becomes the
 * pod's; other mounts stay. */
TEST(pod_shm)
{
	/* A default spec's tmpfs, the engine's bind (as guest_spec_from_oci()
	 * converts it), another tmpfs. */
	struct proto_mount mounts[3] = {
	    {.destination = strdup("/dev/shm"), .type = strdup("tmpfs"), .source = strdup("shm")},
	    {.destination = strdup("/dev/shm"), .type = strdup("tmpfs"), .source = strdup("shm")},
	    {.destination = strdup("/tmp"), .type = strdup("tmpfs"), .source = strdup("shm")},
	};
	struct proto_start st = {.mounts = mounts, .n_mounts = 3};

	ok(guest_spec_pod_shm(&st), "a /dev/shm tmpfs of the host's shm: made the pod's");
	is_str(mounts[1].source, PROTO_POD_SHM_SOURCE);
	is_str(mounts[0].source, "shm");
	is_str(mounts[2].source, "shm");
	ok(!guest_spec_pod_shm(&st), "once only: the last mount at /dev/shm, which the container sees");
	st.n_mounts = 1;
	free(mounts[0].source);
	mounts[0].source = strdup("tmpfs");
	ok(!guest_spec_pod_shm(&st), "a tmpfs the spec mounts itself at /dev/shm stays the container's");
	for (int i = 0; i < 3; i++) {
		free(mounts[i].destination);
		free(mounts[i].type);
		free(mounts[i].source);
	}
}

TEST(vsock_annotation)
{
	static const struct {
		const char *annotations;
		int r;
		bool allow;
	} cases[] = {
	    {"", 0, false},
	    {", \"annotations\": {\"io.kvrun.vsock\": \"deny\"}", 0, false},
	    {", \"annotations\": {\"io.kvrun.vsock\": \"allow\"}", 0, true},
	    {", \"annotations\": {\"io.kvrun.vsock\": \"yes\"}", -EINVAL, false},
	};
	char json[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct proto_start st;
		struct oci_spec *s;

		snprintf(json, sizeof(json),
		         "{\"ociVersion\": \"1.2.0\", \"root\": {\"path\": \"rootfs\"}, \"process\": {\"args\": "
		         "[\"/x\"], \"cwd\": \"/\"}%s}",
		         cases[i].annotations);
		s = spec_from(json);
		is_int(guest_spec_check(s, NULL), cases[i].r);
		is_int(guest_spec_from_oci(s, NULL, NULL, &st), cases[i].r);
		if (cases[i].r == 0)
			is_int(st.allow_vsock, cases[i].allow);
		else
			is_str(err_msg(), "annotation io.kvrun.vsock: \"yes\": expected \"allow\" or \"deny\"");
		if (cases[i].r == 0)
			proto_start_free(&st);
		oci_spec_free(s);
	}
}

TEST(cleanup)
{
	is_int(rm_rf(tmp), 0);
}

/* The rules START carries without linux.resources.devices, and with a
 * leading deny-all (docker's, podman's), are the table guest-init loads
 * ahead of START (common/protocol.h): the same program, not loaded again. */
static bool default_rules_match(const struct oci_linux_resources *res)
{
	struct proto_start s = {0};
	bool same;

	if (device_rules_from_oci(res, &s) < 0)
		return false;
	same = s.device_filter && !s.device_default_allow && s.n_device_rules == proto_n_default_device_rules;
	for (size_t i = 0; same && i < s.n_device_rules; i++)
		same = !memcmp(&s.device_rules[i], &proto_default_device_rules[i], sizeof(s.device_rules[i]));
	proto_start_free(&s);
	return same;
}

TEST(default_device_rules)
{
	struct oci_device_cgroup deny = {.allow = false, .type = (char *)"a", .access = (char *)"rwm"};
	struct oci_device_cgroup tun = {.allow = true,
	                                .type = (char *)"c",
	                                .major = 10,
	                                .minor = 229,
	                                .has_major = true,
	                                .has_minor = true,
	                                .access = (char *)"rw"};
	struct oci_linux_resources res = {.devices = &deny, .n_devices = 1};

	ok(default_rules_match(NULL), "no linux.resources.devices: the table guest-init loads ahead");
	ok(default_rules_match(&res), "a leading deny-all: the same");
	res.devices = &tun;
	ok(!default_rules_match(&res), "an extra device: another program");
}

TAP_MAIN()
