/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What PID 1 does differently in a VM restored from a template: the
 * template's clock and entropy pool are in its memory, so START brings
 * the instance's own; and the root disk gets its media only after the
 * restore, so its size is waited for before mounting.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/random.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "config.h"
#include "guest-init/guest-init.h"

#define DISK_POLL_NS (2 * 1000 * 1000)

static int set_clock(uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ULL), .tv_nsec = (long)(ns % 1000000000ULL)};

	if (clock_settime(CLOCK_REALTIME, &ts) < 0)
		return err_setsys(-errno, "set the clock");
	return 0;
}

static int add_entropy(const uint8_t *seed, size_t len)
{
	struct {
		struct rand_pool_info info;
		uint8_t buf[PROTO_SEED_BYTES];
	} e;
	_cleanup_close_ int fd = -1;

	if (len > sizeof(e.buf))
		len = sizeof(e.buf);
	e.info.entropy_count = (int)(len * 8);
	e.info.buf_size = (int)len;
	memcpy(e.buf, seed, len);
	fd = open("/dev/urandom", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return err_setsys(-errno, "open /dev/urandom");
	/* Credited, unlike a plain write: the pool is seeded for this VM. */
	if (ioctl(fd, RNDADDENTROPY, &e.info) < 0)
		return err_setsys(-errno, "RNDADDENTROPY");
	/* A restored guest's generators are the saved VM's: an initialized
	 * kernel only reseeds them from the pool on its own schedule (up to a
	 * minute of its uptime later), so until then every VM restored from
	 * one template would read the same bytes. Reseed now. */
	if (ioctl(fd, RNDRESEEDCRNG) < 0)
		return err_setsys(-errno, "RNDRESEEDCRNG");
	return 0;
}

int gi_apply_identity(const struct proto_start *s)
{
	int r = 0, q;

	if (s->has_realtime && (q = set_clock(s->realtime_ns)) < 0)
		r = q;
	if (s->has_seed && (q = add_entropy(s->seed, sizeof(s->seed))) < 0)
		r = q;
	return r;
}

/* The disk's size in sectors from sysfs; -ENOENT when dev is not a
 * block device the kernel lists (then there is nothing to wait for). */
static int disk_sectors(const char *dev, uint64_t *ret)
{
	const char *base = strrchr(dev, '/');
	char path[256], buf[32];
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/class/block/%s/size", base ? base + 1 : dev);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	*ret = strtoull(buf, NULL, 10);
	return 0;
}

int gi_wait_disk(const char *dev, int timeout_ms)
{
	struct timespec ts = {0, DISK_POLL_NS}, t0, now;
	uint64_t sectors = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int r = disk_sectors(dev, &sectors);

		if (r < 0 || sectors > 0)
			return 0;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 >= timeout_ms)
			return err_set(-ENOMEDIUM, "%s has no media after %d s", dev, timeout_ms / 1000);
		nanosleep(&ts, NULL);
	}
}

static int mark_fd = -1;

void gi_marks_open(void)
{
	int fd;

	if (!KVRUN_PHASE_MARKS || (fd = open("/dev/console", O_WRONLY | O_NOCTTY | O_CLOEXEC)) < 0)
		return;
	/* Out of the way of the fds a child puts on 0, 1, 2, 3, ... */
	mark_fd = fcntl(fd, F_DUPFD_CLOEXEC, 200);
	close(fd);
}

void gi_mark(unsigned int n)
{
	char b[2] = {0x1e, (char)(0x40 + (n & 0x3f))};

	if (KVRUN_PHASE_MARKS && mark_fd >= 0 && write(mark_fd, b, sizeof(b)) < 0)
		mark_fd = -1;
}
