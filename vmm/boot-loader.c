/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kernel and initrd loading: file bytes go straight into guest RAM with
 * pread(), nothing else is touched. Every size and offset from the file is
 * checked against the file size and guest RAM before use.
 */
#include <asm/bootparam.h>
#include <elf.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/error.h"
#include "vmm/boot.h"

#define ELF_MAX_PHDRS 64
#define BZ_HDR_OFFSET 0x1f1
#define BZ_MIN_VERSION 0x20c
#define BZ_ENTRY_64 0x200

static int pread_all(int fd, void *buf, uint64_t len, uint64_t off)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENODATA;
		p += n;
		len -= (uint64_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* Put len bytes of fd from off at gpa (checked by the caller). Whole pages
 * whose file offset and GPA agree modulo the page size are mapped from the
 * file copy-on-write over guest RAM instead of copied: nothing is read or
 * faulted in at setup, the guest faults pages in from the page cache as it
 * touches them. Only over RAM from guest_mem_init() (never over a caller's
 * buffer); the partial last page is read, so what follows it stays zero. */
static int load_range(const struct guest_mem *m, int fd, uint64_t gpa, uint64_t off, uint64_t len)
{
	uint8_t *host = guest_mem_ptr(m, gpa, len);
	uint64_t whole = len & ~0xfffULL;

	if (!host)
		return -EFAULT;
	if (whole && m->mapping && !(gpa & 0xfff) && !(off & 0xfff) && host >= m->mapping &&
	    host + whole <= m->mapping + m->mapping_size) {
		/* SAFETY: [host, host + whole) lies inside guest RAM's own
		 * mapping (checked above); MAP_FIXED replaces those pages only. */
		void *p = mmap(host, whole, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, (off_t)off);

		if (p == MAP_FAILED)
			return -errno;
		host += whole;
		off += whole;
		len -= whole;
	}
	return pread_all(fd, host, len, off);
}

/* End of the RAM region that starts at 0 (below the 32-bit gap). */
static uint64_t low_ram_end(const struct guest_mem *m)
{
	for (unsigned int i = 0; i < m->nr_regions; i++)
		if (m->regions[i].gpa == 0)
			return m->regions[i].size;
	return 0;
}

static int elf_check_header(const Elf64_Ehdr *eh, uint64_t size, const char *path)
{
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
		return err_set(-ENOEXEC, "%s: not an ELF file or bzImage", path);
	if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_ident[EI_DATA] != ELFDATA2LSB || eh->e_machine != EM_X86_64)
		return err_set(-ENOEXEC, "%s: not an x86-64 ELF kernel", path);
	if (eh->e_type != ET_EXEC)
		return err_set(-ENOEXEC, "%s: ELF type %u is not an executable kernel", path, eh->e_type);
	if (eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phnum == 0 || eh->e_phnum > ELF_MAX_PHDRS)
		return err_set(-ENOEXEC, "%s: bad ELF program header table", path);
	if (eh->e_phoff > size || (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > size - eh->e_phoff)
		return err_set(-ENOEXEC, "%s: truncated (program headers beyond the end of the file)", path);
	return 0;
}

static int elf_check_segment(const struct guest_mem *m, const Elf64_Phdr *ph, uint64_t size, const char *path)
{
	if (ph->p_filesz > ph->p_memsz)
		return err_set(-ENOEXEC, "%s: segment at 0x%llx has filesz > memsz", path,
		               (unsigned long long)ph->p_paddr);
	if (ph->p_offset > size || ph->p_filesz > size - ph->p_offset)
		return err_set(-ENOEXEC, "%s: truncated (segment at 0x%llx beyond the end of the file)", path,
		               (unsigned long long)ph->p_paddr);
	if (ph->p_paddr < BOOT_HIGH_START)
		return err_set(-ENOEXEC, "%s: segment at 0x%llx overlaps the boot structures below 1 MiB", path,
		               (unsigned long long)ph->p_paddr);
	if (ph->p_paddr + ph->p_memsz < ph->p_paddr || !guest_mem_ptr(m, ph->p_paddr, ph->p_memsz))
		return err_set(-ENOSPC, "%s: segment [0x%llx, +0x%llx) is outside guest RAM", path,
		               (unsigned long long)ph->p_paddr, (unsigned long long)ph->p_memsz);
	return 0;
}

static int load_elf(const struct guest_mem *m, int fd, uint64_t size, const char *path, const Elf64_Ehdr *eh,
                    struct kernel_image *img)
{
	Elf64_Phdr ph[ELF_MAX_PHDRS];
	bool entry_ok = false;
	int r;

	r = elf_check_header(eh, size, path);
	if (r < 0)
		return r;
	r = pread_all(fd, ph, eh->e_phnum * sizeof(Elf64_Phdr), eh->e_phoff);
	if (r < 0)
		return err_setsys(r, "%s: reading program headers", path);
	img->start = UINT64_MAX;
	img->end = 0;
	for (unsigned int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD || ph[i].p_memsz == 0)
			continue;
		r = elf_check_segment(m, &ph[i], size, path);
		if (r < 0)
			return r;
		/* Guest RAM is fresh anonymous memory: already zero past
		 * p_filesz, so the bss is not touched here. */
		r = load_range(m, fd, ph[i].p_paddr, ph[i].p_offset, ph[i].p_filesz);
		if (r < 0)
			return err_setsys(r, "%s: reading segment at 0x%llx", path, (unsigned long long)ph[i].p_paddr);
		if (ph[i].p_paddr < img->start)
			img->start = ph[i].p_paddr;
		if (ph[i].p_paddr + ph[i].p_memsz > img->end)
			img->end = ph[i].p_paddr + ph[i].p_memsz;
		if (eh->e_entry >= ph[i].p_paddr && eh->e_entry - ph[i].p_paddr < ph[i].p_filesz)
			entry_ok = true;
	}
	if (img->end == 0)
		return err_set(-ENOEXEC, "%s: no loadable segment", path);
	if (!entry_ok)
		return err_set(-ENOEXEC, "%s: entry point 0x%llx is not in a loaded segment", path,
		               (unsigned long long)eh->e_entry);
	img->entry = eh->e_entry;
	img->initrd_addr_max = BOOT_ELF_INITRD_ADDR_MAX;
	img->cmdline_size = BOOT_ELF_CMDLINE_SIZE;
	img->bzimage = false;
	return 0;
}

static int load_bzimage(const struct guest_mem *m, int fd, uint64_t size, const char *path, const uint8_t *head,
                        struct boot_params *bp, struct kernel_image *img)
{
	struct setup_header hdr;
	uint64_t setup_size, pm_size, need;
	uint32_t hdr_end;

	memcpy(&hdr, head + BZ_HDR_OFFSET, sizeof(hdr));
	if (hdr.version < BZ_MIN_VERSION)
		return err_set(-ENOEXEC, "%s: boot protocol %u.%02u is too old (2.12 or later needed)", path,
		               hdr.version >> 8, hdr.version & 0xff);
	if (!(hdr.xloadflags & XLF_KERNEL_64))
		return err_set(-ENOEXEC, "%s: bzImage has no 64-bit entry point", path);
	if (!(hdr.loadflags & LOADED_HIGH))
		return err_set(-ENOEXEC, "%s: bzImage does not load at 1 MiB", path);
	setup_size = ((uint64_t)(hdr.setup_sects ? hdr.setup_sects : 4) + 1) * 512;
	if (setup_size >= size)
		return err_set(-ENOEXEC, "%s: truncated (no protected-mode kernel after the setup code)", path);
	pm_size = size - setup_size;
	need = pm_size > hdr.init_size ? pm_size : hdr.init_size;
	if (!guest_mem_ptr(m, BOOT_HIGH_START, need))
		return err_set(-ENOSPC, "%s: kernel needs %llu KiB from 1 MiB, more than guest RAM", path,
		               (unsigned long long)(need >> 10));
	int r = load_range(m, fd, BOOT_HIGH_START, setup_size, pm_size);
	if (r < 0)
		return err_setsys(r, "%s: reading the kernel", path);
	/* The header runs from 0x1f1 to 0x202 + the byte at 0x201. */
	hdr_end = 0x202 + head[0x201];
	if (hdr_end > BZ_HDR_OFFSET + sizeof(struct setup_header))
		hdr_end = BZ_HDR_OFFSET + sizeof(struct setup_header);
	memcpy((uint8_t *)bp + BZ_HDR_OFFSET, head + BZ_HDR_OFFSET, hdr_end - BZ_HDR_OFFSET);
	img->start = BOOT_HIGH_START;
	img->end = BOOT_HIGH_START + need;
	img->entry = BOOT_HIGH_START + BZ_ENTRY_64;
	img->initrd_addr_max = hdr.initrd_addr_max;
	img->cmdline_size = hdr.cmdline_size ? hdr.cmdline_size + 1 : 256;
	img->bzimage = true;
	return 0;
}

int boot_load_kernel(const struct guest_mem *m, int fd, uint64_t size, const char *path, struct boot_params *bp,
                     struct kernel_image *ret)
{
	uint8_t head[1024] = {0};
	struct kernel_image img = {0};
	uint64_t n = size < sizeof(head) ? size : sizeof(head);
	int r;

	if (size < sizeof(Elf64_Ehdr))
		return err_set(-ENOEXEC, "%s: too small to be a kernel (%llu bytes)", path, (unsigned long long)size);
	r = pread_all(fd, head, n, 0);
	if (r < 0)
		return err_setsys(r, "%s: reading", path);
	if (memcmp(head, ELFMAG, SELFMAG) == 0)
		r = load_elf(m, fd, size, path, (const Elf64_Ehdr *)head, &img);
	else if (n >= 0x206 && memcmp(head + 0x202, "HdrS", 4) == 0 && head[0x1fe] == 0x55 && head[0x1ff] == 0xaa)
		r = load_bzimage(m, fd, size, path, head, bp, &img);
	else
		r = err_set(-ENOEXEC, "%s: not an ELF vmlinux or a bzImage", path);
	if (r < 0)
		return r;
	*ret = img;
	return 0;
}

int boot_load_initrd(const struct guest_mem *m, int fd, uint64_t size, const char *path, const struct kernel_image *img,
                     uint64_t *ret_addr)
{
	uint64_t top = low_ram_end(m), addr;
	int r;

	if (img->initrd_addr_max + 1 < top)
		top = img->initrd_addr_max + 1;
	if (size == 0)
		return err_set(-EINVAL, "%s: empty initrd", path);
	if (size > top || ((top - size) & ~0xfffULL) < ((img->end + 0xfff) & ~0xfffULL))
		return err_set(-ENOSPC, "%s: initrd (%llu KiB) does not fit in guest RAM between the kernel and 0x%llx",
		               path, (unsigned long long)(size >> 10), (unsigned long long)top);
	addr = (top - size) & ~0xfffULL;
	r = load_range(m, fd, addr, 0, size);
	if (r < 0)
		return err_setsys(r, "%s: reading the initrd", path);
	*ret_addr = addr;
	return 0;
}
