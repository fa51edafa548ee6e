/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host-direct side of bench/run.py's datapath suite: the operations
 * the test guest's benchmark mode makes through kvrun's devices
 * (tests/guest/bench*.c), done here directly on the host, as the physical
 * limit they are compared with. Prints one JSON line: ops, bytes, ns.
 *
 *   datapath-host blk FILE MODE BS QD OPS   io_uring on FILE (buffered, as
 *       kvrun's virtio-blk opens it), MODE read|write|randread|randwrite,
 *       QD requests in flight, the guest's offsets (same generator, seed)
 *   datapath-host tap-sink IFNAME SECONDS   count frames arriving on IFNAME
 *   datapath-host tap-source IFNAME SIZE SECONDS   send frames out of IFNAME
 *   datapath-host tap-write TAP SIZE N      write N frames to the TAP
 *   datapath-host tap-read TAP SIZE N STALL_S   read N frames from the TAP
 *   (datapath-host-net.c; SIZE 64..1514, or 64K: TCP/IPv4 with GSO)
 *   datapath-host vsock-peer PATH MODE SIZE  the guest's vsock peer
 *   datapath-host unix MODE SIZE COUNT       the same over a unix socket
 *   (datapath-host-unix.c; MODE send, recv or rr)
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "datapath-host.h"

#define MAX_QD 256

uint64_t dh_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t dh_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

uint64_t dh_parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 10);

	if (*end == 'K')
		v <<= 10;
	else if (*end == 'M')
		v <<= 20;
	else if (*end == 'G')
		v <<= 30;
	return v;
}

void dh_die(const char *what, int err)
{
	fprintf(stderr, "datapath-host: %s: %s\n", what, strerror(err));
	exit(1);
}

struct blk_job {
	int fd;
	bool write, random;
	uint64_t bs, qd, ops, blocks, rng, next;
	uint8_t *buf;
};

static void blk_submit(struct io_uring *ring, struct blk_job *j, uint64_t slot)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	uint64_t block = j->random ? rng_next(&j->rng) % j->blocks : j->next++ % j->blocks;

	if (j->write)
		io_uring_prep_write(sqe, j->fd, j->buf + slot * j->bs, (unsigned int)j->bs, block * j->bs);
	else
		io_uring_prep_read(sqe, j->fd, j->buf + slot * j->bs, (unsigned int)j->bs, block * j->bs);
	io_uring_sqe_set_data64(sqe, slot);
}

static int run_blk(int argc, char **argv)
{
	struct blk_job j = {0};
	struct io_uring ring;
	struct stat st;
	uint64_t issued = 0, done = 0, errors = 0, t0, t1, c0;
	const char *mode;
	int r;

	if (argc != 7)
		return 2;
	mode = argv[3];
	j.write = !strcmp(mode, "write") || !strcmp(mode, "randwrite");
	j.random = !strncmp(mode, "rand", 4);
	j.bs = dh_parse_size(argv[4]);
	j.qd = dh_parse_size(argv[5]);
	j.ops = dh_parse_size(argv[6]);
	if (!j.bs || j.qd < 1 || j.qd > MAX_QD || !j.ops)
		return 2;
	j.fd = open(argv[2], (j.write ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (j.fd < 0 || fstat(j.fd, &st) < 0)
		dh_die(argv[2], errno);
	j.blocks = (uint64_t)st.st_size / j.bs;
	/* The guest's generator and seed (bench_seed 0). */
	j.rng = 0x2545f4914f6cdd1dULL ^ j.bs ^ j.qd;
	j.buf = mmap(NULL, j.bs * j.qd, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (j.buf == MAP_FAILED || !j.blocks)
		dh_die("buffers", errno ? errno : EINVAL);
	memset(j.buf, 0x5a, j.bs * j.qd);
	r = io_uring_queue_init((unsigned int)(j.qd * 2), &ring, 0);
	if (r < 0)
		dh_die("io_uring_queue_init", -r);
	t0 = dh_now_ns();
	c0 = dh_cpu_ns();
	for (; issued < j.qd && issued < j.ops; issued++)
		blk_submit(&ring, &j, issued);
	io_uring_submit(&ring);
	while (done < j.ops) {
		struct io_uring_cqe *cqe;
		unsigned int head, n = 0;

		r = io_uring_wait_cqe(&ring, &cqe);
		if (r < 0)
			dh_die("io_uring_wait_cqe", -r);
		io_uring_for_each_cqe(&ring, head, cqe)
		{
			uint64_t slot = io_uring_cqe_get_data64(cqe);

			if (cqe->res != (int)j.bs)
				errors++;
			done++;
			n++;
			if (issued < j.ops) {
				blk_submit(&ring, &j, slot);
				issued++;
			}
		}
		io_uring_cq_advance(&ring, n);
		io_uring_submit(&ring);
	}
	t1 = dh_now_ns();
	printf("{\"ops\": %llu, \"bytes\": %llu, \"ns\": %llu, \"cpu_ns\": %llu, \"errors\": %llu}\n",
	       (unsigned long long)done, (unsigned long long)((done - errors) * j.bs), (unsigned long long)(t1 - t0),
	       (unsigned long long)(dh_cpu_ns() - c0), (unsigned long long)errors);
	io_uring_queue_exit(&ring);
	return errors ? 1 : 0;
}

int main(int argc, char **argv)
{
	int r = 2;

	if (argc > 1 && !strcmp(argv[1], "blk"))
		r = run_blk(argc, argv);
	else if (argc > 1 && !strcmp(argv[1], "tap-sink"))
		r = dh_tap_sink(argc, argv);
	else if (argc > 1 && !strcmp(argv[1], "tap-source"))
		r = dh_tap_source(argc, argv);
	else if (argc > 1 && !strcmp(argv[1], "tap-write"))
		r = dh_tap_write(argc, argv);
	else if (argc > 1 && !strcmp(argv[1], "tap-read"))
		r = dh_tap_read(argc, argv);
	else if (argc > 1 && !strcmp(argv[1], "vsock-peer"))
		r = dh_vsock_peer(argc, argv);
	else if (argc > 1 && !strcmp(argv[1], "unix"))
		r = dh_unix(argc, argv);
	if (r == 2)
		fprintf(stderr,
		        "usage: datapath-host blk FILE MODE BS QD OPS | tap-sink IFNAME SECONDS | tap-source "
		        "IFNAME SIZE SECONDS | tap-write TAP SIZE N | tap-read TAP SIZE N STALL_S | vsock-peer PATH "
		        "MODE SIZE | unix MODE SIZE COUNT\n");
	return r;
}
