/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Wire protocol encoder/decoder. Each message body is described by a table
 * of fields (tag, kind, offset in the C struct), so one walker encodes,
 * decodes and frees every message and the three can never disagree.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fileio.h"
#include "common/protocol.h"

enum field_kind {
	F_U16, /* uint16_t, 2 bytes */
	F_U32, /* uint32_t, 4 bytes */
	F_I32, /* int32_t, 4 bytes */
	F_U64, /* uint64_t, 8 bytes */
	F_BOOL, /* bool, 1 byte */
	F_STR, /* char *, NULL = absent */
	F_STRV, /* char ** NULL-terminated, one TLV per entry */
	F_BYTES, /* uint8_t * with size_t length at aux */
	F_U32V, /* uint32_t * with size_t count at aux, one TLV per entry */
	F_RECV, /* array of sub records with size_t count at aux */
	F_RECP, /* pointer to one sub record, NULL = absent */
	F_U8, /* uint8_t, 1 byte */
	F_RAW, /* inline uint8_t[aux], exactly aux bytes */
	F_CSTR, /* inline char[aux], NUL-terminated: at most aux - 1 bytes, no NUL */
	F_RECA, /* inline array of at most max sub records, unsigned int count at aux */
};

#define NO_HAS ((size_t)-1)
#define MAX_FIELDS 32
#define MAX_DEPTH 4

struct desc;

struct field {
	uint16_t tag;
	uint8_t kind;
	size_t off;
	size_t aux; /* length/count offset */
	size_t has; /* offset of a bool "present" flag, or NO_HAS */
	const struct desc *sub;
	size_t max; /* F_RECA: capacity of the inline array */
};

struct desc {
	size_t size;
	const struct field *fields;
	size_t n;
};

#define FLD(t, k, type, member)                               \
	{                                                     \
		t, k, offsetof(type, member), 0, NO_HAS, NULL \
	}
#define FLD_HAS(t, k, type, member, hasm)                                   \
	{                                                                   \
		t, k, offsetof(type, member), 0, offsetof(type, hasm), NULL \
	}
#define FLD_CNT(t, k, type, member, cnt)                                        \
	{                                                                       \
		t, k, offsetof(type, member), offsetof(type, cnt), NO_HAS, NULL \
	}
#define FLD_RECV(t, type, member, cnt, d)                                          \
	{                                                                          \
		t, F_RECV, offsetof(type, member), offsetof(type, cnt), NO_HAS, &d \
	}
#define FLD_RECP(t, type, member, d)                             \
	{                                                        \
		t, F_RECP, offsetof(type, member), 0, NO_HAS, &d \
	}
#define FLD_SIZED(t, k, type, member)                                                   \
	{                                                                               \
		t, k, offsetof(type, member), sizeof(((type *)0)->member), NO_HAS, NULL \
	}
#define FLD_RECA(t, type, member, cnt, d)                                           \
	{                                                                           \
		t, F_RECA, offsetof(type, member), offsetof(type, cnt), NO_HAS, &d, \
		    sizeof(((type *)0)->member) / sizeof(((type *)0)->member[0])    \
	}
#define DESC(name, type, arr) static const struct desc name = {sizeof(type), arr, ARRAY_SIZE(arr)}

/* Tags are per record; never reuse a number with another meaning. */
static const struct field hello_fields[] = {
    FLD(1, F_U32, struct proto_hello, version_min),
    FLD(2, F_U32, struct proto_hello, version_max),
    FLD(3, F_STR, struct proto_hello, agent),
};
DESC(hello_desc, struct proto_hello, hello_fields);

static const struct field rlimit_fields[] = {
    FLD(1, F_STR, struct proto_rlimit, type),
    FLD(2, F_U64, struct proto_rlimit, soft),
    FLD(3, F_U64, struct proto_rlimit, hard),
};
DESC(rlimit_desc, struct proto_rlimit, rlimit_fields);

static const struct field process_fields[] = {
    FLD(1, F_STRV, struct proto_process, args),
    FLD(2, F_STRV, struct proto_process, env),
    FLD(3, F_STR, struct proto_process, cwd),
    FLD(4, F_U32, struct proto_process, uid),
    FLD(5, F_U32, struct proto_process, gid),
    FLD_CNT(6, F_U32V, struct proto_process, additional_gids, n_additional_gids),
    FLD(7, F_STR, struct proto_process, user),
    FLD_HAS(8, F_U32, struct proto_process, umask, has_umask),
    FLD(9, F_BOOL, struct proto_process, terminal),
    FLD(10, F_U16, struct proto_process, rows),
    FLD(11, F_U16, struct proto_process, cols),
    FLD(12, F_BOOL, struct proto_process, has_caps),
    FLD(13, F_U64, struct proto_process, cap_bounding),
    FLD(14, F_U64, struct proto_process, cap_effective),
    FLD(15, F_U64, struct proto_process, cap_inheritable),
    FLD(16, F_U64, struct proto_process, cap_permitted),
    FLD(17, F_U64, struct proto_process, cap_ambient),
    FLD_RECV(18, struct proto_process, rlimits, n_rlimits, rlimit_desc),
    FLD(19, F_BOOL, struct proto_process, no_new_privileges),
    FLD_HAS(20, F_I32, struct proto_process, oom_score_adj, has_oom_score_adj),
    FLD(21, F_U32, struct proto_process, stdin_port),
    FLD(22, F_U32, struct proto_process, stdout_port),
    FLD(23, F_U32, struct proto_process, stderr_port),
};
DESC(process_desc, struct proto_process, process_fields);

static const struct field mount_fields[] = {
    FLD(1, F_STR, struct proto_mount, destination),
    FLD(2, F_STR, struct proto_mount, type),
    FLD(3, F_STR, struct proto_mount, source),
    FLD(4, F_STRV, struct proto_mount, options),
    {5, F_BYTES, offsetof(struct proto_mount, data), offsetof(struct proto_mount, data_len),
     offsetof(struct proto_mount, has_data), NULL},
    FLD(6, F_U32, struct proto_mount, data_mode),
};
DESC(mount_desc, struct proto_mount, mount_fields);

static const struct field keyval_fields[] = {
    FLD(1, F_STR, struct proto_keyval, key),
    FLD(2, F_STR, struct proto_keyval, value),
};
DESC(keyval_desc, struct proto_keyval, keyval_fields);

static const struct field scarg_fields[] = {
    FLD(1, F_U32, struct proto_seccomp_arg, index),
    FLD(2, F_U64, struct proto_seccomp_arg, value),
    FLD(3, F_U64, struct proto_seccomp_arg, value_two),
    FLD(4, F_STR, struct proto_seccomp_arg, op),
};
DESC(scarg_desc, struct proto_seccomp_arg, scarg_fields);

static const struct field scrule_fields[] = {
    FLD(1, F_STRV, struct proto_seccomp_rule, names),
    FLD(2, F_STR, struct proto_seccomp_rule, action),
    FLD_HAS(3, F_U32, struct proto_seccomp_rule, errno_ret, has_errno_ret),
    FLD_RECV(4, struct proto_seccomp_rule, args, n_args, scarg_desc),
};
DESC(scrule_desc, struct proto_seccomp_rule, scrule_fields);

static const struct field seccomp_fields[] = {
    FLD(1, F_STR, struct proto_seccomp, default_action),
    FLD_HAS(2, F_U32, struct proto_seccomp, default_errno_ret, has_default_errno_ret),
    FLD(3, F_STRV, struct proto_seccomp, architectures),
    FLD(4, F_STRV, struct proto_seccomp, flags),
    FLD_RECV(5, struct proto_seccomp, rules, n_rules, scrule_desc),
};
DESC(seccomp_desc, struct proto_seccomp, seccomp_fields);

static const struct field hook_fields[] = {
    FLD(1, F_STR, struct proto_hook, path),
    FLD(2, F_STRV, struct proto_hook, args),
    FLD(3, F_STRV, struct proto_hook, env),
    FLD_HAS(4, F_U32, struct proto_hook, timeout, has_timeout),
};
DESC(hook_desc, struct proto_hook, hook_fields);

/* struct net_config (common/net-config.h): fixed arrays, decoded in place. */
static const struct field netaddr_fields[] = {
    FLD(1, F_U8, struct net_config_addr, family),
    FLD(2, F_U8, struct net_config_addr, prefixlen),
    FLD_SIZED(3, F_RAW, struct net_config_addr, addr),
};
DESC(netaddr_desc, struct net_config_addr, netaddr_fields);

static const struct field netroute_fields[] = {
    FLD(1, F_U8, struct net_config_route, family),     FLD(2, F_U8, struct net_config_route, dst_len),
    FLD_SIZED(3, F_RAW, struct net_config_route, dst), FLD_SIZED(4, F_RAW, struct net_config_route, gw),
    FLD(5, F_U8, struct net_config_route, has_gw),     FLD(6, F_U8, struct net_config_route, scope),
    FLD(7, F_U32, struct net_config_route, metric),
};
DESC(netroute_desc, struct net_config_route, netroute_fields);

static const struct field netiface_fields[] = {
    FLD_SIZED(1, F_CSTR, struct net_config_iface, name),
    FLD_SIZED(2, F_RAW, struct net_config_iface, mac),
    FLD(3, F_U32, struct net_config_iface, mtu),
    FLD_RECA(4, struct net_config_iface, addrs, nr_addrs, netaddr_desc),
    FLD_RECA(5, struct net_config_iface, routes, nr_routes, netroute_desc),
    FLD_SIZED(6, F_RAW, struct net_config_iface, dev_mac),
};
DESC(netiface_desc, struct net_config_iface, netiface_fields);

static const struct field netcfg_fields[] = {
    FLD_RECA(1, struct net_config, ifaces, nr_ifaces, netiface_desc),
};
DESC(netcfg_desc, struct net_config, netcfg_fields);

static const struct field start_fields[] = {
    FLD_RECP(1, struct proto_start, process, process_desc), /* see start_desc_fixup */
    FLD(2, F_STR, struct proto_start, hostname),
    FLD(3, F_STR, struct proto_start, domainname),
    FLD_RECV(4, struct proto_start, mounts, n_mounts, mount_desc),
    FLD(5, F_STRV, struct proto_start, masked_paths),
    FLD(6, F_STRV, struct proto_start, readonly_paths),
    FLD_RECV(7, struct proto_start, sysctl, n_sysctl, keyval_desc),
    FLD_RECP(8, struct proto_start, seccomp, seccomp_desc),
    FLD(9, F_BOOL, struct proto_start, root_readonly),
    FLD(10, F_STR, struct proto_start, rootfs_propagation),
    FLD(11, F_STR, struct proto_start, root_device),
    FLD(12, F_STR, struct proto_start, root_fstype),
    FLD(13, F_STR, struct proto_start, root_path),
    FLD_RECV(14, struct proto_start, create_container_hooks, n_create_container_hooks, hook_desc),
    FLD_RECV(15, struct proto_start, start_container_hooks, n_start_container_hooks, hook_desc),
    FLD(16, F_STR, struct proto_start, state_json),
    FLD_RECP(17, struct proto_start, net, netcfg_desc),
    FLD_HAS(18, F_U64, struct proto_start, realtime_ns, has_realtime),
    {19, F_RAW, offsetof(struct proto_start, seed), PROTO_SEED_BYTES, offsetof(struct proto_start, has_seed), NULL},
};
DESC(start_desc, struct proto_start, start_fields);

static const struct field started_fields[] = {
    FLD(1, F_U32, struct proto_started, pid),
};
DESC(started_desc, struct proto_started, started_fields);

static const struct field signal_fields[] = {
    FLD(1, F_U32, struct proto_signal, pid),
    FLD(2, F_U32, struct proto_signal, signo),
    FLD(3, F_BOOL, struct proto_signal, all),
};
DESC(signal_desc, struct proto_signal, signal_fields);

static const struct field resize_fields[] = {
    FLD(1, F_U32, struct proto_resize, pid),
    FLD(2, F_U16, struct proto_resize, rows),
    FLD(3, F_U16, struct proto_resize, cols),
};
DESC(resize_desc, struct proto_resize, resize_fields);

static const struct field exit_fields[] = {
    FLD(1, F_U32, struct proto_exit, pid),
    FLD(2, F_U32, struct proto_exit, status),
    FLD(3, F_BOOL, struct proto_exit, init),
};
DESC(exit_desc, struct proto_exit, exit_fields);

static const struct field stats_fields[] = {
    FLD(1, F_U64, struct proto_stats, cpu_usage_usec),  FLD(2, F_U64, struct proto_stats, cpu_user_usec),
    FLD(3, F_U64, struct proto_stats, cpu_system_usec), FLD(4, F_U64, struct proto_stats, memory_current),
    FLD(5, F_U64, struct proto_stats, memory_max),      FLD(6, F_U64, struct proto_stats, memory_total),
    FLD(7, F_U64, struct proto_stats, pids_current),
};
DESC(stats_desc, struct proto_stats, stats_fields);

static const struct field update_fields[] = {
    FLD_HAS(1, F_U64, struct proto_update, pids_max, has_pids_max),
    FLD_HAS(2, F_U64, struct proto_update, memory_max, has_memory_max),
};
DESC(update_desc, struct proto_update, update_fields);

static const struct field oom_fields[] = {
    FLD(1, F_U64, struct proto_oom, oom_kill),
    FLD(2, F_U64, struct proto_oom, oom),
};
DESC(oom_desc, struct proto_oom, oom_fields);

static const struct field network_fields[] = {
    FLD_RECP(1, struct proto_network, net, netcfg_desc),
    FLD_HAS(2, F_U64, struct proto_network, realtime_ns, has_realtime),
};
DESC(network_desc, struct proto_network, network_fields);

static const struct field error_fields[] = {
    FLD(1, F_U32, struct proto_error, err),
    FLD(2, F_STR, struct proto_error, message),
};
DESC(error_desc, struct proto_error, error_fields);

static const struct desc empty_desc = {0, NULL, 0};

static const struct desc *type_desc(uint16_t type)
{
	switch (type) {
	case PROTO_MSG_HELLO:
		return &hello_desc;
	case PROTO_MSG_START:
		return &start_desc;
	case PROTO_MSG_READY:
	case PROTO_MSG_STARTED:
		return &started_desc;
	case PROTO_MSG_GO:
		return &empty_desc;
	case PROTO_MSG_EXEC:
		return &process_desc;
	case PROTO_MSG_SIGNAL:
		return &signal_desc;
	case PROTO_MSG_RESIZE:
		return &resize_desc;
	case PROTO_MSG_EXIT:
		return &exit_desc;
	case PROTO_MSG_STATS:
		return &stats_desc;
	case PROTO_MSG_ERROR:
		return &error_desc;
	case PROTO_MSG_UPDATE:
		return &update_desc;
	case PROTO_MSG_OOM:
		return &oom_desc;
	case PROTO_MSG_NETWORK:
		return &network_desc;
	}
	return NULL;
}

const char *proto_type_name(uint16_t type)
{
	static const char *const names[] = {
	    [PROTO_MSG_HELLO] = "HELLO",   [PROTO_MSG_START] = "START",     [PROTO_MSG_READY] = "READY",
	    [PROTO_MSG_GO] = "GO",         [PROTO_MSG_STARTED] = "STARTED", [PROTO_MSG_EXEC] = "EXEC",
	    [PROTO_MSG_SIGNAL] = "SIGNAL", [PROTO_MSG_RESIZE] = "RESIZE",   [PROTO_MSG_EXIT] = "EXIT",
	    [PROTO_MSG_STATS] = "STATS",   [PROTO_MSG_ERROR] = "ERROR",     [PROTO_MSG_UPDATE] = "UPDATE",
	    [PROTO_MSG_OOM] = "OOM",       [PROTO_MSG_NETWORK] = "NETWORK",
	};

	if (type < ARRAY_SIZE(names) && names[type])
		return names[type];
	return "UNKNOWN";
}

/*
 * START embeds proto_process by value, not by pointer. The table says
 * F_RECP for uniformity; the walker treats field 1 of start_desc as an
 * embedded record (no pointer) through this check.
 */
static bool embedded(const struct desc *d, const struct field *f)
{
	return d == &start_desc && f->tag == 1;
}

/* ---- little-endian helpers ---- */

static void put_le(uint8_t *p, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* ---- encoder ---- */

struct wbuf {
	uint8_t *p;
	size_t len, cap;
	int err;
};

static uint8_t *wbuf_reserve(struct wbuf *w, size_t n)
{
	if (w->err)
		return NULL;
	if (n > KVRUN_PROTO_MAX_BODY + KVRUN_PROTO_HEADER_SIZE - w->len) {
		w->err = -EMSGSIZE;
		return NULL;
	}
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 256;
		uint8_t *np;

		while (cap < w->len + n)
			cap *= 2;
		np = realloc(w->p, cap);
		if (!np) {
			w->err = -ENOMEM;
			return NULL;
		}
		w->p = np;
		w->cap = cap;
	}
	w->len += n;
	return w->p + w->len - n;
}

/* Write a TLV header; returns the offset of its length for patching. */
static size_t put_tl(struct wbuf *w, uint16_t tag, size_t len)
{
	uint8_t *p = wbuf_reserve(w, 6);

	if (!p)
		return 0;
	put_le(p, tag, 2);
	put_le(p + 2, len, 4);
	return w->len - 4;
}

static void put_raw(struct wbuf *w, uint16_t tag, const void *v, size_t len)
{
	uint8_t *p;

	put_tl(w, tag, len);
	p = wbuf_reserve(w, len);
	if (p && len)
		memcpy(p, v, len);
}

static void put_int(struct wbuf *w, uint16_t tag, uint64_t v, size_t n)
{
	uint8_t b[8];

	put_le(b, v, n);
	put_raw(w, tag, b, n);
}

static void encode_record(struct wbuf *w, const struct desc *d, const void *obj);

static void encode_field(struct wbuf *w, const struct desc *d, const struct field *f, const char *base)
{
	const void *v = base + f->off;

	if (f->has != NO_HAS && !*(const bool *)(base + f->has))
		return;
	switch (f->kind) {
	case F_U16:
		put_int(w, f->tag, *(const uint16_t *)v, 2);
		break;
	case F_U32:
		put_int(w, f->tag, *(const uint32_t *)v, 4);
		break;
	case F_I32:
		put_int(w, f->tag, (uint32_t) * (const int32_t *)v, 4);
		break;
	case F_U64:
		put_int(w, f->tag, *(const uint64_t *)v, 8);
		break;
	case F_BOOL:
		put_int(w, f->tag, *(const bool *)v, 1);
		break;
	case F_U8:
		put_int(w, f->tag, *(const uint8_t *)v, 1);
		break;
	case F_RAW:
		put_raw(w, f->tag, v, f->aux);
		break;
	case F_CSTR:
		put_raw(w, f->tag, v, strnlen(v, f->aux - 1));
		break;
	case F_RECA: {
		unsigned int n = *(const unsigned int *)(base + f->aux);

		for (size_t i = 0; i < n && i < f->max; i++) {
			size_t at = put_tl(w, f->tag, 0), start = w->len;

			encode_record(w, f->sub, (const char *)v + i * f->sub->size);
			if (!w->err)
				put_le(w->p + at, w->len - start, 4);
		}
		break;
	}
	case F_STR:
		if (*(char *const *)v)
			put_raw(w, f->tag, *(char *const *)v, strlen(*(char *const *)v));
		break;
	case F_STRV:
		for (char *const *s = *(char **const *)v; s && *s; s++)
			put_raw(w, f->tag, *s, strlen(*s));
		break;
	case F_BYTES:
		put_raw(w, f->tag, *(uint8_t *const *)v, *(const size_t *)(base + f->aux));
		break;
	case F_U32V:
		for (size_t i = 0; i < *(const size_t *)(base + f->aux); i++)
			put_int(w, f->tag, (*(uint32_t *const *)v)[i], 4);
		break;
	case F_RECV:
		for (size_t i = 0; i < *(const size_t *)(base + f->aux); i++) {
			size_t at = put_tl(w, f->tag, 0), start = w->len;

			encode_record(w, f->sub, *(char *const *)v + i * f->sub->size);
			if (!w->err)
				put_le(w->p + at, w->len - start, 4);
		}
		break;
	case F_RECP: {
		const void *sub = embedded(d, f) ? v : *(void *const *)v;
		size_t at, start;

		if (!sub)
			break;
		at = put_tl(w, f->tag, 0);
		start = w->len;
		encode_record(w, f->sub, sub);
		if (!w->err)
			put_le(w->p + at, w->len - start, 4);
		break;
	}
	}
}

static void encode_record(struct wbuf *w, const struct desc *d, const void *obj)
{
	for (size_t i = 0; i < d->n; i++)
		encode_field(w, d, &d->fields[i], obj);
}

int proto_encode(const struct proto_msg *m, uint8_t **ret_buf, size_t *ret_len)
{
	const struct desc *d = type_desc(m->type);
	struct wbuf w = {0};
	uint8_t *h;

	if (!d)
		return -EINVAL;
	h = wbuf_reserve(&w, KVRUN_PROTO_HEADER_SIZE);
	if (!h)
		return w.err;
	if (d->n)
		encode_record(&w, d, &m->u);
	if (w.err) {
		free(w.p);
		return w.err;
	}
	put_le(w.p, KVRUN_PROTO_MAGIC, 4);
	put_le(w.p + 4, KVRUN_PROTO_VERSION, 2);
	put_le(w.p + 6, m->type, 2);
	put_le(w.p + 8, m->flags, 4);
	put_le(w.p + 12, w.len - KVRUN_PROTO_HEADER_SIZE, 4);
	put_le(w.p + 16, m->id, 8);
	*ret_buf = w.p;
	*ret_len = w.len;
	return 0;
}

/* ---- decoder ---- */

static const struct field *find_field(const struct desc *d, uint16_t tag, size_t *ret_idx)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->fields[i].tag == tag) {
			*ret_idx = i;
			return &d->fields[i];
		}
	return NULL;
}

/* Grow an array of n elements of size sz by one, doubling the capacity. */
static int grow(void **arr, size_t n, size_t *cap, size_t sz)
{
	void *np;
	size_t ncap;

	if (n >= KVRUN_PROTO_MAX_LIST)
		return -EMSGSIZE;
	if (n + 1 < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 4;
	np = realloc(*arr, ncap * sz);
	if (!np)
		return -ENOMEM;
	memset((char *)np + n * sz, 0, (ncap - n) * sz);
	*arr = np;
	*cap = ncap;
	return 0;
}

static int dup_str(const uint8_t *v, size_t len, char **ret)
{
	char *s;

	if (memchr(v, '\0', len))
		return -EBADMSG;
	s = malloc(len + 1);
	if (!s)
		return -ENOMEM;
	memcpy(s, v, len);
	s[len] = '\0';
	*ret = s;
	return 0;
}

static int decode_record(const struct desc *d, void *obj, const uint8_t *p, size_t len, int depth);
static void free_record(const struct desc *d, void *obj);

static int decode_scalar(const struct field *f, void *v, const uint8_t *val, size_t vlen)
{
	static const size_t sizes[] = {[F_U16] = 2, [F_U32] = 4, [F_I32] = 4, [F_U64] = 8, [F_BOOL] = 1, [F_U8] = 1};

	if (vlen != sizes[f->kind])
		return -EBADMSG;
	switch (f->kind) {
	case F_U16:
		*(uint16_t *)v = (uint16_t)get_le(val, 2);
		break;
	case F_U32:
		*(uint32_t *)v = (uint32_t)get_le(val, 4);
		break;
	case F_I32:
		*(int32_t *)v = (int32_t)(uint32_t)get_le(val, 4);
		break;
	case F_U64:
		*(uint64_t *)v = get_le(val, 8);
		break;
	case F_BOOL:
		if (val[0] > 1)
			return -EBADMSG;
		*(bool *)v = val[0];
		break;
	case F_U8:
		*(uint8_t *)v = val[0];
		break;
	}
	return 0;
}

static int decode_sub(const struct field *f, void *dst, const uint8_t *val, size_t vlen, int depth)
{
	if (depth >= MAX_DEPTH)
		return -EBADMSG;
	return decode_record(f->sub, dst, val, vlen, depth + 1);
}

static int decode_field(const struct desc *d, const struct field *f, char *base, size_t *cap, const uint8_t *val,
                        size_t vlen, int depth)
{
	void *v = base + f->off;
	int r;

	if (f->has != NO_HAS)
		*(bool *)(base + f->has) = true;
	switch (f->kind) {
	case F_STR:
		free(*(char **)v);
		*(char **)v = NULL;
		return dup_str(val, vlen, (char **)v);
	case F_STRV: /* handled by decode_record, which keeps the count */
		return -EINVAL;
	case F_BYTES: {
		uint8_t **bp = v;

		free(*bp);
		*bp = malloc(vlen ? vlen : 1);
		if (!*bp)
			return -ENOMEM;
		memcpy(*bp, val, vlen);
		*(size_t *)(base + f->aux) = vlen;
		return 0;
	}
	case F_U32V: {
		size_t *n = (size_t *)(base + f->aux);

		if (vlen != 4)
			return -EBADMSG;
		r = grow(v, *n, cap, sizeof(uint32_t));
		if (r < 0)
			return r;
		(*(uint32_t **)v)[(*n)++] = (uint32_t)get_le(val, 4);
		return 0;
	}
	case F_RECV: {
		size_t *n = (size_t *)(base + f->aux);

		r = grow(v, *n, cap, f->sub->size);
		if (r < 0)
			return r;
		/* Count it first so a failed decode is still freed. */
		return decode_sub(f, *(char **)v + (*n)++ * f->sub->size, val, vlen, depth);
	}
	case F_RAW:
		if (vlen != f->aux)
			return -EBADMSG;
		memcpy(v, val, vlen);
		return 0;
	case F_CSTR:
		if (vlen >= f->aux || memchr(val, '\0', vlen))
			return -EBADMSG;
		memcpy(v, val, vlen);
		((char *)v)[vlen] = '\0';
		return 0;
	case F_RECA: {
		unsigned int *n = (unsigned int *)(base + f->aux);

		/* A fixed array: one element too many is a malformed frame. */
		if (*n >= f->max)
			return -EBADMSG;
		return decode_sub(f, (char *)v + (*n)++ * f->sub->size, val, vlen, depth);
	}
	case F_RECP: {
		void *sub;

		if (embedded(d, f)) {
			/* A repeated record replaces the first one. */
			free_record(f->sub, v);
			return decode_sub(f, v, val, vlen, depth);
		}
		if (*(void **)v) {
			free_record(f->sub, *(void **)v);
			free(*(void **)v);
		}
		sub = calloc(1, f->sub->size);
		*(void **)v = sub;
		if (!sub)
			return -ENOMEM;
		return decode_sub(f, sub, val, vlen, depth);
	}
	default:
		return decode_scalar(f, v, val, vlen);
	}
}

static int strv_push(char ***sv, size_t *n, size_t *cap, const uint8_t *val, size_t vlen)
{
	int r;

	/* grow() keeps one spare slot, so the array stays NULL-terminated. */
	r = grow((void **)sv, *n, cap, sizeof(char *));
	if (r < 0)
		return r;
	r = dup_str(val, vlen, &(*sv)[*n]);
	if (r < 0)
		return r;
	(*n)++;
	return 0;
}

static int decode_record(const struct desc *d, void *obj, const uint8_t *p, size_t len, int depth)
{
	size_t caps[MAX_FIELDS] = {0}, counts[MAX_FIELDS] = {0};
	size_t off = 0;

	while (off < len) {
		const struct field *f;
		size_t vlen, idx;
		uint16_t tag;
		int r;

		if (len - off < 6)
			return -EBADMSG;
		tag = (uint16_t)get_le(p + off, 2);
		vlen = (size_t)get_le(p + off + 2, 4);
		off += 6;
		if (vlen > len - off)
			return -EBADMSG;
		f = find_field(d, tag, &idx);
		if (f && f->kind == F_STRV)
			r = strv_push((char ***)((char *)obj + f->off), &counts[idx], &caps[idx], p + off, vlen);
		else if (f)
			r = decode_field(d, f, obj, &caps[idx], p + off, vlen, depth);
		else
			r = 0; /* unknown tag: a newer peer's field */
		if (r < 0)
			return r;
		off += vlen;
	}
	return 0;
}

int proto_header_parse(const void *buf, size_t len, struct proto_header *ret)
{
	const uint8_t *p = buf;

	if (len < KVRUN_PROTO_HEADER_SIZE)
		return -EAGAIN;
	if (get_le(p, 4) != KVRUN_PROTO_MAGIC)
		return -EBADMSG;
	ret->version = (uint16_t)get_le(p + 4, 2);
	ret->type = (uint16_t)get_le(p + 6, 2);
	ret->flags = (uint32_t)get_le(p + 8, 4);
	ret->length = (uint32_t)get_le(p + 12, 4);
	ret->id = get_le(p + 16, 8);
	if (ret->version != KVRUN_PROTO_VERSION)
		return -EPROTONOSUPPORT;
	if (ret->length > KVRUN_PROTO_MAX_BODY)
		return -EMSGSIZE;
	return 0;
}

int proto_decode(const void *buf, size_t len, struct proto_msg *ret)
{
	struct proto_header h;
	const struct desc *d;
	int r;

	memset(ret, 0, sizeof(*ret));
	r = proto_header_parse(buf, len, &h);
	if (r == -EAGAIN)
		return -EBADMSG;
	if (r < 0)
		return r;
	if (len != KVRUN_PROTO_HEADER_SIZE + (size_t)h.length)
		return -EBADMSG;
	d = type_desc(h.type);
	if (!d)
		return -EBADMSG;
	ret->type = h.type;
	ret->flags = h.flags;
	ret->id = h.id;
	r = decode_record(d, &ret->u, (const uint8_t *)buf + KVRUN_PROTO_HEADER_SIZE, h.length, 0);
	if (r < 0) {
		proto_msg_free(ret);
		return r;
	}
	return 0;
}

/* ---- free ---- */

static void free_record(const struct desc *d, void *obj)
{
	char *base = obj;

	for (size_t i = 0; i < d->n; i++) {
		const struct field *f = &d->fields[i];
		void *v = base + f->off;

		switch (f->kind) {
		case F_STR:
		case F_BYTES:
		case F_U32V:
			free(*(void **)v);
			break;
		case F_STRV:
			for (char **s = *(char ***)v; s && *s; s++)
				free(*s);
			free(*(void **)v);
			break;
		case F_RECV:
			for (size_t j = 0; j < *(size_t *)(base + f->aux); j++)
				free_record(f->sub, *(char **)v + j * f->sub->size);
			free(*(void **)v);
			break;
		case F_RECA:
			for (unsigned int j = 0; j < *(unsigned int *)(base + f->aux) && j < f->max; j++)
				free_record(f->sub, (char *)v + j * f->sub->size);
			break;
		case F_RECP:
			if (embedded(d, f)) {
				free_record(f->sub, v);
				break;
			}
			if (*(void **)v)
				free_record(f->sub, *(void **)v);
			free(*(void **)v);
			break;
		default:
			break;
		}
	}
	memset(obj, 0, d->size);
}

void proto_msg_free(struct proto_msg *m)
{
	const struct desc *d;

	if (!m)
		return;
	d = type_desc(m->type);
	if (d && d->n)
		free_record(d, &m->u);
	memset(m, 0, sizeof(*m));
}

void proto_process_free(struct proto_process *p)
{
	free_record(&process_desc, p);
}

void proto_start_free(struct proto_start *s)
{
	free_record(&start_desc, s);
}

/* ---- blocking stream I/O ---- */

static int read_full(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = read(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int proto_send(int fd, const struct proto_msg *m)
{
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len;
	int r;

	r = proto_encode(m, &buf, &len);
	if (r < 0)
		return r;
	return write_all(fd, buf, len);
}

int proto_recv(int fd, struct proto_msg *ret)
{
	uint8_t hdr[KVRUN_PROTO_HEADER_SIZE];
	_cleanup_free_ uint8_t *buf = NULL;
	struct proto_header h;
	int r;

	r = read_full(fd, hdr, sizeof(hdr));
	if (r < 0)
		return r;
	r = proto_header_parse(hdr, sizeof(hdr), &h);
	if (r < 0)
		return r;
	buf = malloc(sizeof(hdr) + h.length);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, hdr, sizeof(hdr));
	r = read_full(fd, buf + sizeof(hdr), h.length);
	if (r < 0)
		return r;
	return proto_decode(buf, sizeof(hdr) + h.length, ret);
}
