/* SPDX-License-Identifier: Apache-2.0 */
/* State JSON against what runc printed on this machine (fixtures/runc-*),
 * and the on-disk round trip. */
#include <string.h>

#include "fixtures.h"
#include "oci-spec/state.h"

/* The container the runc-state.json / runc-list.json fixtures describe. */
static void fill(struct oci_state *s, const char *id, int pid, enum oci_status st, const char *created,
                 const char *owner)
{
	*s = (struct oci_state){0};
	s->oci_version = strdup("1.0.2-dev");
	s->id = strdup(id);
	s->pid = pid;
	s->status = st;
	s->bundle = strdup("/tmp/rbundle");
	s->rootfs = strdup("/tmp/rbundle/rootfs");
	s->created = strdup(created);
	s->owner = strdup(owner);
	/* Not in key order: the encoder sorts, as Go prints a map. */
	oci_map_set(&s->annotations, "io.kubernetes.cri.sandbox-id", "abc");
	oci_map_set(&s->annotations, "b.key", "x<y&z>");
	oci_map_set(&s->annotations, "a.key", "caf\xc3\xa9 \xe2\x80\xa8 tab\there \"q\" back\\slash");
	oci_map_set(&s->private_data, "vm.pid", "4242");
}

TEST(runc_state)
{
	_cleanup_free_ char *want = fixture_read("runc-state.json", NULL), *got = NULL;
	struct oci_state s;

	fill(&s, "t2", 7915, OCI_STATUS_RUNNING, "2026-11-30T00:04:48.335308618Z", "");
	is_int(oci_state_to_runc_json(&s, &got), 0);
	is_str(got, want);
	ok(!strstr(got, "vm.pid"), "private data not printed");
	free(got);
	/* No annotations: the member is left out. */
	oci_map_clear(&s.annotations);
	s.status = OCI_STATUS_STOPPED;
	s.pid = 0;
	is_int(oci_state_to_runc_json(&s, &got), 0);
	is_str(got,
	       "{\n  \"ociVersion\": \"1.0.2-dev\",\n  \"id\": \"t2\",\n  \"pid\": 0,\n  \"status\": \"stopped\",\n"
	       "  \"bundle\": \"/tmp/rbundle\",\n  \"rootfs\": \"/tmp/rbundle/rootfs\",\n"
	       "  \"created\": \"2026-11-30T00:04:48.335308618Z\",\n  \"owner\": \"\"\n}");
	oci_state_clear(&s);
}

TEST(runc_list)
{
	_cleanup_free_ char *want = fixture_read("runc-list.json", NULL), *got = NULL;
	_cleanup_free_ char *want_empty = fixture_read("runc-list-empty.json", NULL);
	struct oci_state s;
	const struct oci_state *list[1] = {&s};

	fill(&s, "t2", 7915, OCI_STATUS_RUNNING, "2026-11-30T00:04:48.335308618Z", "root");
	is_int(oci_state_list_to_json(list, 1, &got), 0);
	is_str(got, want);
	free(got);
	is_int(oci_state_list_to_json(NULL, 0, &got), 0);
	is_str(got, want_empty);
	oci_state_clear(&s);
}

TEST(hook_state)
{
	_cleanup_free_ char *want = fixture_read("runc-hook-state.json", NULL), *got = NULL;
	struct oci_state s;

	fill(&s, "t3", 8155, OCI_STATUS_CREATED, "2026-11-30T00:04:51.877856593Z", "");
	is_int(oci_state_to_hook_json(&s, &got), 0);
	is_str(got, want);
	free(got);
	s.pid = 0;
	oci_map_clear(&s.annotations);
	s.status = OCI_STATUS_STOPPED;
	is_int(oci_state_to_hook_json(&s, &got), 0);
	is_str(got, "{\"ociVersion\":\"1.0.2-dev\",\"id\":\"t3\",\"status\":\"stopped\",\"bundle\":\"/tmp/rbundle\"}");
	oci_state_clear(&s);
}

TEST(file_round_trip)
{
	_cleanup_free_ char *json = NULL, *again = NULL;
	struct oci_state s, *back = NULL;

	fill(&s, "round", 77, OCI_STATUS_PAUSED, "2026-01-02T03:04:05Z", "");
	oci_map_set(&s.private_data, "control", "/run/kvrun/round/control.sock");
	is_int(oci_state_to_file_json(&s, &json), 0);
	ok(json[strlen(json) - 1] == '\n', "trailing newline");
	is_int(oci_state_from_file_json(json, strlen(json), "state.json", &back), 0);
	if (!back) {
		oci_state_clear(&s);
		return;
	}
	is_str(back->id, "round");
	is_int(back->pid, 77);
	is_int(back->status, OCI_STATUS_PAUSED);
	is_str(back->bundle, "/tmp/rbundle");
	is_str(back->rootfs, "/tmp/rbundle/rootfs");
	is_str(back->created, "2026-01-02T03:04:05Z");
	is_str(back->owner, "");
	is_int(back->annotations.n, 3);
	/* Insertion order is kept on disk. */
	is_str(back->annotations.items[0].key, "io.kubernetes.cri.sandbox-id");
	is_str(oci_map_get(&back->annotations, "a.key"), s.annotations.items[2].value);
	is_str(oci_map_get(&back->private_data, "vm.pid"), "4242");
	is_str(oci_map_get(&back->private_data, "control"), "/run/kvrun/round/control.sock");
	is_int(oci_state_to_file_json(back, &again), 0);
	is_str(again, json);
	oci_state_free(back);
	oci_state_clear(&s);
}

TEST(file_errors)
{
	struct oci_state *s = NULL;
	const char *bad_status = "{\"id\":\"x\",\"status\":\"dancing\"}";
	const char *no_id = "{\"status\":\"running\"}";
	const char *bad_pid = "{\"id\":\"x\",\"pid\":-4,\"status\":\"running\"}";

	is_int(oci_state_from_file_json(bad_status, strlen(bad_status), "state.json", &s), -EINVAL);
	is_str(err_msg(), "state.json: status: unknown status \"dancing\"");
	is_int(oci_state_from_file_json(no_id, strlen(no_id), "state.json", &s), -EINVAL);
	is_str(err_msg(), "state.json: id: required field is missing");
	is_int(oci_state_from_file_json(bad_pid, strlen(bad_pid), "state.json", &s), -EINVAL);
	is_str(err_msg(), "state.json: pid: -4 is out of range");
	is_int(oci_state_from_file_json("{", 1, "state.json", &s), -EINVAL);
	ok(s == NULL, "nothing returned on error");
}

TEST(status_names)
{
	is_str(oci_status_name(OCI_STATUS_CREATING), "creating");
	is_str(oci_status_name(OCI_STATUS_STOPPED), "stopped");
	ok(oci_status_name(OCI_STATUS__MAX) == NULL, "out of range");
	is_int(oci_status_from_name("paused"), OCI_STATUS_PAUSED);
	is_int(oci_status_from_name("Paused"), -EINVAL);
}

TEST(time_format)
{
	_cleanup_free_ char *t = NULL;
	size_t n;

	is_int(oci_time_now_rfc3339(&t), 0);
	n = strlen(t);
	ok(n >= 20 && n <= 30, "length %zu", n);
	ok(t[4] == '-' && t[10] == 'T' && t[13] == ':' && t[n - 1] == 'Z', "shape of %s", t);
	ok(n == 20 || (t[19] == '.' && t[n - 2] != '0'), "fraction without trailing zeros: %s", t);
}

TAP_MAIN()
