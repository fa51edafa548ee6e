/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The split virtqueue walker (virtio/virtqueue.c) on a fake guest memory,
 * without a transport: what a hostile driver can write into the rings and
 * tables, and that every walk ends. Each hostile case runs in a child with
 * an alarm, so a walk that never ends is a failed line, not a hung test.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "virtio/virtio.h"
#include "virtio/virtqueue.h"

#define RAM_SIZE (1u << 20)
#define DESC 0x1000u
#define AVAIL 0x6000u
#define USED 0x8000u
#define BUF 0x20000u
#define TABLE 0x40000u
#define NUM 16
#define WALK_SECONDS 5

struct vqt {
	uint8_t *ram;
	struct guest_mem mem;
	struct virtq vq;
	struct virtq_req req;
	uint16_t avail_idx;
};

static void vqt_setup(struct vqt *t, uint16_t num, uint64_t features)
{
	memset(t, 0, sizeof(*t));
	t->ram = aligned_alloc(4096, RAM_SIZE);
	if (!t->ram)
		abort();
	memset(t->ram, 0, RAM_SIZE);
	guest_mem_init_buffer(&t->mem, t->ram, RAM_SIZE);
	virtq_init(&t->vq, &t->mem, 256);
	t->vq.num = num;
	t->vq.desc_gpa = DESC;
	t->vq.avail_gpa = AVAIL;
	t->vq.used_gpa = USED;
	t->vq.ready = true;
	if (virtq_start(&t->vq, features) < 0)
		abort();
}

static void vqt_free(struct vqt *t)
{
	free(t->ram);
}

/* Descriptor i of the ring (table 0) or of a table at gpa table. */
static void set_desc(struct vqt *t, uint64_t table, uint16_t i, uint64_t addr, uint32_t len, uint16_t flags,
                     uint16_t next)
{
	struct virtq_desc d = {.addr = addr, .len = len, .flags = flags, .next = next};

	memcpy(t->ram + (table ? table : DESC) + 16ULL * i, &d, sizeof(d));
}

static void publish(struct vqt *t, uint16_t head)
{
	struct virtq_avail *avail = (struct virtq_avail *)(t->ram + AVAIL);

	avail->ring[t->avail_idx % t->vq.num] = head;
	t->avail_idx++;
	__atomic_store_n(&avail->idx, t->avail_idx, __ATOMIC_RELEASE);
}

/*
 * Run virtq_pop() in a child under an alarm: 0 when it returned want (and,
 * for -EIO, left the queue broken), 1 when it returned something else, 2
 * when it did not return within WALK_SECONDS.
 */
static int pop_in_child(struct vqt *t, int want)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		abort();
	if (pid == 0) {
		int r;

		alarm(WALK_SECONDS);
		r = virtq_pop(&t->vq, &t->req);
		_exit(r == want && (want != -EIO || t->vq.broken) ? 0 : 1);
	}
	if (waitpid(pid, &status, 0) != pid)
		abort();
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
		return 2;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

static void refused(struct vqt *t, const char *what)
{
	int r = pop_in_child(t, -EIO);

	ok(r == 0, "%s: refused, queue broken%s", what, r == 2 ? " (the walk never ended)" : "");
}

TEST(indirect_table_is_the_ring)
{
	uint64_t ind = VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC);
	struct vqt t;

	/* The table is the ring itself: its entry 0 is the indirect
	 * descriptor again. A pointer comparison with the ring took it for
	 * the first indirect each time and restarted the walk forever. */
	vqt_setup(&t, NUM, ind);
	set_desc(&t, 0, 0, DESC, 16 * NUM, VIRTQ_DESC_F_INDIRECT, 0);
	publish(&t, 0);
	refused(&t, "indirect table = the whole ring");
	vqt_free(&t);

	vqt_setup(&t, NUM, ind);
	set_desc(&t, 0, 0, DESC, 16, VIRTQ_DESC_F_INDIRECT, 0);
	publish(&t, 0);
	refused(&t, "indirect table = ring entry 0 alone");
	vqt_free(&t);

	/* A direct descriptor leading to the ring as a table. */
	vqt_setup(&t, NUM, ind);
	set_desc(&t, 0, 0, BUF, 8, VIRTQ_DESC_F_NEXT, 1);
	set_desc(&t, 0, 1, DESC, 16 * NUM, VIRTQ_DESC_F_INDIRECT, 0);
	publish(&t, 0);
	refused(&t, "chain into the ring as its own table");
	vqt_free(&t);

	/* A table whose entry points back at the table. */
	vqt_setup(&t, NUM, ind);
	set_desc(&t, TABLE, 0, TABLE, 16, VIRTQ_DESC_F_INDIRECT, 0);
	set_desc(&t, 0, 0, TABLE, 16, VIRTQ_DESC_F_INDIRECT, 0);
	publish(&t, 0);
	refused(&t, "table entry pointing at its own table");
	vqt_free(&t);
}

TEST(indirect_rules)
{
	uint64_t ind = VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC);
	struct vqt t;

	/* Zero or more direct descriptors, then one indirect (2.7.5.3.2);
	 * WRITE on the indirect descriptor itself is ignored. */
	vqt_setup(&t, NUM, ind);
	set_desc(&t, 0, 0, BUF, 16, VIRTQ_DESC_F_NEXT, 1);
	set_desc(&t, 0, 1, TABLE, 32, VIRTQ_DESC_F_INDIRECT | VIRTQ_DESC_F_WRITE, 0);
	set_desc(&t, TABLE, 0, BUF + 64, 100, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 1);
	set_desc(&t, TABLE, 1, BUF + 256, 1, VIRTQ_DESC_F_WRITE, 0);
	publish(&t, 0);
	is_int(virtq_pop(&t.vq, &t.req), 1);
	is_int(t.req.nr_out, 1);
	is_int(t.req.nr_in, 2);
	is_int(t.req.out_len, 16);
	is_int(t.req.in_len, 101);
	ok(t.req.iov[1].iov_base == t.ram + BUF + 64, "indirect buffer mapped where the guest put it");
	vqt_free(&t);

	vqt_setup(&t, NUM, ind);
	set_desc(&t, TABLE, 0, BUF, 8, VIRTQ_DESC_F_NEXT, 5);
	set_desc(&t, TABLE, 1, BUF, 8, 0, 0);
	set_desc(&t, 0, 0, TABLE, 32, VIRTQ_DESC_F_INDIRECT, 0);
	publish(&t, 0);
	refused(&t, "next beyond the indirect table");
	vqt_free(&t);

	vqt_setup(&t, NUM, ind);
	set_desc(&t, TABLE, 0, BUF, 8, VIRTQ_DESC_F_NEXT, 1);
	set_desc(&t, TABLE, 1, BUF, 8, VIRTQ_DESC_F_NEXT, 0);
	set_desc(&t, 0, 0, TABLE, 32, VIRTQ_DESC_F_INDIRECT, 0);
	publish(&t, 0);
	refused(&t, "loop inside the indirect table");
	vqt_free(&t);

	vqt_setup(&t, NUM, ind);
	set_desc(&t, 0, 0, TABLE, 0, VIRTQ_DESC_F_INDIRECT, 0);
	publish(&t, 0);
	refused(&t, "zero-length indirect table");
	vqt_free(&t);
}

/* The walk budget is what the rules allow, not less: num - 1 direct
 * descriptors and a table that fills the chain to VIRTQ_MAX_SEGS. */
TEST(longest_legal_chain)
{
	uint64_t ind = VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC);
	unsigned int in_table = VIRTQ_MAX_SEGS - (NUM - 1);
	struct vqt t;

	vqt_setup(&t, NUM, ind);
	for (uint16_t i = 0; i < NUM - 1; i++)
		set_desc(&t, 0, i, BUF, 4, VIRTQ_DESC_F_NEXT, i + 1);
	set_desc(&t, 0, NUM - 1, TABLE, 16 * in_table, VIRTQ_DESC_F_INDIRECT, 0);
	for (unsigned int i = 0; i < in_table; i++)
		set_desc(&t, TABLE, (uint16_t)i, BUF, 2,
		         VIRTQ_DESC_F_WRITE | (i + 1 < in_table ? VIRTQ_DESC_F_NEXT : 0), (uint16_t)(i + 1));
	publish(&t, 0);
	is_int(virtq_pop(&t.vq, &t.req), 1);
	is_int(t.req.nr_out + t.req.nr_in, VIRTQ_MAX_SEGS);
	is_int(t.req.out_len, 4 * (NUM - 1));
	is_int(t.req.in_len, 2 * in_table);
	vqt_free(&t);

	/* Every descriptor of the ring, chained once. */
	vqt_setup(&t, NUM, 0);
	for (uint16_t i = 0; i < NUM; i++)
		set_desc(&t, 0, i, BUF, 1, i + 1 < NUM ? VIRTQ_DESC_F_NEXT : 0, i + 1);
	publish(&t, 0);
	is_int(virtq_pop(&t.vq, &t.req), 1);
	is_int(t.req.nr_out, NUM);
	vqt_free(&t);

	/* One segment too many in the table. */
	vqt_setup(&t, NUM, ind);
	set_desc(&t, 0, 0, BUF, 4, VIRTQ_DESC_F_NEXT, 1);
	set_desc(&t, 0, 1, TABLE, 16 * VIRTQ_MAX_SEGS, VIRTQ_DESC_F_INDIRECT, 0);
	for (unsigned int i = 0; i < VIRTQ_MAX_SEGS; i++)
		set_desc(&t, TABLE, (uint16_t)i, BUF, 2,
		         VIRTQ_DESC_F_WRITE | (i + 1 < VIRTQ_MAX_SEGS ? VIRTQ_DESC_F_NEXT : 0), (uint16_t)(i + 1));
	publish(&t, 0);
	refused(&t, "VIRTQ_MAX_SEGS + 1 buffers");
	vqt_free(&t);
}

TEST(zero_length_descriptors)
{
	struct vqt t;

	vqt_setup(&t, NUM, 0);
	set_desc(&t, 0, 0, BUF, 0, VIRTQ_DESC_F_NEXT, 1);
	set_desc(&t, 0, 1, RAM_SIZE, 0, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 2);
	set_desc(&t, 0, 2, BUF, 8, VIRTQ_DESC_F_WRITE, 0);
	publish(&t, 0);
	is_int(virtq_pop(&t.vq, &t.req), 1);
	is_int(t.req.out_len, 0);
	is_int(t.req.in_len, 8);
	is_int(t.req.nr_out + t.req.nr_in, 3);
	vqt_free(&t);

	/* Zero length does not make an address outside RAM acceptable. */
	vqt_setup(&t, NUM, 0);
	set_desc(&t, 0, 0, RAM_SIZE + 4096, 0, 0, 0);
	publish(&t, 0);
	refused(&t, "zero-length buffer outside RAM");
	vqt_free(&t);
}

TEST(avail_index)
{
	struct virtq_avail *avail;
	struct vqt t;
	int got = 0;

	/* Exactly num chains ahead is a full ring, and fine. */
	vqt_setup(&t, NUM, 0);
	for (uint16_t i = 0; i < NUM; i++) {
		set_desc(&t, 0, i, BUF, 8, 0, 0);
		publish(&t, i);
	}
	while (virtq_pop(&t.vq, &t.req) == 1)
		got++;
	is_int(got, NUM);
	ok(!t.vq.broken, "full ring: queue fine");
	vqt_free(&t);

	vqt_setup(&t, NUM, 0);
	avail = (struct virtq_avail *)(t.ram + AVAIL);
	set_desc(&t, 0, 0, BUF, 8, 0, 0);
	avail->idx = NUM + 1;
	refused(&t, "avail idx num + 1 ahead");
	avail->idx = 0xffff;
	refused(&t, "avail idx behind (wrapped)");
	vqt_free(&t);
}

/* The used ring is written at used_idx modulo num, whatever the index:
 * nothing after it (avail_event, then other guest data) is touched. */
TEST(used_ring_writes)
{
	struct virtq_used *used;
	uint8_t canary[64];
	struct vqt t;

	vqt_setup(&t, NUM, 0);
	used = (struct virtq_used *)(t.ram + USED);
	memset(canary, 0x5a, sizeof(canary));
	memcpy((uint8_t *)&used->ring[NUM], canary, sizeof(canary));
	t.vq.used_idx = 0xfff0; /* as a restored snapshot may have it */
	for (int i = 0; i < 5 * NUM; i++)
		virtq_push(&t.vq, (uint16_t)(i % NUM), (uint32_t)i);
	is_int(used->idx, (uint16_t)(0xfff0 + 5 * NUM));
	ok(memcmp((uint8_t *)&used->ring[NUM], canary, sizeof(canary)) == 0, "nothing written past the ring");
	is_int(used->ring[(uint16_t)(0xfff0 + 5 * NUM - 1) % NUM].len, 5 * NUM - 1);
	vqt_free(&t);
}

/* A broken queue stays broken and refuses at once until reset. */
TEST(broken_until_reset)
{
	struct vqt t;

	vqt_setup(&t, NUM, 0);
	set_desc(&t, 0, 0, BUF, 8, VIRTQ_DESC_F_NEXT, 0);
	publish(&t, 0);
	is_int(virtq_pop(&t.vq, &t.req), -EIO);
	set_desc(&t, 0, 0, BUF, 8, 0, 0);
	is_int(virtq_pop(&t.vq, &t.req), -EIO);
	ok(!virtq_usable(&t.vq), "not usable");
	virtq_reset(&t.vq);
	ok(!t.vq.broken && !t.vq.ready, "reset forgets the queue");
	vqt_free(&t);
}

TAP_MAIN()
