/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memhog MIB [HOLD_S [AFTER_S]]: allocate MIB MiB of anonymous memory and
 * write every page, hold it HOLD_S seconds (default 0), free it, then stay
 * AFTER_S seconds (default 60) before exiting 0. One line on stdout at
 * each step ("allocated N MiB in S s", "freed", "done"), flushed, so that
 * a test or benchmark outside the container can time what the host sees.
 * Built static by the tests that put it in a container (test_memory_return.py)
 * and by the bench's sizing suite.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	size_t mib, len;
	unsigned int hold, after;
	double t0;
	char *p;

	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: memhog MIB [HOLD_S [AFTER_S]]\n");
		return 2;
	}
	mib = strtoul(argv[1], NULL, 10);
	hold = argc > 2 ? (unsigned int)strtoul(argv[2], NULL, 10) : 0;
	after = argc > 3 ? (unsigned int)strtoul(argv[3], NULL, 10) : 60;
	len = mib << 20;
	t0 = now();
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("memhog: mmap");
		return 1;
	}
	for (size_t off = 0; off < len; off += 4096)
		p[off] = (char)(off >> 12 | 1);
	printf("allocated %zu MiB in %.1f s\n", mib, now() - t0);
	fflush(stdout);
	sleep(hold);
	munmap(p, len);
	printf("freed\n");
	fflush(stdout);
	sleep(after);
	printf("done\n");
	fflush(stdout);
	return 0;
}
