/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio-blk driven by a fuzzed guest program, over the raw file backend
 * (fuzz-virtio-blk-raw) or the copy-on-write backend (fuzz-virtio-blk-cow,
 * built with FUZZ_BLK_COW). The disk files live in a directory of this
 * process; each input starts from an empty disk (1 MiB; the base of the
 * copy-on-write disk has a pattern and is never written). Besides the
 * guest's requests the program may pause and resume the device and export
 * the disk, as a checkpoint does. After each kick the harness waits for
 * the worker thread to take every published request (fz_blk_settle()).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fileio.h"
#include "fuzz.h"
#include "virtio/blk/blk-dev.h"
#include "virtio/blk/blk.h"

#define DISK_SIZE (1u << 20)

static char dir[64], raw[96], base[96], overlay[96];

static void remove_files(void)
{
	unlink(raw);
	unlink(base);
	unlink(overlay);
	rmdir(dir);
}

static void make_files(void)
{
	static uint8_t pattern[DISK_SIZE];
	int fd;

	if (dir[0])
		return;
	/* In memory where there is a tmpfs: fdatasync() there costs nothing. */
	snprintf(dir, sizeof(dir), "%s/kvrun-fuzz-blk-%d", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp",
	         (int)getpid());
	if (mkdir(dir, 0700) < 0)
		abort();
	snprintf(raw, sizeof(raw), "%s/raw.img", dir);
	snprintf(base, sizeof(base), "%s/base.img", dir);
	snprintf(overlay, sizeof(overlay), "%s/overlay.img", dir);
	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (uint8_t)(i / 512 + i);
	fd = open(base, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write_all(fd, pattern, sizeof(pattern)) < 0)
		abort();
	close(fd);
	fd = open(overlay, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		abort();
	close(fd);
	atexit(remove_files);
}

/* A fresh disk for each input. */
static struct blk_backend *open_disk(bool read_only)
{
	struct blk_backend *be = NULL;
	int fd;

#ifdef FUZZ_BLK_COW
	(void)read_only;
	(void)fd;
	if (blk_cow_open(base, overlay, &be) < 0)
		abort();
#else
	fd = open(raw, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, DISK_SIZE) < 0)
		abort();
	close(fd);
	if (blk_file_open(raw, read_only, &be) < 0)
		abort();
#endif
	return be;
}

static void blk_extra(struct fz_guest *g, struct fz *f, uint8_t op)
{
	struct virtio_blk *b = g->blk;

	switch (op % 3) {
	case 0:
		virtio_blk_pause(b, true);
		break;
	case 1:
		virtio_blk_pause(b, false);
		fz_blk_settle(g);
		break;
	default: {
		int fd = memfd_create("export", MFD_CLOEXEC);

		if (fd < 0)
			abort();
		virtio_blk_pause(b, true);
		(void)virtio_blk_export(b, fd);
		virtio_blk_pause(b, false);
		close(fd);
		break;
	}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = {data, size};
	struct virtio_blk *b;
	struct fz_guest g;

	make_files();
	fz_guest_init(&g);
	if (virtio_blk_new_backend(&g.mem, open_disk(fz_u8(&f) == 0xff), "fuzz-disk", &b) < 0)
		abort();
	g.blk = b;
	g.settle = fz_blk_settle;
	g.extra = blk_extra;
	fz_guest_attach(&g, virtio_blk_mmio(b));
	fz_guest_run(&g, &f, 256);
	virtio_blk_free(b);
	fz_guest_free(&g);
	return 0;
}
