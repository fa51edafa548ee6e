/* SPDX-License-Identifier: Apache-2.0 */
/* CPU, port and MMIO accessors for the freestanding test guest. MMIO goes
 * through explicit mov instructions so that every access is exactly one
 * exit of the size the test means. */
#ifndef KVRUN_TEST_GUEST_HW_H
#define KVRUN_TEST_GUEST_HW_H

#include <stdint.h>

static inline void outb(uint16_t port, uint8_t v)
{
	__asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline void outl(uint16_t port, uint32_t v)
{
	__asm__ volatile("outl %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint8_t inb(uint16_t port)
{
	uint8_t v;
	__asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline uint16_t inw(uint16_t port)
{
	uint16_t v;
	__asm__ volatile("inw %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline uint32_t inl(uint16_t port)
{
	uint32_t v;
	__asm__ volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline uint32_t mmio_read32(uint64_t addr)
{
	uint32_t v;
	__asm__ volatile("movl (%1), %0" : "=r"(v) : "r"(addr) : "memory");
	return v;
}

static inline void mmio_write32(uint64_t addr, uint32_t v)
{
	__asm__ volatile("movl %0, (%1)" : : "r"(v), "r"(addr) : "memory");
}

static inline uint64_t mmio_read64(uint64_t addr)
{
	uint64_t v;
	__asm__ volatile("movq (%1), %0" : "=r"(v) : "r"(addr) : "memory");
	return v;
}

static inline void mmio_write64(uint64_t addr, uint64_t v)
{
	__asm__ volatile("movq %0, (%1)" : : "r"(v), "r"(addr) : "memory");
}

static inline uint8_t mmio_read8(uint64_t addr)
{
	uint8_t v;
	__asm__ volatile("movb (%1), %0" : "=q"(v) : "r"(addr) : "memory");
	return v;
}

static inline void cpuid(uint32_t leaf, uint32_t *a, uint32_t *b, uint32_t *c, uint32_t *d)
{
	__asm__ volatile("cpuid" : "=a"(*a), "=b"(*b), "=c"(*c), "=d"(*d) : "a"(leaf), "c"(0));
}

static inline uint64_t rdmsr(uint32_t msr)
{
	uint32_t lo, hi;
	__asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return ((uint64_t)hi << 32) | lo;
}

static inline void wrmsr(uint32_t msr, uint64_t v)
{
	__asm__ volatile("wrmsr" : : "c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)) : "memory");
}

static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

static inline void cpu_relax(void)
{
	__asm__ volatile("pause" ::: "memory");
}

static inline void irq_enable(void)
{
	__asm__ volatile("sti" ::: "memory");
}

static inline void irq_disable(void)
{
	__asm__ volatile("cli" ::: "memory");
}

#define read_cr(n)                                                 \
	({                                                         \
		uint64_t v_;                                       \
		__asm__ volatile("mov %%cr" #n ", %0" : "=r"(v_)); \
		v_;                                                \
	})

#define read_seg(s)                                              \
	({                                                       \
		uint16_t v_;                                     \
		__asm__ volatile("mov %%" #s ", %0" : "=r"(v_)); \
		v_;                                              \
	})

#endif
