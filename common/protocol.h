/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host-guest control protocol, shared by the VM monitor (runtime/) and
 * guest-init. It travels over one vsock stream: the guest connects to the
 * host (CID 2) on KVRUN_PROTO_CONTROL_PORT. Stdio travels on separate
 * streams, one per fd (or one for a pty), which the guest opens to the host
 * ports named in START or EXEC.
 *
 * Framing: a 24-byte little-endian header, then `length` bytes of body.
 *
 *   0  u32 magic     KVRUN_PROTO_MAGIC ("KVRP")
 *   4  u16 version   KVRUN_PROTO_VERSION
 *   6  u16 type      enum proto_type
 *   8  u32 flags     per type (PROTO_START_F_*)
 *  12  u32 length    body bytes, at most KVRUN_PROTO_MAX_BODY
 *  16  u64 id        request id; replies (STARTED, READY, ERROR, STATS)
 *                    carry the id of the request they answer
 *
 * The body is a sequence of TLVs: u16 tag, u32 length, value. Integers are
 * little-endian u32/u64 of exactly that size, strings are raw bytes without
 * a NUL (a NUL inside is an error), lists repeat the tag, and records
 * (mounts, rlimits, seccomp rules) are a TLV whose value is again a TLV
 * sequence. A decoder skips tags it does not know, so a newer peer may add
 * fields; removing or re-typing a tag needs a new version.
 *
 * Decoding never reads past the buffer: a malformed frame gives -EBADMSG,
 * an oversized one -EMSGSIZE, and the partial result is freed.
 */
#ifndef KVRUN_COMMON_PROTOCOL_H
#define KVRUN_COMMON_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/net-config.h"

#define KVRUN_PROTO_MAGIC 0x5052564bu /* "KVRP" in memory order */
#define KVRUN_PROTO_VERSION 1
#define KVRUN_PROTO_HEADER_SIZE 24
/* A frame whose body exceeds this is refused (copied-in files included). */
#define KVRUN_PROTO_MAX_BODY (4u << 20)
/* Lists (args, env, mounts, rules...) longer than this are refused. */
#define KVRUN_PROTO_MAX_LIST 65536

/* vsock: the host's CID, and the port guest-init connects to. */
#define KVRUN_VSOCK_HOST_CID 2
#define KVRUN_PROTO_CONTROL_PORT 1024

enum proto_type {
	PROTO_MSG_HELLO = 1, /* guest -> host first, host -> guest answer */
	PROTO_MSG_START = 2, /* host -> guest: create (and run) the container */
	PROTO_MSG_READY = 3, /* guest -> host: container created, waiting for GO */
	PROTO_MSG_GO = 4, /* host -> guest: exec the created container process */
	PROTO_MSG_STARTED = 5, /* guest -> host: process exec'd (pid) */
	PROTO_MSG_EXEC = 6, /* host -> guest: another process in the container */
	PROTO_MSG_SIGNAL = 7, /* host -> guest */
	PROTO_MSG_RESIZE = 8, /* host -> guest */
	PROTO_MSG_EXIT = 9, /* guest -> host: a process ended (wait status) */
	PROTO_MSG_STATS = 10, /* host -> guest request (empty), guest -> host answer */
	PROTO_MSG_ERROR = 11, /* either way: a request failed */
	PROTO_MSG_UPDATE = 12, /* host -> guest: change the container's cgroup limits */
	PROTO_MSG_OOM = 13, /* guest -> host: the OOM killer killed in the container (id 0) */
	PROTO_MSG_NETWORK = 14, /* host -> guest: apply the network again (a restored checkpoint) */
	PROTO_MSG_PS = 15, /* host -> guest request (empty), guest -> host answer: the container's processes */
	PROTO_MSG__MAX,
};

/* START flags. */
/* Prepare everything, answer READY, and exec only on GO (runc create/start). */
#define PROTO_START_F_WAIT 0x1u
/* A pod's app container (docs/guest-init.md, "Pods"): a second container
 * in a VM whose first container (the pod's sandbox) runs. It joins that
 * container's IPC and UTS namespaces and the VM's network, has a mount
 * namespace of its own on its root (root_device: a virtio-fs tag; a disk
 * is not accepted), its own cgroup, and its own PID namespace unless
 * PROTO_START_F_SHARE_PID. READY carries its init's guest pid, by which
 * GO, EXEC (proto_process.container), SIGNAL, RESIZE, STATS, PS and UPDATE
 * address it; its EXIT carries the START's id with init false (the VM
 * goes on). Network, identity (clock, seed) and hostname are the
 * sandbox's: a member's START with net, hostname or a user namespace is
 * refused. */
#define PROTO_START_F_MEMBER 0x2u
/* With PROTO_START_F_MEMBER: the sandbox's PID namespace
 * (shareProcessNamespace), not one of its own. */
#define PROTO_START_F_SHARE_PID 0x4u

/* Random bytes START carries for the guest's entropy pool. */
#define PROTO_SEED_BYTES 64

/* Bytes of the token that opens each stdio stream (see proto_process). */
#define PROTO_TOKEN_BYTES 16

struct proto_hello {
	uint32_t version_min, version_max; /* versions the sender speaks */
	char *agent; /* "kvrun-init 0.1.0"; may be NULL */
	/* The host's: the token guest-init writes first on each stream of
	 * the container's init process it opens while this control stream
	 * lasts (a restored VM opens them again). */
	bool has_token;
	uint8_t token[PROTO_TOKEN_BYTES];
};

struct proto_rlimit {
	char *type; /* "RLIMIT_NOFILE" */
	uint64_t soft, hard;
};

/* process.scheduler, numbers as sched_setattr(2) takes them. */
struct proto_sched {
	uint32_t policy; /* SCHED_OTHER... */
	int32_t nice;
	uint32_t priority;
	uint64_t flags; /* SCHED_FLAG_* */
	uint64_t runtime, deadline, period; /* ns */
};

/* Preserved fds a process may have (create --preserve-fds). */
#define PROTO_MAX_EXTRA_FDS 64

/* A preserved fd's direction, as the host fd was opened. */
#define PROTO_EXTRA_FD_READ 0x1u /* the container reads what the host fd gives */
#define PROTO_EXTRA_FD_WRITE 0x2u /* what the container writes goes to the host fd */

struct proto_extra_fd {
	uint32_t port; /* host vsock port of its stream */
	uint32_t mode; /* PROTO_EXTRA_FD_* */
};

/* Process spec, shared by START and EXEC. */
struct proto_process {
	char **args; /* NULL-terminated; at least one entry to be valid */
	char **env; /* NULL-terminated, may be NULL */
	char *cwd; /* "/" when NULL */
	uint32_t uid, gid;
	uint32_t *additional_gids;
	size_t n_additional_gids;
	char *user; /* optional "name[:group]" resolved in the container's /etc/passwd */
	bool has_umask;
	uint32_t umask;
	bool terminal;
	uint16_t rows, cols;
	/* Capability sets as bit masks of cap numbers (bit n = capability n). */
	bool has_caps; /* false: keep the full set (privileged) */
	uint64_t cap_bounding, cap_effective, cap_inheritable, cap_permitted, cap_ambient;
	struct proto_rlimit *rlimits;
	size_t n_rlimits;
	bool no_new_privileges;
	bool has_oom_score_adj;
	int32_t oom_score_adj;
	/* Host vsock ports for stdio, 0 = none (the fd gets /dev/null). With
	 * terminal, only stdin_port is used: one bidirectional pty stream. */
	uint32_t stdin_port, stdout_port, stderr_port;
	/* EXEC: written first on each of those streams, so that the host
	 * takes the streams guest-init opened and no other process's that
	 * reached the port first. */
	bool has_token;
	uint8_t token[PROTO_TOKEN_BYTES];
	bool has_ioprio;
	uint32_t ioprio; /* the kernel's encoding: class << 13 | level */
	struct proto_sched *sched; /* NULL: inherit */
	/* The creator's preserved fds, in order from fd 3 (create/run
	 * --preserve-fds): each a stream to a host port. */
	struct proto_extra_fd *extra_fds;
	size_t n_extra_fds;
	/* EXEC: the guest pid of the pod member's init (its READY) whose
	 * container the process joins; 0: the VM's first container. */
	uint32_t container;
};

/* A tmpfs mount at /dev/shm with this source is the pod's /dev/shm: in a
 * pod sandbox's START guest-init mounts one tmpfs for the pod (with the
 * mount's options) and binds it there, in a member's START it binds that
 * one (a private tmpfs when there is none), as runc's containers of a pod
 * bind the sandbox's shm directory. */
#define PROTO_POD_SHM_SOURCE "pod-shm"

struct proto_mount {
	char *destination, *type, *source;
	char **options;
	/* A file copied in from the host (resolv.conf, hosts, hostname): its
	 * content is written at destination instead of mounting source. */
	bool has_data;
	uint8_t *data;
	size_t data_len;
	uint32_t data_mode; /* file mode for copied files, 0644 when 0 */
	/* A host directory shared with the VM (virtio-fs): the device's tag,
	 * which guest-init mounts once, and the entry of its root that is
	 * bound at destination (NULL: its root). source is then the host's
	 * path, for messages only. */
	char *share;
	char *share_path;
};

struct proto_keyval {
	char *key, *value;
};

struct proto_seccomp_arg {
	uint32_t index;
	uint64_t value, value_two;
	char *op; /* "SCMP_CMP_EQ" */
};

struct proto_seccomp_rule {
	char **names;
	char *action; /* "SCMP_ACT_ERRNO" */
	bool has_errno_ret;
	uint32_t errno_ret;
	struct proto_seccomp_arg *args;
	size_t n_args;
};

struct proto_seccomp {
	char *default_action;
	bool has_default_errno_ret;
	uint32_t default_errno_ret;
	char **architectures; /* "SCMP_ARCH_X86_64" */
	char **flags; /* "SECCOMP_FILTER_FLAG_LOG" */
	struct proto_seccomp_rule *rules;
	size_t n_rules;
};

/* linux.devices[]: a node created in the container's /dev. */
struct proto_device {
	char *path; /* in the container, absolute */
	uint32_t type; /* 'c', 'b', 'u' or 'p' */
	uint32_t major, minor;
	uint32_t mode; /* permission bits */
	uint32_t uid, gid;
};

/* One exception of the device cgroup filter (see proto_start). */
struct proto_device_rule {
	uint32_t type; /* 'c' or 'b' */
	bool has_major, has_minor; /* false: any */
	uint32_t major, minor;
	uint32_t access; /* PROTO_DEV_ACC_* */
};

#define PROTO_DEV_ACC_MKNOD 0x1u /* the kernel's BPF_DEVCG_ACC_* values */
#define PROTO_DEV_ACC_READ 0x2u
#define PROTO_DEV_ACC_WRITE 0x4u

/* The exceptions of the deny-all filter START carries for a spec without
 * linux.resources.devices (or whose rules start with a deny-all): runc's
 * default devices as the host reduces them (runtime/monitor/
 * device-rules.c, whose test compares). guest-init loads this program
 * before a template is saved, so that such a START finds it verified. */
extern const struct proto_device_rule proto_default_device_rules[];
extern const size_t proto_n_default_device_rules;

/* A value for a file of the container's cgroup in the guest. */
struct proto_cgroup_set {
	char *file; /* "pids.max" */
	char *value;
	char *field; /* the config.json field it comes from, for errors */
	bool optional; /* a missing file is fine: the VM lacks what it limits */
};

struct proto_id_map {
	uint32_t container_id, host_id, size;
};

struct proto_hook {
	char *path; /* resolved in the container's root filesystem */
	char **args, **env;
	bool has_timeout;
	uint32_t timeout; /* seconds */
};

struct proto_start {
	struct proto_process process;
	char *hostname, *domainname;
	struct proto_mount *mounts;
	size_t n_mounts;
	char **masked_paths, **readonly_paths;
	struct proto_keyval *sysctl;
	size_t n_sysctl;
	struct proto_seccomp *seccomp; /* NULL: no filter */
	bool root_readonly;
	char *rootfs_propagation; /* "rprivate", "rslave", ...; NULL = default */
	char *root_device; /* "/dev/vda", or the tag of a virtio-fs root */
	char *root_fstype; /* "ext4", or "virtiofs" */
	char *root_path; /* directory inside the disk that is the rootfs; "/" when NULL */
	struct proto_hook *create_container_hooks, *start_container_hooks;
	size_t n_create_container_hooks, n_start_container_hooks;
	char *state_json; /* the OCI state handed to hooks on stdin */
	/* The guest's interfaces, addresses and routes, applied before the
	 * container's process is created; NULL: loopback only. */
	struct net_config *net;
	/* Per-instance identity for a VM restored from a template (whose
	 * memory holds the template's): the host's wall-clock time when
	 * START was sent (guest-init sets the clock) and fresh random bytes
	 * (credited to the guest's entropy pool). */
	bool has_realtime;
	uint64_t realtime_ns; /* CLOCK_REALTIME, nanoseconds since the epoch */
	bool has_seed;
	uint8_t seed[PROTO_SEED_BYTES];
	/* The container's processes may open AF_VSOCK sockets (annotation
	 * io.kvrun.vsock); by default guest-init denies them (seccomp). */
	bool allow_vsock;
	struct proto_device *devices;
	size_t n_devices;
	/* The device cgroup filter of the container (linux.resources.devices
	 * with runc's default rules after them, reduced as runc's emulator
	 * does): a device access is allowed when it matches a rule and
	 * device_default_allow is false, or matches none and it is true. */
	bool device_filter;
	bool device_default_allow;
	struct proto_device_rule *device_rules;
	size_t n_device_rules;
	/* Written, in order, to the container's cgroup before it is entered. */
	struct proto_cgroup_set *cgroup;
	size_t n_cgroup;
	/* A user namespace (linux.uidMappings/gidMappings) and a cgroup
	 * namespace for the container. */
	bool user_ns;
	struct proto_id_map *uid_mappings, *gid_mappings;
	size_t n_uid_mappings, n_gid_mappings;
	bool cgroup_ns;
	bool has_personality;
	uint32_t personality; /* PER_LINUX or PER_LINUX32 */
};

struct proto_signal {
	uint32_t pid; /* guest pid from STARTED; 0 = the container's init */
	uint32_t signo;
	bool all; /* every process of the container (kill --all) */
};

struct proto_resize {
	uint32_t pid; /* 0 = the container's init */
	uint16_t rows, cols;
};

struct proto_started {
	uint32_t pid;
};

struct proto_exit {
	uint32_t pid; /* as in STARTED */
	uint32_t status; /* wait status (WIFEXITED/WIFSIGNALED) */
	bool init; /* the container's init: the VM powers off next */
};

/* Counters from the guest's root cgroup (cgroup v2 names). */
struct proto_stats {
	uint64_t cpu_usage_usec, cpu_user_usec, cpu_system_usec;
	uint64_t memory_current, memory_max; /* memory_max 0 = none */
	uint64_t memory_total; /* guest RAM (MemTotal) */
	uint64_t pids_current;
	/* A request: the guest pid of a pod member's init whose cgroup is
	 * read; 0: the VM's first container. */
	uint32_t container;
};

/* Limits of the guest's container cgroup that can change at run time;
 * only the fields with has_* set are written. 0 means "max" (no limit). */
struct proto_update {
	bool has_pids_max;
	uint64_t pids_max;
	bool has_memory_max;
	uint64_t memory_max;
	uint32_t container; /* as in proto_stats */
	/* pause (1) or resume (0): the cgroup frozen or thawed (cgroup v2
	 * cgroup.freeze), answered once cgroup.events says it is. */
	bool has_frozen;
	uint32_t frozen;
	/* CPU limits of a pod member (the first container's CPUs are the
	 * VM's, limited on the host): cpu.max's quota (0: "max") and period
	 * (us; the other part kept as the file has it), cpu.weight, and
	 * cpuset.cpus (NULL: unchanged). */
	bool has_cpu_quota;
	uint64_t cpu_quota;
	bool has_cpu_period;
	uint64_t cpu_period;
	bool has_cpu_weight;
	uint64_t cpu_weight;
	char *cpuset_cpus;
};

/* OOM: the container cgroup's memory.events counters after the change. */
struct proto_oom {
	uint64_t oom_kill; /* processes killed by the OOM killer so far */
	uint64_t oom; /* times the cgroup's limit was hit and reclaim failed */
	/* Whose cgroup: 0 the first container's, else the guest pid of a pod
	 * member's init (as in proto_stats). */
	uint32_t container;
};

/* NETWORK: a checkpoint restored into a network namespace whose interfaces
 * may differ from the saved one's (MACs, MTUs, addresses, routes): each
 * interface's link (found by dev_mac, the device's MAC at probe) gets the
 * configuration again, its old addresses and routes removed first.
 * Answered by ERROR (err 0 = done). */
struct proto_network {
	struct net_config *net; /* NULL: no interfaces */
	bool has_realtime;
	uint64_t realtime_ns; /* as START's: the clock stood still while saved */
};

/* PS: one process of the container, from the guest's /proc. Process ids
 * as the container's pid namespace numbers them (0: outside it, such as
 * the parent of the container's init). */
struct proto_ps_proc {
	uint32_t pid, ppid, pgid, sid;
	uint32_t uid, gid; /* effective */
	uint32_t tty; /* tty_nr of /proc/PID/stat, 0 = none */
	char *stat; /* procps's STAT: the state letter and its flags ("Ss", "R+", "Z") */
	int32_t nice;
	uint32_t threads;
	uint64_t cpu_ticks; /* user + system time, in ticks of hz */
	uint64_t start_ticks; /* when it started, ticks after boot */
	uint64_t vsize_kb, rss_kb;
	char *comm; /* the kernel's name for it (at most 15 bytes) */
	char **args; /* its command line, cut at PROTO_PS_ARGS_MAX bytes; NULL when empty */
	char **env; /* its environment, as args (ps's BSD e option shows it) */
};

/* Bounds of a PS answer (the frame must stay under KVRUN_PROTO_MAX_BODY). */
#define PROTO_PS_MAX_PROCS 2048
#define PROTO_PS_ARGS_MAX 1024

/* The answer: the processes and what their times and sizes are measured
 * against. truncated: more processes than PROTO_PS_MAX_PROCS. */
struct proto_ps {
	struct proto_ps_proc *procs;
	size_t n_procs;
	uint64_t hz; /* ticks per second */
	uint64_t boot_time; /* btime of /proc/stat, seconds since the epoch */
	uint64_t uptime_cs; /* /proc/uptime, hundredths of a second */
	uint64_t mem_total_kb;
	bool truncated;
	uint32_t container; /* a request: as in proto_stats */
};

struct proto_error {
	uint32_t err; /* positive errno */
	char *message;
};

struct proto_msg {
	uint16_t type; /* enum proto_type */
	uint32_t flags;
	uint64_t id;
	union {
		struct proto_hello hello;
		struct proto_start start; /* START */
		struct proto_process exec; /* EXEC */
		struct proto_started started; /* STARTED, READY; GO: the member's init pid, 0: the first container */
		struct proto_signal signal;
		struct proto_resize resize;
		struct proto_exit exit;
		struct proto_stats stats; /* STATS answer; a request has none */
		struct proto_update update; /* UPDATE; answered by ERROR (err 0 = done) */
		struct proto_oom oom; /* OOM; not answered */
		struct proto_network network; /* NETWORK; answered by ERROR (err 0 = done) */
		struct proto_ps ps; /* PS answer; a request has none */
		struct proto_error error;
	} u;
};

struct proto_header {
	uint16_t version, type;
	uint32_t flags, length;
	uint64_t id;
};

/* Parse the header at buf. Returns 0 with *ret filled when len holds a
 * whole header; -EAGAIN when len < KVRUN_PROTO_HEADER_SIZE; -EBADMSG on a
 * bad magic; -EPROTONOSUPPORT on an unknown version; -EMSGSIZE when the
 * body is over KVRUN_PROTO_MAX_BODY. The frame is header + ret->length. */
int proto_header_parse(const void *buf, size_t len, struct proto_header *ret);

/* Encode m into a malloc'd frame (header and body) owned by the caller.
 * -EINVAL on an unknown type, -EMSGSIZE when the body would be too big. */
int proto_encode(const struct proto_msg *m, uint8_t **ret_buf, size_t *ret_len);

/* Decode one whole frame (exactly len bytes) into *ret, which the caller
 * releases with proto_msg_free(). On failure *ret holds nothing to free.
 * Unknown tags are skipped; unknown types give -EBADMSG. */
int proto_decode(const void *buf, size_t len, struct proto_msg *ret);

/* Free everything m owns and zero it. Accepts a zeroed or partial message. */
void proto_msg_free(struct proto_msg *m);

/* Blocking helpers for a stream fd whose peer is trusted (guest-init
 * talking to the host, tests): write one frame; read exactly one frame.
 * proto_recv returns -ECONNRESET on EOF. A peer that stops mid-frame
 * blocks them forever: the host reads what the guest sends with the
 * helpers below. */
int proto_send(int fd, const struct proto_msg *m);
int proto_recv(int fd, struct proto_msg *ret);

/*
 * Framing for a stream whose peer may misbehave (common/proto-stream.c):
 * the guest's control stream, a control.sock client. Nothing here blocks
 * past a deadline, so a peer that sends a header and then nothing cannot
 * freeze the loop that serves it.
 *
 * struct proto_reader is an incremental frame reader: a serve loop feeds
 * it each time the stream is readable. It reads no byte past the frame it
 * is assembling (the next frame stays in the socket) and remembers when the
 * partial frame last grew, so that the loop can drop a peer stalled
 * mid-frame (proto_reader_timeout()).
 */
struct proto_reader {
	uint8_t hdr[KVRUN_PROTO_HEADER_SIZE];
	uint8_t *frame; /* header and body, once the header is known */
	size_t have; /* bytes of the frame read so far */
	size_t need; /* bytes of the whole frame; 0 until the header is read */
	int64_t progress_ms; /* CLOCK_MONOTONIC ms of the partial frame's last byte */
};

/* Start empty (a zeroed struct is the same). */
void proto_reader_init(struct proto_reader *r);
/* Forget and free a partial frame. */
void proto_reader_reset(struct proto_reader *r);
/* Read what fd holds, without blocking. Returns 1 and a message in *ret
 * (the caller frees it with proto_msg_free()) when a frame is complete; 0
 * when more is needed; -ECONNRESET at EOF; a negative errno from the header
 * (proto_header_parse()) or the body (proto_decode()) or the read. After an
 * error the reader is reset and the stream cannot be resynchronized. */
int proto_reader_feed(struct proto_reader *r, int fd, struct proto_msg *ret);
/* Whether part of a frame has been read. */
bool proto_reader_partial(const struct proto_reader *r);
/* Milliseconds left before a partial frame counts as stalled (no byte for
 * stall_ms): -1 with no partial frame (a poll() timeout of "forever"), 0
 * once it stalled. */
int proto_reader_timeout(const struct proto_reader *r, int stall_ms);
/* Restart the stall clock of a partial frame, for a peer that could not
 * send meanwhile (its VM was paused). */
void proto_reader_touch(struct proto_reader *r);

/* Read one whole frame from fd within timeout_ms, however the peer trickles
 * it: as proto_reader_feed(), or -ETIMEDOUT. For a peer that must answer
 * now (the EXEC an exec proxy sends after its request line). */
int proto_recv_timeout(int fd, int timeout_ms, struct proto_msg *ret);
/* Write one frame within timeout_ms: -ETIMEDOUT when the peer does not take
 * it (a guest that stopped reading its control stream), -EPIPE when it is
 * gone. On a socket only; other fds are written as proto_send() does. */
int proto_send_timeout(int fd, const struct proto_msg *m, int timeout_ms);

/* Encode/free helpers for callers that build messages. */
const char *proto_type_name(uint16_t type);
void proto_process_free(struct proto_process *p);
void proto_start_free(struct proto_start *s);

#endif
