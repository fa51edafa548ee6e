/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Opening a snapshot (every check, before anything of the VM changes) and
 * loading it into a freshly created VM.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "vmm/snapshot-int.h"
#include "vmm/vcpu.h"
#include "vmm/vm.h"

static int read_exact(int fd, void *buf, size_t len, uint64_t off)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = pread(fd, (uint8_t *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENODATA;
		done += (size_t)n;
	}
	return 0;
}

static int check_header(const struct snap_header *h, size_t got, uint64_t file_size)
{
	if (got < sizeof(h->magic) || memcmp(h->magic, SNAP_MAGIC, sizeof(h->magic)))
		return err_set(-EINVAL, "not a kvrun snapshot (bad magic)");
	if (got < offsetof(struct snap_header, build))
		return err_set(-EINVAL, "truncated (%zu bytes, no complete header)", got);
	if (h->version != SNAPSHOT_FORMAT_VERSION)
		return err_set(-EINVAL, "format version %u, this kvrun reads version %d", h->version,
		               SNAPSHOT_FORMAT_VERSION);
	if (got < sizeof(*h))
		return err_set(-EINVAL, "truncated (%zu bytes, no complete header)", got);
	if (h->header_size != sizeof(*h) || h->header_crc != crc_of(h, offsetof(struct snap_header, header_crc)))
		return err_set(-EINVAL, "header checksum mismatch (corrupt file)");
	if (strncmp(h->build, snap_build(), sizeof(h->build)))
		return err_set(-EINVAL, "written by %.64s, this is %s (incompatible build)", h->build, snap_build());
	if (file_size < h->file_size)
		return err_set(-EINVAL, "truncated (%llu of %llu bytes)", (unsigned long long)file_size,
		               (unsigned long long)h->file_size);
	if (file_size > h->file_size)
		return err_set(-EINVAL, "%llu bytes of trailing data (corrupt file)",
		               (unsigned long long)(file_size - h->file_size));
	if (h->nr_sections > SNAP_MAX_SECTIONS || h->ncpus < 1 || h->ncpus > VM_MAX_CPUS || !h->mem_size)
		return err_set(-EINVAL, "header has impossible values (corrupt file)");
	return 0;
}

static const struct snap_section *find_section(const struct vm_snapshot *s, const char *name, uint32_t flags,
                                               unsigned int *ret_idx)
{
	for (unsigned int i = 0; i < s->h.nr_sections; i++) {
		const struct snap_section *sec = &s->h.sections[i];

		if (sec->flags == flags && !strncmp(sec->name, name, sizeof(sec->name))) {
			if (ret_idx)
				*ret_idx = i;
			return sec;
		}
	}
	return NULL;
}

static int check_memory(struct vm_snapshot *s, const struct snap_section *mem)
{
	unsigned int map_idx;
	uint32_t crc;
	int r;

	if (!find_section(s, "memmap", 0, &map_idx))
		return err_set(-EINVAL, "no memmap section (corrupt file)");
	if (mem->offset % SNAP_HEADER_AREA || mem->length != s->h.mem_size)
		return err_set(-EINVAL, "memory section misplaced (corrupt file)");
	r = snap_mem_crc(s->fd, mem->offset, mem->length, s->data[map_idx], s->h.sections[map_idx].length, &crc);
	if (r < 0)
		return r;
	if (crc != mem->crc)
		return err_set(-EINVAL, "section 'memory' checksum mismatch (corrupt file)");
	return 0;
}

static int read_sections(struct vm_snapshot *s, unsigned int flags)
{
	const struct snap_section *mem = NULL;
	int r;

	for (unsigned int i = 0; i < s->h.nr_sections; i++) {
		const struct snap_section *sec = &s->h.sections[i];

		if (memchr(sec->name, 0, sizeof(sec->name)) == NULL || sec->offset < SNAP_HEADER_AREA ||
		    sec->offset > s->h.file_size || sec->length > s->h.file_size - sec->offset)
			return err_set(-EINVAL, "section %u lies outside the file (corrupt file)", i);
		if (sec->flags & SNAP_SEC_MEMORY) {
			mem = sec;
			continue;
		}
		s->data[i] = malloc(sec->length ? sec->length : 1);
		if (!s->data[i])
			return -ENOMEM;
		r = read_exact(s->fd, s->data[i], sec->length, sec->offset);
		if (r < 0)
			return err_setsys(r, "reading section '%s'", sec->name);
		if (crc_of(s->data[i], sec->length) != sec->crc)
			return err_set(-EINVAL, "section '%s' checksum mismatch (corrupt file)", sec->name);
	}
	if (!mem)
		return err_set(-EINVAL, "no memory section (corrupt file)");
	if (flags & SNAPSHOT_OPEN_TRUST_MEMORY)
		return 0;
	return check_memory(s, mem);
}

static int snapshot_open(struct vm_snapshot *s, const char *path, unsigned int flags)
{
	struct stat st;
	ssize_t got;

	s->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0)
		return err_setsys(-errno, "cannot open");
	if (fstat(s->fd, &st) < 0)
		return err_setsys(-errno, "fstat");
	if (!S_ISREG(st.st_mode))
		return err_set(-EINVAL, "not a regular file");
	got = pread(s->fd, &s->h, sizeof(s->h), 0);
	if (got < 0)
		return err_setsys(-errno, "reading the header");
	int r = check_header(&s->h, (size_t)got, (uint64_t)st.st_size);
	if (r < 0)
		return r;
	return read_sections(s, flags);
}

int vm_snapshot_open(const char *path, unsigned int flags, struct vm_snapshot **ret)
{
	struct vm_snapshot *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	s->fd = -1;
	snprintf(s->path, sizeof(s->path), "%s", path);
	r = snapshot_open(s, path, flags);
	if (r < 0) {
		vm_snapshot_close(s);
		return err_prefix(r, "snapshot %s", path);
	}
	*ret = s;
	return 0;
}

void vm_snapshot_close(struct vm_snapshot *s)
{
	if (!s)
		return;
	for (unsigned int i = 0; i < SNAP_MAX_SECTIONS; i++)
		free(s->data[i]);
	if (s->fd >= 0)
		close(s->fd);
	free(s);
}

void vm_snapshot_config(const struct vm_snapshot *s, struct vm_config *ret)
{
	ret->ncpus = s->h.ncpus;
	ret->mem_size = s->h.mem_size;
}

bool vm_snapshot_has_device(const struct vm_snapshot *s, const char *name)
{
	return find_section(s, name, SNAP_SEC_DEVICE, NULL) != NULL;
}

int vm_snapshot_device_data(const struct vm_snapshot *s, const char *name, const void **ret, size_t *ret_len)
{
	unsigned int i;

	if (!find_section(s, name, SNAP_SEC_DEVICE, &i))
		return -ENOENT;
	*ret = s->data[i];
	*ret_len = s->h.sections[i].length;
	return 0;
}

static int check_host(const struct vm_snapshot *s, const struct vm *vm)
{
	struct snap_header here;

	snap_host_fill(vm, &here);
	if (memcmp(here.cpu_vendor, s->h.cpu_vendor, sizeof(here.cpu_vendor)))
		return err_set(-EINVAL, "taken on a %.16s CPU, this host has a %.16s CPU", s->h.cpu_vendor,
		               here.cpu_vendor);
	if (here.cpuid_nent != s->h.cpuid_nent || here.cpuid_crc != s->h.cpuid_crc)
		return err_set(-EINVAL, "taken on a host whose KVM offers other CPU features");
	if (here.xsave_size != s->h.xsave_size)
		return err_set(-EINVAL, "taken on a host with XSAVE size %u, this host has %u", s->h.xsave_size,
		               here.xsave_size);
	if (vm->ncpus != s->h.ncpus || vm->mem.ram_size != s->h.mem_size)
		return err_set(-EINVAL, "the VM has %u vCPUs and %llu bytes of RAM, the snapshot %u and %llu",
		               vm->ncpus, (unsigned long long)vm->mem.ram_size, s->h.ncpus,
		               (unsigned long long)s->h.mem_size);
	if (vm->started)
		return err_set(-EBUSY, "the VM is already running");
	return 0;
}

/* Every device section has a device, and every device a section. */
static int check_devices(const struct vm_snapshot *s, const struct snapshot_dev *devs, unsigned int ndevs)
{
	for (unsigned int i = 0; i < s->h.nr_sections; i++) {
		const struct snap_section *sec = &s->h.sections[i];
		bool found = false;

		if (!(sec->flags & SNAP_SEC_DEVICE))
			continue;
		for (unsigned int d = 0; d < ndevs && !found; d++)
			found = !strncmp(devs[d].name, sec->name, sizeof(sec->name));
		if (!found)
			return err_set(-EINVAL, "holds state of device '%s', which this VM lacks", sec->name);
	}
	for (unsigned int d = 0; d < ndevs; d++)
		if (!vm_snapshot_has_device(s, devs[d].name))
			return err_set(-EINVAL, "holds no state for device '%s' of this VM", devs[d].name);
	return 0;
}

typedef int (*load_fn)(struct vm *vm, const void *data, size_t len);

static int load_vm_section(const struct vm_snapshot *s, struct vm *vm, const char *name, load_fn fn)
{
	unsigned int i;

	if (!find_section(s, name, 0, &i))
		return err_set(-EINVAL, "no '%s' section (corrupt file)", name);
	return fn(vm, s->data[i], s->h.sections[i].length);
}

static int load_vcpus(const struct vm_snapshot *s, struct vm *vm)
{
	char name[SNAPSHOT_NAME_MAX];
	unsigned int idx;

	for (unsigned int i = 0; i < vm->ncpus; i++) {
		snprintf(name, sizeof(name), "vcpu%u", i);
		if (!find_section(s, name, 0, &idx))
			return err_set(-EINVAL, "no '%s' section (corrupt file)", name);
		int r = vcpu_state_load(vm->vcpus[i], s->h.xsave_size, s->data[idx], s->h.sections[idx].length);
		if (r < 0)
			return r;
	}
	return 0;
}

static int load_devices(const struct vm_snapshot *s, const struct snapshot_dev *devs, unsigned int ndevs)
{
	unsigned int idx = 0;

	for (unsigned int d = 0; d < ndevs; d++) {
		/* check_devices() made sure it is there. */
		find_section(s, devs[d].name, SNAP_SEC_DEVICE, &idx);
		int r = devs[d].load(devs[d].opaque, s->data[idx], s->h.sections[idx].length);
		if (r < 0)
			return err_prefix(r, "device %s", devs[d].name);
	}
	return 0;
}

static int snapshot_restore(struct vm_snapshot *s, struct vm *vm, const struct snapshot_dev *devs, unsigned int ndevs)
{
	const struct snap_section *mem = find_section(s, "memory", SNAP_SEC_MEMORY, NULL);
	int r;

	r = check_host(s, vm);
	if (r >= 0)
		r = check_devices(s, devs, ndevs);
	if (r >= 0)
		r = snap_mem_map(vm, s->fd, mem->offset);
	if (r >= 0)
		r = load_vm_section(s, vm, "irqchip", vm_state_load_irqchip);
	if (r >= 0)
		r = load_vm_section(s, vm, "pit", vm_state_load_pit);
	/* KVM resolves the guest addresses some MSRs carry (the async page
	 * fault area of MSR_KVM_ASYNC_PF_EN) when they are set: guest RAM
	 * must be registered by then, not only by vm_start(). Without this
	 * wait, KVM refused that MSR whenever the slot thread was late. */
	if (r >= 0)
		r = vm_memslots_wait(vm);
	if (r >= 0)
		r = load_vcpus(s, vm);
	if (r >= 0)
		r = load_devices(s, devs, ndevs);
	if (r >= 0)
		r = load_vm_section(s, vm, "clock", vm_state_load_clock);
	return r;
}

int vm_snapshot_restore(struct vm_snapshot *s, struct vm *vm, const struct snapshot_dev *devs, unsigned int ndevs)
{
	int r = snapshot_restore(s, vm, devs, ndevs);

	if (r < 0)
		return err_prefix(r, "snapshot %s", s->path);
	return 0;
}
