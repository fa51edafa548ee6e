/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The parts of boot_linux() that depend on how the guest finds its devices:
 * ACPI tables (hardware-reduced, vmm/acpi.c) or the command line
 * (virtio_mmio.device= fragments and the MP table).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "vmm/acpi.h"
#include "vmm/boot.h"

/* True when the command line has a word starting with "acpi=". */
static bool has_acpi_word(const char *s)
{
	for (const char *p = s; (p = strstr(p, "acpi=")); p++)
		if (p == s || p[-1] == ' ' || p[-1] == '\t')
			return true;
	return false;
}

int boot_cmdline_compose(const struct boot_config *cfg, char **ret)
{
	const char *base = cfg->cmdline ? cfg->cmdline : "";
	size_t len, cap, off;
	char *s;

	if (cfg->nr_virtio > BOOT_MAX_VIRTIO_MMIO || (cfg->nr_virtio && !cfg->virtio))
		return err_set(-EINVAL, "%u virtio-mmio devices, at most %d", cfg->nr_virtio, BOOT_MAX_VIRTIO_MMIO);
	len = strlen(base);
	/* " virtio_mmio.device=" (20) + "<u64>K@0x<16 hex>:<u32>" (at most 51)
	 * fits 96 bytes each, so no snprintf below truncates. */
	cap = len + 16 + (cfg->use_acpi ? 0 : (size_t)cfg->nr_virtio * 96);
	s = malloc(cap);
	if (!s)
		return -ENOMEM;
	memcpy(s, base, len + 1);
	off = len;
	if (!cfg->use_acpi) {
		/* Kernels without VIRTIO_MMIO_CMDLINE_DEVICES ignore these: they
		 * need the DSDT (use_acpi). */
		for (unsigned int i = 0; i < cfg->nr_virtio; i++) {
			const struct acpi_virtio_mmio *d = &cfg->virtio[i];

			off +=
			    (size_t)snprintf(s + off, cap - off, "%svirtio_mmio.device=%" PRIu64 "K@0x%" PRIx64 ":%u",
			                     off ? " " : "", d->size >> 10, d->base, d->gsi);
		}
		/* A kernel with ACPI would scan 0xe0000-0xfffff for an RSDP
		 * (emulated and slow on some hosts) and log an error when there
		 * is none; a kernel without ACPI passes the word to init's
		 * environment, which is harmless. */
		if (!has_acpi_word(base))
			off += (size_t)snprintf(s + off, cap - off, "%sacpi=off", off ? " " : "");
	}
	*ret = s;
	return 0;
}

int boot_acpi_tables(const struct guest_mem *m, const struct boot_config *cfg, unsigned int ncpus, uint64_t *ret_rsdp)
{
	struct acpi_config ac = {
	    .ncpus = ncpus,
	    .apic_ids = NULL, /* vCPU n has APIC id n (vcpu_create) */
	    .virtio = cfg->virtio,
	    .nr_virtio = cfg->nr_virtio,
	    .sleep_space = ACPI_GAS_SPACE_IO,
	    .sleep_addr = ACPI_SLEEP_PORT, /* platform_create() registers it */
	    .reset_reg = true,
	    .cmos_rtc = true, /* platform_create() emulates the CMOS clock */
	    .com1 = cfg->acpi_com1,
	};
	struct acpi_layout layout;
	void *p = guest_mem_ptr(m, BOOT_ACPI_START, BOOT_ACPI_END - BOOT_ACPI_START);
	int r;

	if (!p)
		return err_set(-EFAULT, "no guest RAM at the ACPI table area 0x%llx", BOOT_ACPI_START);
	r = acpi_build_tables(&ac, BOOT_ACPI_START, p, BOOT_ACPI_END - BOOT_ACPI_START, &layout);
	if (r < 0)
		return err_prefix(r, "building the ACPI tables");
	*ret_rsdp = layout.rsdp;
	return 0;
}
