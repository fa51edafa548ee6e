/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <string.h>

#include "vmm/mptable.h"

struct mpf_intel {
	char signature[4]; /* "_MP_" */
	uint32_t physptr;
	uint8_t length; /* in 16-byte units */
	uint8_t specification;
	uint8_t checksum;
	uint8_t feature1;
	uint8_t feature2;
	uint8_t feature3, feature4, feature5;
} __attribute__((packed));

struct mpc_table {
	char signature[4]; /* "PCMP" */
	uint16_t length;
	uint8_t spec;
	uint8_t checksum;
	char oem[8];
	char productid[12];
	uint32_t oemptr;
	uint16_t oemsize;
	uint16_t oemcount; /* number of entries */
	uint32_t lapic;
	uint32_t reserved;
} __attribute__((packed));

struct mpc_cpu {
	uint8_t type;
	uint8_t apicid;
	uint8_t apicver;
	uint8_t cpuflag;
	uint32_t cpufeature;
	uint32_t featureflag;
	uint32_t reserved[2];
} __attribute__((packed));

struct mpc_bus {
	uint8_t type;
	uint8_t busid;
	char bustype[6];
} __attribute__((packed));

struct mpc_ioapic {
	uint8_t type;
	uint8_t apicid;
	uint8_t apicver;
	uint8_t flags;
	uint32_t apicaddr;
} __attribute__((packed));

struct mpc_intsrc {
	uint8_t type;
	uint8_t irqtype;
	uint16_t irqflag;
	uint8_t srcbus;
	uint8_t srcbusirq;
	uint8_t dstapic;
	uint8_t dstirq;
} __attribute__((packed));

#define MP_PROCESSOR 0
#define MP_BUS 1
#define MP_IOAPIC 2
#define MP_INTSRC 3
#define MP_LINTSRC 4

#define CPU_ENABLED 1
#define CPU_BOOTPROCESSOR 2
#define MP_IRQTYPE_INT 0
#define MP_IRQTYPE_NMI 1
#define MP_IRQTYPE_EXTINT 3
#define MP_APIC_ALL 0xff

#define APIC_VERSION 0x14
#define IOAPIC_VERSION 0x11
#define MP_IRQ_PINS 24
/* family 6, model 1, stepping 3; features: FPU, APIC */
#define CPU_SIGNATURE ((6u << 8) | (1u << 4) | 3u)
#define CPU_FEATURES ((1u << 0) | (1u << 9))

static uint8_t checksum(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint8_t sum = 0;

	for (size_t i = 0; i < len; i++)
		sum += b[i];
	return (uint8_t)-sum;
}

/* One entry per IOAPIC pin: ISA IRQs 0-15, then pins 16-23. */
static unsigned int nr_intsrc(void)
{
	return MP_IRQ_PINS;
}

uint32_t mptable_size(unsigned int ncpus)
{
	return sizeof(struct mpf_intel) + sizeof(struct mpc_table) + ncpus * sizeof(struct mpc_cpu) +
	       sizeof(struct mpc_bus) + sizeof(struct mpc_ioapic) + nr_intsrc() * sizeof(struct mpc_intsrc) +
	       2 * sizeof(struct mpc_intsrc);
}

static uint8_t *put_intsrc(uint8_t *p, uint8_t type, uint8_t irqtype, uint8_t srcirq, uint8_t dstapic, uint8_t dstirq)
{
	struct mpc_intsrc e = {
	    .type = type, .irqtype = irqtype, .srcbus = 0, .srcbusirq = srcirq, .dstapic = dstapic, .dstirq = dstirq};

	memcpy(p, &e, sizeof(e));
	return p + sizeof(e);
}

int mptable_write(const struct guest_mem *m, uint64_t gpa, unsigned int ncpus)
{
	uint32_t size = mptable_size(ncpus);
	uint8_t ioapic_id = (uint8_t)ncpus;
	struct mpf_intel *mpf;
	struct mpc_table *mpc;
	uint8_t *base, *p;

	if (ncpus == 0 || ncpus > 254 || size > MPTABLE_MAX_SIZE)
		return -E2BIG;
	base = guest_mem_ptr(m, gpa, size);
	if (!base || gpa + sizeof(*mpf) > UINT32_MAX)
		return -EFAULT;
	memset(base, 0, size);
	mpf = (struct mpf_intel *)base;
	mpc = (struct mpc_table *)(base + sizeof(*mpf));
	p = (uint8_t *)(mpc + 1);

	for (unsigned int i = 0; i < ncpus; i++) {
		struct mpc_cpu c = {
		    .type = MP_PROCESSOR,
		    .apicid = (uint8_t)i,
		    .apicver = APIC_VERSION,
		    .cpuflag = CPU_ENABLED | (i == 0 ? CPU_BOOTPROCESSOR : 0),
		    .cpufeature = CPU_SIGNATURE,
		    .featureflag = CPU_FEATURES,
		};
		memcpy(p, &c, sizeof(c));
		p += sizeof(c);
	}
	struct mpc_bus bus = {.type = MP_BUS, .busid = 0, .bustype = {'I', 'S', 'A', ' ', ' ', ' '}};
	memcpy(p, &bus, sizeof(bus));
	p += sizeof(bus);
	struct mpc_ioapic io = {.type = MP_IOAPIC,
	                        .apicid = ioapic_id,
	                        .apicver = IOAPIC_VERSION,
	                        .flags = 1,
	                        .apicaddr = MPTABLE_IOAPIC_ADDR};
	memcpy(p, &io, sizeof(io));
	p += sizeof(io);
	/* KVM's default routing sends GSI n to IOAPIC pin n, the PIT's GSI 0
	 * included (unlike chipsets and QEMU, which wire IRQ 0 to pin 2). */
	for (unsigned int irq = 0; irq < MP_IRQ_PINS; irq++)
		p = put_intsrc(p, MP_INTSRC, MP_IRQTYPE_INT, (uint8_t)irq, ioapic_id, (uint8_t)irq);
	p = put_intsrc(p, MP_LINTSRC, MP_IRQTYPE_EXTINT, 0, MP_APIC_ALL, 0);
	p = put_intsrc(p, MP_LINTSRC, MP_IRQTYPE_NMI, 0, MP_APIC_ALL, 1);

	memcpy(mpc->signature, "PCMP", 4);
	mpc->length = (uint16_t)(p - (uint8_t *)mpc);
	mpc->spec = 4;
	memcpy(mpc->oem, "KVRUN   ", 8);
	memcpy(mpc->productid, "MICROVM     ", 12);
	mpc->oemcount = (uint16_t)(ncpus + 2 + nr_intsrc() + 2);
	mpc->lapic = MPTABLE_LAPIC_ADDR;
	mpc->checksum = checksum(mpc, mpc->length);

	memcpy(mpf->signature, "_MP_", 4);
	mpf->physptr = (uint32_t)(gpa + sizeof(*mpf));
	mpf->length = 1;
	mpf->specification = 4;
	mpf->checksum = checksum(mpf, sizeof(*mpf));
	return 0;
}
